"""The launcher a local session's Python workers run (sqlwin/worker_python.py): this interpreter,
importing PySpark from its install rather than compiling it from Spark's pyspark.zip in every process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from sqlwin import worker_python
from sqlwin.worker_python import launcher_text, zip_version


def _launcher(tmp_path: Path) -> Path:
    path = tmp_path / "python"
    path.write_text(launcher_text(sys.executable))
    path.chmod(0o755)
    return path


def test_the_launcher_runs_this_python_without_sparks_zips_on_the_path(tmp_path):
    spark_lib = tmp_path / "spark home" / "python" / "lib"  # a space in the path, as a user's may have
    spark_lib.mkdir(parents=True)
    kept = [str(tmp_path / "own code"), str(tmp_path / "deps.zip")]
    shipped = [str(spark_lib / "pyspark.zip"), str(spark_lib / "py4j-0.10.9.9-src.zip")]
    env = {**os.environ, "PYTHONPATH": ":".join([shipped[0], shipped[1], *kept])}
    done = subprocess.run([str(_launcher(tmp_path)), "-c", "import sys, json; print(json.dumps([sys.executable, sys.path]))",
                           ], env=env, capture_output=True, text=True, check=True)
    import json

    executable, path = json.loads(done.stdout)
    assert executable == sys.executable
    assert [p for p in path if p in kept] == kept, path  # the user's entries, in their order
    assert not [p for p in path if p in shipped], path


def test_the_launcher_passes_arguments_and_exit_status_through(tmp_path):
    done = subprocess.run([str(_launcher(tmp_path)), "-c", "import sys; print(sys.argv[1:]); sys.exit(3)", "a b", "'c'"],
                          env={**os.environ, "PYTHONPATH": ""}, capture_output=True, text=True)
    assert done.returncode == 3 and done.stdout.strip() == "['a b', \"'c'\"]", done


def test_a_zips_version_is_read_from_its_version_module(tmp_path):
    path = tmp_path / "pyspark.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("pyspark/version.py", "__version__: str = '9.8.7'\n")
    assert zip_version(path) == "9.8.7"
    assert zip_version(tmp_path / "missing.zip") is None


def test_spark_keeps_its_own_way_off_a_local_master_or_with_a_chosen_python(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert worker_python.worker_python("spark://127.0.0.1:7077") is None
    assert worker_python.worker_python("local-cluster[2,1,1024]") is None
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert worker_python.worker_python("local[2]") is None


def test_a_zip_of_another_version_keeps_sparks_own_way(monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert worker_python.worker_python("local[2]") is not None  # pip's PySpark: the zip is the install's
    monkeypatch.setattr(worker_python, "zip_version", lambda path: "0.0.1")
    assert worker_python.worker_python("local[2]") is None


def test_the_launcher_lives_in_the_users_cache_else_the_temporary_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = Path(worker_python.worker_python("local[2]"))
    assert path.parent == tmp_path / "cache" / "sqlwin"
    assert path.read_text() == launcher_text(sys.executable) and os.access(path, os.X_OK)
    blocked = tmp_path / "a file"
    blocked.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))  # no folder can be made under a file
    fallback = Path(worker_python.worker_python("local[2]"))
    assert fallback.parent.parent == Path(tempfile.gettempdir()) and fallback.name == path.name


def test_the_sessions_python_workers_import_the_installed_pyspark(spark):
    """Through Spark: a Python UDF reports where its worker's PySpark comes from."""
    import pyspark

    python = os.environ.get("PYSPARK_PYTHON", "")
    if Path(python).is_file() and Path(python).read_bytes().startswith(b"#!/bin/sh\n# sqlwin"):
        expected = str(Path(pyspark.__file__).parent)  # the launcher: the install beside this interpreter
    else:
        pytest.skip(f"PYSPARK_PYTHON was chosen before the session started ({python}): Spark's own way")

    def origin(_):
        import sys

        import pyspark as worker_pyspark

        return f"{os.path.dirname(worker_pyspark.__file__)}|{any(p.endswith('pyspark.zip') for p in sys.path)}"

    found = spark.range(1).rdd.map(origin).collect()[0]
    assert found == f"{expected}|False", found

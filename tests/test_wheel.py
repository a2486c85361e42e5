"""Issue 24, item 6: a clean install. The wheel carries every data file sqlwin reads, and the README's
first command, run from the wheel installed in a fresh venv (not the editable checkout), shows the
result and no log noise.

Before: the wheel had no log4j2.properties, so `sqlwin run sql_examples/session_clicks.sql` printed
"main ERROR Reconfiguration failed" twice, then Spark's default logging ("Using Spark's default
log4j profile", "Setting default log level", WARN lines).

The fresh venv gets sqlwin's wheel with --no-deps; its dependencies (PySpark alone is 450 MB, a
few minutes to download and unpack) come from the site-packages of the interpreter running the
tests, added by a .pth path line. A path line does not run that directory's own .pth files, so the
editable install of the checkout stays invisible: the test asserts sqlwin is imported from the venv.
Building the wheel needs setuptools and wheel, which pip fetches from the package index (or its cache).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOISE = ["Reconfiguration failed", "Using Spark's default log4j profile", "Setting default log level",
         "To adjust logging level", "NativeCodeLoader"]


def test_every_data_file_of_the_package_is_declared_for_the_wheel():
    """Cheap, in every run: a file under sqlwin/ that is not Python is listed in package-data."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["sqlwin"]
    data = sorted(str(p.relative_to(ROOT / "sqlwin")) for p in (ROOT / "sqlwin").rglob("*")
                  if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts)
    assert data, "sqlwin/ holds data files (log4j2.properties at least)"
    assert [f for f in data if not any(Path(f).match(pattern) for pattern in declared)] == []


@pytest.mark.wheel  # ~50 s on a loaded 2-core machine: in the normal suite; -m 'not wheel' leaves it out
def test_the_first_command_from_the_wheel_in_a_fresh_venv_prints_no_log_noise(tmp_path):
    started = time.monotonic()
    source = tmp_path / "src"  # a copy: building in the checkout would leave build/ and *.egg-info there
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "sqlwin", source / "sqlwin", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", str(source), "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheel = next((tmp_path / "dist").glob("sqlwin-*.whl"))

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    import pyspark

    Path(purelib, "sqlwin-test-deps.pth").write_text(str(Path(pyspark.__file__).resolve().parent.parent) + "\n")
    installed = subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
                               capture_output=True, text=True, timeout=300)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    examples = tmp_path / "sql_examples"
    shutil.copytree(ROOT / "sql_examples", examples)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "PYSPARK", "SPARK_", "SQLWIN_", "VIRTUAL_ENV"))}
    env["PYSPARK_PYTHON"] = str(python)  # the workers run the installed sqlwin too
    where = subprocess.run([str(python), "-c", "import sqlwin, sqlwin.session as s; print(sqlwin.__file__); "
                            "print(s.LOG_CONFIG.is_file())"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.split() == [str(Path(purelib, "sqlwin", "__init__.py")), "True"], where.stdout + where.stderr

    run = subprocess.run([str(venv / "bin" / "sqlwin"), "run", "sql_examples/session_clicks.sql"],
                         capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "(3 rows)" in run.stdout and re.search(r"u1 +2023-12-14 00:00:00 +2023-12-14 00:45:00", run.stdout)
    assert [noise for noise in NOISE if noise in run.stderr] == [], run.stderr
    assert run.stderr.strip() == "", run.stderr
    print(f"wheel built, installed and run in {time.monotonic() - started:.0f} s")

"""The Python that a local session's Spark workers run: this interpreter, importing PySpark from its
own install instead of from `pyspark.zip`.

Spark puts `$SPARK_HOME/python/lib/pyspark.zip` (and py4j's zip) first on every Python worker's
path. A zip caches no bytecode, so every Python process Spark starts compiles each PySpark module it
imports from source. Measured with py-spy over every process of a small sqlwin stream: the worker
Spark starts on the driver when a stream starts (`transform_with_state_driver_worker`, for the
operator's state schema) spent ~1.5-2.5 s of CPU importing PySpark from the zip; the daemon and the
workers it forks, several more seconds per session.

With pip's PySpark, SPARK_HOME *is* the installed package: the zip holds the very files installed
beside this interpreter, whose modules compile once, into `__pycache__`. So for a local master, when
the installed PySpark is the zip's version (and py4j is installed too), `sqlwin.session()` runs
Python workers through a small launcher that takes the two zips off the worker's PYTHONPATH and
runs this interpreter. Any other case -- a cluster's executors, a Spark whose zip is another
version, a PYSPARK_PYTHON the user chose -- keeps Spark's own way.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

# Path entries the launcher drops: Spark's copies of PySpark and py4j (`$SPARK_HOME/python/lib/...`).
SHIPPED = r"(^|/)(pyspark\.zip|py4j-[^/]*-src\.zip)$"


def zip_version(path: Path) -> str | None:
    """The `__version__` in a pyspark.zip's pyspark/version.py (read, not imported)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            text = archive.read("pyspark/version.py").decode("utf-8")
    except (OSError, KeyError, zipfile.BadZipFile):
        return None
    found = re.search(r"__version__[^=]*=\s*['\"]([^'\"]+)['\"]", text)
    return found.group(1) if found else None


def _installed(distribution: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def launcher_text(python: str) -> str:
    """A POSIX shell script: PYTHONPATH without Spark's zips, then `python` with the same arguments."""
    return ("#!/bin/sh\n"
            "# sqlwin (sqlwin/worker_python.py): this Python, importing PySpark from its install, not pyspark.zip\n"
            f"PYTHONPATH=$(printf '%s\\n' \"$PYTHONPATH\" | tr ':' '\\n' | grep -v -E '{SHIPPED}' | paste -sd: -)\n"
            "export PYTHONPATH\n"
            f"exec {shlex.quote(python)} \"$@\"\n")


def worker_python(master: str) -> str | None:
    """The launcher's path for a session on `master` started by this process, or None: Spark's own way."""
    in_process = master == "local" or master.startswith("local[")
    if not in_process or os.name != "posix" or "PYSPARK_PYTHON" in os.environ:
        return None
    try:
        from pyspark.find_spark_home import _find_spark_home
    except ImportError:
        return None
    shipped = Path(_find_spark_home()) / "python" / "lib" / "pyspark.zip"
    version = _installed("pyspark")
    if version is None or _installed("py4j") is None or zip_version(shipped) != version:
        return None
    text = launcher_text(sys.executable)
    name = f"python-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    for folder in _folders():
        try:
            path = _written(folder / name, text)
        except OSError:  # a folder this user cannot write: the next one
            continue
        if _runs(path):
            return str(path)
    return None


def _folders() -> list[Path]:
    """Where the launcher may live, in order: the user's cache (which outlives a long stream: a
    system's cleaning of old files in the temporary directory would leave Spark nothing to start its
    next worker with), else the temporary directory."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return [Path(cache) / "sqlwin", Path(tempfile.gettempdir()) / f"sqlwin-{os.getuid()}"]


def _written(path: Path, text: str) -> Path:
    if not (path.is_file() and path.read_text() == text):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(text)
        temporary.chmod(0o755)
        os.replace(temporary, path)  # another process writing the same launcher writes the same text
    return path


def _runs(path: Path) -> bool:
    """Whether the launcher starts Python here (a folder on a file system mounted noexec would not)."""
    import subprocess

    try:
        done = subprocess.run([str(path), "-S", "-c", "pass"], capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0

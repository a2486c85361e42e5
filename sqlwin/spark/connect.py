"""What differs on a Spark Connect session: checks the API makes before a replay or a stream runs there.

Over Connect the server runs everything -- it resolves paths in its own working directory and runs
sqlwin's worker code in its own Python workers -- while the client still writes some of a stream's
files itself. Each check turns what would fail later, or silently, into a SqlwinUsageError naming it.
(Not in sqlwin/session.py: importing that module would shadow `sqlwin.session()`, the function.)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def is_connect(spark) -> bool:
    """Whether `spark` is a Spark Connect client session (no SparkContext, the server runs everything)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def connect_stream_paths(spark, sources: dict, sink: str, late_sink: str | None, checkpoint: str):
    """A stream's directories as a Spark Connect server must see them: absolute, on a shared filesystem.

    Over Connect the server reads the sources and writes the sink and the checkpoint, while the
    client writes into the checkpoint too (its sqlwin.json, end_input's control file) and marks the
    sinks. A relative path would mean the server's working directory there and the client's here:
    each is made absolute on the client. A server that does not see the client's checkpoint
    directory (another machine, no shared filesystem) is refused with a SqlwinUsageError naming it.
    """
    def absolute(path):
        if path is None or not isinstance(path, (str, os.PathLike)):
            return path
        text = os.fspath(path)
        return text if "://" in text or text.startswith("file:") else os.path.abspath(text)

    sources = {name: absolute(source) for name, source in sources.items()}
    sink, late_sink, checkpoint = absolute(sink), absolute(late_sink), absolute(checkpoint)
    if "://" not in checkpoint and not checkpoint.startswith("file:"):
        _check_shared_directory(spark, Path(checkpoint))
    return sources, sink, late_sink, checkpoint


def _check_shared_directory(spark, directory: Path) -> None:
    """Write a file into `directory` here and read it back through the server: the same bytes, or an error.

    The probe file is removed at once (not hidden: Spark does not read a file whose name starts with
    '.' or '_'); directories created for it are removed again when the server does not see them.
    """
    import uuid

    from sqlwin.errors import SqlwinUsageError

    created, existing = None, directory
    while not existing.exists():  # the outermost directory the probe creates, if any
        created, existing = existing, existing.parent
    token = uuid.uuid4().hex
    probe = directory / f"sqlwin-connect-probe-{token}.txt"
    seen = None
    try:
        directory.mkdir(parents=True, exist_ok=True)
        probe.write_text(token)
        try:
            seen = [r[0] for r in spark.read.text(str(probe)).collect()]
        except Exception as err:  # PATH_NOT_FOUND, or a filesystem the server cannot read
            seen = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
    finally:
        probe.unlink(missing_ok=True)
    if seen == [token]:
        return
    if created is not None:
        import shutil

        shutil.rmtree(created, ignore_errors=True)
    raise SqlwinUsageError(
        f"The Spark Connect server does not see the checkpoint directory {directory} as this client does "
        f"(read back: {seen!r}): sw.stream over Spark Connect writes the checkpoint here and there",
        hint="a checkpoint, sink and sources on a filesystem the client and the server share under the same "
             "path (the server's own machine, or a shared mount)")


_WORKERS_CHECKED: set = set()  # (session id, module) pairs whose server workers import sqlwin


def check_connect_workers(spark, module: str = "sqlwin.spark.operator") -> None:
    """Over Spark Connect, replays and streams run sqlwin's worker code in the server's Python workers:
    check once per session that `module` imports there, from the same sqlwin version, under the same
    Python (cloudpickle needs it). A SqlwinUsageError naming what is missing otherwise."""
    from sqlwin.version import __version__
    from sqlwin.errors import SqlwinUsageError

    key = (getattr(spark, "session_id", id(spark)), module)
    if key in _WORKERS_CHECKED:
        return
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"

    def probe(batches):
        import importlib
        import sys as worker_sys

        import pyarrow as pa

        for _ in batches:
            pass
        python = f"{worker_sys.version_info[0]}.{worker_sys.version_info[1]}"
        try:
            importlib.import_module(module)
            version, error = importlib.import_module("sqlwin").__version__, ""
        except Exception as err:  # noqa: BLE001 - reported to the client as it is
            version, error = "", f"{type(err).__name__}: {err}"
        yield pa.RecordBatch.from_pylist([{"python": python, "version": version, "error": error}])

    hint = (f"sqlwin {__version__} installed for the Python the server's workers run (spark.pyspark.python / "
            f"PYSPARK_PYTHON on the server), Python {here} as here")
    try:
        rows = spark.range(1, numPartitions=1).mapInArrow(
            probe, "python STRING, version STRING, error STRING").collect()
    except Exception as err:  # a worker that cannot even unpickle the probe: another Python, no pyarrow
        first = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
        raise SqlwinUsageError(f"The Spark Connect server's Python workers cannot run sqlwin's code: {first}",
                               hint=hint) from None
    python, version, error = rows[0]
    if error:
        raise SqlwinUsageError(f"The Spark Connect server's Python workers cannot import {module}: {error}",
                               hint=hint)
    if version != __version__ or python != here:
        raise SqlwinUsageError(
            f"The Spark Connect server's Python workers run sqlwin {version} on Python {python}, "
            f"this client sqlwin {__version__} on Python {here}", hint=hint)
    _WORKERS_CHECKED.add(key)

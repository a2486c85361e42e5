"""The Spark session of a sqlwin command: sqlwin.session()'s options from --master, --remote and
--conf, the checks a query gets before Spark starts (a tenth of a second, not Spark's start-up),
and starting Spark with the JVM's output on sqlwin's stderr, without a worker's debugging noise."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import typing as t
from pathlib import Path

from sqlwin.errors import SqlwinUsageError


def session_options(args: argparse.Namespace) -> dict[str, t.Any]:
    """sqlwin.session()'s keyword arguments from --master, --remote and --conf (checked before Spark starts)."""
    conf: dict[str, str] = {}
    for spec in args.conf:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip():
            raise SqlwinUsageError(f"--conf {spec} is not KEY=VALUE", hint="--conf spark.sql.shuffle.partitions=8")
        conf[key.strip()] = value
    if args.master and args.remote:
        raise SqlwinUsageError("--master and --remote cannot both be given",
                               hint="--master URL for a Spark driver here, or --remote sc://HOST:PORT for Spark Connect")
    options: dict[str, t.Any] = {"conf": conf}
    if args.master:
        options["master"] = args.master
    if args.remote:
        options["remote"] = args.remote
    return options


def check_before_spark(query: str, args: argparse.Namespace, tables: t.Iterable[str] | None) -> None:
    """The query's syntax, the tables it names and what needs no columns, checked before Spark
    starts (a tenth of a second, not Spark's start-up). `tables`: the command's --table/--source
    names, the only tables a local session will hold, unless a catalog or a Connect server may
    hold others (then names are left to Spark)."""
    from sqlwin.sql.check import check_query

    options = session_options(args)
    conf = options["conf"]
    if options.get("remote") or os.environ.get("SQLWIN_REMOTE") or any(
            key.startswith(("spark.sql.catalog", "spark.sql.defaultCatalog")) for key in conf) or _defaults_conf():
        tables = None
    check_query(query, set(tables) if tables is not None else None,
                conf.get("spark.sql.session.timeZone", "UTC"))


def _defaults_conf() -> bool:
    """Whether a spark-defaults.conf Spark will read may configure a catalog."""
    home = os.environ.get("SPARK_CONF_DIR") or (os.environ.get("SPARK_HOME", "") and
                                                 os.path.join(os.environ["SPARK_HOME"], "conf"))
    path = Path(home, "spark-defaults.conf") if home else None
    try:
        return path is not None and "catalog" in path.read_text()
    except OSError:
        return False


def attach_session(args: argparse.Namespace, options: dict[str, t.Any] | None = None, app_name: str = "sqlwin"):
    """Start Spark as the command line asks (the JVM's output on stderr) and attach sqlwin to it."""
    import sqlwin

    options = session_options(args) if options is None else options
    with jvm_output_to_stderr():
        spark = sqlwin.session(app_name=app_name, **options)
    return sqlwin.attach(spark)


# What PySpark's planning worker for transformWithStateInPandas prints on every stream start
# (pyspark/sql/streaming/transform_with_state_driver_worker.py): its own debugging, four
# paragraphs of it, through the JVM's output; and the JVM's note, at every start, that Spark
# uses an incubating Java module. Neither is for a user.
_WORKER_NOISE = ("Starting Streaming TransformWithStateInPandas Python worker",
                 "Streaming TransformWithStateInPandas Python worker ",
                 "WARNING: Using incubator modules:")


@contextlib.contextmanager
def jvm_output_to_stderr():
    """Start the JVM (if this block starts it) with its stdout and stderr on a pipe that a thread
    copies to sqlwin's stderr, without the worker noise above: the command's stdout holds only
    its results, and the user sees Spark's warnings and errors as before."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None or SparkContext._gateway is not None:
        yield  # the JVM runs already (a test calling main, a notebook): its output is not ours
        return
    try:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
    except OSError:  # no descriptors to redirect (a GUI host)
        yield
        return
    read_end, write_end = os.pipe()
    threading.Thread(target=_copy_without_noise, args=(read_end, saved[2]), daemon=True,
                     name="sqlwin-jvm-output").start()  # reading from the start: a full pipe would stall the JVM
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        for fd in (1, 2):
            os.dup2(write_end, fd)  # inherited by the JVM that starts in this block
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            if fd == 1:
                os.close(copy)
        os.close(write_end)


def _copy_without_noise(read_end: int, out: int) -> None:
    dropped = False
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            text = line.decode(errors="replace")
            if text.startswith(_WORKER_NOISE) or (dropped and not text.strip()):
                dropped = True
                continue
            dropped = False
            try:
                os.write(out, line)
            except OSError:
                return

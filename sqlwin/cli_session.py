"""The Spark session of a sqlwin command: sqlwin.session()'s options from --master, --remote and
--conf, the checks a query gets before Spark starts (a tenth of a second, not Spark's start-up),
and starting Spark (sqlwin.session() puts the JVM's output on stderr, without a worker's noise)."""

from __future__ import annotations

import argparse
import os
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
    """Start Spark as the command line asks (the JVM's output on stderr) and attach sqlwin to it.

    The command reports every error itself, in one message (the stacks with --debug): PySpark's JSON
    dump of an error, with its JVM stack, stays off for the process -- also for an error that comes
    while Spark runs the query (a collect, a write), after sqlwin's own checks."""
    import sqlwin
    from sqlwin.spark.runner import spark_error_logger

    options = session_options(args) if options is None else options
    sw = sqlwin.attach(sqlwin.session(app_name=app_name, **options))  # the JVM's output on stderr
    logger = spark_error_logger()
    if logger is not None:
        logger.disabled = True
    return sw



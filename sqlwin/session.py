"""A ready SparkSession for users (and tests) who do not bring their own: local, a cluster, or Spark Connect.

    sqlwin.session()                                   # local[2], or $SQLWIN_MASTER, or $SQLWIN_REMOTE
    sqlwin.session(master="spark://127.0.0.1:7077")    # a standalone cluster (scripts/cluster.py)
    sqlwin.session(remote="sc://127.0.0.1:15002")      # a Spark Connect server (docs/deploy.md)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from sqlwin.jvm_output import jvm_output_to_stderr

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
MASTER_ENV = "SQLWIN_MASTER"
REMOTE_ENV = "SQLWIN_REMOTE"
DEFAULT_MASTER = "local[2]"
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
# RocksDB's changelog checkpointing: a micro-batch's commit writes the changes it made, not a snapshot of
# the whole store (files copied and zipped at every batch); snapshots are made in the background every
# few versions. Spark reads checkpoints of either kind after a switch, both ways. Measured: a commit's
# time per micro-batch about halved (stateOperators' commitTimeMs, four batches of a small stream:
# 2.2 s -> 1.2 s summed over its tasks), a 4-batch stream ~13 % faster end to end.
CHANGELOG_CHECKPOINTING = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
PYTHON_SOCKET_TIMEOUT = "60s"
# Hadoop's local file system without a process per file (java/sqlwin/hadoop/): pip's PySpark has no
# Hadoop native library, so Hadoop forks `chmod` for every file it creates and `readlink` for every
# FileContext create / rename -- about a dozen forks of the JVM per micro-batch. Measured on a 6-batch
# stream of a few rows: 4.7-5.1 s -> 3.6 s end to end, a micro-batch ~540 -> ~400 ms.
LOCAL_FS_JAR = Path(__file__).with_name("jars") / "sqlwin-local-fs.jar"
LOCAL_FS = {"spark.hadoop.fs.file.impl": "sqlwin.hadoop.NioLocalFileSystem",
            "spark.hadoop.fs.AbstractFileSystem.file.impl": "sqlwin.hadoop.NioLocalFs"}
DRIVER_CLASSPATH = "spark.driver.extraClassPath"


def session(app_name: str = "sqlwin", master: str | None = None, remote: str | None = None,
            shuffle_partitions: int = 2, conf: dict[str, str] | None = None):
    """A SparkSession configured the way sqlwin expects.

    UTC session time zone (window arithmetic is on epoch microseconds), few shuffle
    partitions (local data is small), the UI off, the RocksDB state store (needed by the
    streaming operator) with changelog checkpointing, and PYSPARK_PYTHON pointing at this interpreter so Python
    workers start with the same packages (on a local master, through a launcher that lets them import
    PySpark from this install instead of compiling it from Spark's pyspark.zip: sqlwin/worker_python.py).

    `master`: where Spark runs (`local[2]`, `spark://host:7077`, ...); without it $SQLWIN_MASTER,
    else local[2]. `remote`: a Spark Connect server (`sc://host:port`); without it (and without
    `master`) $SQLWIN_REMOTE. Over Connect the server owns the cluster: only the session's SQL
    settings are set from here (time zone, shuffle partitions, Arrow, the state store), and a
    `conf` the server does not let a client set is refused with a SqlwinUsageError naming it.
    """
    if master and remote:
        from sqlwin.errors import SqlwinUsageError

        raise SqlwinUsageError(f"Both a master ({master}) and a Spark Connect server ({remote}) were given",
                               hint="one of them: master= for classic Spark, remote= for Spark Connect")
    if remote is None and master is None:
        remote = os.environ.get(REMOTE_ENV) or None
    if remote:
        return _connect_session(app_name, remote, shuffle_partitions, conf)
    master = master or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    return _classic_session(app_name, master, shuffle_partitions, conf)


def _classic_session(app_name: str, master: str, shuffle_partitions: int, conf: dict[str, str] | None):
    from sqlwin.worker_python import worker_python

    os.environ.setdefault("PYSPARK_PYTHON", worker_python(master) or sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    python = os.environ["PYSPARK_PYTHON"]
    if os.sep in python and not os.path.isabs(python):
        # A relative path (`.venv/bin/python`) would be resolved in each executor's working
        # directory: on a cluster, "Cannot run program .venv/bin/python". A bare name keeps PATH.
        os.environ["PYSPARK_PYTHON"] = os.path.abspath(python)
    from pyspark.sql import SparkSession

    java_options = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG} -Duser.timezone=UTC"
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", java_options)
        .config("spark.sql.streaming.stateStore.providerClass", STATE_STORE)
        .config(CHANGELOG_CHECKPOINTING, "true")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # How long a Python process may take to connect back and authenticate to the JVM (default 15 s):
        # on a loaded machine a worker's start is slow (issue 21). Spark's fixed 10 s wait for the worker
        # that plans a stream has no setting: sqlwin starts such a stream again (spark/supervision.py).
        .config("spark.python.authenticate.socketTimeout", PYTHON_SOCKET_TIMEOUT)
    )
    for key, value in {**(conf or {}), **_local_file_system(master, conf or {})}.items():
        builder = builder.config(key, value)
    try:
        with jvm_output_to_stderr():  # a job's stdout is its own; no worker's debugging noise
            spark = builder.getOrCreate()
    except Exception as err:
        _refuse_mixed_sessions(err, f"a {master} session", "a Spark Connect session")
        raise
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _local_file_system(master: str, conf: dict[str, str]) -> dict[str, str]:
    """The settings that give a local session Hadoop's local file system without forks (LOCAL_FS).

    Only where this process starts the JVM and runs every task in it (a local master, not
    local-cluster, whose executors are JVMs of their own; no Spark running yet): the jar goes on
    the driver's class path at launch, which a running JVM or a cluster's executors would not
    have. A user's own `fs.file.impl` wins; a user's own driver class path is kept, the jar appended."""
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return {}
    return local_file_system_settings(master, conf)


def local_file_system_settings(master: str, conf: dict[str, str]) -> dict[str, str]:
    """_local_file_system's choice for a JVM not started yet (see there)."""
    in_process = master == "local" or master.startswith("local[")
    if not in_process or any(key in conf for key in LOCAL_FS) or not LOCAL_FS_JAR.is_file():
        return {}
    classpath = os.pathsep.join(part for part in (conf.get(DRIVER_CLASSPATH), str(LOCAL_FS_JAR)) if part)
    return {**LOCAL_FS, DRIVER_CLASSPATH: classpath}


def _refuse_mixed_sessions(err: Exception, wanted: str, running: str) -> None:
    """PySpark keeps one kind of session per process: classic (a SparkContext) or Spark Connect."""
    from sqlwin.errors import SqlwinUsageError

    condition = getattr(err, "getCondition", lambda: None)() or ""
    if condition in ("SESSION_ALREADY_EXIST", "CONNECT_URL_NOT_SET"):
        raise SqlwinUsageError(f"This process already runs {running}: PySpark cannot start {wanted} beside it "
                               f"({condition})", hint="each kind of session in a process of its own") from None


def connect_settings(shuffle_partitions: int = 2) -> dict[str, str]:
    """The session settings sqlwin asks of a Spark Connect server: SQL settings a client may set."""
    return {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.streaming.stateStore.providerClass": STATE_STORE,
        CHANGELOG_CHECKPOINTING: "true",
    }


def _connect_session(app_name: str, remote: str, shuffle_partitions: int, conf: dict[str, str] | None):
    from sqlwin.errors import SqlwinUsageError

    try:
        from pyspark.sql import SparkSession
        from pyspark.sql.connect.utils import check_dependencies

        check_dependencies()
    except ImportError as err:
        raise SqlwinUsageError(f"Spark Connect ({remote}) needs the Spark Connect client: {err}",
                               hint="pip install 'sqlwin[connect]'") from None
    _check_reachable(remote)
    # No sparkContext over Connect: the server's master, UI and log level are the server's own.
    try:
        spark = SparkSession.builder.remote(remote).appName(app_name).getOrCreate()
    except Exception as err:
        _refuse_mixed_sessions(err, f"a Spark Connect session ({remote})", "a classic SparkSession")
        raise
    settings = {**connect_settings(shuffle_partitions), **(conf or {})}
    for key, value in settings.items():
        _set_connect_conf(spark, key, str(value), remote)
    return spark


def _set_connect_conf(spark, key: str, value: str, remote: str) -> None:
    from pyspark.errors import PySparkException

    from sqlwin.errors import SqlwinUsageError

    try:
        spark.conf.set(key, value)
    except PySparkException as err:
        condition = getattr(err, "getCondition", lambda: None)() or type(err).__name__
        raise SqlwinUsageError(
            f"The Spark Connect server at {remote} does not let a client set {key} ({condition})",
            hint=f"set {key} when the server starts (start-connect-server.sh --conf {key}=...), "
                 "or leave it out") from None


# --------------------------------------------------------------------------- Spark Connect


def _connect_address(remote: str) -> tuple[str, int] | None:
    """host and port of an `sc://host[:port][/;params]` URL (Spark Connect's default port 15002)."""
    from urllib.parse import urlparse

    if not remote.startswith("sc://"):
        return None
    netloc = urlparse(remote.split(";", 1)[0]).netloc
    try:
        parsed = urlparse(f"//{netloc}")
        return parsed.hostname or "localhost", parsed.port or 15002
    except ValueError:
        return None


def _check_reachable(remote: str, timeout_s: float = 10.0) -> None:
    """Fail at once when nothing listens at `remote`: PySpark's client would retry for ten minutes."""
    import socket

    from sqlwin.errors import SqlwinUsageError

    address = _connect_address(remote)
    if address is None:
        return
    try:
        with socket.create_connection(address, timeout=timeout_s):
            return
    except OSError as err:
        raise SqlwinUsageError(
            f"No Spark Connect server answers at {remote} ({err.strerror or err})",
            hint="the URL of a running server, sc://HOST:PORT (start one locally: "
                 "python scripts/connect_server.py start)") from None

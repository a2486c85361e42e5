"""`sqlwin thriftserver`: Spark's Thrift JDBC/ODBC server over a session with sqlwin's window functions.

    sqlwin thriftserver [--port 10000] [--host 127.0.0.1] [--table NAME=PATH ...] [-i INIT.sql]
                        [--name NAME] [--master URL] [--conf KEY=VALUE ...]

SQL-only clients (beeline, JDBC / ODBC drivers, BI tools) send SQL text; the window functions they
can call are temporary functions of one SparkSession (`sqlwin.register(spark)`, Python UDTFs). So the
server is Spark's own HiveThriftServer2, started in this process with
`HiveThriftServer2.startWithContext` over the session that registered them, with
`spark.sql.hive.thriftServer.singleSession=true`: every connection uses that session (its functions,
the --table views, views a client creates). The pip installation of PySpark ships the server
(spark-hive-thriftserver_2.13) and beeline (`.venv/bin/beeline`); nothing to download.

The command runs in the foreground: it prints the JDBC URL on standard output once the server
accepts connections, and stops the server and Spark on Ctrl-C or SIGTERM (exit 0). docs/deploy.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
import typing as t

from sqlwin.cli_errors import runtime_error
from sqlwin.cli_files import parse_tables, register_tables
from sqlwin.cli_session import session_options
from sqlwin.errors import SqlwinRuntimeError, SqlwinUsageError

DEFAULT_PORT = 10000  # HiveServer2's and start-thriftserver.sh's
DEFAULT_HOST = "127.0.0.1"  # no authentication: listen on this machine only unless told otherwise
SINGLE_SESSION = "spark.sql.hive.thriftServer.singleSession"
READY_TIMEOUT_S = 120.0  # from startWithContext until the port accepts connections
_WILDCARDS = ("0.0.0.0", "::", "")


def add_command(commands) -> argparse.ArgumentParser:
    """The `thriftserver` subcommand on the `sqlwin` parser's subcommands."""
    parser = commands.add_parser(
        "thriftserver", help="serve the window functions to JDBC / ODBC clients (beeline, BI tools)",
        description="Start Spark's Thrift JDBC/ODBC server (HiveThriftServer2) in a SparkSession where sqlwin's "
                    "window functions (tumble, hop, cumulate, session, slide, count_window, global_window) are "
                    "registered, every client connection sharing that session. Prints the JDBC URL once the server "
                    "accepts connections; Ctrl-C or SIGTERM stops it.")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT,
                        help=f"the port to listen on (default {DEFAULT_PORT}, as start-thriftserver.sh)")
    parser.add_argument("--host", default=DEFAULT_HOST,
                        help=f"the address to listen on (default {DEFAULT_HOST}; 0.0.0.0 for every interface -- the "
                             "server asks no password)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                        help="make the file or directory PATH a view NAME for every client (as sqlwin run's --table)")
    parser.add_argument("-i", dest="init", metavar="FILE",
                        help="run the statements in FILE first, in sqlwin's dialect (views, settings), as sqlwin sql -i")
    parser.add_argument("--name", help="the application's name in the Spark UI (default sqlwin-thriftserver)")
    parser.add_argument("--master", metavar="URL",
                        help="where Spark runs: local[N], spark://HOST:7077, ... (default: $SQLWIN_MASTER, else local[2])")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark property (repeatable); hive.server2.* properties configure the server")
    parser.add_argument("--debug", action="store_true",
                        help="on an error, also print the Python traceback and Spark's JVM stack (for a bug report)")
    parser.set_defaults(handler=_command, remote=None)
    return parser


def _command(args: argparse.Namespace) -> int:
    defaults = _session_module()
    DEFAULT_MASTER, MASTER_ENV, REMOTE_ENV = defaults.DEFAULT_MASTER, defaults.MASTER_ENV, defaults.REMOTE_ENV

    # Everything a command line can get wrong, before Spark starts (exit 2).
    options = session_options(args)
    if not 1 <= args.port <= 65535:
        raise SqlwinUsageError(f"--port {args.port} is not a port", hint="a number from 1 to 65535, e.g. --port 10000")
    if options["conf"].get(SINGLE_SESSION, "true").strip().lower() != "true":
        raise SqlwinUsageError(f"--conf {SINGLE_SESSION}={options['conf'][SINGLE_SESSION]}: the window functions are "
                               "temporary functions of one session, which every client must share",
                               hint=f"leave {SINGLE_SESSION} out (sqlwin sets it to true)")
    tables = parse_tables(args.table)
    init = _read_init(args.init)
    _check_port_free(args.host, args.port)
    if os.environ.get(REMOTE_ENV) and not args.master:
        print(f"sqlwin: the Thrift server runs its own Spark driver; ${REMOTE_ENV} is not used", file=sys.stderr)
    options["master"] = options.get("master") or os.environ.get(MASTER_ENV) or DEFAULT_MASTER
    options.pop("remote", None)
    # hive.* properties are the server's, not Spark's: set on the session (the server reads them from its
    # Hadoop configuration) rather than given to spark-submit, which would warn it ignores them.
    server_conf = {key: value for key, value in options["conf"].items() if key.startswith("hive.")}
    options["conf"] = {key: value for key, value in options["conf"].items() if key not in server_conf}
    options["conf"][SINGLE_SESSION] = "true"  # a static setting: before the session starts
    server_conf.update({"hive.server2.thrift.port": str(args.port), "hive.server2.thrift.bind.host": args.host,
                        "hive.server2.transport.mode": "binary"})
    return serve(args, options, server_conf, tables, init)


def _session_module():
    """The module sqlwin.session, loaded through the package's lazy attribute (sqlwin/__init__.py): a plain
    `from sqlwin.session import ...` loading it first would leave `sqlwin.session` naming the module, not
    the function, for every later caller in this process."""
    import sqlwin

    sqlwin.session  # noqa: B018 - the lazy load binds the function
    return sys.modules["sqlwin.session"]


def _read_init(path: str | None) -> str | None:
    if path is None:
        return None
    from pathlib import Path

    from sqlwin.shell import check_script

    try:
        script = Path(path).read_text()
    except OSError as err:
        raise SqlwinUsageError(f"Cannot read the initialization file {path}: {err.strerror}",
                               hint="-i a path to a file of statements separated by ;") from None
    check_script(script)  # before Spark starts: a misspelt statement costs a tenth of a second
    return script


def _check_port_free(host: str, port: int) -> None:
    """Refuse a port something listens on before Spark starts: the server would only log its failure
    to bind, in a thread of its own, and the command would serve nothing."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as err:
        raise SqlwinUsageError(f"--host {host}: no such address ({err.strerror})",
                               hint="an address of this machine: 127.0.0.1, 0.0.0.0 (every interface), a host name") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        try:
            probe.bind(address)
        except OSError as err:
            raise SqlwinUsageError(f"Cannot listen on {host}:{port}: {err.strerror}",
                                   hint="a free port (--port N), on an address of this machine (--host)") from None


def jdbc_url(host: str, port: int) -> str:
    """The URL a client on this machine connects to (the loopback address when listening on every interface)."""
    shown = "127.0.0.1" if host in _WILDCARDS else (f"[{host}]" if ":" in host else host)
    return f"jdbc:hive2://{shown}:{port}/default"


def serve(args: argparse.Namespace, options: dict[str, t.Any], server_conf: dict[str, str],
          tables: dict, init: str | None) -> int:
    """Start Spark, register the functions and views, start the server; wait for Ctrl-C or SIGTERM."""
    from sqlwin.spark.functions import register

    session = _session_module().session

    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    started = time.monotonic()
    server = spark = None
    try:
        print("sqlwin: starting Spark ...", file=sys.stderr, flush=True)
        # sqlwin.session() puts the JVM's output on stderr, as for every command: stdout for the URL
        spark = session(app_name=args.name or "sqlwin-thriftserver", **options)
        from sqlwin.api import attach

        sw = attach(spark)
        functions = register(spark)
        register_tables(spark, tables)
        if init is not None:
            from sqlwin.shell import Shell

            Shell(sw, silent=True, out=sys.stderr).run_script(init)  # its rows, if any, are not the URL
        for key, value in server_conf.items():
            spark.conf.set(key, value)
        server = _start_server(spark)
        _wait_until_listening(args.host, args.port, server, stop)
        if not stop.is_set():
            views = ", ".join(sorted(t.name for t in spark.catalog.listTables() if t.isTemporary)) or "none yet"
            print(f"sqlwin: Thrift JDBC/ODBC server ready after {time.monotonic() - started:.1f} s; functions "
                  f"{', '.join(functions)}; views {views}; Ctrl-C or SIGTERM stops it", file=sys.stderr)
            print(jdbc_url(args.host, args.port), flush=True)
        while not stop.wait(1.0):
            if _stopped(server):
                raise SqlwinRuntimeError("The Thrift server stopped by itself (its log says why)")
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        _shut_down(server, spark)
    print("sqlwin: Thrift server stopped", file=sys.stderr)
    return 0


def _start_server(spark):
    """HiveThriftServer2.startWithContext over this session (through py4j): the server runs in this
    Spark driver and, with singleSession, every connection runs its statements in this very session."""
    jvm = spark.sparkContext._jvm
    try:
        server_class = jvm.org.apache.spark.sql.hive.thriftserver.HiveThriftServer2
        return server_class.startWithContext(spark._jsparkSession.sqlContext())
    except Exception as err:  # noqa: BLE001 - said in sqlwin's words
        if "ClassNotFound" in str(err) or "does not exist in the JVM" in str(err):
            raise SqlwinRuntimeError("This Spark has no Thrift server (spark-hive-thriftserver is not among its jars)",
                                     hint="PySpark from pip (4.3 ships it), or a Spark built with -Phive-thriftserver") from None
        raise SqlwinRuntimeError(f"The Thrift server did not start: {runtime_error(err).message}") from None


def _wait_until_listening(host: str, port: int, server, stop: threading.Event) -> None:
    target = "127.0.0.1" if host in _WILDCARDS else host
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not stop.is_set():
        try:
            with socket.create_connection((target, port), timeout=2.0):
                return
        except OSError:
            pass
        if _stopped(server) or time.monotonic() > deadline:
            raise SqlwinRuntimeError(f"The Thrift server does not accept connections on {host}:{port}",
                                     hint="a free port (--port N); with --debug, Spark's log says more")
        stop.wait(0.2)


def _stopped(server) -> bool:
    try:
        return str(server.getServiceState()) == "STOPPED"
    except Exception:  # noqa: BLE001 - the JVM is gone
        return True


def _shut_down(server, spark) -> None:
    """Stop the server (its port closes), then Spark; each at most once, whatever failed before."""
    for step in ((lambda: server.stop()) if server is not None else None,
                 (lambda: spark.stop()) if spark is not None else None):
        if step is None:
            continue
        try:
            step()
        except Exception:  # noqa: BLE001 - stopping what may already be gone
            pass

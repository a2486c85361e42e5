#!/usr/bin/env python
"""Start or stop a local Spark Connect server from the pyspark installation, set up for sqlwin.

    .venv/bin/python scripts/connect_server.py start [--port 15002] [--master local[2]] [--dir DIR]
    .venv/bin/python scripts/connect_server.py stop [--dir DIR]

`start` runs pyspark's own sbin/start-connect-server.sh (SPARK_HOME = the pyspark package
directory; logs, pids and scratch space under DIR, never inside site-packages), configured as
sqlwin.session() configures a local session: UTC, the RocksDB state store, Python workers on this
interpreter, no UI. It waits until the server accepts connections and prints its URL, e.g.
`sc://127.0.0.1:15002`: give it to sqlwin.session(remote=...) or SQLWIN_REMOTE. `stop` ends the
server's process group by its id (recorded in DIR/state.json). Default DIR:
$TMPDIR/sqlwin-connect-$USER.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparkdaemons import (  # noqa: E402
    JAVA_OPTIONS,
    STATE_STORE,
    DaemonError,
    daemon_env,
    default_python,
    free_port,
    launch,
    read_state,
    running,
    spark_home,
    stop_daemon,
    wait_for_port,
    write_state,
)

DEFAULT_DIR = Path(tempfile.gettempdir()) / f"sqlwin-connect-{os.environ.get('USER', 'user')}"


def start(state_dir: Path, port: int | None = None, master: str = "local[2]", python: str | None = None,
          shuffle_partitions: int = 2, conf: list[str] = (), timeout_s: float = 120.0,
          hide: Path | None = None, wait: bool = True) -> dict:
    """Start the server; with `wait`, return once it accepts connections (else call `wait_ready`).

    `hide`: a directory the server must not see -- it runs in a mount namespace of its own with an
    empty tmpfs over that directory (root and util-linux's unshare needed): a client's files there
    are on a filesystem the server does not share, as with a server on another machine.
    """
    state_dir.mkdir(parents=True, exist_ok=True)
    previous = read_state(state_dir)
    if previous and running(previous["server"]):
        raise DaemonError(f"the server of {state_dir} runs already at {previous['url']}: stop it first")
    port = port or free_port()
    python = python or default_python()
    env = daemon_env(state_dir, python)
    settings = {
        "spark.master": master,
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.streaming.stateStore.providerClass": STATE_STORE,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.driver.extraJavaOptions": JAVA_OPTIONS,
        "spark.executor.extraJavaOptions": JAVA_OPTIONS,
        "spark.pyspark.python": python,
        "spark.local.dir": str(state_dir / "scratch"),
    }
    for item in conf:
        key, _, value = item.partition("=")
        settings[key] = value
    arguments = [a for key, value in settings.items() for a in ("--conf", f"{key}={value}")]
    # --wait: the script runs the server in the foreground, so its process group is the one started here.
    command = ["bash", str(spark_home() / "sbin" / "start-connect-server.sh"), "--wait", *arguments]
    if hide is not None:
        hide.mkdir(parents=True, exist_ok=True)
        command = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   'mount -t tmpfs sqlwin-hidden "$1" && shift && exec "$@"', "sh", str(hide), *command]
    began = time.monotonic()
    server = launch("connect-server", command, env, state_dir)
    server["marker"] = f"spark.connect.grpc.binding.port={port}"
    state = {"kind": "connect", "url": f"sc://127.0.0.1:{port}", "port": port, "server": server,
             "dir": str(state_dir), "began": began, "timeout_s": timeout_s}
    write_state(state_dir, state)
    return wait_ready(state) if wait else state


def wait_ready(state: dict) -> dict:
    """Block until the server accepts connections (stopping it if it never does); its startup time."""
    try:
        wait_for_port(state["port"], state["server"], state["timeout_s"])
    except BaseException:
        stop_daemon(state["server"])
        raise
    state["startup_s"] = round(time.monotonic() - state["began"], 2)
    write_state(Path(state["dir"]), state)
    return state


def can_hide() -> bool:
    """Whether `start(hide=...)` can work here: a private mount namespace with a tmpfs in it."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs sqlwin-probe /mnt"], capture_output=True)
    return probe.returncode == 0


def stop(state_dir: Path) -> bool:
    state = read_state(state_dir)
    if not state:
        return True
    stopped = stop_daemon(state["server"])
    if stopped:
        (state_dir / "state.json").unlink(missing_ok=True)
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("start", help="start a Connect server and print its sc:// URL")
    up.add_argument("--port", type=int, help="gRPC port (default: a free one)")
    up.add_argument("--master", default="local[2]", help="where the server runs queries (default local[2])")
    up.add_argument("--python", help="Python of the server's workers (default: this interpreter)")
    up.add_argument("--shuffle-partitions", type=int, default=2)
    up.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", help="more server settings")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"state, logs, scratch (default {DEFAULT_DIR})")
    up.add_argument("--timeout", type=float, default=120.0)
    down = sub.add_parser("stop", help="stop the server started from --dir")
    down.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            state = start(args.dir.resolve(), args.port, args.master, args.python, args.shuffle_partitions,
                          args.conf, args.timeout)
            print(f"Spark Connect server up in {state['startup_s']} s (pid {state['server']['pid']}, "
                  f"log {state['server']['log']})", file=sys.stderr)
            print(state["url"])
            return 0
        return 0 if stop(args.dir.resolve()) else 1
    except DaemonError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

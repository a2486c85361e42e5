#!/usr/bin/env python
"""Start or stop a Spark standalone cluster on 127.0.0.1 from the pyspark installation.

    .venv/bin/python scripts/cluster.py start [--workers 2] [--cores 1] [--memory 1g] [--dir DIR]
    .venv/bin/python scripts/cluster.py status [--dir DIR]
    .venv/bin/python scripts/cluster.py stop [--dir DIR]

`start` runs a master (`bin/spark-class org.apache.spark.deploy.master.Master --host 127.0.0.1`)
and N workers (`...deploy.worker.Worker spark://127.0.0.1:PORT --work-dir DIR/work/wN`) with
SPARK_HOME the pyspark package directory, logs and work directories under DIR (never inside
site-packages), waits until every worker has registered, and prints the master URL: give it to
sqlwin.session(master=...), `sqlwin run --master`, or SQLWIN_MASTER. Executors run their Python
workers with the driver's interpreter (PYSPARK_PYTHON, which sqlwin.session() sets to its own),
so the venv where sqlwin is installed serves both. `stop` ends each daemon's process group
(the daemon, its executors and their Python workers) by the ids recorded in DIR/state.json.
Default DIR: $TMPDIR/sqlwin-cluster-$USER.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparkdaemons import (  # noqa: E402
    DaemonError,
    daemon_env,
    default_python,
    free_port,
    launch,
    log_tail,
    read_state,
    running,
    spark_home,
    stop_daemon,
    wait_for_port,
    write_state,
)

DEFAULT_DIR = Path(tempfile.gettempdir()) / f"sqlwin-cluster-{os.environ.get('USER', 'user')}"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def start(state_dir: Path, workers: int = 2, cores: int = 1, memory: str = "1g", port: int | None = None,
          python: str | None = None, daemon_memory: str = "512m", timeout_s: float = 120.0) -> dict:
    state_dir.mkdir(parents=True, exist_ok=True)
    previous = read_state(state_dir)
    if previous and any(running(d) for d in [previous["master"], *previous["workers"]]):
        raise DaemonError(f"the cluster of {state_dir} runs already at {previous['url']}: stop it first")
    began = time.monotonic()
    env = daemon_env(state_dir, python or default_python())
    env["SPARK_DAEMON_MEMORY"] = daemon_memory  # the master's and workers' own heap, not the executors'
    class_command = [str(spark_home() / "bin" / "spark-class")]
    port = port or free_port()
    ui_port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master = launch("master", [*class_command, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                               "--webui-port", str(ui_port)], env, state_dir)
    master["marker"] = f"--port {port}"
    state = {"kind": "standalone", "url": url, "port": port, "ui": f"http://127.0.0.1:{ui_port}",
             "master": master, "workers": []}
    write_state(state_dir, state)
    try:
        wait_for_port(port, master, timeout_s)
        for index in range(workers):
            work_dir = state_dir / "work" / f"w{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            worker = launch(f"worker-{index}", [
                *class_command, WORKER_CLASS, url, "--host", "127.0.0.1", "--work-dir", str(work_dir),
                "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port())], env, state_dir)
            worker["marker"] = f"--work-dir {work_dir}"
            state["workers"].append(worker)
            write_state(state_dir, state)
        _wait_for_workers(state, workers, timeout_s)
    except BaseException:
        _stop_all(state)
        raise
    state["startup_s"] = round(time.monotonic() - began, 2)
    write_state(state_dir, state)
    return state


def _wait_for_workers(state: dict, count: int, timeout_s: float) -> None:
    """Until the master's status page lists `count` ALIVE workers."""
    deadline = time.monotonic() + timeout_s
    alive = 0
    while time.monotonic() < deadline:
        alive = len([w for w in master_status(state).get("workers", []) if w.get("state") == "ALIVE"])
        if alive >= count:
            return
        for daemon in [state["master"], *state["workers"]]:
            if not running(daemon):
                raise DaemonError(f"{daemon['name']} exited\n{log_tail(daemon)}")
        time.sleep(0.3)
    raise DaemonError(f"{alive} of {count} workers registered within {timeout_s:.0f} s\n"
                      + "\n".join(log_tail(w) for w in state["workers"]))


def master_status(state: dict) -> dict:
    """The master's own view (its web UI's /json/): workers, cores, memory, applications."""
    try:
        with urllib.request.urlopen(f"{state['ui']}/json/", timeout=5) as response:
            return json.loads(response.read())
    except (OSError, json.JSONDecodeError):  # not up yet: no page, or an empty one while it starts
        return {}


def _stop_all(state: dict) -> bool:
    stopped = True
    for daemon in [*reversed(state["workers"]), state["master"]]:  # workers (and their executors) first
        stopped = stop_daemon(daemon) and stopped
    return stopped


def stop(state_dir: Path) -> bool:
    state = read_state(state_dir)
    if not state:
        return True
    stopped = _stop_all(state)
    if stopped:
        (state_dir / "state.json").unlink(missing_ok=True)
    return stopped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("start", help="start a master and workers, print the master URL")
    up.add_argument("--workers", type=int, default=2)
    up.add_argument("--cores", type=int, default=1, help="cores each worker offers (default 1)")
    up.add_argument("--memory", default="1g", help="memory each worker offers its executors (default 1g)")
    up.add_argument("--port", type=int, help="the master's port (default: a free one)")
    up.add_argument("--python", help="Python of the workers' own environment (default: this interpreter)")
    up.add_argument("--dir", type=Path, default=DEFAULT_DIR, help=f"state, logs, work dirs (default {DEFAULT_DIR})")
    up.add_argument("--timeout", type=float, default=120.0)
    for name, text in (("status", "the master's view of the cluster, as JSON"), ("stop", "stop the cluster")):
        sub.add_parser(name, help=text).add_argument("--dir", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    state_dir = args.dir.resolve()
    try:
        if args.command == "start":
            state = start(state_dir, args.workers, args.cores, args.memory, args.port, args.python,
                          timeout_s=args.timeout)
            print(f"Spark standalone master and {args.workers} workers up in {state['startup_s']} s "
                  f"(logs in {state_dir / 'logs'}); export SQLWIN_MASTER={state['url']}", file=sys.stderr)
            print(state["url"])
            return 0
        if args.command == "status":
            state = read_state(state_dir)
            if not state:
                print(f"no cluster started from {state_dir}", file=sys.stderr)
                return 1
            print(json.dumps({"url": state["url"], **master_status(state)}, indent=2))
            return 0
        return 0 if stop(state_dir) else 1
    except DaemonError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

"""Start and stop Spark's own daemons from the pyspark installation: a Connect server, a standalone
master and its workers. Shared by scripts/connect_server.py and scripts/cluster.py.

Each daemon starts in a process group of its own (the group's id is the daemon's process id), and
everything it starts -- executors, Python workers -- stays in that group: stopping a daemon signals
exactly that group, by its id, and nothing else. What runs where is kept in a state file
(`state.json` in the state directory), so `stop` works from another process.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LOG_CONFIG = REPO / "sqlwin" / "log4j2.properties"
JAVA_OPTIONS = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG} -Duser.timezone=UTC"
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


class DaemonError(RuntimeError):
    """A daemon did not start (its log's last lines say why) or a state file is not ours."""


def spark_home() -> Path:
    """The pyspark package directory: it holds bin/, sbin/ and jars/ of a Spark distribution."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daemon_env(state_dir: Path, python: str) -> dict[str, str]:
    """The environment of a daemon: SPARK_HOME the pyspark directory, logs, pids and scratch
    space in `state_dir` (never inside site-packages), Python workers on `python`."""
    env = dict(os.environ)
    for name in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "SPARK_LOCAL_REMOTE", "PYSPARK_GATEWAY_PORT",
                 "PYSPARK_GATEWAY_SECRET"):
        env.pop(name, None)
    home = spark_home()
    env.update({
        "SPARK_HOME": str(home),
        "SPARK_LOG_DIR": str(state_dir / "logs"),
        "SPARK_PID_DIR": str(state_dir / "pids"),
        "SPARK_LOCAL_DIRS": str(state_dir / "scratch"),
        "SPARK_WORKER_DIR": str(state_dir / "work"),
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        # Daemons log at Spark's default level into their log files; the sessions they serve get
        # sqlwin's quieter log4j2 configuration through spark.driver/executor.extraJavaOptions.
        "SPARK_DAEMON_JAVA_OPTS": "-Duser.timezone=UTC",
    })
    for name in ("logs", "pids", "scratch", "work"):
        (state_dir / name).mkdir(parents=True, exist_ok=True)
    return env


def launch(name: str, command: list[str], env: dict[str, str], state_dir: Path) -> dict:
    """Start `command` in a process group of its own, in `state_dir` (where a server's relative paths,
    spark-warehouse and metastore land), output into logs/<name>.log."""
    log = state_dir / "logs" / f"{name}.log"
    with open(log, "ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True, cwd=state_dir)
    return {"name": name, "pid": process.pid, "log": str(log), "started": time.time()}


def alive(pid: int) -> bool:
    """Whether process `pid` runs (a zombie does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (from /proc)."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def wait_for_port(port: int, daemon: dict, timeout_s: float) -> float:
    """Block until 127.0.0.1:`port` accepts a connection; seconds waited. Fails early when the daemon dies."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return time.monotonic() - start
        except OSError:
            pass
        if not group_members(daemon["pid"]):
            raise DaemonError(f"{daemon['name']} exited before it listened on port {port}\n{log_tail(daemon)}")
        time.sleep(0.2)
    raise DaemonError(f"{daemon['name']} did not listen on port {port} within {timeout_s:.0f} s\n{log_tail(daemon)}")


def log_tail(daemon: dict, lines: int = 20) -> str:
    try:
        text = Path(daemon["log"]).read_text(errors="replace").splitlines()
    except OSError:
        return f"(no log at {daemon['log']})"
    return "\n".join(f"  {line}" for line in text[-lines:]) + f"\n  (full log: {daemon['log']})"


def running(daemon: dict) -> bool:
    """Whether the daemon's process group still runs it."""
    marker = daemon.get("marker")
    return any(not marker or marker in _cmdline(pid) for pid in group_members(int(daemon["pid"])))


def stop_daemon(daemon: dict, grace_s: float = 15.0) -> bool:
    """Stop one daemon's process group by its id: SIGTERM, then SIGKILL after `grace_s`.

    Only a group that still holds a process whose command line names this daemon's `marker`
    is signalled: a process id reused by someone else since is left alone. True if it stopped.
    """
    pgid = int(daemon["pid"])
    members = group_members(pgid)
    if not members:
        return True
    marker = daemon.get("marker")
    if marker and not any(marker in _cmdline(pid) for pid in members):
        raise DaemonError(f"process group {pgid} no longer runs {daemon['name']} ({marker}): left alone")
    _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.2)
    _signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not group_members(pgid):
            return True
        time.sleep(0.1)
    return False


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def read_state(state_dir: Path) -> dict | None:
    path = state_dir / "state.json"
    return json.loads(path.read_text()) if path.exists() else None


def write_state(state_dir: Path, state: dict) -> None:
    path = state_dir / "state.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    os.replace(tmp, path)


def default_python() -> str:
    """The interpreter Python workers run: this one (the venv's, where sqlwin is installed)."""
    return sys.executable

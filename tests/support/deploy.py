"""The servers the deploy tests start, one of each per test run (a pytest plugin: tests/conftest.py).

`standalone_cluster`: a Spark standalone master and two workers from the pyspark installation
(scripts/cluster.py, on 127.0.0.1, work directories in a temp dir), started in the background on
first use -- a test asks `standalone_cluster()` for its URL, which waits until it is up -- and
stopped by process group ids at the end of the run, whatever happened. tests/test_cluster.py and
tests/test_stream_guard.py's cluster test share it (before, each started its own: ~40 s each).

`spark_connect_server`: a local Spark Connect server (scripts/connect_server.py) for a module, with an
empty tmpfs over one directory of the client's where root can make one (`hidden`).

Both start when collection ends, where a selected test uses them (`pytest_collection_finish`): their
JVMs come up while the tests before theirs run, instead of while their tests wait (the cluster took
~50 s of test_cluster.py's setup, the Connect server ~28 s of test_connect.py's). The first module
that asks for a Connect server takes the early one; a server nobody took is stopped at the end.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
SCRIPTS = REPO / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

CLUSTER_WORKERS = 2


def cluster_script(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPTS / "cluster.py"), *args], capture_output=True, text=True,
                          timeout=timeout)


_early: dict = {}  # what pytest_collection_finish started: "cluster" (_Cluster), "connect" (root, state, hidden)


class _Cluster:
    """`scripts/cluster.py start --workers 2` under way; `ready()` waits for its URL."""

    def __init__(self, state_dir: Path):
        self.began = time.monotonic()
        self.starting = subprocess.Popen([sys.executable, str(SCRIPTS / "cluster.py"), "start", "--workers",
                                          str(CLUSTER_WORKERS), "--dir", str(state_dir)],
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.info = {"dir": state_dir, "workers": CLUSTER_WORKERS}
        self.stopped = False

    def ready(self) -> dict:
        if "url" not in self.info:
            out, err = self.starting.communicate(timeout=180)
            assert self.starting.returncode == 0, err[-4000:]
            self.info.update(url=out.strip().splitlines()[-1], startup_s=round(time.monotonic() - self.began, 2))
        return self.info

    def stop(self) -> None:
        if self.stopped:
            return
        self.stopped = True
        if self.starting.poll() is None:
            self.starting.communicate(timeout=180)
        stopped = cluster_script("stop", "--dir", str(self.info["dir"]))
        assert stopped.returncode == 0, f"the cluster did not stop:\n{stopped.stderr}"
        assert not (Path(self.info["dir"]) / "state.json").exists()


def _start_connect(root: Path) -> tuple[dict, Path | None]:
    import connect_server as script

    hidden = root / "client-only" if script.can_hide() else None
    return script.start(root / "server", hide=hidden, wait=False), hidden


def _stop_connect(root: Path, state: dict) -> None:
    import connect_server as script

    assert script.stop(root / "server"), f"the Connect server {state['server']} did not stop"


def early_cluster() -> "_Cluster | None":
    """The cluster pytest_collection_finish started (None if it started none): for a job that needs
    it before its test's turn (tests/test_cluster.py)."""
    return _early.get("cluster")


def pytest_collection_finish(session) -> None:
    used = {name for item in session.items for name in getattr(item, "fixturenames", ())}
    if "standalone_cluster" in used:
        _early["cluster"] = _Cluster(Path(tempfile.mkdtemp(prefix="sqlwin-cluster-")))
    if "spark_connect_server" in used:
        root = Path(tempfile.mkdtemp(prefix="sqlwin-connect-"))
        _early["connect"] = (root, *_start_connect(root))


def pytest_sessionfinish(session) -> None:
    cluster = _early.pop("cluster", None)
    if cluster is not None:  # started early, never asked for (its tests failed to set up, or were interrupted)
        cluster.stop()  # (once: the fixture's stop came first where it was asked for)
    connect = _early.pop("connect", None)
    if connect is not None:
        _stop_connect(connect[0], connect[1])


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """`scripts/cluster.py start --workers 2`, started when collection ended (or now); `standalone_cluster()`
    waits for its URL and returns {"url", "dir", "startup_s", "workers"}. `stop` at the end of the run."""
    cluster = _early.get("cluster") or _Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield cluster.ready
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def spark_connect_server(tmp_path_factory):
    """A Connect server for the module, started without waiting (`connect_server.wait_ready(state)`
    waits) -- the first module's when collection ended --, stopped by process group id whatever the
    tests did. Yields (state, hidden)."""
    early = _early.pop("connect", None)
    if early is not None:
        root, state, hidden = early
    else:
        root = tmp_path_factory.mktemp("connect")
        state, hidden = _start_connect(root)
    try:
        yield state, hidden
    finally:
        _stop_connect(root, state)

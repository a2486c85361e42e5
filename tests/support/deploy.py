"""The servers the deploy tests start, one of each per test run (a pytest plugin: tests/conftest.py).

`standalone_cluster`: a Spark standalone master and two workers from the pyspark installation
(scripts/cluster.py, on 127.0.0.1, work directories in a temp dir), started in the background on
first use -- a test asks `standalone_cluster()` for its URL, which waits until it is up -- and
stopped by process group ids at the end of the run, whatever happened. tests/test_cluster.py and
tests/test_stream_guard.py's cluster test share it (before, each started its own: ~40 s each).

`spark_connect_server`: a local Spark Connect server (scripts/connect_server.py) for a module, with an
empty tmpfs over one directory of the client's where root can make one (`hidden`).
"""

from __future__ import annotations

import subprocess
import sys
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


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory):
    """`scripts/cluster.py start --workers 2`, started when first asked for; `standalone_cluster()` waits
    for its URL and returns {"url", "dir", "startup_s", "workers"}. `stop` at the end of the run."""
    state_dir = tmp_path_factory.mktemp("cluster")
    began = time.monotonic()
    starting = subprocess.Popen([sys.executable, str(SCRIPTS / "cluster.py"), "start", "--workers",
                                 str(CLUSTER_WORKERS), "--dir", str(state_dir)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    info = {"dir": state_dir, "workers": CLUSTER_WORKERS}

    def ready() -> dict:
        if "url" not in info:
            out, err = starting.communicate(timeout=180)
            assert starting.returncode == 0, err[-4000:]
            info.update(url=out.strip().splitlines()[-1], startup_s=round(time.monotonic() - began, 2))
        return info

    try:
        yield ready
    finally:
        if starting.poll() is None:
            starting.communicate(timeout=180)
        stopped = cluster_script("stop", "--dir", str(state_dir))
        assert stopped.returncode == 0, f"the cluster did not stop:\n{stopped.stderr}"
        assert not (state_dir / "state.json").exists()


@pytest.fixture(scope="module")
def spark_connect_server(tmp_path_factory):
    """A Connect server for the module, started without waiting (`connect_server.wait_ready(state)`
    waits), stopped by process group id whatever the tests did. Yields (state, hidden)."""
    import connect_server as script

    root = tmp_path_factory.mktemp("connect")
    hidden = root / "client-only" if script.can_hide() else None
    state = script.start(root / "server", hide=hidden, wait=False)
    try:
        yield state, hidden
    finally:
        assert script.stop(root / "server"), f"the Connect server {state['server']} did not stop"


"""A real cluster (issue 11, part 5): sqlwin on a Spark standalone master with two workers.

The cluster is the run's one standalone cluster (tests/support/deploy.py: scripts/cluster.py,
master and two workers from the pyspark installation on 127.0.0.1, work directories in a temp dir,
stopped by process group ids at the end, whatever happened). The driver is a separate process -- this one already holds the
suite's local session -- pointed at the cluster by SQLWIN_MASTER alone, as a user's job would be;
it runs scripts/remote_check.py's checks (a shipped example, two replays, a stream over a
directory of parquet files), and its results must equal the same checks on the local session.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import typing as t
from pathlib import Path

import pytest

from tests.support import background, deploy

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

import remote_check  # noqa: E402

pytestmark = pytest.mark.deploy

EXAMPLES = ["session_clicks.sql", "count_window_last_three.sql"]  # the same as tests/test_connect.py: one local run
CLIENT_TIMEOUT_S = 600

# The driver: sqlwin.session() reaches the cluster through SQLWIN_MASTER, runs the checks and says
# where its Python work ran. Prints one JSON document.
CLIENT = r"""
import json, os, sys, time
from pathlib import Path

sys.path.insert(0, os.environ["SQLWIN_TEST_SCRIPTS"])
import remote_check
import sqlwin

began = time.monotonic()
spark = sqlwin.session()
sc = spark.sparkContext
# Python on the executors: the interpreter and the working directory of a task on each of them.
where = sc.parallelize(range(8), 8).map(
    lambda _: (sys.executable, os.getcwd(), __import__("sqlwin").__file__)).distinct().collect()
out = {"master": sc.master, "executors": sc._jsc.sc().getExecutorIds().size(), "python": sorted(where),
       "session_seconds": round(time.monotonic() - began, 2)}
out.update(remote_check.run_checks(spark, Path(sys.argv[1]), json.loads(os.environ["SQLWIN_TEST_EXAMPLES"])))
spark.stop()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def cluster(standalone_cluster):
    """The run's standalone cluster (tests/support/deploy.py), shared with test_stream_guard.py."""
    return standalone_cluster


def _driver_on(cluster, client_dir: Path, reference: t.Callable[[], dict] | None = None) -> tuple[dict, dict, dict]:
    """The checks through a driver in a separate process on `cluster` (its `ready()`), with
    `reference()` run meanwhile if given: (cluster info, the driver's results, the reference or {})."""
    info = cluster()
    env = {**os.environ, "SQLWIN_MASTER": info["url"], "SQLWIN_TEST_EXAMPLES": json.dumps(EXAMPLES)}
    env.pop("SQLWIN_REMOTE", None)
    process = remote_check.spawn_client(CLIENT, [str(client_dir / "work")], env, client_dir)
    try:
        local = reference() if reference is not None else {}
    finally:
        out = remote_check.client_result(process, CLIENT_TIMEOUT_S)
    return info, out, local


def start_in_background(items, submit) -> None:
    """The driver on the cluster from the start of the run (tests/support/background.py), once the
    cluster tests/support/deploy.py started when collection ended is up."""
    cluster = deploy.early_cluster()
    if cluster is not None and any("remote" in item.fixturenames for item in items):
        client_dir = Path(tempfile.mkdtemp(prefix="sqlwin-driver-"))
        submit("cluster: the driver", lambda: _driver_on(cluster.ready, client_dir))


@pytest.fixture(scope="module")
def remote(cluster, spark, tmp_path_factory):
    """The checks through a driver in a separate process (run in the background since the run began,
    or now, with the local reference in this process meanwhile)."""
    ran = background.take("cluster: the driver")
    if ran is None:
        local = lambda: remote_check.local_reference(spark, tmp_path_factory.mktemp("local"), EXAMPLES)  # noqa: E731
        ran = _driver_on(cluster, tmp_path_factory.mktemp("driver"), local)
    info, out, local = ran
    print(f"cluster: master and 2 workers up in {info['startup_s']} s (from its start); driver {out['client_seconds']} s "
          f"(session {out['session_seconds']} s, checks {out['timings']})"
          + (f"; local checks {local['timings']}" if local else ""))
    return out


@pytest.fixture(scope="module")
def local(remote, spark, tmp_path_factory):
    """The same checks on the suite's local session (computed while the driver ran)."""
    return remote_check.local_reference(spark, tmp_path_factory.mktemp("local"), EXAMPLES)


def test_the_driver_runs_on_the_cluster_with_python_work_on_both_executors(cluster, remote):
    assert remote["master"] == cluster()["url"] and remote["executors"] == 2
    interpreters = {python for python, _, _ in remote["python"]}
    assert interpreters == {sys.executable}  # the venv's Python, where sqlwin is installed
    work = Path(cluster()["dir"]).resolve() / "work"
    executor_dirs = {cwd for _, cwd, _ in remote["python"]}
    assert len(executor_dirs) == 2 and all(Path(d).resolve().is_relative_to(work) for d in executor_dirs)
    assert {module for _, _, module in remote["python"]} == {str(REPO / "sqlwin" / "__init__.py")}


def test_shipped_examples_on_the_cluster_equal_local(remote, local):
    assert set(remote["examples"]) == set(EXAMPLES)
    for name in EXAMPLES:
        assert remote["examples"][name] == local["examples"][name], name


def test_replays_on_the_cluster_equal_local(remote, local):
    assert remote["replays"] == local["replays"]
    assert remote["replays"]["late"], "the recorded stream has a late row"


def test_stream_on_the_cluster_equals_local_and_the_replay(remote, local):
    stream = remote["stream"]
    assert (stream["rows"], stream["late"]) == (local["stream"]["rows"], local["stream"]["late"])
    assert (stream["rows"], stream["late"]) == (remote["replays"]["early"], remote["replays"]["late"])
    assert stream["status"]["results"] == len(stream["rows"])  # the driver's handle saw every batch

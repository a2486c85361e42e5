"""Spark Connect (issue 11, part 4): sqlwin on a `SparkSession.builder.remote(...)` session.

A module fixture (tests/support/deploy.py) starts a local Connect server from the pyspark installation
(scripts/connect_server.py: pyspark's sbin/start-connect-server.sh, SPARK_HOME the pyspark
directory, logs and pids in a temp dir, a free port, set up as sqlwin.session() sets up a local
session) and stops it by its process group id at the end, whatever happened. The client is a
separate process -- this one already holds the suite's classic session -- that runs
scripts/remote_check.py's checks (a shipped example, two replays, a stream over a directory of
parquet files) on `sqlwin.session()` with SQLWIN_REMOTE set, and tries what Connect refuses. Its
results must equal the same checks on the local session.

The server runs with an empty tmpfs over one directory of the client's (a mount namespace of its
own, where root can make one): a checkpoint there is on a filesystem the server does not share,
as with a server on another machine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import sqlwin
from sqlwin.errors import SqlwinUsageError

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "scripts"
sys.path.insert(0, str(SCRIPTS))

import connect_server  # noqa: E402
import remote_check  # noqa: E402

pytestmark = pytest.mark.deploy

EXAMPLES = ["session_clicks.sql", "count_window_last_three.sql"]
CLIENT_TIMEOUT_S = 600

# The client: sqlwin.session() reaches the server through SQLWIN_REMOTE, runs the checks, then
# asks for what a Connect client cannot have. Prints one JSON document.
CLIENT = r"""
import json, os, socket, sys, time
from pathlib import Path

sys.path.insert(0, os.environ["SQLWIN_TEST_SCRIPTS"])
import remote_check
import sqlwin
from sqlwin.errors import SqlwinError

workdir, hidden = Path(sys.argv[1]), sys.argv[2]
began = time.monotonic()
spark = sqlwin.session()
out = {"session": {"module": type(spark).__module__, "seconds": round(time.monotonic() - began, 2),
                   "conf": {k: spark.conf.get(k) for k in ("spark.sql.session.timeZone", "spark.sql.shuffle.partitions",
                            "spark.sql.streaming.stateStore.providerClass", "spark.sql.execution.arrow.pyspark.enabled")}}}
out.update(remote_check.run_checks(spark, workdir, json.loads(os.environ["SQLWIN_TEST_EXAMPLES"])))

def refusal(action):
    began = time.monotonic()
    try:
        action()
    except SqlwinError as err:
        return {"error": type(err).__name__, "message": err.message, "hint": err.hint,
                "seconds": round(time.monotonic() - began, 2)}
    return {"error": None}

out["refusals"] = {
    "static conf": refusal(lambda: sqlwin.session(conf={"spark.executor.memory": "2g"})),
}
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    closed = s.getsockname()[1]
out["refusals"]["no server"] = refusal(lambda: sqlwin.session(remote=f"sc://127.0.0.1:{closed}"))
from sqlwin.spark.connect import check_connect_workers
out["refusals"]["classic beside connect"] = refusal(lambda: sqlwin.session(master="local[1]"))
out["refusals"]["workers without the module"] = refusal(lambda: check_connect_workers(spark, "sqlwin_not_installed"))
if hidden:
    sw = sqlwin.attach(spark)
    source = workdir / "stream" / "source"  # written by the stream check: the server sees it
    query = remote_check.REPLAY_FINAL.format(options="")
    out["refusals"]["unshared checkpoint"] = refusal(lambda: sw.stream(
        query, sources={remote_check.SOURCE: str(source)}, sink=str(workdir / "unshared-sink"),
        checkpoint=str(Path(hidden) / "checkpoint")))
    out["refusals"]["unshared checkpoint"]["left"] = sorted(os.listdir(hidden))
spark.stop()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def server(spark_connect_server):
    """The module's Connect server (tests/support/deploy.py)."""
    return spark_connect_server


@pytest.fixture(scope="module")
def remote(server, spark, tmp_path_factory):
    """The checks through a Connect client in a separate process, in a working directory of its own;
    the local reference runs in this process meanwhile."""
    state, hidden = server
    client_dir = tmp_path_factory.mktemp("client")
    env = {**os.environ, "SQLWIN_REMOTE": state["url"], "SQLWIN_TEST_EXAMPLES": json.dumps(EXAMPLES)}
    env.pop("SQLWIN_MASTER", None)
    with ThreadPoolExecutor(1) as pool:  # the local reference, while the server starts and the client runs
        reference = pool.submit(remote_check.local_reference, spark, tmp_path_factory.mktemp("local"), EXAMPLES)
        connect_server.wait_ready(state)
        process = remote_check.spawn_client(CLIENT, [str(client_dir / "work"), str(hidden or "")], env, client_dir)
        try:
            reference = reference.result()
        finally:
            out = remote_check.client_result(process, CLIENT_TIMEOUT_S)
    print(f"Connect: server up in {state['startup_s']} s; client {out['client_seconds']} s (session "
          f"{out['session']['seconds']} s, checks {out['timings']}); local checks {reference['timings']}")
    return out


@pytest.fixture(scope="module")
def local(remote, spark, tmp_path_factory):
    """The same checks on the suite's local session (computed while the client ran)."""
    return remote_check.local_reference(spark, tmp_path_factory.mktemp("local"), EXAMPLES)


def test_the_client_is_a_connect_session_set_up_as_sqlwin_sets_up_a_local_one(remote):
    assert remote["session"]["module"].startswith("pyspark.sql.connect")
    assert remote["session"]["conf"] == {
        "spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "2",
        "spark.sql.streaming.stateStore.providerClass": remote_check.STATE_STORE,
        "spark.sql.execution.arrow.pyspark.enabled": "true"}


def test_shipped_examples_over_connect_equal_local(remote, local):
    assert set(remote["examples"]) == set(EXAMPLES)
    for name in EXAMPLES:
        assert remote["examples"][name] == local["examples"][name], name
    assert len(remote["examples"]["session_clicks.sql"]) == 3  # the README's three sessions


def test_replays_over_connect_equal_local(remote, local):
    assert remote["replays"] == local["replays"]
    assert remote["replays"]["late"], "the recorded stream has a late row"
    assert {row[6] for row in remote["replays"]["early"]} >= {"early", "on_time"}


def test_stream_over_connect_equals_local_and_the_replay(remote, local):
    stream = remote["stream"]
    assert stream["rows"] == local["stream"]["rows"]
    assert stream["late"] == local["stream"]["late"]
    assert (stream["rows"], stream["late"]) == (remote["replays"]["early"], remote["replays"]["late"])


def test_stream_status_over_connect_counts_what_the_stream_did(remote, local):
    status, expected = remote["stream"]["status"], local["stream"]["status"]
    assert expected["results"] == len(local["stream"]["rows"]) and expected["rows"] == len(remote_check.RECORDED)
    assert (status["results"], status["rows"], status["late_rows"]) == \
        (expected["results"], expected["rows"], expected["late_rows"])
    assert remote["stream"]["handle_batches"] == local["stream"]["handle_batches"]


def test_a_setting_only_the_server_may_set_is_refused_naming_it(remote):
    refusal = remote["refusals"]["static conf"]
    assert refusal["error"] == "SqlwinUsageError"
    assert "spark.executor.memory" in refusal["message"] and "CANNOT_MODIFY_CONFIG" in refusal["message"]
    assert "start-connect-server.sh --conf spark.executor.memory" in refusal["hint"]


def test_no_server_at_the_url_is_refused_at_once(remote):
    refusal = remote["refusals"]["no server"]
    assert refusal["error"] == "SqlwinUsageError" and "No Spark Connect server answers at sc://127.0.0.1:" \
        in refusal["message"]
    assert refusal["seconds"] < 15  # PySpark's own client would retry for ten minutes


def test_server_workers_that_cannot_import_sqlwin_are_named(remote):
    # The check a replay or a stream over Connect makes first (once per session), asked here for a
    # module the server's workers do not have: the failure comes from a real task on the server.
    refusal = remote["refusals"]["workers without the module"]
    assert refusal["error"] == "SqlwinUsageError"
    assert "Python workers cannot import sqlwin_not_installed: ModuleNotFoundError" in refusal["message"]
    assert "installed for the Python the server's workers run" in refusal["hint"]


def test_one_kind_of_session_per_process(server, spark, remote):
    # PySpark keeps a classic session and a Connect session apart, one per process: sqlwin says so
    # in both directions (here, beside the suite's classic session; in the client, beside Connect).
    with pytest.raises(SqlwinUsageError) as caught:
        sqlwin.session(remote=server[0]["url"])
    assert "already runs a classic SparkSession" in caught.value.message
    assert "SESSION_ALREADY_EXIST" in caught.value.message
    refusal = remote["refusals"]["classic beside connect"]
    assert refusal["error"] == "SqlwinUsageError" and "already runs a Spark Connect session" in refusal["message"]
    assert spark.range(3).count() == 3  # the suite's session goes on


def test_a_checkpoint_the_server_does_not_see_is_refused_before_the_stream_starts(server, remote):
    if server[1] is None:
        pytest.skip("no private mount namespace here (needs root and unshare): cannot hide a directory")
    refusal = remote["refusals"]["unshared checkpoint"]
    assert refusal["error"] == "SqlwinUsageError", refusal
    assert "does not see the checkpoint directory" in refusal["message"] and "shared" in refusal["hint"]
    assert refusal["left"] == []  # the probe and the directories made for it are gone


def test_the_cli_reaches_the_server_through_sqlwin_remote(server, tmp_path):
    """`SQLWIN_REMOTE=sc://... sqlwin run QUERY.sql` prints the README's table, from another directory."""
    state, _ = server
    connect_server.wait_ready(state)
    env = {**os.environ, "SQLWIN_REMOTE": state["url"]}
    env.pop("SQLWIN_MASTER", None)
    done = subprocess.run([str(Path(sys.executable).with_name("sqlwin")), "run",
                           str(REPO / "sql_examples" / "session_clicks.sql")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    readme = (REPO / "README.md").read_text()
    shown = readme.split("The example prints:\n\n```\n", 1)[1].split("```", 1)[0]
    assert done.stdout == shown


def test_registered_functions_over_connect_equal_local(remote, local):
    """Over Connect sqlwin.register installs the Python UDTFs; locally the native plans: the same rows."""
    assert set(remote["functions"]) == set(remote_check.FUNCTION_CALLS)
    assert remote["functions"] == local["functions"]
    assert len(local["functions"]["tumble"]) == 5 and len(local["functions"]["session"]) == 4  # tumble: no key, a NULL one too
    assert len(local["functions"]["count_window"]) == 2  # key a's first two rows (b has one row with a time)

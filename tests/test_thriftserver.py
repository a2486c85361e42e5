"""`sqlwin thriftserver` (issue 24, item 3): SQL-only clients reach the registered window functions.

A real `sqlwin thriftserver` process (Spark's HiveThriftServer2 in the session that registered the
functions) on a free port, and the real `beeline` that PySpark's pip installation ships, as a JDBC
client: windowed GROUP BY queries over a small table written by hand, checked against values worked
out by hand. The server is stopped by its process id (SIGTERM) at the end, and must exit cleanly.

The command line's mistakes are refused before Spark starts (exit 2), in-process.
"""

from __future__ import annotations

import csv
import io
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from sqlwin.cli import main

ROOT = Path(__file__).resolve().parent.parent
# The server's tests start a Spark driver and four beeline JVMs: 25 s on an idle 2-core machine, 60 -- 90 s
# when it is shared; `-m "not deploy"` leaves them out, as the other tests that start their own server.
DEPLOY = pytest.mark.deploy

# Hand-written events: key, time, value.
EVENTS = """k,ts,v
a,2024-01-01 00:01:00,1
a,2024-01-01 00:09:59,2
a,2024-01-01 00:10:00,3
a,2024-01-01 00:31:00,4
b,2024-01-01 00:05:00,10
b,2024-01-01 00:25:00,20
b,2024-01-01 00:28:00,30
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _beeline() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "beeline"


def _env() -> dict[str, str]:
    import pyspark

    return {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable,
            "SPARK_HOME": str(Path(pyspark.__file__).parent)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A `sqlwin thriftserver` with table events; yields its JDBC URL; stopped by pid with SIGTERM."""
    data = tmp_path_factory.mktemp("thrift")
    (data / "events.csv").write_text(EVENTS)
    (data / "init.sql").write_text("CREATE TEMP VIEW b_events AS SELECT * FROM events WHERE k = 'b';\n")
    port = _free_port()
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "sqlwin", "thriftserver", "--port", str(port),
                                "--table", f"events={data / 'events.csv'}", "-i", str(data / "init.sql"), "--conf", "spark.sql.shuffle.partitions=2"],
                               cwd=str(data), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    errors: list[str] = []
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    threading.Thread(target=lambda: errors.extend(process.stderr), daemon=True).start()
    try:
        try:
            url = lines.get(timeout=240).strip()
        except queue.Empty:
            pytest.fail("the server printed no JDBC URL in 240 s:\n" + "".join(errors))
        print(f"server ready after {time.monotonic() - started:.1f} s: {url}")
        assert url == f"jdbc:hive2://127.0.0.1:{port}/default", "".join(errors)
        yield url
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    log = "".join(errors)
    assert code == 0, log
    assert "sqlwin: Thrift server stopped" in log
    assert "Traceback" not in log
    assert "\tat org.apache" not in log  # a client's failing statement is logged in one entry, no JVM stack
    with pytest.raises(OSError):  # the JVM went with it: nothing listens any more
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def _beeline_rows(url: str, statements: str) -> list[dict[str, str]]:
    """Run `statements` with beeline against `url`; the result's rows (csv2: a header, then rows). Ended by
    `;`: without it beeline echoes its prompt before the rows."""
    done = subprocess.run([str(_beeline()), "-u", url, "--silent=true", "--outputformat=csv2", "-e",
                           statements.strip().rstrip(";") + ";"],
                          env=_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stdout + done.stderr
    return list(csv.DictReader(io.StringIO(done.stdout.strip())))


@DEPLOY
def test_beeline_runs_a_windowed_group_by_over_tumble(server):
    rows = _beeline_rows(server, """
        SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total
        FROM tumble(TABLE(events), 'ts', INTERVAL '10' MINUTES)
        GROUP BY k, window_start, window_end
        ORDER BY k, window_start""")
    # By hand: 10-minute windows from midnight; 00:09:59 is in [00:00, 00:10), 00:10:00 starts the next.
    assert [(r["k"], r["window_start"], r["window_end"], r["n"], r["total"]) for r in rows] == [
        ("a", "2024-01-01 00:00:00.0", "2024-01-01 00:10:00.0", "2", "3"),
        ("a", "2024-01-01 00:10:00.0", "2024-01-01 00:20:00.0", "1", "3"),
        ("a", "2024-01-01 00:30:00.0", "2024-01-01 00:40:00.0", "1", "4"),
        ("b", "2024-01-01 00:00:00.0", "2024-01-01 00:10:00.0", "1", "10"),
        ("b", "2024-01-01 00:20:00.0", "2024-01-01 00:30:00.0", "2", "50"),
    ]


@DEPLOY
def test_beeline_runs_a_session_window_per_key(server):
    rows = _beeline_rows(server, """
        SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total
        FROM session(TABLE(events) PARTITION BY (k), 'ts', INTERVAL '5' MINUTES)
        GROUP BY k, window_start, window_end
        ORDER BY k, window_start""")
    # By hand, a 5-minute gap: a session ends 5 minutes after its last row; b's 00:25 and 00:28 are one.
    assert [(r["k"], r["window_start"], r["window_end"], r["n"], r["total"]) for r in rows] == [
        ("a", "2024-01-01 00:01:00.0", "2024-01-01 00:06:00.0", "1", "1"),
        ("a", "2024-01-01 00:09:59.0", "2024-01-01 00:15:00.0", "2", "5"),
        ("a", "2024-01-01 00:31:00.0", "2024-01-01 00:36:00.0", "1", "4"),
        ("b", "2024-01-01 00:05:00.0", "2024-01-01 00:10:00.0", "1", "10"),
        ("b", "2024-01-01 00:25:00.0", "2024-01-01 00:33:00.0", "2", "50"),
    ]


@DEPLOY
def test_views_of_the_init_file_and_of_a_client_are_every_connections(server):
    """-i's view, and a view one client creates: the next connection sees both (one shared session)."""
    assert _beeline_rows(server, "CREATE TEMP VIEW client_view AS SELECT k, ts, v FROM b_events") == []
    rows = _beeline_rows(server, """
        SELECT window_start, window_end, count(*) AS n, sum(v) AS total
        FROM hop(TABLE(client_view), 'ts', INTERVAL '10' MINUTES, INTERVAL '20' MINUTES)
        GROUP BY window_start, window_end
        ORDER BY window_start""")
    # By hand, b's rows (00:05, 00:25, 00:28) in 20-minute windows every 10 minutes.
    assert [(r["window_start"], r["window_end"], r["n"], r["total"]) for r in rows] == [
        ("2023-12-31 23:50:00.0", "2024-01-01 00:10:00.0", "1", "10"),
        ("2024-01-01 00:00:00.0", "2024-01-01 00:20:00.0", "1", "10"),
        ("2024-01-01 00:10:00.0", "2024-01-01 00:30:00.0", "2", "50"),
        ("2024-01-01 00:20:00.0", "2024-01-01 00:40:00.0", "2", "50"),
    ]


@DEPLOY
def test_a_wrong_argument_reaches_the_client_in_sqlwins_words(server):
    done = subprocess.run([str(_beeline()), "-u", server, "--silent=true", "-e",
                           "SELECT * FROM tumble(TABLE(events), 'ts', INTERVAL '-10' MINUTES);"],
                          env=_env(), capture_output=True, text=True, timeout=180)
    assert done.returncode != 0
    assert "sqlwin tumble: size must be positive, got INTERVAL '-10' MINUTE" in done.stdout + done.stderr


# --------------------------------------------------------------------------- before Spark starts


@pytest.mark.parametrize("argv, message", [
    (["--port", "70000"], "--port 70000 is not a port"),
    (["--port", "0"], "--port 0 is not a port"),
    (["--table", "events=no/such.csv"], "No such file for table events: no/such.csv"),
    (["--table", "events"], "--table events is not NAME=PATH"),
    (["--conf", "spark.sql.hive.thriftServer.singleSession=false"], "temporary functions of one session"),
    (["--conf", "nokey"], "--conf nokey is not KEY=VALUE"),
    (["--host", "no-such-host.invalid"], "--host no-such-host.invalid: no such address"),
    (["-i", "no/such/init.sql"], "Cannot read the initialization file no/such/init.sql"),
])
def test_a_wrong_command_line_is_refused_before_spark_starts(argv, message, capsys):
    assert main(["thriftserver", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and "starting Spark" not in err


def test_the_command_leaves_sqlwin_session_the_function(capsys):
    """Run in-process (a test, a notebook), the command must not leave `sqlwin.session` naming its module."""
    import sqlwin

    assert main(["thriftserver", "--port", "0"]) == 2
    assert callable(sqlwin.session)


def test_a_port_in_use_is_refused_before_spark_starts(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["thriftserver", "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"Cannot listen on 127.0.0.1:{port}" in err and "starting Spark" not in err


def test_a_bad_init_statement_is_refused_before_spark_starts(tmp_path, capsys):
    init = tmp_path / "init.sql"
    init.write_text("CREATE TEMP VIEW v AS SELECT 1;\nSELEC 2;\n")
    assert main(["thriftserver", "-i", str(init)]) == 2
    err = capsys.readouterr().err
    assert "line 2" in err and "starting Spark" not in err

"""The %%sqlwin magic, run by IPython itself: `%load_ext sqlwin`, then cells through `run_cell`.

The magic finds the test run's SparkSession as the active one; displays are captured with
IPython's own `capture_output`.
"""

from __future__ import annotations

import re
import shutil
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell  # the test extra installs IPython
from IPython.utils.capture import capture_output
from traitlets.config import Config

from sqlwin.errors import SqlwinUsageError, SqlwinValidationError

CLICKS = """
    SELECT * FROM VALUES
      ('u1', TIMESTAMP '2024-01-01 00:01:00'), ('u1', TIMESTAMP '2024-01-01 00:04:00'),
      ('u1', TIMESTAMP '2024-01-01 00:12:00'), ('u2', TIMESTAMP '2024-01-01 00:02:00')
    AS t(user_id, ts)"""


@pytest.fixture(scope="module")
def ip(spark):
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    result = shell.run_line_magic("load_ext", "sqlwin")
    assert result is None
    spark.sql(CLICKS).createOrReplaceTempView("nb_clicks")
    yield shell
    from sqlwin import jupyter

    for live in list(jupyter._STREAMS.values()):
        live.stop()
    InteractiveShell.clear_instance()


def test_a_cell_runs_with_variables_keeps_the_dataframe_and_shows_a_table(ip, spark):
    ip.user_ns.update(size="10 MINUTES", who="u1")
    with capture_output() as captured:
        result = ip.run_cell(
            "%%sqlwin -o per_window --limit 1\n"
            "SELECT user_id, window_start, count(*) AS clicks, NULL AS note\n"
            "FROM TUMBLE(TABLE nb_clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL {size})\n"
            "WHERE user_id = '{who}' AND '{{who}}' = '{{who}}'\n"
            "GROUP BY user_id, window_start, window_end ORDER BY window_start")
    assert result.success, result.error_in_exec
    frame = ip.user_ns["per_window"]
    assert frame.sparkSession is spark  # the active session, not a new one
    assert [tuple(r) for r in frame.selectExpr("user_id", "string(window_start)", "clicks").collect()] == [
        ("u1", "2024-01-01 00:00:00", 2), ("u1", "2024-01-01 00:10:00", 1)]
    [shown] = captured.outputs
    page = shown.data["text/html"]
    assert page.startswith('<table class="sqlwin-result"><thead><tr><th>user_id</th><th>window_start</th>'
                           "<th>clicks</th><th>note</th></tr></thead>")
    assert '<tr><td>u1</td><td>2024-01-01 00:00:00</td><td>2</td><td class="sqlwin-null">NULL</td></tr>' in page
    assert "00:10:00" not in page and "first 1 rows shown" in page  # --limit 1
    assert shown.data["text/plain"].splitlines()[2].split() == ["u1", "2024-01-01", "00:00:00", "2", "NULL"]


def test_a_cell_of_several_statements_shows_the_last(ip):
    with capture_output() as captured:
        result = ip.run_cell("%%sqlwin\nSET spark.sqlwin.nb_flag=a/b;\n"
                             "CREATE OR REPLACE TEMP VIEW nb_u2 AS SELECT * FROM nb_clicks WHERE user_id = 'u2';\n"
                             "SELECT count(*) AS n FROM nb_u2")
    assert result.success, result.error_in_exec
    [shown] = captured.outputs
    assert "<th>n</th>" in shown.data["text/html"] and "<td>1</td>" in shown.data["text/html"]
    with capture_output() as captured:
        assert ip.run_cell("%sqlwin SET spark.sqlwin.nb_flag").success  # the line form
    assert "<td>a/b</td>" in captured.outputs[0].data["text/html"]


def test_an_error_shows_sqlwins_message_and_place_without_a_traceback(ip):
    with capture_output() as captured:
        result = ip.run_cell("%%sqlwin\nSELECT 1 AS one;\nSELECT nosuch FROM nb_clicks")
    assert isinstance(result.error_in_exec, SqlwinValidationError)
    assert "SqlwinValidationError: Spark cannot run the query" in captured.stdout
    assert "(line 3, column 8, at 'nosuch')" in captured.stdout  # placed in the cell
    assert "Traceback" not in captured.stdout + captured.stderr and not captured.outputs

    with capture_output() as captured:
        result = ip.run_cell("%%sqlwin\nSELECT * FROM nb_clicks WHERE user_id = '{nobody}'")
    assert isinstance(result.error_in_exec, SqlwinUsageError)
    assert "No notebook variable nobody for {nobody} (line 2, column 42" in captured.stdout


def test_bad_options_are_usage_errors(ip):
    with capture_output() as captured:
        assert not ip.run_cell("%%sqlwin --no-such-option\nSELECT 1").success
        assert not ip.run_cell("%%sqlwin --stream\nSELECT 1").success
    assert "unrecognized arguments: --no-such-option" in captured.stderr
    assert "--stream needs --source, --sink, --checkpoint" in captured.stderr
    with capture_output() as captured:
        ip.run_cell("%sqlwin --stop nothing_running")
    assert "no running stream named nothing_running" in captured.stderr


def _wait_for(captured, pattern: str, timeout: float = 180):
    """The first display (or update) whose text matches, waiting for the stream's thread."""
    regex = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for output in list(captured.outputs):
            if regex.search(output.data["text/plain"]):
                return output
        time.sleep(0.2)
    shown = "\n".join(o.data["text/plain"] for o in captured.outputs[-5:])
    raise AssertionError(f"no display matched {pattern!r}; the last ones:\n{shown}")


def test_a_stream_shows_live_progress_until_stopped(ip, spark, tmp_path):
    source = tmp_path / "incoming"
    spark.sql(CLICKS).coalesce(1).write.parquet(str(source))
    ip.user_ns.update(source=str(source), sink=str(tmp_path / "results"), checkpoint=str(tmp_path / "ckpt"))
    with capture_output() as captured:
        result = ip.run_cell(
            "%%sqlwin --stream --source nb_live={source} --sink {sink} --checkpoint {checkpoint} -o live\n"
            "SELECT user_id, window_start, window_end, count(*) AS clicks\n"
            "FROM TUMBLE(TABLE nb_live PARTITION BY user_id WATERMARK ts DELAY OF INTERVAL 1 MINUTE,\n"
            "            DESCRIPTOR(ts), INTERVAL 10 MINUTES)\n"
            "GROUP BY user_id, window_start, window_end")
        assert result.success, result.error_in_exec
        handle = ip.user_ns["live"]
        assert handle.is_active
        first = captured.outputs[0]
        display_id = first.transient["display_id"]
        assert first.data["text/plain"].startswith("live: starting")
        running = _wait_for(captured, r"^live: running; batch 0, rows in 4, rows/s \d+, watermark \S.*, "
                                      r"open windows \d+, results \d+, late rows 0, rejected rows 0$")
        assert running.update and running.transient["display_id"] == display_id  # one display, updated
        assert "<th>open windows</th>" in running.data["text/html"]

        # A row of a window the watermark has passed: the display counts it late.
        late = tmp_path / "late"
        spark.sql("SELECT 'u1' AS user_id, TIMESTAMP '2024-01-01 00:02:00' AS ts").coalesce(1).write.parquet(str(late))
        shutil.move(str(next(late.glob("part-*.parquet"))), source / "late.parquet")
        _wait_for(captured, r"^live: running; batch 1, rows in 1, .*, late rows 1, rejected rows 0$")

        assert ip.run_cell("%sqlwin --stop live").success
        stopped = captured.outputs[-1]
        assert stopped.data["text/plain"].startswith("live: stopped; batch 1")
        assert stopped.transient["display_id"] == display_id
    assert not handle.is_active
    from sqlwin import jupyter

    assert "live" not in jupyter._STREAMS  # the name is free again

"""Spark Declarative Pipelines (docs/pipelines.md): the shipped example pipeline, run by the real
`spark-pipelines run` (it starts a Spark Connect server of its own), and what sqlwin.pipelines refuses.

The example's tables are checked against values worked out by hand from sql_examples/data/clicks.csv
(u1 clicks at 00:00, 00:10, 00:15, 00:50, 01:00, 01:30 on 2023-12-14), to which the test's copy adds a
click without a user (rejected) and, before a second run, later clicks for the stream.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sqlwin.pipelines as swp
from sqlwin.errors import SqlwinError, SqlwinUnsupportedError, SqlwinUsageError
from tests.support import background

ROOT = Path(__file__).resolve().parent.parent
CLI = Path(sys.executable).parent / "spark-pipelines"
CLICKS = "user_id STRING, id STRING, ts TIMESTAMP"


def _t(hhmm: str) -> dt.datetime:
    return dt.datetime(2023, 12, 14, int(hhmm[:2]), int(hhmm[3:]))


def _run(workdir: Path) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    started = time.monotonic()
    # A Hive metastore (Derby, in `workdir`) remembers the tables between runs: with Spark's in-memory
    # catalog a second run finds their directories but not the tables (LOCATION_ALREADY_EXISTS).
    command = [str(CLI), "--conf", "spark.ui.enabled=false", "--conf", "spark.sql.catalogImplementation=hive",
               "run", "--spec", "pipeline/spark-pipeline.yml"]
    done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)
    return done, time.monotonic() - started


def _table(workdir: Path, name: str, columns: list[str]) -> list[tuple]:
    """A table the pipeline wrote (parquet under ./spark-warehouse), as sorted tuples of `columns`."""
    import pyarrow.parquet as pq

    frame = pq.read_table(workdir / "spark-warehouse" / name).to_pandas()
    rows = [tuple(_value(v) for v in row) for row in frame[columns].itertuples(index=False)]
    return sorted(rows, key=repr)


def _value(v):
    if hasattr(v, "tolist"):  # an array column (numpy)
        return v.tolist()
    return None if v != v else (v.to_pydatetime() if hasattr(v, "to_pydatetime") else v)


SESSIONS = ["user_id", "window_start", "window_end", "clicks", "last_click"]
REJECTED = ["user_id", "id", "ts", "window_start", "reason"]
HOURLY = ["user_id", "window_start", "window_end", "clicks"]
ASSIGNED = ["id", "window_start", "window_end"]
STREAMED = ["user_id", "window_start", "window_end", "clicks", "last_click", "op", "firing"]
JOINED = ["user_id", "window_start", "clicks", "orders", "op", "firing"]
KNOWN = ["user_id", "window_start", "window_end", "clicks", "op", "firing"]
HOURS = ["window_start", "window_end", "clicks", "half_hours", "op", "firing"]
EXAMPLE_TABLES = {"click_sessions": SESSIONS, "rejected_clicks": REJECTED, "clicks_hourly": HOURLY,
                  "clicks_with_half_hour": ASSIGNED, "clicks_per_half_hour": STREAMED,
                  "clicks_and_orders": JOINED, "known_users_per_half_hour": KNOWN, "hours_of_half_hours": HOURS}


def example_runs(workdir: Path) -> list[tuple[subprocess.CompletedProcess, float, dict]]:
    """`spark-pipelines run` twice over a copy of sql_examples/pipeline in `workdir` (more clicks
    before the second): each run's process, seconds and the tables it left (none after a failed run,
    which ends it)."""
    shutil.copytree(ROOT / "sql_examples" / "pipeline", workdir / "pipeline")
    shutil.copytree(ROOT / "sql_examples" / "data", workdir / "data")
    spec = workdir / "pipeline" / "spark-pipeline.yml"
    spec.write_text(spec.read_text().replace("file:///tmp/sqlwin-pipeline-example/storage",
                                             (workdir / "storage").as_uri()))
    with (workdir / "data" / "clicks.csv").open("a") as clicks:
        clicks.write(",9Z,2023-12-14 00:20:00\n")  # no user: rejected where the user is the key
    runs = []
    for later in (None, "user_id,id,ts\nu1,4A,2023-12-14 02:10:00\nu1,4B,2023-12-14 00:40:00\n"
                        "u2,5A,2023-12-14 01:40:00\n"):
        if later is not None:
            (workdir / "data" / "clicks_later.csv").write_text(later)
        done, seconds = _run(workdir)
        tables = {name: _table(workdir, name, columns) for name, columns in EXAMPLE_TABLES.items()} \
            if done.returncode == 0 else {}
        runs.append((done, seconds, tables))
        if done.returncode != 0:
            break
    return runs


def refused_run(workdir: Path) -> tuple[subprocess.CompletedProcess, float]:
    """`spark-pipelines run` of a pipeline whose query function calls sw.sql."""
    (workdir / "pipeline" / "transformations").mkdir(parents=True)
    (workdir / "pipeline" / "spark-pipeline.yml").write_text(
        f"name: refused\nstorage: {(workdir / 'storage').as_uri()}\n"
        "libraries:\n  - glob:\n      include: transformations/**\n")
    (workdir / "pipeline" / "transformations" / "sessions.py").write_text(
        "from pyspark import pipelines as dp\nimport sqlwin\n\n"
        "@dp.materialized_view\ndef sessions():\n"
        "    return sqlwin.attach(spark).sql('SELECT user_id, count(*) AS n FROM SESSION(TABLE clicks PARTITION BY '\n"
        "        'user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES) GROUP BY user_id, window_start, window_end')\n")
    return _run(workdir)


RUNS = {"test_the_example_pipeline_writes_sqlwin_windows": ("pipelines: the example", example_runs),
        "test_sw_sql_in_a_query_function_says_what_to_use_instead": ("pipelines: refused", refused_run)}


def start_in_background(items, submit) -> None:
    """The `spark-pipelines run` processes from the start of the run (tests/support/background.py)."""
    import importlib.util
    import tempfile

    if importlib.util.find_spec("yaml") is None:
        return
    for name in sorted({item.originalname for item in items} & set(RUNS)):
        job, function = RUNS[name]
        workdir = Path(tempfile.mkdtemp(prefix="sqlwin-pipelines-"))
        submit(job, lambda function=function, workdir=workdir: function(workdir))


def _ran(test: str, tmp_path: Path):
    """The test's runs: taken from the background, or run now."""
    job, function = RUNS[test]
    ran = background.take(job)
    return ran if ran is not None else function(tmp_path)


@pytest.mark.deploy
def test_the_example_pipeline_writes_sqlwin_windows(tmp_path):
    """`spark-pipelines run` twice over a copy of sql_examples/pipeline: exit 0 both times, each table
    as computed by hand; the second run's stream closes the windows the first left open, from the
    state the first kept, and drops a click for a window already closed (late)."""
    pytest.importorskip("yaml", reason="spark-pipelines needs PyYAML: pip install -e '.[pipelines]'")
    runs = _ran("test_the_example_pipeline_writes_sqlwin_windows", tmp_path)
    done, seconds, tables = runs[0]
    print(f"spark-pipelines run: exit {done.returncode} in {seconds:.0f} s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr

    # Sessions 30 minutes apart (swp.materialized_view): 00:45 ends the first (00:15 + 30 min), 00:50
    # starts the next; 01:30 is exactly one gap after 01:00, so it starts a session of its own.
    assert tables["click_sessions"] == [
        ("u1", _t("00:00"), _t("00:45"), 3, _t("00:15")),
        ("u1", _t("00:50"), _t("01:30"), 2, _t("01:00")),
        ("u1", _t("01:30"), _t("02:00"), 1, _t("01:30")),
    ]
    # LATE ROWS INTO rejected_clicks: a materialized view of its own, the click without a user.
    assert tables["rejected_clicks"] == [(None, "9Z", _t("00:20"), None, "null_key")]
    # The registered tumble() in the pipeline's SQL file: hours, grouped by user (NULL is a group
    # there: tumble has no PARTITION BY).
    assert tables["clicks_hourly"] == sorted([
        (None, _t("00:00"), _t("01:00"), 1),
        ("u1", _t("00:00"), _t("01:00"), 4),
        ("u1", _t("01:00"), _t("02:00"), 2),
    ], key=repr)
    # The registered tumble() over a stream in a SQL file (CREATE STREAMING TABLE): each click with its
    # half hour, the click without a user included (tumble has no key to reject it by).
    half_hours = [("1A", _t("00:00"), _t("00:30")), ("1B", _t("00:00"), _t("00:30")), ("1C", _t("00:00"), _t("00:30")),
                  ("2A", _t("00:30"), _t("01:00")), ("2B", _t("01:00"), _t("01:30")), ("3A", _t("01:30"), _t("02:00")),
                  ("9Z", _t("00:00"), _t("00:30"))]
    assert tables["clicks_with_half_hour"] == sorted(half_hours, key=repr)
    # The stream (swp.streaming_table): one micro-batch of all the clicks; u1's watermark after it is
    # 01:30 - 5 min = 01:25, which closes [00:00, 00:30) and [00:30, 01:00) only.
    first = [("u1", _t("00:00"), _t("00:30"), 3, _t("00:15"), "+I", "on_time"),
             ("u1", _t("00:30"), _t("01:00"), 1, _t("00:50"), "+I", "on_time")]
    assert tables["clicks_per_half_hour"] == first
    # Beyond one window function, in streaming tables too. The windowed join of clicks and orders: the
    # clicks' watermark 01:25 (one for the stream), the orders' 02:10 - 5 min = 02:05, the join's the
    # earlier: [00:00, 00:30) and [00:30, 01:00) close; the click without a user is rejected (a NULL key).
    joined = [("u1", _t("00:00"), ["1A", "1B", "1C"], ["o1"], "+I", "on_time"),
              ("u1", _t("00:30"), ["2A"], ["o2"], "+I", "on_time"),
              ("u2", _t("00:00"), None, ["o4"], "+I", "on_time")]
    assert tables["clicks_and_orders"] == sorted(joined, key=repr)
    # The WITH clause keeps the clicks with a user; one watermark, 01:25.
    known = [("u1", _t("00:00"), _t("00:30"), 3, "+I", "on_time"), ("u1", _t("00:30"), _t("01:00"), 1, "+I", "on_time")]
    assert tables["known_users_per_half_hour"] == known
    # The chain: the half hours [00:00, 00:30) (4 clicks, the one without a user too: no key here) and
    # [00:30, 01:00) (1) close at 01:25, their window_time 00:29:59.999999 and 00:59:59.999999; the
    # hour's watermark follows them (the newest + 1 µs, 01:00), which closes [00:00, 01:00): 5 clicks.
    hours = [(_t("00:00"), _t("01:00"), 5, 2, "+I", "on_time")]
    assert tables["hours_of_half_hours"] == hours

    # More clicks arrive (example_runs). u1 at 02:10 moves u1's watermark to 02:05: [01:00, 01:30) and
    # [01:30, 02:00) close with the clicks of the first run (kept in the flow's state). u1 at 00:40 is
    # late: its window [00:30, 01:00) closed in the first run. u2 at 01:40: u2's own watermark (01:35, a
    # clock per user) leaves its window open.
    done, seconds, tables = runs[1]
    print(f"spark-pipelines run (again): exit {done.returncode} in {seconds:.0f} s")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert tables["clicks_per_half_hour"] == sorted(first + [
        ("u1", _t("01:00"), _t("01:30"), 1, _t("01:00"), "+I", "on_time"),
        ("u1", _t("01:30"), _t("02:00"), 1, _t("01:30"), "+I", "on_time"),
    ], key=repr)
    # The join: the clicks' watermark moves to 02:05 (u1 at 02:10), the orders' stays 02:05 (kept in the
    # flow's state): [01:00, 01:30) and [01:30, 02:00) close, with no order; 00:40 is late for the join.
    assert tables["clicks_and_orders"] == sorted(joined + [
        ("u1", _t("01:00"), ["2B"], None, "+I", "on_time"), ("u1", _t("01:30"), ["3A"], None, "+I", "on_time"),
        ("u2", _t("01:30"), ["5A"], None, "+I", "on_time")], key=repr)
    # One watermark for the stream (02:05) closes u2's half hour too, unlike the clock per user above.
    assert tables["known_users_per_half_hour"] == sorted(known + [
        ("u1", _t("01:00"), _t("01:30"), 1, "+I", "on_time"), ("u1", _t("01:30"), _t("02:00"), 1, "+I", "on_time"),
        ("u2", _t("01:30"), _t("02:00"), 1, "+I", "on_time")], key=repr)
    # The chain's first stage closes [01:00, 01:30) (1 click) and [01:30, 02:00) (2: u1's, u2's) at 02:05;
    # the hour [01:00, 02:00) closes at the upstream watermark 02:00. 00:40 was late for the half hour.
    assert tables["hours_of_half_hours"] == sorted(hours + [(_t("01:00"), _t("02:00"), 3, 2, "+I", "on_time")],
                                                   key=repr)
    assert tables["clicks_with_half_hour"] == sorted(half_hours + [
        ("4A", _t("02:00"), _t("02:30")), ("4B", _t("00:30"), _t("01:00")), ("5A", _t("01:30"), _t("02:00"))], key=repr)


@pytest.mark.deploy
def test_sw_sql_in_a_query_function_says_what_to_use_instead(tmp_path):
    """sw.sql in a @dp.materialized_view function stops the pipeline with sqlwin's message (it said
    "Unknown table clicks": the schema lookup is an analysis, which a query function may not do)."""
    pytest.importorskip("yaml", reason="spark-pipelines needs PyYAML: pip install -e '.[pipelines]'")
    done, seconds = _ran("test_sw_sql_in_a_query_function_says_what_to_use_instead", tmp_path)
    print(f"spark-pipelines run (refused): exit {done.returncode} in {seconds:.0f} s")
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "sqlwin.errors.SqlwinUsageError: sw.sql / sw.stream cannot run in a pipeline's query function" in output
    assert "swp.materialized_view" in output and "Unknown table" not in output


# --------------------------------------------------------------------------- refused, and why


@pytest.fixture()
def arriving(spark, tmp_path):
    (tmp_path / "in").mkdir()
    return spark.readStream.schema(CLICKS).option("header", True).csv(str(tmp_path / "in"))


STREAM_QUERY = """SELECT user_id, window_start, window_end, count(*) AS clicks
FROM TUMBLE(TABLE arriving PARTITION BY user_id WATERMARK ts DELAY OF INTERVAL 5 MINUTES, DESCRIPTOR(ts),
            INTERVAL 30 MINUTES)
GROUP BY user_id, window_start, window_end"""


def test_late_rows_into_a_streaming_table_is_refused_with_the_reason(spark, arriving):
    with pytest.raises(SqlwinUnsupportedError) as refused:
        swp.streaming_table(spark, "t", STREAM_QUERY + " EMIT FINAL LATE ROWS INTO late_clicks",
                            sources={"arriving": arriving})
    message = str(refused.value)
    assert "LATE ROWS INTO late_clicks" in message and "a flow writes one table" in message
    assert "line 2, column 6" in message and "late_sink" in message


def test_a_streaming_table_over_a_pipeline_dataset_is_refused_with_the_reason(spark):
    with pytest.raises(SqlwinUsageError) as refused:
        swp.streaming_table(spark, "t", STREAM_QUERY, sources={})
    message = str(refused.value)
    assert "arriving is not one of the streaming table's sources" in message
    assert "TABLE_OR_VIEW_NOT_FOUND" in message and "line 2, column" in message


def test_a_batch_source_for_a_streaming_table_is_refused(spark):
    with pytest.raises(SqlwinUsageError, match="not a streaming DataFrame"):
        swp.streaming_table(spark, "t", STREAM_QUERY, sources={"arriving": spark.range(1)})


def test_a_materialized_view_says_which_emit_it_cannot_hold(spark):
    with pytest.raises(SqlwinError) as refused:
        swp.query(spark, STREAM_QUERY.replace("arriving", "clicks") + " EMIT CHANGES")
    assert "EMIT CHANGES" in str(refused.value) or "complete-input" in str(refused.value)


def test_an_unnamed_item_needs_an_alias_where_spark_cannot_be_asked(spark):
    with pytest.raises(SqlwinUsageError) as refused:
        swp.query(spark, "SELECT user_id, window_start, count(*) FROM TUMBLE(TABLE clicks PARTITION BY user_id, "
                         "DESCRIPTOR(ts), INTERVAL 30 MINUTES) GROUP BY user_id, window_start, window_end")
    message = str(refused.value)
    assert "An item without a name" in message and "line 1, column 31" in message
    assert "count(*) AS clicks" in message


def test_declared_columns_let_spark_name_an_unaliased_item_and_type_the_time(spark):
    """With the input's columns declared, an item without an alias gets the name Spark gives it (asked
    of Spark over an empty stand-in when the dataset is defined), and an epoch-ms time column is read
    as one, as sw.sql reads them."""
    complete = swp._complete(spark, "SELECT sensor, window_start, max(temperature) FROM TUMBLE(TABLE temps "
                                    "PARTITION BY sensor, DESCRIPTOR(timestamp), INTERVAL 1 HOUR) "
                                    "GROUP BY sensor, window_start, window_end",
                             {"temps": "sensor STRING, temperature INT, timestamp BIGINT"}, analyse=True)
    assert "AS `max(temperature)`" in complete.sql
    assert "unix_micros" not in complete.sql  # epoch ms, not a TIMESTAMP
    assert list(complete.sources.values()) == ["temps"]  # read by its name when the pipeline runs


def test_declared_columns_in_a_query_function_are_read_without_asking_spark(spark):
    """swp.query runs inside a query function, where even parsing a DDL string would be an analysis:
    the columns' types are read without Spark (an epoch-ms time column, a type under another name)."""
    complete = swp._complete(spark, "SELECT sensor, window_start, max(temperature) AS top FROM TUMBLE(TABLE temps "
                                    "PARTITION BY sensor, DESCRIPTOR(timestamp), INTERVAL 1 HOUR) "
                                    "GROUP BY sensor, window_start, window_end",
                             {"temps": "sensor STRING, temperature DECIMAL(5, 1), timestamp LONG"}, analyse=False)
    assert "unix_micros" not in complete.sql and "AS top" in complete.sql


def test_sql_around_a_stage_in_a_streaming_table_is_refused_with_the_reason(spark, arriving):
    """A flow returns one streaming DataFrame: the SQL a stream runs per micro-batch over a stage's results
    (here a window Top-N) has no place there; the hint says where it goes instead."""
    top = ("SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY window_start, window_end ORDER BY clicks DESC) "
           f"AS n FROM ({STREAM_QUERY.replace('PARTITION BY user_id ', '')})) WHERE n <= 1")
    with pytest.raises(SqlwinUnsupportedError) as refused:
        swp.streaming_table(spark, "t", top, sources={"arriving": arriving})
    message = str(refused.value)
    assert "a flow has no step per micro-batch" in message and "swp.materialized_view" in message
    assert "line 1, column" in message and "not built" not in message


def test_a_with_clause_over_a_table_that_is_no_source_is_refused_in_sqlwins_words(spark, arriving):
    """A WITH clause over the sources runs (the example pipeline); one reading something else is Spark's
    analysis error at definition time, said as sqlwin says Spark's errors (no JVM stack)."""
    query = ("WITH known AS (SELECT * FROM no_such_clicks WHERE user_id IS NOT NULL) "
             + STREAM_QUERY.replace("TABLE arriving", "TABLE known"))
    with pytest.raises(SqlwinError) as refused:
        swp.streaming_table(spark, "t", query, sources={"arriving": arriving})
    assert "no_such_clicks" in str(refused.value) and "at org.apache" not in str(refused.value)


def test_a_replay_in_a_materialized_view_is_refused_with_the_reason(spark):
    replay = ("SELECT user_id, window_start, window_end, count(*) AS clicks FROM TUMBLE(TABLE clicks PARTITION BY "
              "user_id WITH (arrival_order = id), DESCRIPTOR(ts), INTERVAL 30 MINUTES) "
              "GROUP BY user_id, window_start, window_end")
    with pytest.raises(SqlwinUnsupportedError) as refused:
        swp.query(spark, replay, {"clicks": CLICKS})
    message = str(refused.value)
    assert "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION" in message and "does not resolve" in message
    assert "line 1, column" in message and "not built" not in message

"""One clock for the stream over every bucket (issue 22): the same answer at any parallelism.

A stream with one watermark for the stream (no PARTITION BY) ran in one bucket, and its replay in
one partition. Now its rows are spread by their GROUP BY keys (a join's key; each stage's own keys
in a chain): in a stream each input partition sends every bucket its batch's event-time extremes
(operator.clock_packer), in a replay every partition replays the batches in which the stream's
clock moves (replay._stream_clock); each bucket commits the stream's clock. Random rows (out
of order, late, NULL keys and times) for TUMBLE, HOP, SESSION, COUNT_WINDOW, a LEFT join, a chain,
EMIT CHANGES / EARLY ... RETRACTING, both runtimes and a processing-time idle timeout: the replay over 8
partitions and the stream with 1, 2, 4 or 8 buckets (and a restart) give exactly the replay over one
partition's results, late and rejected rows.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import pytest

from sqlwin.testing import feed_stream
from tests.support.random_streams import random_stream

ARRIVAL = "WITH (arrival_order = arrival, arrival_batch = batch)"
TUMBLE = f"TUMBLE(TABLE {{t}} WATERMARK ts DELAY OF INTERVAL 30 SECONDS {ARRIVAL}, DESCRIPTOR(ts), INTERVAL 2 MINUTES)"
QUERIES = {
    "tumble changes": ("SELECT k, window_start, window_end, count(*) AS n, collect_list(id) AS ids "
                       f"FROM {TUMBLE.format(t='spread')} GROUP BY k, window_start, window_end EMIT CHANGES "
                       "LATE ROWS INTO spread_late"),
    "session retracting": ("SELECT k, window_start, window_end, count(*) AS n, max(v) AS top "
                           f"FROM SESSION(TABLE spread WATERMARK ts DELAY OF INTERVAL 20 SECONDS {ARRIVAL}, "
                           "DESCRIPTOR(ts), INTERVAL 40 SECONDS) GROUP BY k, window_start, window_end "
                           "EMIT EARLY EVERY 2 ROWS RETRACTING LATE ROWS INTO spread_late"),
    "hop collect": ("SELECT k, window_start, window_end, collect_list(id) AS ids "
                    f"FROM HOP(TABLE spread WATERMARK ts DELAY OF INTERVAL 10 SECONDS {ARRIVAL}, DESCRIPTOR(ts), "
                    "INTERVAL 1 MINUTE, INTERVAL 3 MINUTES) GROUP BY k, window_start, window_end LATE ROWS INTO spread_late"),
    # The vectorised runtimes (count / sum / max / avg / max_by, EMIT FINAL), their state in segments:
    # min_by / max_by with timestamps, ties (equal v, equal ts) going to the earliest row.
    "tumble vectorised": ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, avg(v) AS mean, "
                          "max_by(id, ts) AS newest, min_by(ts, v) AS low_at, max_by(ts, v % 7) AS top_at "
                          f"FROM {TUMBLE.format(t='spread')} GROUP BY k, window_start, window_end "
                          "LATE ROWS INTO spread_late"),
    "session vectorised": ("SELECT k, window_start, window_end, count(*) AS n, max(v) AS top, max_by(ts, v % 5) AS top_at "
                           f"FROM SESSION(TABLE spread WATERMARK ts DELAY OF INTERVAL 20 SECONDS {ARRIVAL}, "
                           "DESCRIPTOR(ts), INTERVAL 40 SECONDS) GROUP BY k, window_start, window_end "
                           "LATE ROWS INTO spread_late"),
    "count window": ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total "
                     f"FROM COUNT_WINDOW(TABLE spread WATERMARK ts DELAY OF INTERVAL 30 SECONDS {ARRIVAL}, "
                     "DESCRIPTOR(ts), 3) GROUP BY k, window_start, window_end LATE ROWS INTO spread_late"),
    # A windowed join: its rows spread by the join key, a clock per side.
    "left join": (f"SELECT l.k, l.window_start, l.id AS lid, r.id AS rid FROM {TUMBLE.format(t='spread')} l "
                  f"LEFT JOIN {TUMBLE.format(t='spread_r')} r ON l.k = r.k AND l.window_start = r.window_start "
                  "AND l.window_end = r.window_end LATE ROWS INTO spread_late"),
    # A chain: each stage spread by its own keys, stage 2 told the extremes of stage 1's results.
    "chain": ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n "
              f"FROM {TUMBLE.format(t='spread')} GROUP BY k, window_start, window_end, window_time) "
              "SELECT k, window_start, window_end, sum(n) AS total FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), "
              "INTERVAL 6 MINUTES) GROUP BY k, window_start, window_end LATE ROWS INTO spread_late"),
    # A processing-time idle timeout (the recorded arrival times): a silent stream closes its windows,
    # its clock jumping past the last open window of every key -- one bucket, the same answer.
    "idle": ("SELECT k, window_start, window_end, count(*) AS n, collect_list(id) AS ids "
             "FROM SESSION(TABLE spread WATERMARK ts DELAY OF INTERVAL 20 SECONDS WITH (arrival_order = arrival, "
             "arrival_batch = batch, arrival_time = at, idle_timeout = INTERVAL 3 MINUTES), DESCRIPTOR(ts), "
             "INTERVAL 2 MINUTES) GROUP BY k, window_start, window_end LATE ROWS INTO spread_late"),
    # No GROUP BY key (Nexmark q7's shape): partial aggregates per bucket, merged per window. max_by's
    # ordering value is made unique (v * 1000 + id): with ties any of the tied rows is right.
    "no key": ("SELECT window_start, window_end, count(*) AS n, count(v) AS nv, sum(v) AS total, max(v) AS top, "
               "min(v) AS low, max_by(id, v * 1000 + id) AS best, min_by(k, v * 1000 + id) AS worst, "
               "max_by(ts, v * 1000 + id) AS best_at, avg(v) AS mean "
               f"FROM {TUMBLE.format(t='spread')} GROUP BY window_start, window_end LATE ROWS INTO spread_late"),
    # An event-time idle timeout with a clock per key: each key judged against the stream's newest time.
    "idle per key": ("SELECT k, window_start, window_end, count(*) AS n, collect_list(id) AS ids "
                     "FROM SESSION(TABLE spread PARTITION BY k WATERMARK ts DELAY OF INTERVAL 20 SECONDS WITH ("
                     "arrival_order = arrival, arrival_batch = batch, idle_timeout = INTERVAL 4 MINUTES, "
                     "idle_clock = 'event_time'), DESCRIPTOR(ts), INTERVAL 3 MINUTES) GROUP BY k, window_start, "
                     "window_end LATE ROWS INTO spread_late"),
}


# Each stream costs the suite ~10 s: one each, with 1, 2, 4 or 8 buckets; the shapes in RESTART
# stop after the third batch and start again from their checkpoint (each restart costs ~3 s).
BUCKETS = {"tumble changes": 8, "session retracting": 2, "hop collect": 4, "tumble vectorised": 1,
           "session vectorised": 8, "count window": 2, "left join": 8, "chain": 2, "idle": 2,
           "idle per key": 8, "no key": 8}

RESTART = {"session retracting", "session vectorised", "left join", "chain", "idle per key", "no key"}


def _rows(seed: int, first_id: int) -> list[tuple]:
    """160 rows, 20 a batch: a clock moving 0-20 s a row, one row in five up to 5 minutes behind it,
    3 % NULL times, keys a-f and NULL; arrival 40 s apart, a pause of 5 minutes after batch 5 (a
    processing-time idle timeout fires). tests/support/random_streams.py."""
    return random_stream(seed, 160, keys=("a", "b", "c", "d", "e", "f", None), start=dt.datetime(2024, 1, 1),
                         step_s=(0, 20), late=0.2, behind_s=(0, 300), null_time=0.03, far_past=0, far_future=0,
                         null_key=0, twins=0, shuffle=False, batch_size=20, arrival_gap_s=40, pause_s=300,
                         pause_after_batch=5, first_id=first_id)


@pytest.fixture(scope="module")
def spread_table(spark):
    tables = {}
    for name, seed, first in (("spread", 22, 0), ("spread_r", 23, 1000)):
        frame = spark.createDataFrame(_rows(seed, first), "id INT, k STRING, ts TIMESTAMP, v INT, arrival INT, batch INT, "
                                      "at TIMESTAMP")
        frame.createOrReplaceTempView(name)
        tables[name] = frame
    return tables


def _key(row) -> str:
    return repr(tuple(sorted(v) if isinstance(v, list) else v for v in row))


def _replay(sw, spark, query: str, partitions: int) -> tuple[list, list]:
    """The replay's results (without emit_seq: each bucket numbers its own) and late rows, with
    `partitions` shuffle partitions: the one-clock replay spread over that many."""
    before = spark.conf.get("spark.sql.shuffle.partitions")
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    try:
        replay = sw.sql(query)
        columns = [c for c in replay.columns if c != "emit_seq"]
        return (sorted(_key(r) for r in replay.select(*columns).collect()),
                sorted(_key(r) for r in spark.table("spread_late").collect()))
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", before)


# Run in the long sweep only (SQLWIN_SPREAD_ALL=1), to keep the suite under its 20 minutes: EMIT
# CHANGES over one clock is in tests/test_conservation.py too, and a processing-time idle timeout on
# one clock runs in one bucket (the path every stream took before).
LONG_ONLY = {"tumble changes", "idle"}


def _long_only(shape: str) -> bool:
    return shape in LONG_ONLY and not os.environ.get("SQLWIN_SPREAD_ALL")


def _feed(spark, spread_table, shape: str, workdir: str):
    """The stream of `shape` (run ahead: tests/support/ahead.py) in a SparkSession of its own: the
    test's replays set the shuffle partitions of the run's session meanwhile."""
    import sqlwin

    if _long_only(shape):
        return None
    query = QUERIES[shape]
    tables = {n: spread_table[n] for n in ("spread", "spread_r") if f"TABLE {n} " in query or f"TABLE {n}," in query}
    fed = feed_stream(sqlwin.attach(spark.newSession()), query, tables if len(tables) > 1 else tables["spread"],
                      None if len(tables) > 1 else "spread", "batch", "arrival", late=True, buckets=BUCKETS[shape],
                      workdir=workdir, restart_after=3 if shape in RESTART else None)
    return fed, Path(workdir)


@pytest.mark.parametrize("shape", QUERIES)
def test_a_one_clock_stream_gives_one_answer_at_any_parallelism(sw, spark, spread_table, ahead, request, shape):
    streamed = ahead.stream(request, lambda p, workdir: _feed(spark, spread_table, p["shape"], workdir))
    if _long_only(shape):
        pytest.skip("long run: SQLWIN_SPREAD_ALL=1")
    query = QUERIES[shape]
    expected, expected_late = _replay(sw, spark, query, 1)  # one partition: the reference
    assert expected and expected_late
    assert _replay(sw, spark, query, 8) == (expected, expected_late)  # a replay over 8 partitions
    buckets = BUCKETS[shape]
    fed, workdir = streamed.result()
    names = fed.schema.fieldNames()
    rows = sorted(_key(tuple(v for n, v in zip(names, r) if n != "emit_seq")) for r in fed.rows)
    assert rows == expected, buckets
    assert sorted(_key(r) for r in fed.late_rows) == expected_late, buckets
    stored = json.loads((workdir / "checkpoint" / "sqlwin.json").read_text())
    assert stored["stream_clock_spread"] is True  # chosen for the checkpoint (used where the clock combines)
    progress = json.loads((workdir / "checkpoint" / "sqlwin-progress.json").read_text())
    ran = len([b for b in progress if b != "-1"])
    # every bucket ran, each with its keys (a chain: two stages; an idle timeout: one bucket)
    assert ran == {"chain": 2 * buckets, "idle": 1}.get(shape, buckets), ran


def test_explain_says_how_a_one_clock_stream_is_spread_or_why_not(sw, spread_table):
    assert "one clock for the stream: each partition also replays every batch" in str(sw.explain(QUERIES["hop collect"]))
    no_key = str(sw.explain(QUERIES["no key"], stream=True))
    assert "partial aggregates" in no_key and "max_by(__agg5, __agg6)" in no_key, no_key
    general = str(sw.explain(QUERIES["tumble changes"], stream=True))
    assert "by the GROUP BY keys; one clock for the stream" in general
    vectorised = str(sw.explain("SELECT k, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE spread WATERMARK ts "
                            "DELAY OF INTERVAL 30 SECONDS, DESCRIPTOR(ts), INTERVAL 2 MINUTES) "
                            "GROUP BY k, window_start, window_end", stream=True))
    assert "by the GROUP BY keys; one clock for the stream" in vectorised and "vectorised runtime" in vectorised
    assert "vectorised runtime" in str(sw.explain(QUERIES["tumble vectorised"], stream=True))  # max_by over timestamps
    oldest = str(sw.explain("SELECT k, window_start, window_end, collect_list(id) AS ids FROM TUMBLE(TABLE spread "
                        "WATERMARK ts DELAY OF INTERVAL 30 SECONDS WITH (watermark_strategy = 'min_event_time'), "
                        "DESCRIPTOR(ts), INTERVAL 2 MINUTES) GROUP BY k, window_start, window_end", stream=True))
    assert "'min_event_time' clock" in oldest


def test_the_packing_step_sends_every_bucket_the_batchs_extremes_of_rows_that_move_a_clock():
    # Without Spark: one Arrow batch of a join's input (side in __a0), NULL keys and times left out.
    import pyarrow as pa

    from sqlwin.spark.operator import clock_packer, stream_bounds_of

    batch = pa.RecordBatch.from_pydict({
        "__bucket": pa.array([0, 5, 5, 0, 5], pa.int32()), "__k0": ["a", "b", None, "c", "d"],
        "__time": pa.array([30, 10, 1, None, 50], pa.int64()), "__a0": pa.array([0, 1, 0, 0, 1], pa.int32()),
        "__ptime": pa.array([None, 3, 7, None, 2], pa.int64())})
    out = pa.Table.from_batches(list(clock_packer([0, 5, 9], 1, "__a0")(iter([batch])))).to_pandas()
    for bucket in (0, 5, 9):
        rows, bounds, ptime = stream_bounds_of(out[out["__bucket"] == bucket])
        assert bounds == {0: (30, 30), 1: (10, 50)}  # side 0: a@30 (NULL key, NULL time left out)
        assert ptime == 7  # the newest arrival time of every row
        assert len(rows) == {0: 1, 5: 1, 9: 0}[bucket]  # its data blob, if it has rows


# Nexmark q7's shape with its late rows only counted: each input partition aggregates its rows per
# bucket and pane before the stateful stage (sqlwin/spark/pre_aggregation.py), and the operator
# counts each row of partials as the rows it stands for. One max_by winner (min_by beside it would
# pick another row: that query keeps its rows, as "no key" above).
COUNTED = ("SELECT window_start, window_end, count(*) AS n, count(v) AS nv, sum(v) AS total, max(v) AS top, "
           "min(v) AS low, max_by(id, v * 1000 + id) AS best, max_by(ts, v * 1000 + id) AS best_at, avg(v) AS mean "
           f"FROM {TUMBLE.format(t='spread')} GROUP BY window_start, window_end")


def test_a_no_key_stream_aggregates_each_partition_before_the_operator_and_counts_every_row(
        sw, spark, spread_table, tmp_path):
    expected, expected_late = _replay(sw, spark, COUNTED + " LATE ROWS INTO spread_late", 1)
    assert expected and expected_late
    explained = str(sw.explain(COUNTED, stream=True))
    assert "per bucket and pane of 2 minutes" in explained, explained
    workdir = tmp_path / "pre"
    fed = feed_stream(sw, COUNTED, spread_table["spread"], "spread", "batch", "arrival", buckets=8,
                      workdir=str(workdir), restart_after=3)
    names = fed.schema.fieldNames()
    assert sorted(_key(tuple(v for n, v in zip(names, r) if n != "emit_seq")) for r in fed.rows) == expected
    stored = json.loads((workdir / "checkpoint" / "sqlwin.json").read_text())
    assert stored["pre_aggregation"] is True
    # the partials merged on the driver (spark/driver_state.py): no stateful operator in Spark's
    # checkpoint, a snapshot per micro-batch in sqlwin's (the last few kept)
    assert stored["driver_state"] is True and "on the driver, in the sink's foreachBatch" in explained
    assert not (workdir / "checkpoint" / "spark" / "state").exists()
    snapshots = sorted(int(p.name) for p in (workdir / "checkpoint" / "sqlwin-driver-state").iterdir())
    commits = [int(p.name) for p in (workdir / "checkpoint" / "spark" / "commits").iterdir() if p.name.isdigit()]
    assert snapshots and snapshots[-1] == max(commits)  # every micro-batch, the end of input's too
    # every row accounted for: 160 rows, the replay's late rows (one window each) and its rejected
    # rows (3 % without a time) -- LATE ROWS INTO holds both
    untimed = sum(1 for r in spread_table["spread"].collect() if r.ts is None)
    assert untimed > 0 and len(expected_late) > untimed
    status = fed.status
    assert (status["rows"], status["late_rows"], status["rejected_rows"]) == \
        (160, len(expected_late) - untimed, untimed), status

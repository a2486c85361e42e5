"""One clock for the stream over every bucket (issue 22): the same answer at any parallelism.

A stream with one watermark for the stream (no PARTITION BY) ran in one bucket. Where the general
runtime runs it, its rows are now spread over the buckets by their GROUP BY keys, and each input
partition sends every bucket its batch's event-time extremes (operator.clock_packer): each bucket
commits the stream's clock. A stream of random rows (out of order, late, NULL keys and times) run
with 2, 4 and 8 buckets and a restart must give exactly its replay's results, late and rejected rows
(a replay runs one clock in one partition).
"""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest

from sqlwin.testing import feed_stream

ARRIVAL = "WITH (arrival_order = arrival, arrival_batch = batch)"
QUERIES = {
    "tumble changes": ("SELECT k, window_start, window_end, count(*) AS n, collect_list(id) AS ids "
                       f"FROM TUMBLE(TABLE spread WATERMARK ts DELAY OF INTERVAL 30 SECONDS {ARRIVAL}, DESCRIPTOR(ts), "
                       "INTERVAL 2 MINUTES) GROUP BY k, window_start, window_end EMIT CHANGES LATE ROWS INTO spread_late"),
    "session retracting": ("SELECT k, window_start, window_end, count(*) AS n, max(v) AS top "
                           f"FROM SESSION(TABLE spread WATERMARK ts DELAY OF INTERVAL 20 SECONDS {ARRIVAL}, "
                           "DESCRIPTOR(ts), INTERVAL 40 SECONDS) GROUP BY k, window_start, window_end "
                           "EMIT EARLY EVERY 2 ROWS RETRACTING LATE ROWS INTO spread_late"),
    "hop collect": ("SELECT k, window_start, window_end, collect_list(id) AS ids "
                    f"FROM HOP(TABLE spread WATERMARK ts DELAY OF INTERVAL 10 SECONDS {ARRIVAL}, DESCRIPTOR(ts), "
                    "INTERVAL 1 MINUTE, INTERVAL 3 MINUTES) GROUP BY k, window_start, window_end LATE ROWS INTO spread_late"),
}


# Each stream costs the suite ~10 s: one each, with 2, 4 and 8 buckets.
BUCKETS = {"tumble changes": (8,), "session retracting": (2,), "hop collect": (4,)}


@pytest.fixture(scope="module")
def spread_table(spark):
    rng = random.Random(22)
    rows, clock = [], 0
    for i in range(240):
        clock += rng.randrange(0, 20)
        behind = rng.randrange(0, 300) if rng.random() < 0.2 else 0
        ts = None if rng.random() < 0.03 else dt.datetime(2024, 1, 1) + dt.timedelta(seconds=max(0, clock - behind))
        rows.append((i, rng.choice(["a", "b", "c", "d", "e", "f", None]), ts, rng.randrange(100), i, i // 20))
    frame = spark.createDataFrame(rows, "id INT, k STRING, ts TIMESTAMP, v INT, arrival INT, batch INT")
    frame.createOrReplaceTempView("spread")
    return frame


def _key(row) -> str:
    return repr(tuple(sorted(v) if isinstance(v, list) else v for v in row))


@pytest.mark.parametrize("shape", QUERIES)
def test_a_one_clock_stream_gives_its_replays_rows_at_any_parallelism(sw, spark, spread_table, tmp_path, shape):
    query = QUERIES[shape]
    replay = sw.sql(query)
    # Without emit_seq: each bucket numbers its own emissions.
    columns = [c for c in replay.columns if c != "emit_seq"]
    expected = sorted(_key(r) for r in replay.select(*columns).collect())
    expected_late = sorted(_key(r) for r in spark.table("spread_late").collect())
    assert expected and expected_late
    for buckets in BUCKETS[shape]:
        workdir = tmp_path / f"b{buckets}"
        fed = feed_stream(sw, query, spread_table, "spread", "batch", "arrival", late=True, buckets=buckets,
                          restart_after=4, workdir=str(workdir))
        names = fed.schema.fieldNames()
        rows = sorted(_key(tuple(v for n, v in zip(names, r) if n != "emit_seq")) for r in fed.rows)
        assert rows == expected, buckets
        assert sorted(_key(r) for r in fed.late_rows) == expected_late, buckets
        stored = json.loads((workdir / "checkpoint" / "sqlwin.json").read_text())
        assert stored["stream_clock_spread"] is True
        progress = json.loads((workdir / "checkpoint" / "sqlwin-progress.json").read_text())
        assert len([b for b in progress if b != "-1"]) == buckets  # every bucket ran, each with its keys


def test_explain_says_how_a_one_clock_stream_is_spread_or_why_not(sw, spread_table):
    general = str(sw.explain(QUERIES["tumble changes"], stream=True))
    assert "by the GROUP BY keys; one clock for the stream" in general
    vectorised = str(sw.explain("SELECT k, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE spread WATERMARK ts "
                            "DELAY OF INTERVAL 30 SECONDS, DESCRIPTOR(ts), INTERVAL 2 MINUTES) "
                            "GROUP BY k, window_start, window_end", stream=True))
    assert "the vectorised runtime does not yet take the stream's clock" in vectorised
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
        "__ptime": pa.array([None] * 5, pa.int64())})
    out = pa.Table.from_batches(list(clock_packer([0, 5, 9], 1, "__a0")(iter([batch])))).to_pandas()
    for bucket in (0, 5, 9):
        rows, bounds = stream_bounds_of(out[out["__bucket"] == bucket])
        assert bounds == {0: (30, 30), 1: (10, 50)}  # side 0: a@30 (NULL key, NULL time left out)
        assert len(rows) == {0: 1, 5: 1, 9: 0}[bucket]  # its data blob, if it has rows

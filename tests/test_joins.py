"""Windowed joins through Spark: the same query over a finished table, as a replay and as a stream.

Random inputs (two-column keys, NULL keys and values, TIMESTAMP / DATE / DECIMAL columns, HOP
windows where a row joins two windows) with every row on time: the replay must give exactly the
complete-input result -- Spark's own join of the annotated sides -- for every join kind and
insert mode; a stream fed in micro-batches, with a clock per key and a restart, the replay's rows.
"""

from __future__ import annotations

import datetime as dt
import random
from decimal import Decimal

import pytest

from pyspark.sql import functions as F

from sqlwin.errors import SqlwinError
from sqlwin.testing import feed_stream

BASE = dt.datetime(2024, 1, 1)


@pytest.fixture(scope="module")
def sides(spark):
    rng = random.Random(7)
    seq = iter(range(1, 10_000))

    def rows(n, side):
        out = []
        for i in range(n):
            k1 = rng.choice(["a", "b", "c", None]) if rng.random() < 0.97 else None
            ts = BASE + dt.timedelta(seconds=rng.randrange(0, 300), milliseconds=i)  # distinct times per side
            value = None if rng.random() < 0.1 else rng.randrange(100)
            out.append((k1, rng.randrange(2), ts, value, ts.date(), Decimal(rng.randrange(1000)) / 100,
                        next(seq), i // 10))
        return out

    schema = "k1 string, k2 int, ts timestamp, v int, d date, amount decimal(10,2), seq int, batch int"
    spark.createDataFrame(rows(120, 0), schema).createOrReplaceTempView("jl")
    spark.createDataFrame(rows(90, 1), schema.replace(" v int", " w int")).createOrReplaceTempView("jr")
    spark.createDataFrame(rows(60, 2), schema.replace(" v int", " x int")).createOrReplaceTempView("jx")
    return True


def _query(kind: str, insert: str, replay: bool, select: str = "", partition: bool = False) -> str:
    arrival = "arrival_order = seq, " if replay else ""
    mark = "WATERMARK ts DELAY OF INTERVAL 1 HOUR " if replay else ""
    part = "PARTITION BY k1, k2 " if partition else ""
    select = select or ("coalesce(l.k1, r.k1) AS k1, coalesce(l.k2, r.k2) AS k2, "
                        "coalesce(l.window_start, r.window_start) AS ws, l.v, r.w, l.d, r.amount, l.ts AS lts")
    return f"""SELECT {select}
FROM HOP(TABLE jl {part}{mark}WITH ({arrival}join_insert = '{insert}'), DESCRIPTOR(ts), INTERVAL 1 MINUTE, INTERVAL 2 MINUTES) l
{kind} JOIN HOP(TABLE jr {part}{mark}{'WITH (arrival_order = seq)' if replay else ''}, DESCRIPTOR(ts), INTERVAL 1 MINUTE, INTERVAL 2 MINUTES) r
  ON l.k1 = r.k1 AND r.k2 = l.k2 AND l.window_start = r.window_start AND l.window_end = r.window_end"""


def _rows(frame) -> list:
    def plain(v):
        return tuple(v) if isinstance(v, list) else v
    return sorted((tuple(plain(v) for v in row) for row in frame.collect()), key=repr)


@pytest.mark.parametrize("kind, insert", [("LEFT", "product"), ("RIGHT", "last"), ("FULL", "first"),
                                          ("INNER", "collect")])
def test_replay_equals_complete_input(sw, sides, kind, insert):
    complete = _rows(sw.sql(_query(kind, insert, replay=False)))
    replay = _rows(sw.sql(_query(kind, insert, replay=True)).drop("op", "firing", "emit_seq"))
    assert complete and replay == complete


def test_three_inputs_and_star(sw, sides):
    def query(replay: bool) -> str:
        opts = "WATERMARK ts DELAY OF INTERVAL 1 HOUR WITH (arrival_order = seq)" if replay else ""
        tvf = "TUMBLE(TABLE {t} " + opts + ", DESCRIPTOR(ts), INTERVAL 1 MINUTE)"
        return (f"SELECT * FROM {tvf.format(t='jl')} l LEFT JOIN {tvf.format(t='jr')} r "
                "ON l.k1 = r.k1 AND l.k2 = r.k2 AND l.window_start = r.window_start AND l.window_end = r.window_end "
                f"FULL JOIN {tvf.format(t='jx')} x "
                "ON x.k1 = l.k1 AND x.k2 = l.k2 AND x.window_start = l.window_start AND x.window_end = l.window_end "
                "WHERE coalesce(l.v, 0) + coalesce(x.x, 0) >= 0")
    complete_frame = sw.sql(query(False))
    replay_frame = sw.sql(query(True)).drop("op", "firing", "emit_seq")
    assert replay_frame.columns == complete_frame.columns
    assert _rows(replay_frame) == _rows(complete_frame)


def test_a_stream_with_a_clock_per_key_gives_the_replays_rows(sw, spark, sides, tmp_path):
    # A join's stream, stopped after batch 2 and restarted from its checkpoint, gives the replay's rows.
    # The stream's sources take the tables' names as streaming views: copies keep jl / jr finished.
    # Micro-batches of 30 rows (4 of them; each costs the suite a second).
    spark.table("jl").withColumn("batch", F.expr("batch div 3")).createOrReplaceTempView("sl")
    spark.table("jr").withColumn("batch", F.expr("batch div 3")).createOrReplaceTempView("sr")
    query = _query("FULL", "product", replay=True, partition=True).replace("INTERVAL 1 HOUR", "INTERVAL 5 SECONDS") \
        .replace("arrival_order = seq, ", "arrival_order = seq, arrival_batch = batch, ") \
        .replace("WITH (arrival_order = seq)", "WITH (arrival_order = seq, arrival_batch = batch)") \
        .replace("TABLE jl", "TABLE sl").replace("TABLE jr", "TABLE sr")
    expected = [tuple(row) for row in sw.sql(query).collect()]
    # With a 5 s delay some rows are late for the merged watermark: fewer rows than over the finished table.
    assert 0 < len(expected) < sw.sql(_query("FULL", "product", replay=False, partition=True)).count()
    fed = feed_stream(sw, query, {"sl": spark.table("sl"), "sr": spark.table("sr")}, None, "batch", "seq",
                      workdir=str(tmp_path), restart_after=2)
    assert sorted(fed.rows, key=repr) == sorted(expected, key=repr)


@pytest.mark.parametrize("bad, message", [
    ("ON l.k1 = r.k1 AND l.window_start = r.window_start", "lacks the equality of window_end"),
    ("ON (l.k1 = r.k1 AND l.window_start = r.window_start AND l.window_end = r.window_end) OR l.v > r.w",
     "lacks the equality of window_start and window_end"),  # bounds under an OR do not match windows
    ("ON l.window_start = r.window_start AND l.window_end = r.window_end", "needs at least one key"),
])
def test_a_join_a_stream_cannot_run_says_why(sw, sides, bad, message):
    query = ("SELECT l.k1, r.w FROM TUMBLE(TABLE jl WITH (arrival_order = seq), DESCRIPTOR(ts), INTERVAL 1 MINUTE) l "
             f"JOIN TUMBLE(TABLE jr WITH (arrival_order = seq), DESCRIPTOR(ts), INTERVAL 1 MINUTE) r {bad}")
    with pytest.raises(SqlwinError) as caught:
        sw.sql(query).collect()
    assert message in caught.value.message and caught.value.position is not None
    # Over finished tables the same join is plain SQL over the annotated rows, and runs.
    sw.sql(query.replace("WITH (arrival_order = seq)", "")).collect()


def test_join_options_outside_a_join_are_refused(sw, sides):
    with pytest.raises(SqlwinError, match="join_insert belongs to a windowed join"):
        sw.sql("SELECT k1, window_start, count(*) FROM TUMBLE(TABLE jl WITH (join_insert = 'last'), DESCRIPTOR(ts), "
               "INTERVAL 1 MINUTE) GROUP BY k1, window_start, window_end")

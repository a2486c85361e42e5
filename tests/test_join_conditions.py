"""A window join whose ON holds more than keys and window bounds (issue 26), in every mode.

Random streams: many small inputs (a seed each) in one table per side, every key group holding
rows of one condition, values NULL a quarter of the time, rows out of order by up to 20 s under a
30 s watermark delay (nothing late). One query per join kind tests every condition at once: its ON
picks the condition by the key column `c` -- between the sides, on one side only, with OR and
functions, over timestamps and window bounds -- and adds a second residual conjunct. Each kind's
rows must be the same as a replay, as a stream fed in four micro-batches (the FULL join's stopped
after two and restarted from its checkpoint: a padding of either side is decided once, across the
restart), over the finished tables, and as the join SQL defines: a plain Spark join over each
side's per-window rows, built here by hand (HOP windows of 2 minutes every minute).
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from sqlwin.errors import SqlwinError
from sqlwin.testing import feed_stream

BASE = dt.datetime(2024, 1, 1)
SEEDS = 6
# Per key column `c`, the rest of ON (l: the left side, r: the right side).
CONDITIONS = [
    "l.v < r.v",  # between the sides, NULLs on either
    "r.w > 3",  # on the right side only
    "l.v > 3",  # on the left side only: a LEFT join pads the others, it does not drop them
    "l.v = r.w OR l.v IS NULL",  # OR
    "abs(l.v - r.v) <= 2 AND coalesce(l.w, 0) + coalesce(r.w, 0) > 3",  # functions
    "l.ts < r.ts",  # timestamps between the sides
    "r.ts < l.window_start + INTERVAL 1 MINUTE",  # a window bound: r's row in the window's first minute
    "false",  # nothing matches: every outer row padded
]
ON_REST = ("(CASE l.c " + " ".join(f"WHEN {c} THEN {cond}" for c, cond in enumerate(CONDITIONS)) + " END) "
           "AND (l.c <> 0 OR r.w IS DISTINCT FROM 1)")  # a second conjunct
SELECT = ("coalesce(l.seed, r.seed) AS seed, coalesce(l.c, r.c) AS c, coalesce(l.window_start, r.window_start) AS ws, "
          "l.id AS lid, r.id AS rid, l.window_end AS lwe, r.window_start AS rws")
KINDS = ["INNER", "LEFT", "RIGHT", "FULL"]


@pytest.fixture(scope="module")
def streams(spark):
    rows: list[list] = []
    for seed in range(SEEDS):
        rng = random.Random(seed)
        for c in range(len(CONDITIONS)):
            for side in (0, 1):
                for _ in range(rng.randrange(1, 7)):
                    rid = len(rows)
                    ts = BASE + dt.timedelta(seconds=rng.randrange(240), milliseconds=rid)  # distinct times

                    def value():
                        return None if rng.random() < 0.25 else rng.randrange(7)
                    rows.append([side, rid, seed, c, rng.choice("ab"), ts, value(), value(),
                                 ts + dt.timedelta(seconds=rng.uniform(0, 20))])
    arrival = sorted(range(len(rows)), key=lambda i: rows[i][-1])  # out of order by up to 20 s
    for rank, i in enumerate(arrival):
        rows[i][-1:] = [rank, rank * 4 // len(rows)]  # arrival order, four micro-batches
    schema = "id int, seed int, c int, k string, ts timestamp, v int, w int, arrival int, batch int"
    for side, name in enumerate(("ca", "cb")):
        frame = spark.createDataFrame([r[1:] for r in rows if r[0] == side], schema)
        frame.createOrReplaceTempView(name)
        frame.createOrReplaceTempView(f"s{name}")  # the stream's source (feed_stream replaces it)
        # Per-window rows, as HOP(2 minutes every minute) gives them: the minute a row is in, and the one before.
        spark.sql(f"SELECT *, window_start + INTERVAL 2 MINUTES AS window_end FROM (SELECT *, explode(array("
                  f"date_trunc('MINUTE', ts), date_trunc('MINUTE', ts) - INTERVAL 1 MINUTE)) AS window_start "
                  f"FROM {name})").createOrReplaceTempView(f"{name}_windows")
    return rows


def _query(kind: str, left: str = "ca", right: str = "cb", replay: bool = True, insert: str = "product") -> str:
    options = ("WATERMARK ts DELAY OF INTERVAL 30 SECONDS WITH (arrival_order = arrival, arrival_batch = batch"
               f"{', join_insert = ' + repr(insert) if insert != 'product' else ''})") if replay else (
        f"WITH (join_insert = '{insert}')" if insert != "product" else "")
    hop = "HOP(TABLE {t} " + options + ", DESCRIPTOR(ts), INTERVAL 1 MINUTE, INTERVAL 2 MINUTES)"
    return (f"SELECT {SELECT} FROM {hop.format(t=left)} l {kind} JOIN {hop.format(t=right)} r "
            "ON l.seed = r.seed AND l.c = r.c AND l.k = r.k AND l.window_start = r.window_start "
            f"AND l.window_end = r.window_end AND {ON_REST}")


def _by_definition(spark, kind: str, left: str = "ca_windows", right: str = "cb_windows") -> list:
    """SQL's join of the sides' per-window rows: Spark's own join, the whole ON in its ON."""
    return _sorted(spark.sql(
        f"SELECT {SELECT} FROM {left} l {kind} JOIN {right} r ON l.seed = r.seed AND l.c = r.c AND l.k = r.k "
        f"AND l.window_start = r.window_start AND l.window_end = r.window_end AND {ON_REST}").collect())


def _sorted(rows) -> list:
    return sorted((tuple(row) for row in rows), key=repr)


@pytest.mark.parametrize("kind", KINDS)
def test_every_mode_gives_the_join_sql_defines(sw, spark, streams, kind, tmp_path):
    expected = _by_definition(spark, kind)
    padded = {"LEFT": 4, "RIGHT": 3, "FULL": 3}.get(kind)  # lid / rid NULL: rows padded
    if padded is not None:  # the data exercise what is tested: pairs, and padded rows
        assert sum(row[padded] is None for row in expected) > 10
    assert sum(row[3] is not None and row[4] is not None for row in expected) > 20
    complete = _sorted(sw.sql(_query(kind, replay=False)).collect())
    assert complete == expected
    replay = _sorted(sw.sql(_query(kind)).select("seed", "c", "ws", "lid", "rid", "lwe", "rws").collect())
    assert replay == expected
    fed = feed_stream(sw, _query(kind, "sca", "scb"), {"sca": spark.table("ca"), "scb": spark.table("cb")}, None,
                      "batch", "arrival", workdir=str(tmp_path), restart_after=2 if kind == "FULL" else None)
    names = [f.name for f in fed.schema.fields]
    columns = [names.index(n) for n in ("seed", "c", "ws", "lid", "rid", "lwe", "rws")]
    assert _sorted(tuple(row[i] for i in columns) for row in fed.rows) == expected


def test_one_row_per_side_then_the_condition(sw, spark, streams):
    # join_insert = 'last': each side keeps its latest row per key and window, and ON's condition
    # tests the pair of those (a row of the side without a partner padded, in a FULL join).
    last = ("SELECT * EXCEPT (n) FROM (SELECT *, row_number() OVER (PARTITION BY seed, c, k, window_start "
            "ORDER BY ts DESC) AS n FROM {t}_windows) WHERE n = 1")
    spark.sql(last.format(t="ca")).createOrReplaceTempView("ca_last")
    spark.sql(last.format(t="cb")).createOrReplaceTempView("cb_last")
    expected = _by_definition(spark, "FULL", "ca_last", "cb_last")
    assert sum(row[3] is None for row in expected) > 10 and sum(row[4] is None for row in expected) > 10
    complete = _sorted(sw.sql(_query("FULL", replay=False, insert="last")).collect())
    replay = _sorted(sw.sql(_query("FULL", insert="last")).select("seed", "c", "ws", "lid", "rid", "lwe",
                                                                   "rws").collect())
    assert complete == expected and replay == expected


def test_a_cogroup_has_no_pairs_to_test(sw, streams):
    query = _query("LEFT", insert="collect")
    for text in (query, _query("LEFT", replay=False, insert="collect")):  # refused in every mode
        with pytest.raises(SqlwinError) as caught:
            sw.sql(text).collect()
        err = caught.value
        assert "join_insert = 'collect'" in err.message and "no pair of rows" in err.message
        assert err.position is not None and text.splitlines()[err.position.line - 1][err.position.column - 1:] \
            .startswith("l.c WHEN 0")
        assert "__" not in str(err)

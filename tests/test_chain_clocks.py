"""Chains of windowed aggregations whose first stage follows processing time, in a stream (issue 23).

A chain's stages each run in an operator of their own; a stage that follows processing time keeps its
own timers. The first stage may read the recorded arrival times (`arrival_time`: the clock a replay
reads too, so stream and replay must agree) or the wall clock; a later stage reads the stage before's
results, which carry no arrival time: its processing time can only be the wall clock, which cannot
sit beside a first stage's recorded clock (refused before anything is written to the checkpoint).
"""

from __future__ import annotations

import random
import pytest

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.testing import feed_stream
from tests.support.random_streams import columns, random_stream

SCHEMA = "id INT, k STRING, ts TIMESTAMP, v INT, arrival INT, batch INT, at TIMESTAMP"
RECORDED = "arrival_order = arrival, arrival_batch = batch, arrival_time = at"

# Stage 1 per key in 2-minute windows of the recorded processing clock (each row in the window of its
# arrival time), stage 2 over their window_time in 10-minute event-time windows.
PROCTIME_FIRST = (
    "WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n, sum(v) AS total "
    f"FROM TUMBLE(TABLE chain_pt PARTITION BY k WITH ({RECORDED}), DESCRIPTOR(PROCTIME()), INTERVAL 2 MINUTES) "
    "GROUP BY k, window_start, window_end, window_time) "
    "SELECT window_start, window_end, sum(n) AS n, sum(total) AS total FROM TUMBLE(TABLE per_key, "
    "DESCRIPTOR(window_time), INTERVAL 10 MINUTES) GROUP BY window_start, window_end LATE ROWS INTO chain_pt_late")

# Stage 1 event-time windows closed by a watermark behind ingestion time (the recorded arrival clock,
# AP-06), so its windows fire on timers as the clock moves, not only with rows.
INGESTION_FIRST = (
    "WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n, sum(v) AS total "
    "FROM TUMBLE(TABLE chain_pt PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE "
    f"WITH ({RECORDED}, watermark_strategy = 'ingestion_time'), DESCRIPTOR(ts), INTERVAL 5 MINUTES) "
    "GROUP BY k, window_start, window_end, window_time) "
    "SELECT window_start, window_end, sum(n) AS n, sum(total) AS total FROM TUMBLE(TABLE per_key, "
    "DESCRIPTOR(window_time), INTERVAL 10 MINUTES) GROUP BY window_start, window_end LATE ROWS INTO chain_pt_late")


@pytest.fixture
def recorded(spark):
    rows = columns(random_stream(random.Random(31), 48, batch_size=16, arrival_gap_s=25), "id", "k", "ts", "v", "arrival", "batch",
                   "at")
    table = spark.createDataFrame(rows, SCHEMA)
    table.createOrReplaceTempView("chain_pt")
    return rows, table


def _late_key(row: dict) -> tuple:
    upstream = row.get("upstream_row")
    return (row["stage"], row["reason"], row["id"], tuple(sorted(upstream.items())) if upstream else None)


@pytest.mark.parametrize("query", [PROCTIME_FIRST, INGESTION_FIRST], ids=["proctime", "ingestion_time"])
def test_a_stream_of_a_chain_on_the_recorded_clock_is_its_replay(sw, spark, tmp_path, recorded, query):
    """Stream (restarted after two micro-batches) = replay: results, and every stage's late and
    rejected rows; and every row is in a window or late at its stage."""
    rows, table = recorded
    replayed = sorted(tuple(r)[:4] for r in sw.sql(query).collect())  # (not op, firing, emit_seq)
    replayed_late = sorted(_late_key(r.asDict(recursive=True)) for r in spark.table("chain_pt_late").collect())
    fed = feed_stream(sw, query, table, "chain_pt", "batch", "arrival", workdir=str(tmp_path), late=True,
                      restart_after=2)
    names = fed.schema.fieldNames()
    streamed = sorted(tuple(r[names.index(c)] for c in ("window_start", "window_end", "n", "total"))
                      for r in fed.rows)
    late_names = fed.late_schema.fieldNames()
    late = [{c: (v.asDict(recursive=True) if hasattr(v, "asDict") else v) for c, v in zip(late_names, r)}
            for r in fed.late_rows]
    assert streamed == replayed
    assert sorted(map(_late_key, late)) == replayed_late
    first = [r for r in late if r["stage"] == 1]
    second = [r for r in late if r["stage"] == 2]
    windowed = sum(r[2] for r in streamed) + sum(r["upstream_row"]["n"] for r in second)
    assert windowed + len(first) == len(rows)
    # rejected: a NULL key; and a NULL event time where stage 1 reads one (processing time does not)
    reads_ts = query is INGESTION_FIRST
    assert {r["id"] for r in first if r["reason"] != "late"} == \
        {r[0] for r in rows if r[1] is None or (reads_ts and r[2] is None)}
    assert fed.status["rows"] == len(rows)


WALL_CLOCK = {
    # stage 1 in 1-second windows of the wall clock, stage 2 in event-time windows over their window_time
    "first": ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n FROM TUMBLE(TABLE "
              "chain_wall PARTITION BY k, DESCRIPTOR(PROCTIME()), INTERVAL 1 SECOND) GROUP BY k, window_start, "
              "window_end, window_time) SELECT window_start, window_end, sum(n) AS n FROM TUMBLE(TABLE per_key, "
              "DESCRIPTOR(window_time), INTERVAL 1 HOUR) GROUP BY window_start, window_end LATE ROWS INTO chain_wall_late"),
    # stage 1 in event-time windows, stage 2 in 1-second windows of the wall clock at which they reach it
    "later": ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n FROM TUMBLE(TABLE "
              "chain_wall PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE, DESCRIPTOR(ts), INTERVAL 5 MINUTES) "
              "GROUP BY k, window_start, window_end, window_time) SELECT window_start, window_end, sum(n) AS n "
              "FROM TUMBLE(TABLE per_key, DESCRIPTOR(PROCTIME()), INTERVAL 1 SECOND) GROUP BY window_start, window_end "
              "LATE ROWS INTO chain_wall_late"),
}


@pytest.mark.parametrize("stage", sorted(WALL_CLOCK))
def test_a_chain_on_the_wall_clock_accounts_for_every_row(sw, spark, tmp_path, stage):
    """A stage on the wall clock (no recorded arrival time), first or later in the chain: which window a
    row lands in depends on when it arrives, but every row is counted once, in a window of the last
    stage or as a late row of a stage, by the end of input."""
    from tests.support.random_streams import START
    import datetime as dt

    rows = [(i, "ab"[i % 2], START + dt.timedelta(minutes=i), i, i, i // 4, None) for i in range(12)]
    spark.createDataFrame(rows, SCHEMA).createOrReplaceTempView("chain_wall")
    fed = feed_stream(sw, WALL_CLOCK[stage], spark.table("chain_wall"), "chain_wall", "batch", "arrival",
                      workdir=str(tmp_path), late=True)
    names = fed.schema.fieldNames()
    late_names = fed.late_schema.fieldNames() if fed.late_schema is not None else []
    late = [dict(zip(late_names, r)) for r in fed.late_rows]
    counted = sum(r[names.index("n")] for r in fed.rows) + sum(r["upstream_row"]["n"] for r in late)
    assert counted == len(rows), (fed.rows, late)
    assert all(r["stage"] == 2 for r in late)  # stage 1 keeps every row: on time, key and time present
    assert fed.status["rows"] == len(rows) and fed.status["stages"][1] == {"late": 0, "rejected": 0}


def test_a_later_stage_on_the_wall_clock_after_a_recorded_clock_is_refused(sw, spark, tmp_path, recorded):
    """The first stage reads the recorded arrival times, the second would follow the wall clock (EMIT EARLY
    EVERY an interval): refused at the second stage, before the checkpoint is written."""
    _, table = recorded
    query = INGESTION_FIRST.replace(" LATE ROWS INTO", " EMIT EARLY EVERY INTERVAL 1 MINUTE LATE ROWS INTO")
    with pytest.raises(SqlwinUnsupportedError, match="one processing clock") as err:
        feed_stream(sw, query, table, "chain_pt", "batch", "arrival", workdir=str(tmp_path), late=True)
    assert err.value.position is not None and err.value.position.column > query.index("FROM TUMBLE(TABLE per_key")
    assert not (tmp_path / "checkpoint" / "sqlwin.json").exists()

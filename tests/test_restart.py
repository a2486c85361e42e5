"""BW-13: a streaming query restarted from its checkpoint continues exactly (event time).

The same recorded stream is fed, one parquet file per micro-batch, to a query that runs
through, and to one that is stopped after batch 2 -- with windows still open, so their
contents live only in the checkpoint's state -- and started again on the same checkpoint
and sink. Both must leave the same sink: the same `batch_id=N` directories holding the same
rows in the same order (emit_seq included), and the same late rows: nothing lost, nothing twice.

The second case deletes the commit of the last batch before restarting, as a crash between
writing a batch's results and committing it would leave it: Spark runs that batch again,
and its `batch_id=N` directory is replaced, not added to.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SOURCE = "restart_events"
QUERY = f"""
SELECT k, window_start, window_end, count(*) AS n, collect_list(v) AS vs
FROM TUMBLE(TABLE {SOURCE} PARTITION BY k WATERMARK ts DELAY OF INTERVAL 2 SECONDS,
            DESCRIPTOR(ts), INTERVAL 10 SECONDS)
GROUP BY k, window_start, window_end
LATE ROWS INTO late_{SOURCE}
"""
# (k, ts in epoch ms, v) per micro-batch. Effective watermark per key: max ts - 2 s.
BATCHES = [
    [("a", 1000, 1), ("b", 2000, 2), ("a", 4000, 3)],
    [("a", 9000, 4), ("b", 11000, 5)],  # a: 7 s, b: 9 s -- nothing closes
    [("a", 13000, 6), ("b", 3000, 7), ("a", 12500, 8)],  # b's [0, 10 s) still open; a: 11 s closes a [0, 10 s)
    # -- stopped here: a [10, 20 s), b [0, 10 s), b [10, 20 s) are open --
    [("b", 15000, 9), ("a", 5000, 10)],  # b: 13 s closes b [0, 10 s); a's 5 s row is late
    [("a", 25000, 11)],  # a: 23 s closes a [10, 20 s)
]
STOP_AFTER = 3  # batches fed before the stop
# What every run emits: (batch_id, k, window_start, window_end, n, vs); op, firing and emit_seq
# follow in the sink (emit_seq depends on how keys share buckets: compared between runs only).
EXPECTED_WINDOWS = [
    (2, "a", 0, 10000, 3, [1, 3, 4]),
    (3, "b", 0, 10000, 2, [2, 7]),
    (4, "a", 10000, 20000, 2, [8, 6]),
    (5, "b", 10000, 20000, 2, [5, 9]),  # batch 5: end of input
    (5, "a", 20000, 30000, 1, [11]),
]


class Feed:
    """A source directory, a sink and a checkpoint; start, stop and start the query again."""

    def __init__(self, sw, root: Path):
        self.sw, self.root = sw, root
        self.source, self.sink, self.late, self.checkpoint = (root / n for n in ("source", "sink", "late", "ckpt"))
        self.source.mkdir(parents=True)
        self.handle = None
        self.fed = 0

    def start(self):
        frame = self.sw.spark.readStream.schema("k STRING, ts BIGINT, v INT") \
            .option("maxFilesPerTrigger", 1).parquet(str(self.source))
        self.handle = self.sw.stream(QUERY, sources={SOURCE: frame}, sink=str(self.sink),
                                     checkpoint=str(self.checkpoint), late_sink=str(self.late))
        return self

    def feed(self, batches) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        for rows in batches:
            k, ts, v = zip(*rows)
            table = pa.table({"k": pa.array(k, pa.string()), "ts": pa.array(ts, pa.int64()),
                              "v": pa.array(v, pa.int32())})
            tmp = self.source / f".batch-{self.fed:04d}.tmp"
            pq.write_table(table, tmp)
            tmp.rename(self.source / f"batch-{self.fed:04d}.parquet")  # whole files only
            self.fed += 1
            self.handle.process_all_available()

    def finish(self) -> None:
        self.handle.end_input()
        self.handle.stop()

    def contents(self, sink: Path) -> dict[int, list[tuple]]:
        """{batch_id: rows in the order written} of a sink."""
        out = {}
        for path in sorted(sink.glob("batch_id=*"), key=lambda p: int(p.name.split("=")[1])):
            out[int(path.name.split("=")[1])] = [tuple(r) for r in self.sw.spark.read.parquet(str(path)).collect()]
        return out

    def results(self) -> tuple[dict, dict]:
        return self.contents(self.sink), self.contents(self.late)


@pytest.fixture(scope="module")
def uninterrupted(sw, tmp_path_factory):
    """The reference: every batch, end of input, no stop."""
    feed = Feed(sw, tmp_path_factory.mktemp("uninterrupted")).start()
    try:
        feed.feed(BATCHES)
        feed.finish()
    finally:
        feed.handle.stop()
    return feed.results()


def test_uninterrupted_run_emits_each_window_once(uninterrupted):
    sink, late = uninterrupted
    windows = [(batch, *row[:5]) for batch, rows in sink.items() for row in rows]
    assert sorted(windows, key=repr) == sorted(EXPECTED_WINDOWS, key=repr)
    assert all(row[5:7] == ("+I", "on_time" if batch < 5 else "final") for batch, rows in sink.items() for row in rows)
    assert [(batch, row[:3]) for batch, rows in late.items() for row in rows] == [(3, ("a", 5000, 10))]


def test_restart_mid_window_loses_nothing_and_repeats_nothing(sw, tmp_path, uninterrupted):
    feed = Feed(sw, tmp_path).start()
    try:
        feed.feed(BATCHES[:STOP_AFTER])
        before = feed.results()
        feed.handle.stop()
        # Only a [0, 10 s) has been emitted: the other windows' rows are in the checkpoint only.
        assert [row[:3] for rows in before[0].values() for row in rows] == [("a", 0, 10000)]
        feed.start()
        feed.feed(BATCHES[STOP_AFTER:])
        feed.finish()
    finally:
        feed.handle.stop()
    assert feed.results() == uninterrupted


def test_restart_that_reruns_the_last_batch_replaces_its_output(sw, tmp_path, uninterrupted):
    feed = Feed(sw, tmp_path).start()
    try:
        feed.feed(BATCHES[:STOP_AFTER])
        feed.handle.stop()
        last = STOP_AFTER - 1
        written = sorted(p.name for p in (feed.sink / f"batch_id={last}").glob("*.parquet"))
        assert written, "the batch to re-run emitted nothing: the case would prove nothing"
        commits = feed.checkpoint / "spark" / "commits"
        for name in (str(last), f".{last}.crc"):
            (commits / name).unlink(missing_ok=True)  # as if the query died before committing it
        feed.start()
        feed.handle.process_all_available()
        rerun = [b["batch"] for b in feed.handle.batches]
        assert rerun == [last], f"Spark did not re-run batch {last}: {rerun}"
        assert sorted(p.name for p in (feed.sink / f"batch_id={last}").glob("*.parquet")) != written
        feed.feed(BATCHES[STOP_AFTER:])
        feed.finish()
    finally:
        feed.handle.stop()
    assert feed.results() == uninterrupted


def test_restart_with_another_window_is_refused_before_any_batch_and_the_checkpoint_stays_usable(
        sw, tmp_path, uninterrupted):
    """Issue 13 part 4: the checkpoint's query is compared at start. A change the state cannot
    carry (the window's size) is refused with what changed; a change it can (an output alias) runs,
    and the stream then ends exactly as if nothing had happened."""
    from sqlwin.errors import SqlwinUsageError

    feed = Feed(sw, tmp_path).start()
    try:
        feed.feed(BATCHES[:STOP_AFTER])
        feed.handle.stop()
        batches = sorted(p.name for p in (feed.checkpoint / "spark" / "commits").iterdir())
        frame = sw.spark.readStream.schema("k STRING, ts BIGINT, v INT").parquet(str(feed.source))
        for changed, what in [(QUERY.replace("INTERVAL 10 SECONDS", "INTERVAL 20 SECONDS"),
                               "window: TUMBLE size 10 seconds  ->  TUMBLE size 20 seconds"),
                              (QUERY.replace("count(*) AS n", "count(*) AS n, sum(v) AS total"),
                               "aggregates: COUNT(*), COLLECT_LIST(v)  ->  COUNT(*), SUM(v), COLLECT_LIST(v)"),
                              (QUERY.replace("PARTITION BY k", ""), "partition by: k  ->  (none: one stream)")]:
            with pytest.raises(SqlwinUsageError) as err:
                sw.stream(changed, sources={SOURCE: frame}, sink=str(feed.sink), checkpoint=str(feed.checkpoint),
                          late_sink=str(feed.late))
            assert "holds the state of another query" in err.value.message
            assert what in err.value.message, err.value.message
        assert sorted(p.name for p in (feed.checkpoint / "spark" / "commits").iterdir()) == batches
        renamed = QUERY.replace("count(*) AS n", "count(*) AS rows_in_window")  # the output only
        frame = sw.spark.readStream.schema("k STRING, ts BIGINT, v INT") \
            .option("maxFilesPerTrigger", 1).parquet(str(feed.source))
        feed.handle = sw.stream(renamed, sources={SOURCE: frame}, sink=str(feed.sink),
                                checkpoint=str(feed.checkpoint), late_sink=str(feed.late))
        feed.feed(BATCHES[STOP_AFTER:])
        feed.finish()
    finally:
        feed.handle.stop()
    assert feed.results() == uninterrupted


def test_a_refused_query_leaves_a_new_checkpoint_unclaimed(sw, spark, tmp_path):
    """A query a stream refuses wrote the checkpoint's sqlwin.json anyway, and the corrected query
    was then refused as 'another query' on the same checkpoint."""
    from sqlwin.errors import SqlwinError

    frame = spark.readStream.schema("k STRING, ts BIGINT, v INT").parquet(str(tmp_path))
    refused = "SELECT k, window_start FROM GLOBAL_WINDOW(TABLE ev, DESCRIPTOR(ts))"  # its one window never closes
    with pytest.raises(SqlwinError):
        sw.stream(refused, sources={"ev": frame}, sink=str(tmp_path / "sink"), checkpoint=str(tmp_path / "ckpt"))
    assert not (tmp_path / "ckpt" / "sqlwin.json").exists()
    handle = sw.stream(QUERY.replace(SOURCE, "ev").replace("LATE ROWS INTO late_ev", ""), sources={"ev": frame},
                       sink=str(tmp_path / "sink"), checkpoint=str(tmp_path / "ckpt"))
    handle.stop()


CHAIN = """
WITH per_key AS (
  SELECT k, window_start, window_end, window_time, count(*) AS n
  FROM TUMBLE(TABLE ev PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 10 SECONDS)
  GROUP BY k, window_start, window_end, window_time)
SELECT window_start, sum(n) AS total FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), INTERVAL 10 SECONDS)
GROUP BY window_start, window_end
"""


def test_a_chained_stream_restarts_only_with_its_own_query(sw, spark, tmp_path):
    """A stream of two chained aggregations (AP-11) skipped the restart check: a changed query ran
    on the checkpoint's state. It is refused now, before any batch; the same query, spaced
    otherwise, runs."""
    from sqlwin.errors import SqlwinUsageError

    (tmp_path / "in").mkdir()
    frame = spark.readStream.schema("k STRING, ts TIMESTAMP, v INT").parquet(str(tmp_path / "in"))
    dirs = {"sink": str(tmp_path / "sink"), "checkpoint": str(tmp_path / "ckpt")}
    sw.stream(CHAIN, sources={"ev": frame}, **dirs).stop()
    with pytest.raises(SqlwinUsageError) as err:
        sw.stream(CHAIN.replace("INTERVAL 10 SECONDS)\nGROUP BY window_start", "INTERVAL 20 SECONDS)\nGROUP BY window_start"),
                  sources={"ev": frame}, **dirs)
    assert "restarts only with the query that started it" in err.value.message, err.value.message
    assert not (tmp_path / "ckpt" / "spark" / "commits").exists() or not any((tmp_path / "ckpt" / "spark" / "commits").iterdir())
    sw.stream("  ".join(CHAIN.split()), sources={"ev": frame}, **dirs).stop()

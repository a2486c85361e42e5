"""A stream's progress figures: keys, open windows, late and rejected rows, over its whole life.

Counted by the operator in each bucket (the stats record's JSON) and summed over the buckets by
`StreamingWindowQuery.status()`: the figures survive a restart and the end of input.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

QUERY = ("SELECT k, window_start, count(*) AS n, sum(v) AS s FROM TUMBLE(TABLE figures PARTITION BY k "
         "WATERMARK ts DELAY OF INTERVAL 5 SECONDS, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
         "GROUP BY k, window_start, window_end EMIT FINAL LATE ROWS INTO figures_late")
SCHEMA = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("v", pa.int64())])
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)


def _put(source, index, rows):
    table = pa.Table.from_pylist([{"k": k, "ts": None if s is None else T0 + dt.timedelta(seconds=s), "v": v}
                                  for k, s, v in rows],
                                 schema=SCHEMA)
    pq.write_table(table, source / f".b{index}.tmp")
    (source / f".b{index}.tmp").rename(source / f"b{index}.parquet")


def test_status_counts_keys_windows_late_and_rejected_rows(sw, spark, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    schema = spark.createDataFrame([], "k STRING, ts TIMESTAMP, v BIGINT").schema

    def start():
        frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source))
        return sw.stream(QUERY, sources={"figures": frame}, sink=str(tmp_path / "sink"),
                         checkpoint=str(tmp_path / "checkpoint"), late_sink=str(tmp_path / "late"))

    handle = start()
    try:
        _put(source, 0, [("a", 1, 1), ("b", 2, 2), (None, 3, 3), ("c", None, 4)])
        handle.process_all_available()
        first = handle.status()
        assert (first["keys"], first["open_windows"], first["late_rows"], first["rejected_rows"]) == (2, 2, 0, 2)
        # Every row taken in (rows = rows in windows + late rows + rejected rows): a and b admitted,
        # the NULL key and the NULL time rejected.
        assert first["rows"] == 4
        handle.stop()
        handle = start()  # figures come from the state: a restart keeps them
        _put(source, 1, [("a", 70, 5)])  # a's clock passes 65 s: a's first window closes, one opens
        handle.process_all_available()
        _put(source, 2, [("a", 10, 6)])  # a row of a's closed window: late
        handle.process_all_available()
        second = handle.status()
        assert (second["keys"], second["open_windows"], second["late_rows"], second["rejected_rows"]) == (2, 2, 1, 2)
        handle.end_input()
        ended = handle.status()
        # rows: a, b, NULL, c (rejected), a, a (late)
        assert (ended["open_windows"], ended["late_rows"], ended["rejected_rows"], ended["rows"]) == (0, 1, 2, 6)
    finally:
        handle.stop()


def test_a_long_stream_keeps_only_its_last_batch_records(tmp_path):
    """The checkpoint's sqlwin-batches held a record per batch for ever (200 after 200 batches in
    the long-stream check); now the last RECORDS_KEPT batches' records, whatever run wrote them."""
    from types import SimpleNamespace

    from sqlwin.spark.checkpoint import BATCHES, RECORDS_KEPT, save_batch

    for run, batches in (("old", range(0, 130)), ("new", range(130, 260))):
        handle = SimpleNamespace(checkpoint=str(tmp_path), run_id=run)
        for batch in batches:
            save_batch(handle, {"batch": batch, "results": 1, "late": 0})
    kept = sorted(int(p.stem.rsplit("-", 1)[1]) for p in (tmp_path / BATCHES).glob("*.json"))
    assert kept[0] == 200 - RECORDS_KEPT and kept[-1] == 259 and kept == list(range(kept[0], 260))

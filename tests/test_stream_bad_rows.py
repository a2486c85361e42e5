"""Rows a stream must carry without stopping (issue 13 part 2).

Times far from today: pandas' nanosecond timestamps cover only the years 1677-2262, and a stream
once crashed on a row in year 1000 or 9999, then again on every restart. The operator now reads
its input as Arrow (microseconds, years 1 to 9999) and carries late rows' timestamps as Python
objects, so such rows are windowed, emitted and routed like any other.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

QUERY = ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s FROM TUMBLE(TABLE far PARTITION BY k "
         "WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
         "GROUP BY k, window_start, window_end LATE ROWS INTO far_late")
SCHEMA = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us", tz="UTC")), ("v", pa.int64())])
UTC = dt.timezone.utc


def _put(source, index, rows):
    table = pa.Table.from_pylist([{"k": k, "ts": ts, "v": v} for k, ts, v in rows], schema=SCHEMA)
    pq.write_table(table, source / f".b{index}.tmp")
    (source / f".b{index}.tmp").rename(source / f"b{index}.parquet")


def test_rows_in_year_1_1000_and_9999_flow_through_a_stream(sw, spark, tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    frame = spark.readStream.schema("k STRING, ts TIMESTAMP, v BIGINT").option("maxFilesPerTrigger", 1) \
        .parquet(str(source))
    handle = sw.stream(QUERY, sources={"far": frame}, sink=str(tmp_path / "sink"),
                       late_sink=str(tmp_path / "late"), checkpoint=str(tmp_path / "checkpoint"))
    try:
        _put(source, 0, [("a", dt.datetime(2024, 1, 1, 0, 0, 1, tzinfo=UTC), 1),
                         ("b", dt.datetime(1000, 1, 1, tzinfo=UTC), 2),
                         ("c", dt.datetime(9999, 12, 31, 23, 59, tzinfo=UTC), 3)])
        handle.process_all_available()
        _put(source, 1, [("a", dt.datetime(2024, 1, 1, 0, 5, tzinfo=UTC), 4),
                         ("b", dt.datetime(1000, 1, 1, 0, 0, 30, tzinfo=UTC), 5),
                         ("c", dt.datetime(1, 1, 1, tzinfo=UTC), 6)])  # c's clock is in 9999: late
        handle.process_all_available()
        handle.end_input()
    finally:
        handle.stop()
    # Read as strings: a window ending at 10000-01-01 is a Spark timestamp but no Python datetime.
    results = sorted(tuple(r) for r in spark.read.parquet(str(tmp_path / "sink")).selectExpr(
        "k", "CAST(window_start AS STRING)", "CAST(window_end AS STRING)", "n", "s").collect())
    assert results == [
        ("a", "2024-01-01 00:00:00", "2024-01-01 00:01:00", 1, 1),
        ("a", "2024-01-01 00:05:00", "2024-01-01 00:06:00", 1, 4),
        ("b", "1000-01-01 00:00:00", "1000-01-01 00:01:00", 2, 7),
        ("c", "9999-12-31 23:59:00", "+10000-01-01 00:00:00", 1, 3),
    ]
    late = [tuple(r) for r in spark.read.parquet(str(tmp_path / "late")).selectExpr(
        "k", "CAST(ts AS STRING)", "v", "CAST(window_start AS STRING)", "reason").collect()]
    assert late == [("c", "0001-01-01 00:00:00", 6, "0001-01-01 00:00:00", "late")]
    assert handle.status()["late_rows"] == 1


CSV_QUERY = ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s FROM TUMBLE(TABLE csv_ev PARTITION BY k "
             "WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
             "GROUP BY k, window_start, window_end LATE ROWS INTO csv_late")


def _csv(source, index, lines, header="k,ts,v"):
    (source / f".f{index}.tmp").write_text(header + "\n" + "\n".join(lines) + "\n")
    (source / f".f{index}.tmp").rename(source / f"f{index}.csv")


def _run_to_end(handle, feed) -> dict:
    """`feed()` the stream's next files, let it take them, end its input: its status (stopped either way)."""
    try:
        feed()
        handle.process_all_available()
        handle.end_input()
        return handle.status()
    finally:
        handle.stop()


def _sink_rows(spark, sink, *columns) -> list[tuple]:
    return [tuple(r) for r in spark.read.parquet(str(sink)).selectExpr(*columns).collect()]


def test_csv_values_that_do_not_convert_are_routed_and_a_restart_keeps_the_first_schema(sw, spark, tmp_path):
    """Issue 13 part 2. A CSV value that does not convert used to become NULL silently (PERMISSIVE):
    `v = abc` vanished from the sum, `ts = yesterday` counted as a NULL time. Such a row is now
    rejected whole, reason `malformed`. And a stream's schema used to be inferred again at every
    start from every file there, so a file with an unparsable time column made the restart fail
    ("Time column ts is STRING"); the checkpoint now keeps the first start's schema."""
    source = tmp_path / "source"
    source.mkdir()
    dirs = {"sink": str(tmp_path / "sink"), "late_sink": str(tmp_path / "late"),
            "checkpoint": str(tmp_path / "checkpoint")}

    def start():
        return sw.stream(CSV_QUERY, sources={"csv_ev": str(source)}, source_format="csv",
                         source_options={"maxFilesPerTrigger": "1"}, **dirs)

    _csv(source, 0, ["a,2024-01-01 00:00:01,1", "b,2024-01-01 00:00:02,2"])
    handle = start()
    try:
        _csv(source, 1, ["a,2024-01-01 00:00:03,abc", "b,yesterday,5", "a,2024-01-01 00:00:04,3", ",2024-01-01 00:00:05,4"])
        handle.process_all_available()
        status = handle.status()
    finally:
        handle.stop()
    assert status["rejected_rows"] == 3, status  # two malformed, one NULL key
    # A file whose time column holds no time at all: inferred alone it is STRING.
    _csv(source, 2, ["a,soon,7", "b,later,8"])
    _csv(source, 3, ["a,2024-01-01 00:02:00,10"])
    handle = start()  # used to fail here: the directory's inferred schema had changed
    try:
        handle.process_all_available()
        handle.end_input()
        status = handle.status()
    finally:
        handle.stop()
    results = sorted(tuple(r) for r in spark.read.parquet(dirs["sink"]).selectExpr(
        "k", "CAST(window_start AS STRING)", "n", "s").collect())
    assert results == [("a", "2024-01-01 00:00:00", 2, 4), ("a", "2024-01-01 00:02:00", 1, 10),
                       ("b", "2024-01-01 00:00:00", 1, 2)]
    # A row that did not convert keeps the values that did (Spark's PERMISSIVE reading), NULL the rest.
    late = sorted((r.k or "", -1 if r.v is None else r.v, r.ts is None, r.reason)
                  for r in spark.read.parquet(dirs["late_sink"]).collect())
    assert late == [("", 4, False, "null_key"), ("a", -1, False, "malformed"), ("a", 7, True, "malformed"),
                    ("b", 5, True, "malformed"), ("b", 8, True, "malformed")]
    assert status["rejected_rows"] == 5, status


def test_a_csv_stream_whose_query_reads_some_columns_judges_rows_by_all_of_them(sw, spark, tmp_path):
    """A query reading only k and ts of a CSV stream (count(*), no LATE ROWS INTO) failed at its
    first batch with Spark's QUERY_ONLY_CORRUPT_RECORD_COLUMN: the branch of malformed rows read
    nothing but the corrupt-record column. Both branches now read every column of the file, so a
    row is malformed by the same columns for both: `v = abc` rejects its row, though the query
    does not read v (otherwise the row would be counted and also rejected)."""
    source = tmp_path / "source"
    source.mkdir()
    _csv(source, 0, ["a,2024-01-01 00:00:01,1", "b,2024-01-01 00:00:03,2"])  # the schema: k, ts, v INT
    query = ("SELECT k, window_start, count(*) AS n FROM TUMBLE(TABLE csv_ev PARTITION BY k "
             "WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) GROUP BY k, window_start, window_end")
    handle = sw.stream(query, sources={"csv_ev": str(source)}, source_format="csv", sink=str(tmp_path / "sink"),
                       checkpoint=str(tmp_path / "checkpoint"))
    status = _run_to_end(handle, lambda: _csv(source, 1, ["a,2024-01-01 00:00:02,abc", "b,never,3",
                                                          "a,2024-01-01 00:00:04,5"]))
    results = sorted(_sink_rows(spark, tmp_path / "sink", "k", "CAST(window_start AS STRING)", "n"))
    assert results == [("a", "2024-01-01 00:00:00", 2), ("b", "2024-01-01 00:00:00", 1)]
    assert status["rejected_rows"] == 2, status


def test_malformed_rows_of_both_sides_of_a_join_are_counted(sw, spark, tmp_path):
    """A join's stream routed the malformed rows of one source only (the one its operator named
    first): the other side's vanished uncounted. Every directory source's are counted now."""
    left, right = tmp_path / "left", tmp_path / "right"
    left.mkdir()
    right.mkdir()
    _csv(left, 0, ["a,2024-01-01 00:00:01,1"])
    _csv(right, 0, ["a,2024-01-01 00:00:03,10"], header="k,ts,w")
    query = ("SELECT l.k, l.window_start, l.v, r.w "
             "FROM TUMBLE(TABLE lefts WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) l "
             "JOIN TUMBLE(TABLE rights WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) r "
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end")
    handle = sw.stream(query, sources={"lefts": str(left), "rights": str(right)}, source_format="csv",
                       sink=str(tmp_path / "sink"), checkpoint=str(tmp_path / "checkpoint"))

    def feed():
        _csv(left, 1, ["a,2024-01-01 00:00:02,xyz"])
        _csv(right, 1, ["a,not a time,20"], header="k,ts,w")

    status = _run_to_end(handle, feed)
    results = _sink_rows(spark, tmp_path / "sink", "k", "CAST(window_start AS STRING)", "v", "w")
    assert results == [("a", "2024-01-01 00:00:00", 1, 10)]
    assert status["rejected_rows"] == 2, status


def test_malformed_rows_of_a_chained_streams_source_are_counted(sw, spark, tmp_path):
    """The same for a stream of two chained aggregations (AP-11): its source feeds the inner stage."""
    source = tmp_path / "source"
    source.mkdir()
    _csv(source, 0, ["a,2024-01-01 00:00:01,1", "b,2024-01-01 00:00:02,2"])
    query = ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n "
             "FROM TUMBLE(TABLE csv_ev WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
             "GROUP BY k, window_start, window_end, window_time) "
             "SELECT window_start, sum(n) AS total FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), INTERVAL 1 MINUTE) "
             "GROUP BY window_start, window_end")
    handle = sw.stream(query, sources={"csv_ev": str(source)}, source_format="csv", sink=str(tmp_path / "sink"),
                       checkpoint=str(tmp_path / "checkpoint"))
    status = _run_to_end(handle, lambda: _csv(source, 1, ["a,2024-01-01 00:00:03,abc", "b,2024-01-01 00:00:04,4"]))
    results = _sink_rows(spark, tmp_path / "sink", "CAST(window_start AS STRING)", "total")
    assert results == [("2024-01-01 00:00:00", 3)]
    assert status["rejected_rows"] == 1, status


def test_a_parquet_file_that_does_not_fit_is_named_and_a_restart_can_skip_it(spark, tmp_path, capsys):
    """Issue 13 part 2: a file whose time column is text stopped the stream with a JVM stack and a
    message ending in "Reason: ", on every restart. Now: the file named in one line, exit 1, the
    checkpoint unchanged; restarted with spark.sql.files.ignoreCorruptFiles the batch runs again
    without it, and the stream goes on."""
    from sqlwin.cli import main

    source = tmp_path / "source"
    source.mkdir()
    one = dt.datetime(2024, 1, 1, 0, 0, 10, tzinfo=UTC)
    _put(source, 0, [("a", one, 1)])
    pq.write_table(pa.table({"k": ["a"], "ts": ["not a time"], "v": pa.array([2], pa.int64())}), source / ".b1.tmp")
    (source / ".b1.tmp").rename(source / "b1.parquet")
    query = tmp_path / "q.sql"
    query.write_text(QUERY.replace(" LATE ROWS INTO far_late", ""))
    args = ["stream", str(query), "--source", f"far={source}", "--checkpoint", str(tmp_path / "ck"),
            "--sink", str(tmp_path / "sink"), "--once", "--max-files-per-trigger", "1"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "[FAILED_READ_FILE" in err and "b1.parquet" in err and "ignoreCorruptFiles" in err, err
    assert "Traceback" not in err and "\tat org.apache" not in err and "Reason: \n" not in err, err
    _put(source, 2, [("a", one + dt.timedelta(minutes=5), 3)])
    try:
        assert main([*args, "--end-input", "--conf", "spark.sql.files.ignoreCorruptFiles=true"]) == 0
    finally:
        spark.conf.unset("spark.sql.files.ignoreCorruptFiles")
    results = sorted((r.n, r.s) for r in spark.read.parquet(str(tmp_path / "sink")).collect())
    assert results == [(1, 1), (1, 3)]  # the good files' rows, each in its window; b1 skipped


CHAIN_QUERY = ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n "
               "FROM TUMBLE(TABLE csv_ev PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), "
               "INTERVAL 1 MINUTE) GROUP BY k, window_start, window_end, window_time) "
               "SELECT window_start, window_end, sum(n) AS total FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), "
               "INTERVAL 1 MINUTE) GROUP BY window_start, window_end LATE ROWS INTO chain_late")


def test_a_chain_with_late_rows_into_keeps_every_bad_row_of_its_first_stage(sw, spark, tmp_path):
    """Issue 21, reproduced: a chain with LATE ROWS INTO whose source got a NULL key, a NULL time, an
    unparsable time, `abc` in a number column and years 1 and 9999 died at that batch with
    [COLUMN_ALREADY_EXISTS] window_end (the second stage's late rows named the first stage's window
    columns twice); and the first stage's late and rejected rows vanished: the sink counted fewer
    rows, the late sink stayed empty and the progress said 0 late, 0 rejected. Now every such row is
    in the late sink with its own values and `stage` 1, and counted."""
    source = tmp_path / "source"
    source.mkdir()
    _csv(source, 0, ["a,2024-01-01 00:00:01,1", "b,2024-01-01 00:00:02,2", "a,2024-01-01 00:03:00,3"])
    handle = sw.stream(CHAIN_QUERY, sources={"csv_ev": str(source)}, source_format="csv",
                       source_options={"maxFilesPerTrigger": "1"}, sink=str(tmp_path / "sink"),
                       late_sink=str(tmp_path / "late"), checkpoint=str(tmp_path / "checkpoint"))
    handle.process_all_available()  # the first file: a's clock reaches 00:03
    status = _run_to_end(handle, lambda: _csv(source, 1, [
        ",2024-01-01 00:00:05,4",          # NULL key
        "b,,5",                            # NULL time
        "a,yesterday,6",                   # a time that does not convert
        "b,2024-01-01 00:00:06,abc",       # a number that does not convert
        "a,0001-01-03 00:00:00,7",         # year 1: behind a's clock (00:03): late
        "b,9999-12-30 00:00:00,8",         # year 9999: b's own window
        "a,2024-01-01 00:00:09,9",         # a's [00:00, 00:01) closed at batch 0 (clock 00:03): late
    ]))
    results = sorted(_sink_rows(spark, tmp_path / "sink", "CAST(window_start AS STRING)", "total"))
    assert results == [("2024-01-01 00:00:00", 2), ("2024-01-01 00:03:00", 1), ("9999-12-30 00:00:00", 1)]
    late = sorted((r.k or "", -1 if r.v is None else r.v, r.reason, r.stage, r.upstream_row)
                  for r in spark.read.parquet(str(tmp_path / "late")).collect())
    assert late == [("", 4, "null_key", 1, None), ("a", 6, "malformed", 1, None), ("a", 7, "late", 1, None),
                    ("a", 9, "late", 1, None), ("b", -1, "malformed", 1, None), ("b", 5, "null_time", 1, None)]
    assert (status["rows"], status["late_rows"], status["rejected_rows"]) == (10, 2, 4), status
    assert status["stages"] == {1: {"late": 2, "rejected": 4}, 2: {"late": 0, "rejected": 0}}


def test_a_joins_bad_rows_keep_their_values_and_side(sw, spark, tmp_path):
    """Issue 21: LATE ROWS INTO was refused for a streaming join; its malformed rows reached the late
    sink without any of their values and its NULL-key / late rows were only counted. Now each is in
    the late sink with `side` (the side's name) and its row in that side's struct column."""
    left, right = tmp_path / "left", tmp_path / "right"
    left.mkdir()
    right.mkdir()
    _csv(left, 0, ["a,2024-01-01 00:00:01,1", "a,2024-01-01 00:02:00,2"])
    _csv(right, 0, ["a,2024-01-01 00:00:03,10", "a,2024-01-01 00:02:30,20"], header="k,ts,w")
    query = ("SELECT l.k, l.window_start, l.v, r.w "
             "FROM TUMBLE(TABLE lefts WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) l "
             "FULL JOIN TUMBLE(TABLE rights WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) r "
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end LATE ROWS INTO jl")
    handle = sw.stream(query, sources={"lefts": str(left), "rights": str(right)}, source_format="csv",
                       source_options={"maxFilesPerTrigger": "1"}, sink=str(tmp_path / "sink"),
                       late_sink=str(tmp_path / "late"), checkpoint=str(tmp_path / "checkpoint"))
    handle.process_all_available()  # the first files: the clocks reach 00:02

    def feed():
        _csv(left, 1, ["a,2024-01-01 00:00:02,xyz", ",2024-01-01 00:02:05,3", "a,2024-01-01 00:00:30,4"])
        _csv(right, 1, ["a,not a time,30"], header="k,ts,w")

    status = _run_to_end(handle, feed)
    late = sorted((r.side, r.reason, None if r.l is None else (r.l.k or "", -1 if r.l.v is None else r.l.v),
                   None if r.r is None else (r.r.k, r.r.w)) for r in spark.read.parquet(str(tmp_path / "late")).collect())
    assert late == [("l", "late", ("a", 4), None), ("l", "malformed", ("a", -1), None),
                    ("l", "null_key", ("", 3), None), ("r", "malformed", None, ("a", 30))]
    assert (status["late_rows"], status["rejected_rows"]) == (1, 3), status

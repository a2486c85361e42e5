"""Hostile names: columns, tables and views whose names hold backticks, quotes, spaces, `;`, `--`,
unicode, or a whole SQL fragment, in every mode (issue 13, part 1).

sqlwin writes names into the Spark SQL it generates. Each must stay one identifier: a column
named ``k` AS __q, raise_error('injected') AS __zz, `v`` must not add a column that runs
raise_error, and a column named ``v`x`` must not break the query. Every expected value below
is worked out by hand from ROWS.
"""

from __future__ import annotations

import csv
import datetime as dt
import os

import pytest
from pyspark.sql.types import IntegerType, LongType, StringType, StructField, StructType, TimestampType

from sqlwin.cli import main
from sqlwin.sql.text import quote_identifier as q
from sqlwin.testing import feed_stream

INJECTION = "k` AS __q, raise_error('injected') AS __zz, `v"  # the CSV header cell
KEY = "k.e`y; DROP TABLE x --"  # the key column: a dot, a backtick, a statement
VALUE = "v`x"  # a backtick (the empty "Spark cannot run the query: ")
TIME = "t ime; --"  # space, semicolon, comment
MILLIS = "m's\"ms"  # quotes: the time as epoch milliseconds
ORDER = "ordre ✓ é"  # unicode: the arrival order
BATCH = "b--atch/*"  # comment markers: the arrival batch
NOTE = INJECTION  # carried into the late rows
TOTAL = "sum`of \"v\"; --"  # an output alias
TABLE = "ev`ents; -- drop"  # the input view
LATE = "late`rows é;"  # the LATE ROWS INTO view
TABLE_ALIAS = "e v`"

SCHEMA = StructType([
    StructField(KEY, StringType()), StructField(TIME, TimestampType()), StructField(VALUE, IntegerType()),
    StructField(MILLIS, LongType()), StructField(ORDER, IntegerType()), StructField(BATCH, IntegerType()),
    StructField(NOTE, StringType()),
])


def _t(seconds: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds)


# key, time, value, time in ms, arrival order, arrival batch, note
ROWS = [
    ("a", _t(10), 1, 10_000, 1, 0, "n1"),
    ("b", _t(20), 10, 20_000, 2, 0, "n2"),
    ("a", _t(90), 2, 90_000, 3, 1, "n3"),  # a's watermark 89 s: a's [0, 60 s) closes after batch 1
    ("a", _t(50), 4, 50_000, 4, 2, "n4"),  # late: a's [0, 60 s) closed; late by 89 - 50 = 39 s
    ("b", _t(40), 20, 40_000, 5, 2, "n5"),  # on time: b's watermark is 19 s
]

WATERMARKED = (f"TABLE {q(TABLE)} PARTITION BY {q(KEY)} WATERMARK {q(TIME)} DELAY OF INTERVAL 1 SECOND "
               f"WITH (arrival_order = {q(ORDER)}, arrival_batch = {q(BATCH)})")
ARRIVAL_QUERY = f"""
SELECT {q(KEY)}, window_start, count(*) AS n, sum({q(VALUE)}) AS {q(TOTAL)}
FROM TUMBLE({WATERMARKED}, DESCRIPTOR({q(TIME)}), INTERVAL 1 MINUTE)
GROUP BY {q(KEY)}, window_start, window_end
EMIT FINAL LATE ROWS INTO {q(LATE)}
"""
# key, window_start, n, total. All rows on time: a [0, 60 s) holds 1 and 4.
ARRIVAL_RESULT = [("a", _t(0), 1, 1), ("a", _t(60), 1, 2), ("b", _t(0), 2, 30)]
LATE_COLUMNS = [KEY, TIME, VALUE, MILLIS, ORDER, BATCH, NOTE, "late_by", "window_start", "window_end", "reason"]
LATE_ROWS = [("a", _t(50), 4, 50_000, 4, 2, "n4", dt.timedelta(seconds=39), _t(0), _t(60), "late")]


@pytest.fixture(scope="module")
def events(spark):
    frame = spark.createDataFrame(ROWS, SCHEMA)
    frame.createOrReplaceTempView(q(TABLE))
    return frame


def _first(rows, n=4):
    return sorted(tuple(r)[:n] for r in rows)


def test_the_helper_quotes_and_doubles_backticks():
    assert q("a b") == "`a b`"
    assert q("v`x") == "`v``x`"
    assert q(INJECTION) == "`k`` AS __q, raise_error('injected') AS __zz, ``v`"


# --------------------------------------------------------------------------- complete input


def test_complete_input_spark_window(sw, events):
    rows = sw.sql(f"""
        SELECT {q(KEY)}, window_start, count(*) AS n, sum({q(VALUE)}) AS {q(TOTAL)}
        FROM TUMBLE(TABLE {q(TABLE)} PARTITION BY {q(KEY)}, DESCRIPTOR({q(TIME)}), INTERVAL 1 MINUTE)
        GROUP BY {q(KEY)}, window_start, window_end""")
    assert rows.columns == [KEY, "window_start", "n", TOTAL]
    assert _first(rows.collect()) == [("a", _t(0), 2, 5), ("a", _t(60), 1, 2), ("b", _t(0), 2, 30)]


def test_complete_input_epoch_ms_arithmetic_with_a_hostile_alias(sw, events):
    a = q(TABLE_ALIAS)
    rows = sw.sql(f"""
        SELECT {a}.{q(KEY)}, window_start, count(*) AS n, sum({a}.{q(VALUE)}) AS {q(TOTAL)}
        FROM HOP(TABLE {q(TABLE)} AS {a} PARTITION BY {q(KEY)}, DESCRIPTOR({q(MILLIS)}), 60000, 60000)
        GROUP BY {a}.{q(KEY)}, window_start, window_end""").collect()
    assert _first(rows) == [("a", 0, 2, 5), ("a", 60_000, 1, 2), ("b", 0, 2, 30)]


def test_complete_input_rows_with_their_windows(sw, events):
    a = q(TABLE_ALIAS)
    rows = sw.sql(f"""
        SELECT {a}.{q(NOTE)}, window_start, window_end
        FROM TUMBLE(TABLE {q(TABLE)} AS {a}, DESCRIPTOR({q(MILLIS)}), 60000)
        WHERE {a}.{q(KEY)} = 'a'""").collect()
    assert _first(rows, 3) == [("n1", 0, 60_000), ("n3", 60_000, 120_000), ("n4", 0, 60_000)]


def test_complete_input_sessions(sw, events):
    rows = sw.sql(f"""
        SELECT {q(KEY)}, window_start, window_end, sum({q(VALUE)}) AS {q(TOTAL)}
        FROM SESSION(TABLE {q(TABLE)} PARTITION BY {q(KEY)}, DESCRIPTOR({q(TIME)}), INTERVAL 30 SECONDS)
        GROUP BY {q(KEY)}, window_start, window_end""").collect()
    # a at 10, 50, 90 s: 40 s apart, three sessions; b at 20 and 40 s: one
    assert _first(rows) == [("a", _t(10), _t(40), 1), ("a", _t(50), _t(80), 4), ("a", _t(90), _t(120), 2),
                            ("b", _t(20), _t(70), 30)]


def test_complete_input_count_windows_ordered_by_a_hostile_column(sw, events):
    rows = sw.sql(f"""
        SELECT {q(KEY)}, window_start, window_end, sum({q(VALUE)}) AS {q(TOTAL)}
        FROM COUNT_WINDOW(TABLE {q(TABLE)} PARTITION BY {q(KEY)} ORDER BY {q(ORDER)}, DESCRIPTOR({q(TIME)}), 2)
        GROUP BY {q(KEY)}, window_start, window_end""").collect()
    # a in order 1, 3, 4: one full window of the first two (values 1, 2); b: 2, 5 (10, 20)
    assert _first(rows) == [("a", _t(10), _t(90), 3), ("b", _t(20), _t(40), 30)]


# --------------------------------------------------------------------------- replay and streaming


def test_replay_with_late_rows_into_a_hostile_view(sw, spark, events):
    result = sw.sql(ARRIVAL_QUERY)
    assert result.columns[:4] == [KEY, "window_start", "n", TOTAL]
    assert _first(result.collect()) == ARRIVAL_RESULT
    late = spark.table(q(LATE))
    assert late.columns == LATE_COLUMNS
    assert [tuple(r) for r in late.collect()] == LATE_ROWS


def test_streaming_with_a_late_sink(sw, events, tmp_path):
    fed = feed_stream(sw, ARRIVAL_QUERY, events, TABLE, BATCH, ORDER, workdir=str(tmp_path), late=True)
    assert fed.schema.names[:4] == [KEY, "window_start", "n", TOTAL]
    assert [_first(rows) for rows in fed.per_batch] == [[], [("a", _t(0), 1, 1)], []]
    assert _first(fed.rows) == ARRIVAL_RESULT  # the other two at the end of input
    assert fed.late_schema.names == LATE_COLUMNS
    assert fed.late_rows == LATE_ROWS


# --------------------------------------------------------------------------- the command line


def _csv(path, header, rows):
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)  # the injection cell is quoted: it holds commas
        writer.writerows(rows)


def test_cli_stream_over_a_csv_whose_header_injects(spark, tmp_path, capsys):
    # The case: the query names only k, ts and v; the fourth column reaches the SQL
    # because LATE ROWS INTO carries every input column.
    source = tmp_path / "in"
    source.mkdir()
    header = ["k", "ts", "v", INJECTION]
    _csv(source / "1.csv", header, [("a", "1970-01-01 00:00:10", 1, "x1"), ("a", "1970-01-01 00:01:30", 2, "x2")])
    _csv(source / "2.csv", header, [("a", "1970-01-01 00:00:50", 4, "x3")])  # a's watermark is 89 s: late
    os.utime(source / "1.csv", (1_000_000, 1_000_000))  # the file source reads oldest first
    query = tmp_path / "q.sql"
    query.write_text("""
        SELECT k, window_start, count(*) AS n, sum(v) AS total
        FROM TUMBLE(TABLE ev PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE)
        GROUP BY k, window_start, window_end
        EMIT FINAL LATE ROWS INTO late_ev""")
    sink, late = tmp_path / "sink", tmp_path / "late"
    code = main(["stream", str(query), "--source", f"ev={source}", "--source-format", "csv",
                 "--checkpoint", str(tmp_path / "cp"), "--sink", str(sink), "--late-sink", str(late),
                 "--max-files-per-trigger", "1", "--once", "--end-input"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "injected" not in err
    results = spark.read.parquet(str(sink))
    assert _first(results.collect()) == [("a", _t(0), 1, 1), ("a", _t(60), 1, 2)]
    late_rows = spark.read.parquet(str(late))
    assert late_rows.columns[:5] == ["k", "ts", "v", INJECTION, "late_by"]
    assert _first(late_rows.collect(), 5) == [("a", _t(50), 4, "x3", dt.timedelta(seconds=39))]


def test_cli_run_over_a_csv_whose_header_injects(spark, tmp_path, capsys):
    data = tmp_path / "ev.csv"
    _csv(data, [INJECTION, "ts", "v"],
         [("a", "1970-01-01 00:00:10", 1), ("a", "1970-01-01 00:01:30", 2), ("a", "1970-01-01 00:00:50", 4)])
    query = tmp_path / "q.sql"
    query.write_text(f"""
        SELECT {q(INJECTION)}, window_start, count(*) AS n, sum(v) AS total
        FROM TUMBLE(TABLE ev PARTITION BY {q(INJECTION)}, DESCRIPTOR(ts), INTERVAL 1 MINUTE)
        GROUP BY {q(INJECTION)}, window_start, window_end""")
    code = main(["run", str(query), "--table", f"ev={data}"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    lines = captured.out.splitlines()
    assert lines[0].startswith(INJECTION)
    assert [line.split() for line in lines[2:4]] == [["a", "1970-01-01", "00:00:00", "2", "5"],
                                                     ["a", "1970-01-01", "00:01:00", "1", "2"]]


# --------------------------------------------------------------------------- names that differ only in punctuation


@pytest.fixture(scope="module")
def two_keys(spark):
    # keys `a b` and `a-b`: once both became __k__a_b_ inside the lowered SQL
    rows = [("x", "p", _t(10), 1), ("x", "r", _t(20), 2), ("y", "p", _t(30), 4), ("x", "p", _t(40), 8)]
    spark.createDataFrame(rows, "`a b` STRING, `a-b` STRING, ts TIMESTAMP, v INT").createOrReplaceTempView("two_keys")


@pytest.mark.parametrize("window, expected", [
    # (x, p) at 10 and 40 s: one session (30 s < 1 min apart); (x, r) and (y, p) one row each
    ("SESSION(TABLE two_keys PARTITION BY `a b`, `a-b`, DESCRIPTOR(ts), INTERVAL 1 MINUTE)",
     [("x", "p", _t(10), 9), ("x", "r", _t(20), 2), ("y", "p", _t(30), 4)]),
    # one window per row, [ts - 1 min, ts]: (x, p)'s 40 s window holds its 10 s row too
    ("SLIDE(TABLE two_keys PARTITION BY `a b`, `a-b`, DESCRIPTOR(ts), INTERVAL 1 MINUTE)",
     [("x", "p", _t(-50), 1), ("x", "p", _t(-20), 9), ("x", "r", _t(-40), 2), ("y", "p", _t(-30), 4)]),
])
def test_keys_that_differ_only_in_punctuation(sw, two_keys, window, expected):
    rows = sw.sql(f"SELECT `a b`, `a-b`, window_start, sum(v) AS s FROM {window} "
                  "GROUP BY `a b`, `a-b`, window_start, window_end").collect()
    assert _first(rows) == expected


def test_a_cte_with_a_hostile_name_in_complete_input_and_replay(sw, two_keys):
    cte = q("my `cte`; --")
    base = (f"WITH {cte} AS (SELECT * FROM two_keys) SELECT `a b`, window_start, sum(v) AS s "
            f"FROM TUMBLE(TABLE {cte} PARTITION BY `a b`{{options}}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
            "GROUP BY `a b`, window_start, window_end")
    # x: 1 + 2 + 8 in [0, 60 s); y: 4
    expected = [("x", _t(0), 11), ("y", _t(0), 4)]
    assert _first(sw.sql(base.format(options="")).collect(), 3) == expected
    replayed = sw.sql(base.format(options=" WITH (arrival_order = v)")).collect()
    assert _first(replayed, 3) == expected


def test_a_joins_late_rows_keep_a_column_named_with_a_quote(sw, spark):
    # Names go into the late rows' struct fields and `side` as string literals: quoted, not pasted.
    import datetime as dt

    base = dt.datetime(2024, 1, 1)
    for name, rows in (("hq_l", [("k", base, 1, 0), (None, base, 2, 1)]), ("hq_r", [("k", base, 3, 2)])):
        spark.createDataFrame(rows, "k STRING, ts TIMESTAMP, `it's` INT, seq INT").createOrReplaceTempView(name)
    query = ("SELECT `o'l`.k, r.`it's` FROM TUMBLE(TABLE hq_l {o}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) `o'l` "
             "JOIN TUMBLE(TABLE hq_r {o}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) r ON `o'l`.k = r.k "
             "AND `o'l`.window_start = r.window_start AND `o'l`.window_end = r.window_end LATE ROWS INTO hq_late")
    for options in ("", "WATERMARK ts DELAY OF INTERVAL 1 MINUTE WITH (arrival_order = seq)"):
        assert [tuple(r)[:2] for r in sw.sql(query.format(o=options)).collect()] == [("k", 3)]
        late = [(r.side, r["o'l"]["it's"], r.reason) for r in spark.table("hq_late").collect()]
        assert late == [("o'l", 2, "null_key")], options

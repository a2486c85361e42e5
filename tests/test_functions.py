"""sqlwin.register(spark): the window functions in plain spark.sql give what sw.sql gives.

Every window kind runs on one seeded random table (a few hundred rows over three keys and a
NULL key, times before and after 1970, repeated times, NULL times) through the registered
function and through sqlwin's own SQL, and the two results must be the same rows.
"""

from __future__ import annotations

import datetime as dt
import math
import pickle
import random
import subprocess
import sys
from collections import Counter

import pytest
from pyspark.errors import AnalysisException, PythonException

import sqlwin

UTC = dt.timezone.utc
BASE = dt.datetime(2023, 12, 14, tzinfo=UTC)


@pytest.fixture(scope="module")
def events(spark):
    """300 rows: key k (a, b, c or NULL), ts (TIMESTAMP), ms (its epoch ms), msd (DOUBLE epoch ms
    with halves and NaN), seq (a unique row order) and v."""
    sqlwin.register(spark)
    rng = random.Random(20231214)
    rows = []
    seqs = rng.sample(range(10_000), 300)
    for i in range(300):
        if i % 40 == 0:
            ts = None
        elif i % 25 == 0:
            ts = dt.datetime(1969, 12, 31, 23, 50, tzinfo=UTC) + dt.timedelta(microseconds=rng.randrange(10**9))
        elif i % 7 == 0 and rows and rows[-1][1] is not None:
            ts = rows[-1][1]  # the same instant twice
        else:
            ts = BASE + dt.timedelta(microseconds=rng.randrange(3 * 3600 * 10**6))
        ms = None if ts is None else (ts - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(milliseconds=1)
        msd = None if ms is None else ms + rng.choice([0.0, 0.5, -0.5, 0.25, 0.75])
        if i % 60 == 30:
            msd = float("nan")
        key = None if i % 50 == 3 else rng.choice("abc")
        rows.append((key, ts, ms, msd, seqs[i], rng.random()))
    frame = spark.createDataFrame(rows, "k string, ts timestamp, ms bigint, msd double, seq bigint, v double")
    frame = frame.repartition(3).cache()  # several partitions, as a real table has
    frame.count()
    frame.createOrReplaceTempView("fn_events")
    yield rows
    frame.unpersist()


def comparable(row) -> tuple:
    return tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in row)


def same_rows(spark, sw, registered: str, own: str) -> list:
    """Both results, compared as multisets of rows; returns them for further checks."""
    mine, theirs = spark.sql(registered), sw.sql(own)
    assert mine.columns == theirs.columns
    got, want = mine.collect(), theirs.collect()
    missing = Counter(map(comparable, want)) - Counter(map(comparable, got))
    extra = Counter(map(comparable, got)) - Counter(map(comparable, want))
    assert not missing and not extra, f"missing {list(missing)[:5]}, unexpected {list(extra)[:5]}"
    return got


CASES = {
    "tumble": ("tumble(TABLE(fn_events), 'ts', INTERVAL '7' MINUTES)",
               "TUMBLE(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 7 MINUTES)"),
    "tumble offset": ("tumble(TABLE(fn_events), 'ts', INTERVAL '1' HOUR, INTERVAL '-20' MINUTES)",
                      "TUMBLE(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 1 HOUR, INTERVAL -20 MINUTES)"),
    "tumble instant": ("tumble(TABLE(fn_events), 'ts', INTERVAL '1' HOUR, TIMESTAMP '2023-12-14 00:20:00')",
                       "TUMBLE(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:20:00')"),
    "tumble named": ("tumble(data => TABLE(fn_events), timecol => 'ts', size => INTERVAL '90' SECONDS)",
                     "TUMBLE(DATA => TABLE fn_events, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL 90 SECONDS)"),
    "tumble epoch ms": ("tumble(TABLE(fn_events), 'ms', 420000, 60000)",
                        "TUMBLE(TABLE fn_events, DESCRIPTOR(ms), 420000, 60000)"),
    "tumble double ms": ("tumble(TABLE(fn_events), 'msd', 1)", "TUMBLE(TABLE fn_events, DESCRIPTOR(msd), 1)"),
    "hop": ("hop(TABLE(fn_events), 'ts', INTERVAL '5' MINUTES, INTERVAL '12' MINUTES, INTERVAL '1' MINUTE)",
            "HOP(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 5 MINUTES, INTERVAL 12 MINUTES, INTERVAL 1 MINUTE)"),
    "hop with gaps": ("hop(TABLE(fn_events), 'ts', INTERVAL '10' MINUTES, INTERVAL '4' MINUTES)",
                      "HOP(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 10 MINUTES, INTERVAL 4 MINUTES)"),
    "cumulate": ("cumulate(TABLE(fn_events), 'ts', INTERVAL '5' MINUTES, INTERVAL '20' MINUTES, INTERVAL '3' MINUTES)",
                 "CUMULATE(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 5 MINUTES, INTERVAL 20 MINUTES, INTERVAL 3 MINUTES)"),
    "session": ("session(TABLE(fn_events) PARTITION BY (k), 'ts', INTERVAL '3' MINUTES)",
                "SESSION(TABLE fn_events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 3 MINUTES)"),
    "session ordered": ("session(TABLE(fn_events) PARTITION BY k ORDER BY (ts), 'ts', INTERVAL '3' MINUTES)",
                        "SESSION(TABLE fn_events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 3 MINUTES)"),
    "session one sequence": ("session(TABLE(fn_events) WITH SINGLE PARTITION, 'ts', INTERVAL '1' MINUTE)",
                             "SESSION(TABLE fn_events, DESCRIPTOR(ts), INTERVAL 1 MINUTE)"),
    "session epoch ms": ("session(TABLE(fn_events) PARTITION BY (k), 'ms', 180000)",
                         "SESSION(TABLE fn_events PARTITION BY k, DESCRIPTOR(ms), 180000)"),
    "slide": ("slide(TABLE(fn_events) PARTITION BY (k), 'ts', INTERVAL '4' MINUTES)",
              "SLIDE(TABLE fn_events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 4 MINUTES)"),
    "slide one sequence": ("slide(TABLE(fn_events) WITH SINGLE PARTITION, 'ms', 60000)",
                           "SLIDE(TABLE fn_events, DESCRIPTOR(ms), 60000)"),
    "count hopping": ("count_window(TABLE(fn_events) PARTITION BY k ORDER BY (seq), 'ts', 3, 2)",
                      "COUNT_WINDOW(TABLE fn_events PARTITION BY k ORDER BY seq, DESCRIPTOR(ts), 3, 2)"),
    "count tumbling": ("count_window(data => TABLE(fn_events) PARTITION BY k ORDER BY seq, timecol => 'seq', size => 4)",
                       "COUNT_WINDOW(TABLE fn_events PARTITION BY k ORDER BY seq, 4)"),
    "count gaps, one sequence": ("count_window(TABLE(fn_events) WITH SINGLE PARTITION ORDER BY (seq), 'msd', 2, 5)",
                                 "COUNT_WINDOW(TABLE fn_events ORDER BY seq, DESCRIPTOR(msd), 2, 5)"),
    "global": ("global_window(TABLE(fn_events) PARTITION BY (k))", "GLOBAL_WINDOW(TABLE fn_events PARTITION BY k)"),
    "global epoch ms": ("global_window(TABLE(fn_events), 'ms')", "GLOBAL_WINDOW(TABLE fn_events, DESCRIPTOR(ms))"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_every_kind_equals_sqlwins_own_sql(spark, sw, events, case):
    registered, own = CASES[case]
    rows = same_rows(spark, sw, f"SELECT * FROM {registered}", f"SELECT * FROM {own}")
    assert len(rows) >= 50  # windows were assigned, not two empty results
    if "tumbling" not in case and case != "global":
        assert all(r["ts"] is not None for r in rows)  # rows without a time join no window


def test_a_grouped_query_over_a_registered_function(spark, sw, events):
    group = "SELECT k, window_start, window_end, count(*) AS n, sum(v) AS v FROM {} GROUP BY k, window_start, window_end"
    same_rows(spark, sw, group.format("session(TABLE(fn_events) PARTITION BY (k), 'ts', INTERVAL '5' MINUTES)"),
              group.format("SESSION(TABLE fn_events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 5 MINUTES)"))


def test_sessions_split_rows_exactly_one_gap_apart(spark):
    # BW-07: 2B at 01:00 and 3A at 01:30 with a 30-minute gap are two sessions
    spark.createDataFrame([("u", BASE + dt.timedelta(hours=1)), ("u", BASE + dt.timedelta(hours=1, minutes=30)),
                           ("u", BASE + dt.timedelta(hours=1, minutes=59))],
                          "user string, ts timestamp").createOrReplaceTempView("fn_bw07")
    sqlwin.register(spark)
    rows = spark.sql("SELECT ts, window_start, window_end FROM session(TABLE(fn_bw07) PARTITION BY (user), 'ts', "
                     "INTERVAL '30' MINUTES) ORDER BY ts").collect()
    naive = [BASE.replace(tzinfo=None) + dt.timedelta(hours=1, minutes=m) for m in (0, 30, 59, 89)]
    assert [(r["window_start"], r["window_end"]) for r in rows] == [
        (naive[0], naive[1]), (naive[1], naive[3]), (naive[1], naive[3])]


def test_the_schema_is_the_inputs_columns_then_the_window_columns(spark, sw, events):
    spark.sql("SELECT k, ts, ms, 1 AS window_start FROM fn_events").createOrReplaceTempView("fn_shadow")
    cases = {
        "tumble(TABLE(fn_shadow), 'ts', INTERVAL '1' MINUTE)":
            ("TUMBLE(TABLE fn_shadow, DESCRIPTOR(ts), INTERVAL 1 MINUTE)", "timestamp"),
        "session(TABLE(fn_shadow) PARTITION BY (k), 'ms', 1000)":
            ("SESSION(TABLE fn_shadow PARTITION BY k, DESCRIPTOR(ms), 1000)", "bigint"),
        "count_window(TABLE(fn_shadow) PARTITION BY k ORDER BY (ts), 'ts', 2)":
            ("COUNT_WINDOW(TABLE fn_shadow PARTITION BY k ORDER BY ts, DESCRIPTOR(ts), 2)", "timestamp"),
        "global_window(TABLE(fn_shadow))": ("GLOBAL_WINDOW(TABLE fn_shadow)", "timestamp"),
    }
    for registered, (own, kind) in cases.items():
        schema = spark.sql(f"SELECT * FROM {registered}").schema
        expected = [("k", "string"), ("ts", "timestamp"), ("ms", "bigint"), ("window_start", kind),
                    ("window_end", kind), ("window_time", kind)]
        if registered.startswith("count_window"):
            expected.append(("window_index", "bigint"))
        assert [(f.name, f.dataType.simpleString()) for f in schema] == expected, registered
        theirs = sw.sql(f"SELECT * FROM {own}").schema
        assert [(f.name, f.dataType) for f in schema] == [(f.name, f.dataType) for f in theirs], registered


ERRORS = {
    "tumble(TABLE(fn_events), 'ts', INTERVAL '-10' MINUTES)":
        ["sqlwin tumble: size must be positive, got INTERVAL '-10' MINUTE", "Accepted: an INTERVAL"],
    "tumble(TABLE(fn_events), 'tx', INTERVAL '10' MINUTES)":
        ["sqlwin tumble: unknown time column 'tx'", "Accepted: one of the input's columns: k, ts, ms, msd, seq, v"],
    "tumble(TABLE(fn_events), 'ts', 60000)":
        ["sqlwin tumble: size needs a unit: 60000 of what?", "BIGINT epoch-ms"],
    "tumble(TABLE(fn_events), 'ms', 1.5)": ["sqlwin tumble: size must be an interval, got DECIMAL(2,1)"],
    "tumble(TABLE(fn_events), 'k', INTERVAL '1' MINUTE)": ["sqlwin tumble: time column k is STRING, not a time"],
    "tumble('ts', INTERVAL '1' MINUTE)": ["sqlwin tumble: the first argument must be the input table"],
    "hop(TABLE(fn_events), 'ts', INTERVAL '1' MINUTE)":
        ["sqlwin hop: the size argument is missing", "Accepted: hop(TABLE(t), 'ts', slide, size [, offset])"],
    "cumulate(TABLE(fn_events), 'ts', INTERVAL '7' MINUTES, INTERVAL '20' MINUTES)":
        ["sqlwin cumulate: step INTERVAL '7' MINUTE does not divide size INTERVAL '20' MINUTE"],
    "session(TABLE(fn_events) PARTITION BY (k), 'ms', 1500000001)": [],  # valid: a bare number of ms
    "session(TABLE(fn_events) PARTITION BY (k), 'ts', gap => INTERVAL '1' SECOND, size => 3)":
        ["sqlwin session: there is no parameter size (the parameters are data, timecol, gap)"],
    "count_window(TABLE(fn_events) PARTITION BY k ORDER BY (seq), 'ts', 0)":
        ["sqlwin count_window: size must be a positive number of rows, got 0"],
    "count_window(TABLE(fn_events) PARTITION BY k ORDER BY (seq), 3)":
        ["sqlwin count_window: the column whose first and last values bound each window"],
    "slide(TABLE(fn_events) PARTITION BY (k), 'ms', 1500)": [],  # valid
    "slide(TABLE(fn_events) PARTITION BY (k), 'ms', INTERVAL '0.0015' SECOND)":
        ["sqlwin slide: size is finer than a millisecond", "Accepted: a whole number of milliseconds"],
    "global_window(TABLE(fn_events), 1)": ["sqlwin global_window: the time column is given by its name"],
}


@pytest.mark.parametrize("call", list(ERRORS))
def test_bad_arguments_name_the_function_and_what_it_accepts(spark, events, call):
    if not ERRORS[call]:
        spark.sql(f"SELECT * FROM {call}").schema  # the valid neighbour of a refused call analyses
        return
    with pytest.raises(AnalysisException) as caught:
        spark.sql(f"SELECT * FROM {call}").schema
    for part in ERRORS[call]:
        assert part in str(caught.value)
    assert "Traceback" not in str(caught.value) and 'File "' not in str(caught.value), str(caught.value)


def test_a_bad_argument_is_not_logged_with_its_jvm_stack(spark, events):
    """PySpark logs every SQL error with its JVM stack (a hundred lines of JSON on stderr): not the
    functions' own errors, whose message says it all; other errors are logged as PySpark logs them.

    Whether PySpark logs an error at all depends on session state earlier tests may change, so the
    filter sqlwin.register puts on PySpark's logger is asked directly, with the messages of a real
    error of the functions' own and of another."""
    import logging

    from pyspark.logger import PySparkLogger

    with pytest.raises(AnalysisException) as own:
        spark.sql("SELECT * FROM tumble(TABLE(fn_events), 'ts', INTERVAL '-1' MINUTE)").schema
    with pytest.raises(AnalysisException) as other:
        spark.sql("SELECT nosuch FROM fn_events").schema
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")

    def record(error) -> logging.LogRecord:
        return logging.LogRecord(logger.name, logging.ERROR, __file__, 0, str(error.value), None, None)

    assert not logger.filter(record(own)), str(own.value)  # dropped: its message says it all
    assert logger.filter(record(other))  # logged as PySpark logs it


def test_a_keyed_window_over_a_split_input_asks_for_partition_by(spark, events):
    with pytest.raises(PythonException) as caught:
        spark.sql("SELECT * FROM session(TABLE(fn_events), 'ts', INTERVAL '1' MINUTE)").collect()
    assert "sqlwin session: the input reaches it in several partitions" in str(caught.value)
    assert "WITH SINGLE PARTITION" in str(caught.value)


def test_workers_load_the_functions_without_the_parser(tmp_path):
    from pyspark import cloudpickle  # what PySpark pickles UDTF handlers and analyze results with

    from sqlwin.ir import Tumble
    from sqlwin.spark.functions import FUNCTIONS, WindowCall

    blob = tmp_path / "functions.pickle"
    call = WindowCall(schema=None, function="tumble", windower=Tumble(60_000_000), time_column="ts",
                      time_kind="timestamp", keep=("ts",))
    blob.write_bytes(cloudpickle.dumps((list(FUNCTIONS.values()), call)))
    code = (f"import pickle, sys; pickle.loads(open({str(blob)!r}, 'rb').read()); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlglot', 'sqlwin')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "sqlglot" not in loaded and "sqlwin.api" not in loaded and "sqlwin.sql.plan" not in loaded
    assert "sqlwin.spark.functions" in loaded and "sqlwin.runtime.assign" in loaded
    assert pickle.loads(blob.read_bytes())[1].windower == Tumble(60_000_000)


def test_the_window_column_names_are_the_planners():
    from sqlwin.spark.function_calls import WINDOW_COLUMNS
    from sqlwin.sql.plan import WINDOW_COLUMNS as PLANNED

    assert WINDOW_COLUMNS == PLANNED


def optimized_plan(spark, query: str) -> str:
    return spark.sql(query)._jdf.queryExecution().optimizedPlan().toString()


@pytest.mark.parametrize("case", list(CASES))
def test_every_kind_runs_as_a_native_spark_plan(spark, events, case):
    """A classic session runs the registered functions as sw.sql's own lowering: no Python worker."""
    plan = optimized_plan(spark, f"SELECT * FROM {CASES[case][0]}")
    assert "PythonUDTF" not in plan and "window_start" in plan, plan


def test_a_call_the_native_plan_does_not_take_runs_the_python_udtf(spark, events):
    # session with neither PARTITION BY nor WITH SINGLE PARTITION: the UDTF checks the input's split
    assert "PythonUDTF" in optimized_plan(spark, "SELECT * FROM session(TABLE(fn_events), 'ts', INTERVAL '1' MINUTE)")
    # count_window without ORDER BY: counted in arrival order, which only the UDTF sees
    assert "PythonUDTF" in optimized_plan(
        spark, "SELECT * FROM count_window(TABLE(fn_events) WITH SINGLE PARTITION, 'ts', 3)")


@pytest.fixture(scope="module")
def python_udtfs(spark, events):
    """The Python UDTFs (what a Spark Connect session registers) beside the native functions, as py_<name>."""
    from sqlwin.spark.functions import FUNCTIONS, python_udtf

    for name in FUNCTIONS:
        spark.udtf.register(f"py_{name}", python_udtf(name))


@pytest.mark.parametrize("case", list(CASES))
def test_the_python_udtfs_give_the_same_rows(spark, sw, python_udtfs, case):
    registered, own = CASES[case]
    assert "PythonUDTF" in optimized_plan(spark, f"SELECT * FROM py_{registered}")
    rows = same_rows(spark, sw, f"SELECT * FROM py_{registered}", f"SELECT * FROM {own}")
    assert len(rows) >= 50


@pytest.fixture(scope="module")
def stream(spark, tmp_path_factory):
    """fn_stream: a streaming view over parquet files of 40 rows, two keys, a row every 7 seconds."""
    path = str(tmp_path_factory.mktemp("fn_stream") / "in")
    spark.range(40).selectExpr("CAST(id % 2 AS STRING) AS k", "timestamp_micros(1702512000000000 + id * 7000000) AS ts",
                               "id AS seq").write.parquet(path)
    spark.readStream.schema("k STRING, ts TIMESTAMP, seq BIGINT").parquet(path).createOrReplaceTempView("fn_stream")
    spark.read.parquet(path).createOrReplaceTempView("fn_stream_rows")
    return path


@pytest.mark.parametrize("call", [
    "session(TABLE(fn_stream) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
    "slide(TABLE(fn_stream) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
    "count_window(TABLE(fn_stream) PARTITION BY k ORDER BY (seq), 'ts', 3)",
    "session(TABLE(fn_stream) WITH SINGLE PARTITION, 'ts', INTERVAL '30' SECONDS)",
])
def test_a_keyed_window_over_a_stream_is_refused_in_sqlwins_words(spark, events, stream, call):
    """Spark cannot sort a stream ("Sorting is not supported on streaming DataFrames/Datasets" when
    the query starts): refused when Spark analyses the call, saying what runs it instead."""
    function = call.split("(")[0]
    with pytest.raises(AnalysisException) as caught:
        spark.sql(f"SELECT * FROM {call}")
    message = str(caught.value)
    assert f"sqlwin {function}: the input is a stream" in message, message
    assert "Accepted: sw.stream(" in message and f"{function.upper()}(TABLE t PARTITION BY k WATERMARK" in message
    assert "Traceback" not in message and 'File "' not in message, message


def test_a_fixed_window_over_a_stream_runs(spark, events, stream):
    """tumble, hop and cumulate assign each row its windows alone: over a stream they are Spark's own
    stateless projection, and give the rows they give over the same files read as a table."""
    call = "hop(TABLE({}), 'ts', INTERVAL '20' SECONDS, INTERVAL '1' MINUTE)"
    query = (spark.sql(f"SELECT * FROM {call.format('fn_stream')}").writeStream.format("memory")
             .queryName("fn_stream_out").trigger(availableNow=True).start())
    try:
        query.awaitTermination(120)
        assert query.exception() is None
        got = spark.table("fn_stream_out").collect()
    finally:
        query.stop()
    want = spark.sql(f"SELECT * FROM {call.format('fn_stream_rows')}").collect()
    assert len(want) == 120 and Counter(got) == Counter(want)


def test_partition_and_order_expressions_that_are_no_column(spark, sw, events):
    """PARTITION BY / ORDER BY expressions over the input (not one of its columns) key and order the
    windows as in sw.sql, and leave no column of their own in the output."""
    same_rows(spark, sw, "SELECT * FROM session(TABLE(fn_events) PARTITION BY (upper(k), seq % 2), 'ts', INTERVAL '3' MINUTES)",
              "SELECT * FROM SESSION(TABLE fn_events PARTITION BY upper(k), seq % 2, DESCRIPTOR(ts), INTERVAL 3 MINUTES)")
    rows = same_rows(spark, sw, "SELECT * FROM count_window(TABLE(fn_events) PARTITION BY K ORDER BY (-seq), 'ts', 3)",
                     "SELECT * FROM COUNT_WINDOW(TABLE fn_events PARTITION BY k ORDER BY -seq, DESCRIPTOR(ts), 3)")
    assert len(rows) >= 50

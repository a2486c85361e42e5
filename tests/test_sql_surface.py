"""Issue 10: the Spark SQL around sqlwin's window functions is the Spark SQL users know.

Each query runs through `sw.sql` and is compared with hand-written native Spark (`window()`,
`session_window()`, plain GROUP BY) over the same rows, or with values worked out by hand on a
few rows. Messages name only what the user wrote.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from sqlwin.errors import SqlwinError

T0 = dt.datetime(2024, 1, 1)


def rows(df):
    """A DataFrame's rows as sorted tuples (NULLs first), for an order-free comparison."""
    return sorted((tuple(r) for r in df.collect()), key=lambda r: [(v is not None, str(v)) for v in r])


def same(actual, expected):
    assert rows(actual) == rows(expected)


@pytest.fixture(scope="module")
def ev(spark):
    """Random events over three keys and six hours, a few with a NULL time."""
    rng = random.Random(10)
    data = []
    for i in range(300):
        ts = T0 + dt.timedelta(seconds=rng.randrange(6 * 3600))
        data.append((rng.choice("abc"), None if i % 37 == 5 else ts, rng.randrange(10), i))
    spark.createDataFrame(data, "k string, ts timestamp, v int, off long").createOrReplaceTempView("surface_ev")
    return "surface_ev"


@pytest.fixture(scope="module")
def few(spark):
    spark.sql("""SELECT * FROM VALUES
        ('a', TIMESTAMP'2024-01-01 00:01:00', 1, 0),
        ('a', TIMESTAMP'2024-01-01 00:20:00', 2, 1),
        ('b', TIMESTAMP'2024-01-01 00:05:00', 3, 2),
        ('b', TIMESTAMP'2024-01-01 01:10:00', 4, 3),
        ('a', TIMESTAMP'2024-01-01 01:30:00', 5, 4),
        ('b', CAST(NULL AS TIMESTAMP), 6, 5)
        AS few(k, ts, v, off)""").createOrReplaceTempView("surface_few")
    return "surface_few"


TUMBLE = "TUMBLE(TABLE surface_ev, DESCRIPTOR(ts), INTERVAL 1 HOUR)"


# --------------------------------------------------------------------------- grouping analytics


@pytest.mark.parametrize("grouping, native", [
    ("window_start, window_end, GROUPING SETS ((k), ())", "w, GROUPING SETS ((k), ())"),
    ("window_start, window_end, ROLLUP (k)", "w, ROLLUP (k)"),
    ("window_start, window_end, CUBE (k, v)", "w, CUBE (k, v)"),
    ("k, window_start, window_end WITH ROLLUP", "k, w.start, w.end WITH ROLLUP"),
])
def test_grouping_analytics_beside_the_window_columns(sw, spark, ev, grouping, native):
    query = (f"SELECT k, window_start, window_end, count(*) AS c, sum(v) AS s, grouping_id() AS g "
             f"FROM {TUMBLE} GROUP BY {grouping}")
    expected = (f"SELECT k, w.start, w.end, count(*), sum(v), grouping_id() FROM "
                f"(SELECT *, window(ts, '1 hour') AS w FROM surface_ev WHERE ts IS NOT NULL) GROUP BY {native}")
    same(sw.sql(query), spark.sql(expected))


def test_grouping_function_and_rollup_of_window_columns(sw, spark, ev):
    query = (f"SELECT k, window_start, grouping(k) AS gk, count(*) AS c FROM {TUMBLE} "
             "GROUP BY ROLLUP (window_start, window_end, k)")
    expected = ("SELECT k, w.start, grouping(k), count(*) FROM (SELECT *, window(ts, '1 hour') AS w FROM surface_ev "
                "WHERE ts IS NOT NULL) GROUP BY ROLLUP (w.start, w.end, k)")
    same(sw.sql(query), spark.sql(expected))


def test_replay_rolls_up_as_spark_with_or_without_a_partial_form(sw, ev):
    """A replay merges ROLLUP from the finest grouping of each window (issue 23): the rows of Spark's
    own ROLLUP over the finished table, its names too; count(DISTINCT) has no partial form: it runs over
    each window's rows, kept until the window closes, and gives Spark's rows too (it was refused)."""
    window = "TUMBLE(TABLE surface_ev WATERMARK ts DELAY OF INTERVAL 1 DAY{}, DESCRIPTOR(ts), INTERVAL 1 HOUR)"  # none late
    query = ("SELECT k, window_start, window_end, count(*), avg(v) FROM {} "
             "GROUP BY window_start, window_end, ROLLUP (k)")
    complete = sw.sql(query.format(window.format("")))
    replay = sw.sql(query.format(window.format(" WITH (arrival_order = off)")))
    assert replay.columns == complete.columns == ["k", "window_start", "window_end", "count(1)", "avg(v)"]
    assert sorted(map(tuple, replay.collect()), key=repr) == sorted(map(tuple, complete.collect()), key=repr)
    distinct = query.replace("count(*)", "count(DISTINCT v)")
    complete = sw.sql(distinct.format(window.format("")))
    replay = sw.sql(distinct.format(window.format(" WITH (arrival_order = off)")))
    assert replay.columns == complete.columns
    assert sorted(map(tuple, replay.collect()), key=repr) == sorted(map(tuple, complete.collect()), key=repr)


# --------------------------------------------------------------------------- FILTER, DISTINCT


@pytest.mark.parametrize("window, native", [
    (TUMBLE, "window(ts, '1 hour')"),
    ("SESSION(TABLE surface_ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL 10 MINUTES)", None),
])
def test_aggregate_filter_and_distinct(sw, spark, ev, window, native):
    query = ("SELECT k, window_start, window_end, count(*) FILTER (WHERE v > 4) AS big, "
             "sum(DISTINCT v) FILTER (WHERE v > 2) AS sd, count(DISTINCT v) AS dv, avg(v) FILTER (WHERE v < 3) AS a "
             f"FROM {window} GROUP BY k, window_start, window_end")
    if native is None:  # SESSION: sessions from the general path (window frames), aggregates by Spark
        expected = sw.sql(f"SELECT * FROM {window}").createOrReplaceTempView("surface_sessions")
        native_sql = ("SELECT k, window_start, window_end, count(*) FILTER (WHERE v > 4), "
                      "sum(DISTINCT v) FILTER (WHERE v > 2), count(DISTINCT v), avg(v) FILTER (WHERE v < 3) "
                      "FROM surface_sessions GROUP BY k, window_start, window_end")
    else:
        native_sql = ("SELECT k, w.start, w.end, count(*) FILTER (WHERE v > 4), sum(DISTINCT v) FILTER (WHERE v > 2), "
                      "count(DISTINCT v), avg(v) FILTER (WHERE v < 3) "
                      f"FROM (SELECT *, {native} AS w FROM surface_ev WHERE ts IS NOT NULL) GROUP BY k, w")
    expected = spark.sql(native_sql)
    same(sw.sql(query), expected)


# --------------------------------------------------------------------------- names qualified by the alias


@pytest.mark.parametrize("window", [
    "TUMBLE(TABLE surface_ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 HOUR)",
    "SESSION(TABLE surface_ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL 10 MINUTES)",
    "COUNT_WINDOW(TABLE surface_ev PARTITION BY k ORDER BY off, 5)",
    "HOP(TABLE surface_ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR)",
])
def test_names_qualified_by_the_window_alias(sw, ev, window):
    qualified = sw.sql(f"SELECT t.k, t.window_start, t.window_end, count(*) AS c, max(t.v) AS m FROM {window} AS t "
                       "GROUP BY t.k, t.window_start, t.window_end")
    plain = sw.sql(f"SELECT k, window_start, window_end, count(*) AS c, max(v) AS m FROM {window} "
                   "GROUP BY k, window_start, window_end")
    assert rows(qualified) == rows(plain) and len(rows(plain)) > 3


def test_a_misspelled_qualified_name_suggests_only_the_users_names(sw, ev):
    with pytest.raises(SqlwinError) as err:
        sw.sql(f"SELECT t.kk, t.window_start, count(*) FROM {TUMBLE} AS t GROUP BY t.kk, t.window_start, t.window_end")
    assert "__" not in str(err.value) and "surface_ev" not in err.value.message


# --------------------------------------------------------------------------- plain Spark passes through


@pytest.mark.parametrize("query", [
    "SELECT count(*) AS c FROM surface_ev GROUP BY window(ts, '1 hour')",
    "SELECT window.start, count(*) FROM surface_ev GROUP BY window(ts, '30 minutes', '10 minutes')",
    "SELECT k, session_window.end, count(*) FROM surface_ev GROUP BY k, session_window(ts, '5 minutes')",
    "SELECT k, array_sort(collect_list(v)) AS l, max_by(v, off) AS last FROM surface_ev GROUP BY k",
    "SELECT k, count(*) FROM surface_ev GROUP BY 1 ORDER BY 1",
])
def test_plain_spark_runs_as_spark_runs_it(sw, spark, ev, query):
    actual, expected = sw.sql(query), spark.sql(query)
    assert actual.columns == expected.columns
    assert actual.collect() == expected.collect() if "ORDER BY" in query else rows(actual) == rows(expected)
    assert "run by Spark as written" in str(sw.explain(query))


def test_plain_spark_errors_stay_sqlwins_when_spark_cannot_read_it_either(sw, ev):
    with pytest.raises(SqlwinError, match="did you mean SELECT"):
        sw.sql("SELEC * FROM surface_ev")


# --------------------------------------------------------------------------- a query as the table argument


@pytest.mark.parametrize("argument", [
    "TABLE (SELECT k, ts, v * 2 AS v2 FROM surface_ev WHERE v > 2) PARTITION BY k",
    "TABLE(SELECT k, ts, v * 2 AS v2 FROM surface_ev WHERE v > 2) PARTITION BY k",
    "DATA => TABLE (SELECT k, ts, v * 2 AS v2 FROM surface_ev WHERE v > 2) PARTITION BY k",
])
def test_a_query_as_the_table_argument(sw, spark, ev, argument):
    query = (f"SELECT k, window_start, window_end, count(*) AS c, sum(v2) AS s FROM TUMBLE({argument}, "
             "DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")
    expected = spark.sql("SELECT k, w.start, w.end, count(*), sum(v * 2) FROM (SELECT *, window(ts, '1 hour') AS w "
                         "FROM surface_ev WHERE v > 2 AND ts IS NOT NULL) GROUP BY k, w")
    same(sw.sql(query), expected)
    text = str(sw.explain(query))
    assert "TUMBLE over (SELECT" in text


def test_a_query_argument_reading_a_cte_and_replayed(sw, spark, ev):
    # Rows arrive in time order (the query computes the arrival column): none is late, so the replay
    # gives the complete-input answer.
    query = ("WITH big AS (SELECT * FROM surface_ev WHERE v > 5 AND ts IS NOT NULL) "
             "SELECT k, window_start, count(*) AS c FROM TUMBLE(TABLE (SELECT *, unix_micros(ts) AS arrival FROM big "
             "WHERE k <> 'c') PARTITION BY k WITH (arrival_order = arrival), DESCRIPTOR(ts), INTERVAL 1 HOUR) "
             "GROUP BY k, window_start, window_end")
    replayed = sw.sql(query).select("k", "window_start", "c")
    expected = spark.sql("SELECT k, w.start, count(*) FROM (SELECT *, window(ts, '1 hour') AS w FROM surface_ev "
                         "WHERE v > 5 AND k <> 'c' AND ts IS NOT NULL) GROUP BY k, w")
    same(replayed, expected)


# --------------------------------------------------------------------------- HAVING on SESSION bounds


def test_having_on_session_bounds(sw, spark, few, tmp_path):
    query = ("SELECT k, window_start, window_end, count(*) AS c FROM SESSION(TABLE {t} PARTITION BY k, DESCRIPTOR(ts), "
             "INTERVAL 30 MINUTES) GROUP BY k, window_start, window_end "
             "HAVING window_end - window_start > INTERVAL 35 MINUTES")
    # a: 00:01 and 00:20 share [00:01, 00:50) (49 minutes); every other session is one row, 30 minutes.
    expected = [("a", dt.datetime(2024, 1, 1, 0, 1), dt.datetime(2024, 1, 1, 0, 50), 2)]
    assert rows(sw.sql(query.format(t="surface_few"))) == expected
    # The same over files (no local relation Spark could fold at planning time).
    spark.table("surface_few").write.parquet(str(tmp_path / "few"))
    spark.read.parquet(str(tmp_path / "few")).createOrReplaceTempView("surface_few_files")
    assert rows(sw.sql(query.format(t="surface_few_files"))) == expected


# --------------------------------------------------------------------------- time zone


@pytest.fixture
def new_york(spark):
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


@pytest.fixture(scope="module")
def dst(spark):
    """Every 37 minutes over the weeks of both daylight saving changes of 2024 in New York."""
    data = []
    for start in (dt.datetime(2024, 3, 6), dt.datetime(2024, 10, 30)):
        data += [(("x", "y")[i % 2], start + dt.timedelta(minutes=37 * i), i) for i in range(8 * 24 * 60 // 37)]
    spark.createDataFrame(data, "k string, ts_utc timestamp, v int").selectExpr(
        "k", "ts_utc AS ts", "v").createOrReplaceTempView("surface_dst")  # session is UTC while created
    return "surface_dst"


@pytest.mark.parametrize("alignment, native_offset", [
    ("2024-03-09 00:00:00", "5 hours"),   # EST, UTC-5: midnight is 05:00 UTC
    ("2024-11-02 00:00:00", "4 hours"),   # EDT, UTC-4: midnight is 04:00 UTC
    ("2024-03-10 12:00:00", "16 hours"),  # after the March change: EDT
])
def test_alignment_instant_in_the_session_time_zone(sw, spark, dst, new_york, alignment, native_offset):
    query = (f"SELECT k, window_start, window_end, count(*) AS c, sum(v) AS s FROM TUMBLE(TABLE surface_dst, "
             f"DESCRIPTOR(ts), INTERVAL 1 DAY, TIMESTAMP '{alignment}') GROUP BY k, window_start, window_end")
    expected = spark.sql(f"SELECT k, w.start, w.end, count(*), sum(v) FROM (SELECT *, "
                         f"window(ts, '1 day', '1 day', '{native_offset}') AS w FROM surface_dst) GROUP BY k, w")
    same(sw.sql(query), expected)
    # Daily windows follow window(): fixed lengths of absolute time, so after the change they start at 01:00 / 23:00.
    starts = {r[0] for r in sw.sql(query).selectExpr("hour(window_start)").collect()}  # local hours
    assert len(starts) == 2


@pytest.mark.parametrize("window, native", [
    ("HOP(TABLE surface_dst, DESCRIPTOR(ts), INTERVAL 1 HOUR, INTERVAL 3 HOURS, TIMESTAMP '2024-01-01 00:30:00')",
     "window(ts, '3 hours', '1 hour', '30 minutes')"),
    ("TUMBLE(TABLE surface_dst, DESCRIPTOR(ts), INTERVAL 2 HOURS)", "window(ts, '2 hours')"),
])
def test_windows_across_dst_follow_spark_window(sw, spark, dst, new_york, window, native):
    query = f"SELECT window_start, window_end, count(*) AS c FROM {window} GROUP BY window_start, window_end"
    expected = spark.sql(f"SELECT w.start, w.end, count(*) FROM (SELECT *, {native} AS w FROM surface_dst) GROUP BY w")
    same(sw.sql(query), expected)
    # and the annotated rows (the general path) agree with the grouped one
    annotated = sw.sql(f"SELECT window_start, window_end, count(*) AS c FROM (SELECT * FROM {window}) "
                       "GROUP BY window_start, window_end")
    same(annotated, expected)


def test_replay_reads_the_alignment_in_the_session_time_zone(sw, spark, dst, new_york):
    query = ("SELECT k, window_start, window_end, count(*) AS c FROM TUMBLE(TABLE (SELECT *, unix_micros(ts) AS arrival "
             "FROM surface_dst) PARTITION BY k WITH (arrival_order = arrival), DESCRIPTOR(ts), INTERVAL 1 DAY, TIMESTAMP '2024-03-09 00:00:00') "
             "GROUP BY k, window_start, window_end")
    expected = spark.sql("SELECT k, w.start, w.end, count(*) FROM (SELECT *, window(ts, '1 day', '1 day', '5 hours') "
                         "AS w FROM surface_dst) GROUP BY k, w")
    same(sw.sql(query).select("k", "window_start", "window_end", "c"), expected)


# --------------------------------------------------------------------------- NULL time


@pytest.mark.parametrize("window, expected", [
    # b: 00:05 (off 2), 01:10 (off 3), NULL (off 5): the NULL row joins no window
    ("COUNT_WINDOW(TABLE surface_few PARTITION BY k ORDER BY off, DESCRIPTOR(ts), 1)", {"a": 3, "b": 2}),
    ("GLOBAL_WINDOW(TABLE surface_few PARTITION BY k, DESCRIPTOR(ts))", {"a": 3, "b": 2}),
])
def test_null_time_joins_no_count_or_global_window(sw, few, window, expected):
    counted = sw.sql(f"SELECT k, count(*) AS c FROM {window} GROUP BY k, window_start, window_end")
    totals: dict[str, int] = {}
    for k, c in counted.collect():
        totals[k] = totals.get(k, 0) + c
    assert totals == expected
    annotated = sw.sql(f"SELECT k, count(*) AS c FROM {window} GROUP BY k")
    assert dict(annotated.collect()) == expected


def test_null_time_count_window_end_is_never_null(sw, few):
    result = sw.sql("SELECT k, window_start, window_end, count(*) AS c FROM COUNT_WINDOW(TABLE surface_few "
                    "PARTITION BY k ORDER BY off, DESCRIPTOR(ts), 1) GROUP BY k, window_start, window_end")
    assert all(r.window_end is not None for r in result.collect())


# --------------------------------------------------------------------------- messages


def _message(sw, query) -> str:
    with pytest.raises(SqlwinError) as err:
        sw.sql(query)
    return str(err.value)


def test_a_non_grouped_column_is_named_as_written(sw, few):
    text = _message(sw, "SELECT k, v, window_start, count(*) FROM TUMBLE(TABLE surface_few, DESCRIPTOR(ts), "
                        "INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")
    assert "__" not in text and '"v"' in text


def test_firing_in_a_replay_query_is_explained(sw, few):
    text = _message(sw, "SELECT k, window_start, count(*), firing FROM TUMBLE(TABLE surface_few PARTITION BY k "
                        "WITH (arrival_order = off), DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")
    assert "__" not in text and "firing" in text and "line 1, column 35" in text


@pytest.mark.parametrize("query, words, place", [
    ("SELECT * FROM TUMBEL(TABLE surface_few, DESCRIPTOR(ts), INTERVAL 1 HOUR)", "did you mean TUMBLE", "line 1"),
    ("SELECT *\nFROM  SESION(TABLE surface_few PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 HOUR)",
     "did you mean SESSION", "line 2"),
    ("SELEC * FROM surface_few", "did you mean SELECT", "line 1, column 1"),
    ("SELECT k,\n  'abc FROM surface_few", "Unterminated string", "line 2, column 3"),
    ("SELECT k FROM surface_few\n /* not closed", "Unterminated comment", "line 2, column 2"),
])
def test_syntax_messages_in_the_users_words(sw, few, query, words, place):
    text = _message(sw, query)
    assert words in text and place in text and "sqlglot" not in text and "<class" not in text


def test_late_rows_into_over_a_finished_table_lists_what_a_replay_rejects(sw, spark, few):
    """No row of a finished table is late, but the row with a NULL time joins no window in either
    mode: both list it, with the same columns and reason."""
    late = "surface_late_complete"
    spark.catalog.dropTempView(late)
    query = ("SELECT k, window_start, count(*) AS c FROM TUMBLE(TABLE surface_few PARTITION BY k{w}, DESCRIPTOR(ts), "
             "INTERVAL 1 HOUR) GROUP BY k, window_start, window_end EMIT FINAL LATE ROWS INTO {late}")
    assert sw.sql(query.format(w="", late=late)).count() == 4
    table = spark.table(late)
    assert [(r["k"], r["v"], r["reason"]) for r in table.collect()] == [("b", 6, "null_time")]
    sw.sql(query.format(w=" WITH (arrival_order = off)", late="surface_late_replay")).collect()
    replayed = spark.table("surface_late_replay")
    assert [(f.name, f.dataType) for f in table.schema] == [(f.name, f.dataType) for f in replayed.schema]
    assert sorted(map(tuple, table.collect())) == sorted(map(tuple, replayed.collect()))


# --------------------------------------------------------------------------- explain


def test_explain_names_the_mode_and_writes_durations_as_intervals(sw, few):
    complete = str(sw.explain("SELECT k, window_start, count(*) FROM HOP(TABLE surface_few PARTITION BY k "
                              "WATERMARK ts DELAY OF INTERVAL 5 SECONDS, DESCRIPTOR(ts), INTERVAL 30 MINUTES, "
                              "INTERVAL 1 HOUR) GROUP BY k, window_start, window_end"))
    assert "mode: complete input" in complete and "slide 30 minutes, size 1 hour" in complete
    words = complete.split("\nir (")[0]  # the IR's own repr (microseconds) closes the text, for tools
    assert "delay 5 seconds" in words and "1800000000" not in words and "Spark window()" in words
    replay_query = ("SELECT k, window_start, count(*) FROM TUMBLE(TABLE surface_few PARTITION BY k WITH "
                    "(arrival_order = off), DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")
    replay = str(sw.explain(replay_query))
    assert "mode: replay" in replay and "size 1 hour" in replay and "runtime" in replay
    changes = str(sw.explain(replay_query + " EMIT CHANGES"))  # sw.sql runs it, so explain shows it
    assert "mode: replay" in changes and "EMIT CHANGES" in changes
    sw.sql(replay_query + " EMIT CHANGES").collect()


REPLAYED = "TUMBLE(TABLE surface_few WITH (arrival_order = off) PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 HOUR)"
FINISHED = "TUMBLE(TABLE surface_few PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 HOUR)"


@pytest.mark.parametrize("window", [FINISHED, REPLAYED], ids=["complete", "replay"])
def test_unaliased_aggregates_are_named_as_spark_names_them(sw, spark, few, window):
    """count(*) is `count(1)` in Spark; sqlwin named it `COUNT(*)` over a finished table and
    `__agg0` (an internal name) in a replay (issue 10). Spark is asked for the names."""
    items = "k, count(*), sum(v), max(ts), count(DISTINCT v), avg(v) + 1"
    native = spark.sql(f"SELECT {items} FROM surface_few GROUP BY k").columns
    assert native[1] == "count(1)"
    got = sw.sql(f"SELECT {items}, window_start FROM {window} GROUP BY k, window_start, window_end").columns
    assert got[:len(native)] == native and got[len(native)] == "window_start"
    assert not any(c.startswith("__") for c in got)


def test_replay_having_names_a_select_alias(sw, few):
    """`HAVING n > 1` for `count(*) AS n` failed in a replay ("n cannot be resolved"); Spark allows it."""
    rows = sw.sql(f"SELECT k, window_start, count(*) AS n FROM {REPLAYED} GROUP BY k, window_start, window_end "
                  "HAVING n > 1 AND k <> 'z'").collect()
    assert [(r.k, r.n) for r in rows] == [("a", 2)]


def test_replay_non_grouped_column_is_missing_aggregation(sw, few):
    """Over a finished table Spark says MISSING_AGGREGATION; a replay said "v cannot be resolved. Did you mean k"."""
    for window in (FINISHED, REPLAYED):
        text = _message(sw, f"SELECT k, v, window_start, count(*) FROM {window} GROUP BY k, window_start, window_end")
        assert "MISSING_AGGREGATION" in text and '"v"' in text and "__" not in text, text
        assert "line 1, column 11" in text or "at 'v'" in text, text


def test_an_unknown_column_in_plain_spark_sql_gets_a_plain_hint(sw, few):
    text = _message(sw, "SELECT kk FROM surface_few")
    assert "kk" in text and "window" not in text.split("Accepted:")[-1], text

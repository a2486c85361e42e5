"""sqlwin.attach(spark): sql(), explain() and their errors, through real Spark."""

from __future__ import annotations

import datetime as dt

import pytest

from sqlwin.errors import SqlwinError, SqlwinUnsupportedError, SqlwinValidationError


@pytest.fixture(scope="module")
def clicks(spark):
    rows = [("u1", dt.datetime(2023, 12, 14, 0, m), 1) for m in (0, 10, 15, 50)] + [
        ("u2", dt.datetime(2023, 12, 14, 1, 5), 1)]
    spark.createDataFrame(rows, "user string, ts timestamp, n int").createOrReplaceTempView("api_clicks")


def test_plain_spark_sql_passes_through(sw, clicks):
    assert sw.sql("SELECT count(*) AS c FROM api_clicks").collect()[0]["c"] == 5


def test_a_window_over_a_cte_and_a_second_window_over_window_time(sw, clicks):
    rows = sw.sql("""
        WITH per_10_min AS (
            SELECT user, window_time, count(*) AS clicks
            FROM TUMBLE(TABLE api_clicks PARTITION BY user, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
            GROUP BY user, window_start, window_end, window_time)
        SELECT user, window_start, window_end, sum(clicks) AS clicks
        FROM TUMBLE(TABLE per_10_min PARTITION BY user, DESCRIPTOR(window_time), INTERVAL 1 HOUR)
        GROUP BY user, window_start, window_end
    """).collect()
    assert sorted((r["user"], r["window_start"].hour, r["clicks"]) for r in rows) == [("u1", 0, 4), ("u2", 1, 1)]


def test_emit_changes_over_a_finished_table_says_which_modes_run_it(sw, clicks):
    query = ("SELECT user, window_start, count(*) FROM TUMBLE(TABLE api_clicks PARTITION BY user, "
             "DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY user, window_start, window_end EMIT CHANGES")
    with pytest.raises(SqlwinUnsupportedError) as caught:
        sw.sql(query)
    assert caught.value.position.column == query.index("EMIT") + 1 and "replay" in caught.value.hint


def test_unknown_table_is_named_with_its_position(sw):
    with pytest.raises(SqlwinValidationError) as caught:
        sw.sql("SELECT * FROM TUMBLE(TABLE nowhere, DESCRIPTOR(ts), INTERVAL 1 HOUR)")
    assert "Unknown table nowhere" in caught.value.message and caught.value.position.column == 28


def test_an_unknown_table_is_placed_at_its_reference_with_the_closest_name(sw, clicks):
    """Issue 24: the caret was on the first word of that name, a SELECT alias here; and no "did you mean"."""
    query = ("SELECT user AS api_clics, count(*) AS n\n"
             "FROM TUMBLE(TABLE api_clics, DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY user, window_start, window_end")
    with pytest.raises(SqlwinValidationError) as caught:
        sw.sql(query)
    assert caught.value.message == "Unknown table api_clics: did you mean api_clicks?"
    assert (caught.value.position.line, caught.value.position.column) == (2, 19)


def test_a_stream_without_watermark_is_explained_with_its_default(sw, clicks):
    query = ("SELECT user, window_start, count(*) AS n FROM TUMBLE(TABLE api_clicks PARTITION BY user, DESCRIPTOR(ts), "
             "INTERVAL 10 MINUTES) GROUP BY user, window_start, window_end")
    assert "(the default: the query has no WATERMARK)" in str(sw.explain(query, stream=True))
    marked = query.replace("PARTITION BY user,", "PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS,")
    assert "the default" not in str(sw.explain(marked, stream=True))


def test_explain_shows_ir_lowering_and_spark_sql(sw, clicks):
    text = str(sw.explain("SELECT * FROM HOP(TABLE api_clicks, DESCRIPTOR(ts), INTERVAL 90 MINUTES, INTERVAL 1 HOUR)"))
    assert "HOP slide 90 minutes, size 1 hour" in text or "HOP slide 1 hour 30 minutes, size 1 hour" in text
    assert "Hop(size=" not in text  # no dataclass repr in microseconds (issue 10: durations as intervals)
    assert "rows in the gaps join no window" in text
    assert "pmod(" in text


def test_explain_of_a_stream_says_how_the_stream_runs(sw, clicks):
    """Issue 10: explain names the mode that runs. `stream=True` (`sqlwin explain --stream`)
    explains what sw.stream would run; a query a stream refuses is refused the same way."""
    final = ("SELECT user, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE api_clicks PARTITION BY user "
             "WATERMARK ts DELAY OF INTERVAL 1 MINUTE, DESCRIPTOR(ts), INTERVAL 10 MINUTES) "
             "GROUP BY user, window_start, window_end LATE ROWS INTO api_late")
    text = str(sw.explain(final, stream=True))
    assert text.startswith("mode: streaming")
    assert "transformWithStateInPandas" in text and "the vectorised runtime" in text and "late sink" in text
    assert "watermark: ts - 1 minute" in text or "1 minute" in text
    changes = final.replace("LATE ROWS INTO api_late", "EMIT CHANGES")
    assert "the general window runtime" in str(sw.explain(changes, stream=True))
    assert str(sw.explain(final)).startswith("mode: complete input")  # the same text, run by sw.sql
    rows = str(sw.explain("SELECT * FROM TUMBLE(TABLE api_clicks, DESCRIPTOR(ts), INTERVAL 10 MINUTES)", stream=True))
    assert "around: the window function's rows are the stateful stage" in rows and "as they arrive" in rows
    sessions = str(sw.explain("SELECT * FROM SESSION(TABLE api_clicks, DESCRIPTOR(ts), INTERVAL 10 MINUTES)",
                              stream=True))  # a session's rows: each session's, collected until it closes
    assert "around:" in sessions and "kept until the window closes" in sessions
    with pytest.raises(SqlwinError) as refused:  # the global window's rows: it never closes
        sw.explain("SELECT * FROM GLOBAL_WINDOW(TABLE api_clicks, DESCRIPTOR(ts))", stream=True)
    assert "never closes" in str(refused.value) and "GROUP BY" in str(refused.value)


def test_epoch_ms_results_stay_epoch_ms(sw, spark):
    spark.createDataFrame([(9999, 10001)], "temperature int, timestamp bigint").createOrReplaceTempView("api_qx03")
    row = sw.sql("SELECT min(temperature) AS value, window_start AS start, window_end AS `end` FROM "
                 "TUMBLE(TABLE api_qx03, DESCRIPTOR(timestamp), INTERVAL 10 SECONDS) "
                 "GROUP BY window_start, window_end").collect()[0]
    assert (row["value"], row["start"], row["end"]) == (9999, 10000, 20000)


def test_a_double_epoch_ms_time_is_rounded_to_the_closest_millisecond(sw, spark):
    # QX-20: 9999.4 ms is 9999 ([0, 10000)), 9999.5 is 10000 ([10000, 20000)); NaN is no time.
    # The same in complete input (native arithmetic, session_window, count windows) and in a replay.
    rows = [("k", 9999.4, 1), ("k", 9999.5, 2), ("k", float("nan"), 3)]
    spark.createDataFrame(rows, "key string, ms double, n int").createOrReplaceTempView("api_qx20")
    tumble = ("SELECT window_start, window_end, sum(n) AS n FROM TUMBLE(TABLE api_qx20 PARTITION BY key{options}, "
              "DESCRIPTOR(ms), 10000) GROUP BY key, window_start, window_end")
    assert sorted(tuple(r) for r in sw.sql(tumble.format(options="")).collect()) == [(0, 10000, 1), (10000, 20000, 2)]
    replayed = sw.sql(tumble.format(options=" WITH (arrival_order = n)")).collect()
    assert sorted((r["window_start"], r["window_end"], r["n"]) for r in replayed) == [(0, 10000, 1), (10000, 20000, 2)]
    session = sw.sql("SELECT window_start, window_end FROM SESSION(TABLE api_qx20 PARTITION BY key, DESCRIPTOR(ms), 1) "
                     "GROUP BY key, window_start, window_end").collect()
    assert sorted(tuple(r) for r in session) == [(9999, 10000), (10000, 10001)]
    count = sw.sql("SELECT window_start, window_end FROM COUNT_WINDOW(TABLE api_qx20 ORDER BY n, DESCRIPTOR(ms), 2) "
                   "GROUP BY window_start, window_end").collect()
    assert [tuple(r) for r in count] == [(9999, 10000)]


def test_ordered_collects_agree_over_a_finished_table_and_in_a_replay(sw, spark):
    # BX-01: collect_list in event-time order; array_agg(v ORDER BY ...) by its keys, with DESC,
    # NULLS FIRST / LAST, a NULL key and a NULL value (dropped), in a session (Spark's
    # session_window path over a finished table) and in a replay through the window runtime.
    rows = [("k", dt.datetime(2023, 12, 14, 0, m), v, key, arrival) for m, v, key, arrival in
            [(5, "a", 2, 1), (1, "b", None, 2), (3, None, 1, 3), (2, "c", 1, 4), (4, "d", 3, 5)]]
    spark.createDataFrame(rows, "k string, ts timestamp, v string, key int, arrival int") \
        .createOrReplaceTempView("api_bx01")
    query = """
        SELECT k, window_start, collect_list(v) AS by_time, array_agg(v ORDER BY arrival) AS by_arrival,
               collect_list(v) WITHIN GROUP (ORDER BY key DESC) AS by_key_desc,
               array_agg(v ORDER BY key) AS by_key, array_agg(v ORDER BY key NULLS LAST) AS by_key_nulls_last
        FROM SESSION(TABLE api_bx01 PARTITION BY k{options}, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
        GROUP BY k, window_start, window_end"""
    expected = (["b", "c", "d", "a"], ["a", "b", "c", "d"], ["d", "a", "c", "b"], ["b", "c", "a", "d"],
                ["c", "a", "d", "b"])
    names = ("by_time", "by_arrival", "by_key_desc", "by_key", "by_key_nulls_last")
    for options in ("", " WATERMARK ts DELAY OF INTERVAL 1 HOUR WITH (arrival_order = arrival)"):
        (row,) = sw.sql(query.format(options=options)).collect()
        assert tuple(row[n] for n in names) == expected, options or "complete input"


def test_grouping_by_an_expression_and_quoted_columns_in_aggregates(sw, spark):
    # BX-02's GROUP BY lower(word) with SELECT lower(word), and a backquoted column inside an
    # aggregate: both over the native window() grouping, which splits the query in two.
    rows = [("Apple", dt.datetime(2023, 12, 14, 0, 1), 1), ("apple", dt.datetime(2023, 12, 14, 0, 2), 2)]
    spark.createDataFrame(rows, "word string, ts timestamp, `my v` int").createOrReplaceTempView("api_bx02")
    (row,) = sw.sql("SELECT lower(word) AS word, upper(lower(word)) AS shout, count(*) AS n, sum(`my v`) AS s "
                    "FROM TUMBLE(TABLE api_bx02, DESCRIPTOR(ts), INTERVAL 1 HOUR) "
                    "GROUP BY lower(word), window_start, window_end").collect()
    assert (row["word"], row["shout"], row["n"], row["s"]) == ("apple", "APPLE", 2, 3)

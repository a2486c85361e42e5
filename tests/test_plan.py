"""The dialect and the IR, without Spark: forms accepted, values converted, errors placed."""

from __future__ import annotations

import re

import pytest

from sqlwin.errors import SqlwinSyntaxError, SqlwinValidationError
from sqlwin.spark.time_sql import epoch_ms_sql
from sqlwin.sql.plan import Cumulate, CountWindow, Hop, Session, Slide, Tumble, build_plan

SCHEMA = {"t": {"k": "string", "ts": "timestamp", "v": "int", "name": "string", "ms": "bigint", "pos": "bigint"}}


def plan(sql: str):
    return build_plan(sql, SCHEMA.get)


@pytest.mark.parametrize(
    "sql, windower",
    [
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 10 SECONDS)", Tumble(10_000_000)),
        ("SELECT * FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))", Tumble(10_000_000)),
        ("SELECT * FROM TUMBLE(DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL '1 hour 30 minutes')",
         Tumble(5_400_000_000)),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR, INTERVAL 15 MINUTES)",
         Tumble(3_600_000_000, 900_000_000)),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR, -INTERVAL 15 MINUTES)",
         Tumble(3_600_000_000, 2_700_000_000)),
        ("SELECT * FROM HOP(TABLE t, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR)",
         Hop(3_600_000_000, 1_800_000_000)),
        ("SELECT * FROM HOP(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL 1 HOUR, SLIDE => INTERVAL 90 MINUTES)",
         Hop(3_600_000_000, 5_400_000_000)),
        ("SELECT * FROM CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL 10 MINUTES, INTERVAL 1 HOUR)",
         Cumulate(600_000_000, 3_600_000_000)),
        ("SELECT * FROM SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL 30 MINUTES)", Session(1_800_000_000)),
        ("SELECT * FROM SLIDE(TABLE t, DESCRIPTOR(ms), 3600000)", Slide(3_600_000_000)),
        ("SELECT * FROM COUNT_WINDOW(TABLE t ORDER BY pos, 6, 2)", CountWindow(6, 2)),
        ("SELECT * FROM COUNT_WINDOW(TABLE t PARTITION BY k ORDER BY pos, 3)", CountWindow(3, 3)),
    ],
)
def test_window_functions_become_typed_windowers(sql, windower):
    assert plan(sql).windows[0].windower == windower


def test_partition_keys_stop_before_the_next_argument():
    relation = plan("SELECT * FROM SESSION(TABLE t PARTITION BY k, name, DESCRIPTOR(ts), INTERVAL 1 MINUTE)").windows[0]
    assert relation.partition_by == ("k", "name")


def test_epoch_ms_time_column_is_recognised():
    relation = plan("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ms), INTERVAL 1 SECOND)").windows[0]
    assert relation.time.kind == "epoch_ms"


@pytest.mark.parametrize("type_name", ["double", "float", "decimal(16,3)"])
def test_a_fractional_epoch_ms_column_is_rounded_to_the_millisecond(type_name):
    # QX-20: time finer than a millisecond is rounded to the closest millisecond.
    relation = build_plan("SELECT * FROM TUMBLE(TABLE f, DESCRIPTOR(ms), INTERVAL 1 SECOND)",
                          {"f": {"ms": type_name}}.get).windows[0]
    assert (relation.time.kind, relation.time.rounded) == ("epoch_ms", True)
    assert epoch_ms_sql(relation.time) == "TRY_CAST(round(`ms`) AS BIGINT)"


def test_emit_clause_is_read_whole():
    emit = plan(
        "SELECT k, window_start, window_end, count(*) FROM TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), "
        "INTERVAL 1 MINUTE) GROUP BY k, window_start, window_end "
        "EMIT EARLY EVERY INTERVAL 10 SECONDS ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1 ROWS RETRACTING ONLY UPDATED"
    ).emit
    assert (emit.early_interval, emit.allowed_lateness, emit.late_rows) == (10_000_000, 3_600_000_000, 1)
    assert emit.accumulation == "RETRACTING" and emit.only_updated and emit.final


def test_watermark_and_options_reach_the_ir():
    relation = plan(
        "SELECT * FROM TUMBLE(TABLE t WATERMARK ts DELAY OF INTERVAL 5 SECONDS "
        "WITH (watermark_strategy = 'min_event_time', idle_timeout = INTERVAL 5 MINUTES) PARTITION BY k, "
        "DESCRIPTOR(ts), INTERVAL 10 SECONDS)"
    ).windows[0]
    wm = relation.watermark
    assert (wm.delay, wm.strategy, wm.idle_timeout) == (5_000_000, "min_event_time", 300_000_000)


def test_plain_spark_sql_passes_through():
    assert plan("SELECT k, count(*) FROM t GROUP BY k").windows == []


@pytest.mark.parametrize(
    "sql, error, message, line, column",
    [
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(nope), INTERVAL 1 SECOND)",
         SqlwinValidationError, "Unknown column nope", 1, 42),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(name), INTERVAL 1 SECOND)",
         SqlwinValidationError, "is STRING, not a time", 1, 42),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 0 SECONDS)",
         SqlwinValidationError, "SIZE must be positive", 1, 47),
        ("SELECT *\nFROM HOP(TABLE t, DESCRIPTOR(ts), -INTERVAL 1 MINUTE, INTERVAL 1 HOUR)",
         SqlwinValidationError, "SLIDE must be positive", 2, 35),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 MONTH)",
         SqlwinValidationError, "has no fixed length", 1, 47),
        ("SELECT * FROM CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL 7 MINUTES, INTERVAL 1 HOUR)",
         SqlwinValidationError, "step must divide", 1, 49),
        ("SELECT * FROM COUNT_WINDOW(TABLE t ORDER BY pos, 0)",
         SqlwinValidationError, "positive number of rows", 1, 50),
        ("SELECT * FROM SESSION(TABLE t, DESCRIPTOR(ts))",
         SqlwinValidationError, "missing its GAP", 1, 15),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ms), INTERVAL 1 MICROSECOND)",
         SqlwinValidationError, "finer than a millisecond", 1, 47),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), 10)",
         SqlwinValidationError, "needs a unit", 1, 47),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL 1 SECOND, WIDTH => 3)",
         SqlwinValidationError, "no parameter named WIDTH", 1, 74),
        ("SELECT * FROM TUMBLE(TABLE t WITH (colour = 'red'), DESCRIPTOR(ts), INTERVAL 1 SECOND)",
         SqlwinValidationError, "Unknown window option colour", 1, 36),
        ("SELECT k FROM t GROUP BY k EMIT FINAL EMIT CHANGES",
         SqlwinSyntaxError, "one EMIT clause", 1, 39),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 SECOND",
         SqlwinSyntaxError, "Expected ')'", 1, 1),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 SECOND) GROUP BY k EMIT SOMETIMES",
         SqlwinSyntaxError, "EMIT needs to say when", 1, 82),
        ("SELECT k FROM t GROUP BY k EMIT CHANGES FINAL",
         SqlwinValidationError, "exclude each other", 1, 28),
    ],
)
def test_errors_say_what_and_where(sql, error, message, line, column):
    with pytest.raises(error) as caught:
        plan(sql)
    assert message in caught.value.message
    if column > 1:
        assert (caught.value.position.line, caught.value.position.column) == (line, column)
    assert caught.value.hint, "every error says what would be accepted"
    assert "^" in str(caught.value), "the message shows the offending text"


def test_count_window_over_a_finished_table_needs_an_order():
    # A stream counts rows as they arrive; a finished table has no order of its own.
    from sqlwin.spark.complete import lower_complete

    with pytest.raises(SqlwinValidationError) as caught:
        lower_complete(plan("SELECT * FROM COUNT_WINDOW(TABLE t, 3)"))
    assert "needs an order" in caught.value.message
    assert (caught.value.position.line, caught.value.position.column) == (1, 15)
    assert "arrival_order" in caught.value.hint and "^" in str(caught.value)


ORDERED = ("SELECT k, window_start, window_end, collect_list(v) AS by_time, array_agg(v ORDER BY pos) AS by_pos, "
           "collect_list(v) WITHIN GROUP (ORDER BY name DESC, pos NULLS LAST) AS by_name "
           "FROM TUMBLE(TABLE t PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE "
           "WITH (arrival_order = pos), DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")


def test_ordered_collects_become_runtime_specs():
    # array_agg(v ORDER BY ...) and collect_list(v) WITHIN GROUP (ORDER BY ...) are one aggregate
    # shape: the runtime's collect_list with (argument, descending, nulls_first) keys.
    from sqlwin.spark.stateful import prepare_stateful
    from sqlwin.runtime import AggregateSpec

    query = prepare_stateful(plan(ORDERED), "replay", 8)
    assert query.config.aggregates == (
        AggregateSpec("collect_list", 0),
        AggregateSpec("collect_list", 0, order=((1, False, True),)),
        AggregateSpec("collect_list", 0, order=((2, True, False), (1, False, False))),
    )
    assert query.argument_sql == ["v", "pos", "name"]
    result = query.result_sql("typed")
    assert "__agg0 AS by_time" in result and "__agg1 AS by_pos" in result and "__agg2 AS by_name" in result


def test_ordered_collects_over_a_finished_table_sort_by_their_keys_then_time():
    # Spark's collect_list has no order: the batch lowering sorts (keys, value) structs, with the
    # window's time column (then the arrival column) breaking ties, as the runtime orders rows.
    from sqlwin.spark.complete import lower_complete

    sql = lower_complete(plan(ORDERED.replace("WATERMARK ts DELAY OF INTERVAL 1 MINUTE WITH (arrival_order = pos)",
                                              ""))).sql
    assert sql.count("array_sort(collect_list(") == 3
    assert "named_struct('__k0', `ts`, '__v', v)" in sql  # plain collect_list: event-time order
    assert "named_struct('__k0', pos, '__k1', `ts`, '__v', v)" in sql
    assert "named_struct('__k0', name, '__k1', pos, '__k2', `ts`, '__v', v)" in sql


def test_late_rows_into_the_table_the_window_reads_is_refused():
    """LATE ROWS INTO t replaced the view t reads (after the query, spark.table('t') was empty)."""
    query = ("SELECT k, window_start, count(*) FROM TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
             "GROUP BY k, window_start, window_end LATE ROWS INTO T")
    with pytest.raises(SqlwinValidationError) as err:
        plan(query)
    assert "would replace the table TUMBLE reads" in err.value.message
    assert err.value.position.column == query.index("LATE ROWS") + 1
    assert plan(query.replace("INTO T", "INTO late_t")).late_into == "late_t"


GROUPED = ("SELECT window_start, window_end, k, count(*) AS n FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 10 MINUTES) "
           "GROUP BY {}")


def test_grouping_sets_that_each_hold_the_window_columns_are_a_windowed_aggregation():
    """Each set with window_start and window_end groups as GROUP BY window_start, window_end, GROUPING SETS
    (the sets without them): read in that form, so a replay and a stream run it (it was refused, with a
    message about a window that never closes)."""
    plan = build_plan(GROUPED.format("GROUPING SETS ((k, window_start, window_end), (window_start, window_end))"),
                      lambda name: {"k": "string", "ts": "timestamp"})
    assert plan.aggregation is not None and plan.around is not None
    assert plan.ast.args["group"].sql() == "GROUP BY window_start, window_end, GROUPING SETS ((k), ())"


@pytest.mark.parametrize("grouping", ["ROLLUP (window_start, window_end, k)", "k",
                                      "GROUPING SETS ((k, window_start), (window_start, window_end))"])
def test_a_grouping_without_the_window_is_refused_in_a_stream_with_the_reason(grouping):
    from sqlwin.errors import SqlwinUnsupportedError
    from sqlwin.spark.stateful import prepare_stateful

    plan = build_plan(GROUPED.format(grouping), lambda name: {"k": "string", "ts": "timestamp"})
    with pytest.raises(SqlwinUnsupportedError) as refused:
        prepare_stateful(plan, "streaming", 1)
    message = str(refused.value)
    assert "each grouping of GROUP BY holds window_start and window_end" in message
    assert "one window never closes" not in message
    column = int(re.search(r"line 1, column (\d+)", message).group(1))  # inside the GROUP BY
    assert column > GROUPED.index("{}")

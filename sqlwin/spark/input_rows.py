"""The input rows around the window runtime (step 1 of the stateful lowering, sqlwin.spark.stateful).

Spark SQL over the window function's input for the columns the runtime reads: the source with
its alias, the time in epoch microseconds, the recorded arrival columns (order, batch, time) and
the order of rows inside one micro-batch, a COUNT_WINDOW's order column.
"""

from __future__ import annotations

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.spark.time_sql import epoch_ms_sql, time_micros_sql, timestamp_micros_sql
from sqlwin.sql.plan import QueryPlan, WindowRelation
from sqlwin.sql.text import identifier_name, quote_identifier


def source_sql(rel: WindowRelation) -> str:
    """The window function's input as a FROM item: its table or subquery, with its alias."""
    alias = rel.source_alias  # a plain name; rel.source is SQL text already
    return f"{rel.source} AS {quote_identifier(alias)}" if alias else rel.source


def time_micros(rel: WindowRelation) -> str:
    """The event time in epoch microseconds, as a BIGINT (NULL for processing time: read at arrival)."""
    time = rel.time
    if time is None or time.kind == "processing_time":
        return "CAST(NULL AS BIGINT)"
    if time.kind == "epoch_ms":  # a DOUBLE / DECIMAL one rounded to the closest millisecond (QX-20)
        return f"CAST({epoch_ms_sql(time)} AS BIGINT) * 1000"
    return time_micros_sql(time)


def micros_of(column: str, columns: dict[str, str]) -> str:
    """An arrival-time column in microseconds: TIMESTAMP, or LONG epoch milliseconds."""
    kind = columns.get(column, "")
    if kind.startswith("timestamp"):
        return timestamp_micros_sql(quote_identifier(column), kind == "timestamp_ntz")
    return f"CAST({quote_identifier(column)} AS BIGINT) * 1000"


def count_bound_column(rel: WindowRelation) -> str | None:
    """An untimed COUNT_WINDOW's order column (ORDER BY, else arrival_order): its values are the
    window's bounds, as over a finished table (QX-25: windows [0, 3], [1, 4], ... of message
    positions). None otherwise (a stream counting rows as they come: no bounds to show)."""
    if not rel.windower.ordered or rel.time is not None:
        return None
    if rel.order_by:
        return single_order_column(rel)
    return rel.options.get("arrival_order") or None


def in_batch_order(rel: WindowRelation) -> str:
    """The order of rows inside one micro-batch, as one BIGINT.

    The recorded arrival column when the query names one; else a COUNT_WINDOW's ORDER BY column;
    else the order the source delivered (partition, then position): one constant, which the
    operator's stable sort leaves as it came (Spark refuses monotonically_increasing_id() in a
    streaming query).
    """
    order = rel.options.get("arrival_order")
    if order:
        return ordinal_of(order, rel.columns)
    if rel.order_by:
        return ordinal_of(single_order_column(rel), rel.columns)
    return "CAST(0 AS BIGINT)"


def single_order_column(rel: WindowRelation, plan: QueryPlan | None = None) -> str:
    order = rel.order_by
    name = (identifier_name(order[0]) or "") if len(order) == 1 else ""
    if name.lower() not in {c.lower() for c in rel.columns}:
        raise SqlwinUnsupportedError(
            "A stream orders the rows of a micro-batch by one input column (ascending)", rel.position,
            "COUNT_WINDOW(TABLE t PARTITION BY k ORDER BY offset_col, n), or WITH (arrival_order = offset_col)",
            query=plan.sql if plan else None)
    return next(c for c in rel.columns if c.lower() == name.lower())


def ordinal_of(column: str, columns: dict[str, str]) -> str:
    kind = columns.get(column, "")
    if kind.startswith("timestamp"):
        return timestamp_micros_sql(quote_identifier(column), kind == "timestamp_ntz")
    return f"CAST({quote_identifier(column)} AS BIGINT)"

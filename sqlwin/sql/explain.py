"""The plan in words, for explain: durations as intervals, never microseconds.

`describe_plan` writes a line per fact of a QueryPlan (each window function's windows, time,
keys, watermark; the EMIT clause; the aggregation); the `describe_*` pieces serve the stream's
own explain; `default_watermark_notes` says what a window function without WATERMARK gets.
"""

from __future__ import annotations

import re
import typing as t
from dataclasses import replace

from sqlglot import exp

from sqlwin.ir import UNBOUNDED, EmitSpec, WatermarkSpec, Windower
from sqlwin.sql.aggregation import window_keys
from sqlwin.sql.ast_nodes import TableArg
from sqlwin.sql.durations import interval_text
from sqlwin.sql.relation import TimeColumn
from sqlwin.sql.text import identifier_name, quote_identifier

if t.TYPE_CHECKING:
    from sqlwin.sql.query_plan import QueryPlan


def describe_windower(windower: Windower, time: TimeColumn | None = None) -> str:
    return windower.describe(interval_text)


def describe_time(time: TimeColumn | None) -> str:
    if time is None:
        return "(none)"
    if time.kind == "processing_time":
        return "processing time (PROCTIME())"
    if time.kind == "epoch_ms":
        return f"{time.name}, epoch milliseconds" + (" (rounded to the millisecond)" if time.rounded else "")
    return f"{time.name}, TIMESTAMP"


def describe_watermark(watermark: WatermarkSpec, complete: bool = False) -> str:
    delay = "UNBOUNDED" if watermark.delay >= UNBOUNDED else interval_text(watermark.delay)
    text = (f"delay {delay}, strategy {watermark.strategy}, one clock per "
            f"{'key' if watermark.scope == 'key' else 'stream'}, lateness rule {watermark.lateness_rule}")
    if watermark.idle_timeout is not None:
        text += f", idle timeout {interval_text(watermark.idle_timeout)} ({watermark.idle_clock})"
    return text + (" (over complete input every row is on time)" if complete else "")


def default_watermark_notes(plan: QueryPlan) -> list[str]:
    """For a stream: a line per window function without WATERMARK, saying the watermark it gets and
    how to write another (a row behind its key's newest time is late at once)."""
    notes = []
    for window in plan.windows:
        table = window.node.find(TableArg)
        if table is None or table.args.get("watermark") is not None or window.time is None or not window.time.name:
            continue
        clocks = "each key's" if window.partition_by and window.watermark.scope == "key" else "the stream's"
        name = window.time.name if re.fullmatch(r"[A-Za-z_]\w*", window.time.name) else quote_identifier(window.time.name)
        notes.append(f"{window.function} over {window.source} has no WATERMARK: the default is WATERMARK {name} "
                     f"DELAY OF INTERVAL 0 SECONDS: a window closes once {clocks} newest {name} reaches its end, and "
                     "a row arriving for it after that is late; "
                     f"to wait for rows out of order: TABLE {window.source} WATERMARK {name} DELAY OF INTERVAL 10 SECONDS")
    return notes


def describe_emit(emit: EmitSpec) -> str:
    parts = ["CHANGES" if emit.changes else "FINAL"]
    if emit.early_interval is not None:
        parts.append(f"EARLY EVERY {interval_text(emit.early_interval)}")
    if emit.early_rows is not None:
        parts.append(f"EARLY EVERY {emit.early_rows} ROWS")
    if emit.allowed_lateness:
        parts.append(f"ALLOWED LATENESS {interval_text(emit.allowed_lateness)}")
    if emit.late_interval is not None:
        parts.append(f"LATE EVERY {interval_text(emit.late_interval)}")
    if emit.late_rows is not None:
        parts.append(f"LATE EVERY {emit.late_rows} ROWS")
    parts.append(emit.accumulation)
    if emit.only_updated:
        parts.append("ONLY UPDATED")
    return "EMIT " + " ".join(parts)


def describe_plan(plan: QueryPlan, complete: bool = False) -> list[str]:
    """The IR in the query's own words, one line each (durations as intervals, never microseconds)."""
    lines = []
    for window in plan.windows:
        table = window.node.find(TableArg)
        source = (table.this.meta.get("source") if table is not None else None) or window.source
        lines.append(f"window: {window.function} over {source} at {window.position}")
        lines.append(f"  windows: {describe_windower(window.windower, window.time)}")
        lines.append(f"  time: {describe_time(window.time)}")
        lines.append(f"  partition by: {', '.join(window.partition_by) or '(none: one stream)'}")
        if plan.aggregation is not None and window is plan.aggregation.relation:
            formed = window_keys(window, plan.aggregation.group_keys)
            if formed != tuple(window.partition_by):
                shown = ", ".join(identifier_name(k) or k for k in formed)
                lines.append(f"  windows formed per: {shown} (the GROUP BY keys: a {window.function} window holds "
                             "one key's rows; PARTITION BY names the clocks)")
        if window.order_by:
            lines.append(f"  order by: {', '.join(window.order_by)}")
        # Without PARTITION BY there are no keys to give clocks to: one clock for the stream.
        mark = window.watermark if window.partition_by else replace(window.watermark, scope="stream")
        lines.append(f"  watermark: {describe_watermark(mark, complete)}"
                     + ("" if complete or table is None or table.args.get("watermark") is not None
                        else " (the default: the query has no WATERMARK)"))
    if plan.windows:
        lines.append(f"emit: {describe_emit(plan.emit)}")
    if plan.late_into:
        lines.append(f"late rows into: {plan.late_into}")
    if plan.aggregation:
        keys = ", ".join(plan.aggregation.group_keys) or "(none)"
        lines.append(f"windowed aggregation: GROUP BY {keys}, window_start, window_end"
                     + (f", {plan.aggregation.grouping_analytics.sql(dialect='spark')}"
                        if isinstance(plan.aggregation.grouping_analytics, (exp.GroupingSets, exp.Rollup, exp.Cube))
                        else ""))
    if plan.time_zone != "UTC" and plan.windows:
        lines.append(f"session time zone: {plan.time_zone} (TIMESTAMP literals read in it; windows are "
                     "fixed lengths of absolute time, as Spark's window())")
    return lines

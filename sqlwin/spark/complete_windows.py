"""Complete input: a window function's output as Spark SQL, per window kind (`annotate`).

Each window kind annotates every row of its input with its window(s) using only Spark's own
operators: TUMBLE / HOP through Spark's `window()` (or the same assignment as arithmetic),
CUMULATE through `explode(sequence(...))`, SESSION through window frames (`lag()` marks the
starts, a running sum numbers them), SLIDE through a range join, COUNT_WINDOW through
`row_number()`, the global window as NULL bounds. Rows with a NULL key or time join no window
(`admitted_source`, `null_keys`).
"""

from __future__ import annotations

import typing as t

from sqlwin.errors import SqlwinValidationError
from sqlwin.spark.time_sql import epoch_ms_sql
from sqlwin.spark.complete_sql import TimeSql, key_column, partition_clause, star_except, timestamp_type
from sqlwin.sql.plan import (
    WINDOW_COLUMNS,
    CountWindow,
    Cumulate,
    GlobalWindow,
    Hop,
    Session,
    Slide,
    Tumble,
    WindowRelation,
    interval_text,
    node_position,
)
from sqlwin.sql.text import identifier_name, quote_identifier


def annotate(relation: WindowRelation, group_keys: t.Sequence[str] = (),
             keys: t.Sequence[str] | None = None) -> tuple[str, str]:
    """Spark SQL for the window function's output: its input's columns plus window_start/end/time.

    `group_keys`: the GROUP BY keys of the windowed aggregation over it, if any (a row with a
    NULL key joins no window, see `admitted_source`). `keys`: the keys whose rows form windows of
    their own (`window_keys`; default PARTITION BY) -- what SESSION, SLIDE and COUNT_WINDOW
    windows are formed per.
    """
    windower = relation.windower
    keys = tuple(relation.partition_by if keys is None else keys)
    src = admitted_source(relation, group_keys)
    lower = ANNOTATE.get(type(windower))
    if lower is not None:
        return lower(relation, windower, src, keys)
    raise AssertionError(f"no lowering for {windower}")


def _annotate_fixed(relation: WindowRelation, w: Tumble | Hop, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    slide = w.slide
    time = TimeSql(relation.time)
    if uses_spark_window(relation):
        # Spark's own window(): the operator a Spark user would write by hand.
        sql = (
            f"SELECT {star_except(relation, '__w')}, __w.start AS window_start, __w.end AS window_end, "
            f"__w.end - INTERVAL 1 MICROSECOND AS window_time FROM ("
            f"SELECT *, {spark_window_call(relation)} AS __w FROM {src})"
        )
        return sql, "Spark window() (native)"
    # Epoch-ms columns and hops with gaps (slide > size, which window() refuses): the same
    # assignment written as arithmetic. The latest window start at or before t is
    # t - pmod(t - offset, slide); earlier candidates are `slide` apart.
    size, step, offset = time.duration(w.size), time.duration(slide), time.duration(w.offset)
    candidates = -(-size // step)  # ceil: how many windows can hold one instant
    latest = f"{time.value} - pmod({time.value} - {offset}, {step})"
    if candidates == 1:
        inner = f"SELECT *, {latest} AS __s FROM {src} WHERE {time.present}"
    else:
        inner = (
            f"SELECT *, {latest} - __i * {step} AS __s FROM {src} "
            f"LATERAL VIEW explode(sequence(0, {candidates - 1})) AS __i WHERE {time.present}"
        )
    sql = _windowed(relation, time, ['__s', *(['__i'] if candidates > 1 else [])], '__s', f'__s + {size}',
                    f"({inner}) WHERE {time.value} < __s + {size}")
    gap_note = " (slide > size: rows in the gaps join no window)" if slide > w.size else ""
    return sql, f"native arithmetic on the time column{gap_note}"


def _annotate_cumulate(relation: WindowRelation, w: Cumulate, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    time = TimeSql(relation.time)
    step, max_size, offset = time.duration(w.step), time.duration(w.max_size), time.duration(w.offset)
    base = f"{time.value} - pmod({time.value} - {offset}, {max_size})"
    # A row at t is in every window of its period whose end (base + j*step) is after t.
    first_j = f"CAST(floor(({time.value} - __b) / {step}) AS BIGINT) + 1"
    sql = _windowed(relation, time, ['__b', '__j'], '__b', f'__b + __j * {step}',
                    f"(SELECT *, {base} AS __b FROM {src} WHERE {time.present}) __c "
                    f"LATERAL VIEW explode(sequence({first_j}, {max_size // step})) AS __j")
    return sql, "native arithmetic + explode(sequence) over the cumulating steps"


def _annotate_session(relation: WindowRelation, w: Session, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    time = TimeSql(relation.time)
    gap = time.duration(w.gap)
    order = f"{partition_clause(keys)}ORDER BY {time.value}"
    # A row starts a new session when it is a full gap (or more) after the previous row.
    starts = (
        f"SELECT *, CASE WHEN {time.value} - lag({time.value}) OVER ({order}) < {gap} THEN 0 ELSE 1 END AS __new "
        f"FROM {src} WHERE {time.present}"
    )
    numbered = f"SELECT *, sum(__new) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __sid FROM ({starts})"
    session = partition_clause(keys, "__sid")
    bounded = (
        f"SELECT *, min({time.value}) OVER ({session}) AS __first, max({time.value}) OVER ({session}) AS __last "
        f"FROM ({numbered})"
    )
    sql = _windowed(relation, time, ['__new', '__sid', '__first', '__last'], '__first', f'__last + {gap}',
                    f"({bounded})")
    return sql, "window frames: lag() marks session starts, a running sum numbers them"


def _annotate_slide(relation: WindowRelation, w: Slide, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    time = TimeSql(relation.time)
    size = time.duration(w.size)
    # One window per distinct (key, time); each holds the rows of its key in [time - size, time].
    key_match = " AND ".join(f"__r.{key_column(k)} <=> __w.{key_column(k)}" for k in keys)
    key_cols = ", ".join(f"{k} AS {key_column(k)}" for k in keys)
    windows = f"SELECT DISTINCT {key_cols + ', ' if key_cols else ''}{time.value} AS __end FROM {src} WHERE {time.present}"
    rows = f"SELECT *{', ' + key_cols if key_cols else ''}, {time.value} AS __t FROM {src} WHERE {time.present}"
    join = f"{key_match + ' AND ' if key_match else ''}__r.__t BETWEEN __w.__end - {size} AND __w.__end"
    drop = ", ".join(["__t", *(key_column(k) for k in keys)])
    sql = _windowed(relation, time, drop.split(', '), f'__w.__end - {size}', '__w.__end',
                    f"({rows}) __r JOIN ({windows}) __w ON {join}", inclusive_end=True, qualifier="__r.")
    return sql, "range join of rows to one window per distinct row time"


def _windowed(relation: WindowRelation, time: TimeSql, temporaries: t.Sequence[str], start: str, end: str,
              source: str, inclusive_end: bool = False, qualifier: str = "") -> str:
    """`SELECT <the input's columns, not the temporaries>, window_start, window_end, window_time
    FROM <source>`, the bounds numbers in the time column's unit (`qualifier`: the input's alias)."""
    return (f"SELECT {qualifier}{star_except(relation, *temporaries)}, "
            f"{time.window_columns(start, end, inclusive_end)} FROM {source}")


def _window_numbers(first: str, last: str) -> str:
    """explode() of the window numbers first..last; none when first > last (Spark's sequence would count down)."""
    return f"explode(IF({first} <= {last}, sequence({first}, {last}), CAST(array() AS ARRAY<BIGINT>)))"


def _count_order(relation: WindowRelation) -> str:
    if relation.order_by:
        return ", ".join(relation.order_by)
    if "arrival_order" in relation.options:
        return quote_identifier(relation.options["arrival_order"])
    # A finished table has no order of its own (a stream has: the order its rows arrive).
    raise SqlwinValidationError(
        "COUNT_WINDOW over a finished table needs an order for its rows", node_position(relation.node, "COUNT_WINDOW"),
        "COUNT_WINDOW(TABLE t [PARTITION BY k] ORDER BY offset, 3 [, step]), or WITH (arrival_order = offset)")


def rows_in_count_windows(relation: WindowRelation, w: CountWindow, src: str, keys: t.Sequence[str]) -> str:
    """One row per (input row, count window it is in): row number __rn, window number __j.

    Row rn is in windows j with j*slide <= rn < j*slide + size; tumbling windows need no explode.
    """
    numbered = (f"SELECT *, row_number() OVER ({partition_clause(keys)}ORDER BY {_count_order(relation)}) - 1 "
                f"AS __rn FROM {src}{_with_time(relation)}")
    if w.slide == w.size:
        return f"SELECT *, div(__rn, {w.size}) AS __j FROM ({numbered})"
    first_j = f"CAST(greatest(0, ceil((__rn - {w.size} + 1) / {w.slide})) AS BIGINT)"
    last_j = f"CAST(floor(__rn / {w.slide}) AS BIGINT)"
    return f"SELECT * FROM ({numbered}) __n LATERAL VIEW {_window_numbers(first_j, last_j)} AS __j"


def _annotate_count(relation: WindowRelation, w: CountWindow, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    win = partition_clause(keys, "__j")
    bound = count_bounds(relation)
    sized = (
        f"SELECT *, count(*) OVER ({win}) AS __size, min_by({bound}, __rn) OVER ({win}) AS __first, "
        f"max_by({bound}, __rn) OVER ({win}) AS __last FROM ({rows_in_count_windows(relation, w, src, keys)})"
    )
    sql = (
        f"SELECT {star_except(relation, '__rn', '__j', '__size', '__first', '__last')}, __first AS window_start, __last AS window_end, "
        f"__last AS window_time, __j AS window_index FROM ({sized}) WHERE __size = {w.size}"
    )
    return sql, "row_number() + window numbers per row; only full windows (as Quix and Flink)"


def count_bounds(relation: WindowRelation) -> str:
    """What window_start / window_end of a count window show: the first / last row's time."""
    if relation.time is not None:
        return epoch_ms_sql(relation.time) if relation.time.kind == "epoch_ms" else quote_identifier(relation.time.name)
    first = _count_order(relation).split(", ")[0]
    return first.rsplit(" ", 1)[0] if first.upper().endswith((" ASC", " DESC")) else first


def _annotate_global(relation: WindowRelation, w: GlobalWindow, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    # The global window has no bounds: NULL start / end / time, typed like the time column.
    kind = "BIGINT" if relation.time is not None and relation.time.kind == "epoch_ms" else timestamp_type(relation)
    bounds = ", ".join(f"CAST(NULL AS {kind}) AS {c}" for c in ("window_start", "window_end", "window_time"))
    return (f"SELECT {star_except(relation)}, {bounds} FROM {src}{_with_time(relation)}",
            "one window for all rows, closed at end of input")


def null_keys(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> list[str]:
    """The keys whose NULL rejects a row: the PARTITION BY expressions and the GROUP BY keys that
    are the input's own columns -- the keys a replay's and a stream's runtime is keyed by."""
    keys = list(relation.partition_by)
    columns = {name.lower(): name for name in relation.columns}
    for key in group_keys:
        name = (identifier_name(key) or "").lower()
        if name in columns and name not in WINDOW_COLUMNS:
            column = quote_identifier(columns[name])
            if column not in keys and key not in keys:
                keys.append(column)
    return keys


def admitted_source(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> str:
    """The window function's input without the rows whose key is NULL: one rule in every mode
    (QX-20: such rows join no window; a replay and a stream reject them as `null_key`, and
    LATE ROWS INTO lists them, here too)."""
    keys = null_keys(relation, group_keys)
    if not keys:
        return relation.source
    return f"(SELECT * FROM {relation.source} WHERE {' AND '.join(f'({k}) IS NOT NULL' for k in keys)})"


def _with_time(relation: WindowRelation) -> str:
    """` WHERE <time> IS NOT NULL` when the window function names a time column (DESCRIPTOR(ts)): rows with
    a NULL time join no window, in every kind of window (docs/semantics.md)."""
    time = relation.time
    if time is None or time.kind == "processing_time":
        return ""
    return f" WHERE {TimeSql(time).present}"


def uses_spark_window(relation: WindowRelation) -> bool:
    """Whether Spark's own window() makes the windows: TUMBLE or HOP without gaps over a TIMESTAMP."""
    w = relation.windower
    return ANNOTATE.get(type(w)) is _annotate_fixed and relation.time.kind == "timestamp" and w.slide <= w.size


def spark_window_call(relation: WindowRelation) -> str:
    w = relation.windower
    return (f"window({quote_identifier(relation.time.name)}, '{interval_text(w.size)}', '{interval_text(w.slide)}', "
            f"'{interval_text(w.offset)}')")


# Each kind's lowering, keyed by the IR's class: (relation, windower, source, keys) -> (SQL, what it does).
ANNOTATE = {Tumble: _annotate_fixed, Hop: _annotate_fixed, Cumulate: _annotate_cumulate, Session: _annotate_session,
            Slide: _annotate_slide, CountWindow: _annotate_count, GlobalWindow: _annotate_global}

"""Complete input: native grouped operators for a windowed GROUP BY, where one fits.

GROUP BY <keys>, window_start, window_end over TUMBLE / HOP groups by Spark's `window()` struct,
over SESSION by Spark's merging `session_window()`, over COUNT_WINDOW by the window numbers of
one `row_number()` pass. The user's SELECT is split into an inner GROUP BY that computes every
aggregate and an outer projection in the user's own names (`grouped_fast_path`); anything else
takes the general path (annotated rows under the user's SQL).
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.spark.complete_sql import LoweringDialect, RawRelation, TimeSql, key_column, relation_alias
from sqlwin.spark.complete_windows import (admitted_source, count_bounds, rows_in_count_windows, spark_window_call,
                                           uses_spark_window)
from sqlwin.sql.plan import (
    WINDOW_COLUMNS,
    CountWindow,
    QueryPlan,
    Session,
    WindowAggregation,
    key_text,
    window_keys,
)
from sqlwin.sql.text import identifier_name, quote_identifier


Rewrite = t.Callable[[exp.Expr, WindowAggregation, t.Callable], tuple[exp.Expr, str]]


def grouped_fast_path(plan: QueryPlan) -> Rewrite | None:
    """A native grouped operator for GROUP BY <partition keys>, window_start, window_end, if one fits."""
    agg = plan.aggregation
    if agg is None or agg.grouping_analytics is not None:
        return None  # GROUPING SETS / ROLLUP / CUBE: Spark groups the annotated rows itself
    relation = agg.relation
    if not _aggregates_extractable(agg.select) or not _only_grouped_columns(agg):
        return None
    if uses_spark_window(relation):
        return _rewrite_fixed  # fixed windows do not depend on keys: any GROUP BY keys work
    if {key_text(k) for k in window_keys(relation, agg.group_keys)} != {key_text(k) for k in agg.group_keys}:
        # PARTITION BY a column GROUP BY does not name (windows per both, grouped coarser), or a key
        # the windows cannot be formed by: the general path is exact.
        return None
    rewrite = GROUPED.get(type(relation.windower))
    if rewrite is _rewrite_session:
        # Spark merges sessions by merging partial aggregates, which a DISTINCT aggregate does not survive
        # (count(DISTINCT v) over merged sessions counts some values twice): the general path is exact.
        if any(agg_node.find(exp.Distinct) for agg_node in agg.select.find_all(exp.AggFunc)):
            return None
    return rewrite


def _aggregates_extractable(select: exp.Select) -> bool:
    """True when the SELECT can be split into an inner GROUP BY and an outer projection.

    Every function must be known to sqlglot (so aggregates can be told apart), no window
    column may sit inside an aggregate, and there is no WHERE: a WHERE filters rows after
    they are placed in sessions / count windows, which the grouped operators cannot do.
    """
    if select.args.get("where") is not None:
        return False
    for part in [*select.expressions, select.args.get("having")]:
        if part is None:
            continue
        if any(isinstance(n, (exp.Anonymous, exp.Window)) for n in part.walk()):
            return False
        for aggregate in part.find_all(exp.AggFunc, exp.Filter):
            if any(c.name.lower() in WINDOW_COLUMNS for c in aggregate.find_all(exp.Column)):
                return False
    return True


def _only_grouped_columns(agg: WindowAggregation) -> bool:
    """True when every column outside an aggregate is a window column, a GROUP BY key or (in ORDER BY)
    an output name. Otherwise the query is wrong, and the general path lets Spark say so in the user's
    names (the split into an inner and an outer query would name its own columns instead)."""
    select = agg.select
    keys = set(agg.group_keys)
    key_names = {(identifier_name(k) or "").lower() for k in keys} - {""}
    outputs = {e.alias_or_name.lower() for e in select.expressions}

    def grouped(node: exp.Expr, names: set[str]) -> bool:
        if isinstance(node, (exp.AggFunc, exp.Filter, exp.Subquery, exp.Select)) or _is_mean(node):
            return True
        if not isinstance(node, exp.Literal) and node.sql(dialect="spark") in keys:
            return True
        if isinstance(node, exp.Column):
            name = node.name.lower()
            return name in WINDOW_COLUMNS or name in key_names or name in names or isinstance(node.this, exp.Star)
        return all(grouped(child, names) for child in node.iter_expressions())

    having = select.args.get("having")
    order = select.args.get("order")
    return (all(grouped(e, set()) for e in select.expressions)
            and (having is None or grouped(having.this, outputs))
            and (order is None or grouped(order, outputs)))


def _is_mean(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "mean"


def _rewrite_grouped(ast: exp.Select, agg: WindowAggregation, window_key: str, window_cols: dict[str, str],
                     source_sql: str, extra_items: t.Sequence[str] = (), having: str | None = None) -> exp.Expr:
    """Split the user's SELECT into an inner GROUP BY (keys, window) and an outer projection.

    The inner query computes every aggregate the user wrote, grouped by the partition keys
    and `window_key`; the outer one is the user's own SELECT with each aggregate replaced
    by its inner column and window_start / window_end / window_time by `window_cols`.
    """
    inner_items: list[str] = [f"{key} AS {key_column(key)}" for key in agg.group_keys]
    inner_items += [f"{window_key} AS __win", *extra_items]
    counter = iter(range(10_000))

    def extract(node: exp.Expr) -> exp.Expr:
        if isinstance(node, (exp.AggFunc, exp.Filter)):  # an aggregate with its FILTER (WHERE ...)
            name = f"__a{next(counter)}"
            inner_items.append(f"{node.sql(dialect=LoweringDialect)} AS {name}")
            return exp.column(name)
        if not isinstance(node, (exp.Column, exp.Literal)) and node.sql(dialect="spark") in agg.group_keys:
            return exp.column(key_column(node.sql(dialect="spark")))  # GROUP BY lower(word): SELECT lower(word)
        if isinstance(node, exp.Column):
            lowered = node.name.lower()
            if lowered in window_cols:
                return exp.column(f"__win_{lowered}")
            for key in agg.group_keys:
                if node.sql(dialect="spark") == key or node.name == key:
                    return exp.column(key_column(key))
        return node

    outer = ast.copy()
    outer.set("expressions", [_alias_preserving(e, extract) for e in outer.expressions])
    user_having = outer.args.get("having")
    outer.set("having", None)
    outer.set("group", None)
    if user_having is not None:
        outer.set("where", exp.Where(this=user_having.this.transform(extract)))
    if outer.args.get("order"):
        outer.set("order", outer.args["order"].transform(extract))
    group = ", ".join([*agg.group_keys, window_key])
    # The input answers to the name the user qualifies columns with (`... AS t GROUP BY t.k`).
    inner = (f"SELECT {', '.join(inner_items)} FROM {source_sql} AS {quote_identifier(relation_alias(agg.relation))} "
             f"GROUP BY {group}")
    if having:
        inner += f" HAVING {having}"
    window_projection = ", ".join(f"{expr} AS __win_{name}" for name, expr in window_cols.items())
    shaped = f"SELECT *, {window_projection} FROM ({inner})"
    outer.set("from_", exp.From(this=RawRelation(this=shaped, alias=relation_alias(agg.relation))))
    outer.set("joins", None)
    return outer


def _alias_preserving(item: exp.Expr, extract: t.Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """Transform a select item but keep the output name the user would have seen."""
    if isinstance(item, exp.Alias):
        return item.transform(extract)
    name = item.alias_or_name if isinstance(item, exp.Column) else None
    transformed = item.transform(extract)
    if name:
        return exp.alias_(transformed, name)
    if transformed is not item:
        return exp.alias_(transformed, item.sql(dialect="spark"), quoted=True)
    return transformed


def _rewrite_fixed(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    # GROUP BY keys, window(ts, ...): the plan a Spark user writes by hand (one struct key).
    cols = {"window_start": "__win.start", "window_end": "__win.end",
            "window_time": "__win.end - INTERVAL 1 MICROSECOND"}
    rewritten = _rewrite_grouped(ast, agg, spark_window_call(agg.relation), cols,
                                 admitted_source(agg.relation, agg.group_keys))
    strip(rewritten)
    return rewritten, "Spark window() as a grouping key (native)"


def _rewrite_session(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    relation = agg.relation
    time = TimeSql(relation.time)
    ts = f"timestamp_millis({time.value})" if time.epoch_ms else time.column
    # Spark merges sessions that only touch; sqlwin's sessions split rows exactly one gap
    # apart (BW-07). At microsecond resolution a gap one microsecond shorter draws exactly
    # that line, and the session end is then moved back out by that microsecond.
    key = f"session_window({ts}, '{relation.windower.gap - 1} microseconds')"
    # The bounds are the session's first row time and last row time + gap, computed as aggregates:
    # a condition on them (HAVING window_end - window_start > ...) then stays above the merge of
    # sessions. On the session_window struct, a grouping key, Spark would push it below the merge,
    # where it sees each row's own one-gap session (and drops every row).
    gap = time.duration(relation.windower.gap)
    bounds = (f"min({time.value}) AS __first", f"max({time.value}) AS __last")
    if time.epoch_ms:
        cols = {"window_start": "__first", "window_end": f"__last + {gap}", "window_time": f"__last + {gap} - 1"}
    else:
        cols = {"window_start": time.to_time("__first"), "window_end": time.to_time(f"__last + {gap}"),
                "window_time": time.to_time(f"__last + {gap} - 1")}
    rewritten = _rewrite_grouped(ast, agg, key, cols, admitted_source(relation, agg.group_keys),
                                 extra_items=bounds)
    strip(rewritten)
    return rewritten, "Spark session_window() grouping (native merge of sessions)"


def _rewrite_count(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    relation = agg.relation
    w = relation.windower
    rows = rows_in_count_windows(relation, w, admitted_source(relation, agg.group_keys),
                                  window_keys(relation, agg.group_keys))
    source = f"({rows})"
    bound = count_bounds(relation)
    rewritten = _rewrite_grouped(
        ast, agg, "__j",
        {"window_start": "__first", "window_end": "__last", "window_time": "__last", "window_index": "__win"},
        source,
        extra_items=(f"min_by({bound}, __rn) AS __first", f"max_by({bound}, __rn) AS __last"),
        having=f"count(*) = {w.size}",
    )
    strip(rewritten)
    return rewritten, "row_number() numbering, windows as grouping keys; only full windows (as Quix and Flink)"


# The kinds Spark groups itself after the window keys are checked, keyed by the IR's class.
GROUPED = {Session: _rewrite_session, CountWindow: _rewrite_count}

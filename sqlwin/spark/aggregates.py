"""The aggregates the window runtime computes for a windowed aggregation in replay and streaming.

A query's aggregate calls (the outermost ones of its SELECT list and HAVING, each once, named by
their text in sqlwin's dialect) become AggregateSpecs over argument columns __a<i>, each distinct
argument expression once; an aggregate the runtime cannot compute is refused here, or, where
Spark can aggregate the window's rows, left to spark/around.py (`runtime_computes`). Also: the
names a select item or HAVING may use outside an aggregate.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.runtime import AggregateSpec
from sqlwin.sql.dialect import SqlwinDialect
from sqlwin.sql.plan import WINDOW_COLUMNS, QueryPlan, WindowAggregation, node_position
from sqlwin.sql.text import identifier_name

SUPPORTED_AGGREGATES = ("count(*)", "count(x)", "count(DISTINCT x)", "sum", "min", "max", "avg / mean",
                        "collect_list / array_agg [ORDER BY ...]", "first", "last", "min_by", "max_by")
_SIMPLE = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg", exp.ArrayAgg: "collect_list",
           exp.First: "first", exp.FirstValue: "first", exp.Last: "last", exp.LastValue: "last"}


def aggregate_identity(node: exp.Expr) -> str:
    """An aggregate's text in sqlwin's dialect, which keeps `array_agg(v ORDER BY k)`'s ORDER BY
    (Spark's generator drops it, which would make it the same aggregate as collect_list(v))."""
    return node.sql(dialect=SqlwinDialect)


def is_anonymous_aggregate(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "mean"


def aggregate_nodes(plan: QueryPlan, agg: WindowAggregation) -> list[exp.Expr]:
    """The outermost aggregate calls of the SELECT list and HAVING, each once."""
    roots = list(agg.select.expressions)
    having = agg.select.args.get("having")
    if having is not None:
        roots.append(having.this)
    found: dict[str, exp.Expr] = {}
    for root in roots:
        for node in root.walk(bfs=False):
            if isinstance(node, (exp.AggFunc, exp.Filter)) or is_anonymous_aggregate(node):
                if not any(isinstance(a, (exp.AggFunc, exp.Filter)) for a in _ancestors(node, root)):
                    found.setdefault(aggregate_identity(node), node)
    return list(found.values())


def _ancestors(node: exp.Expr, root: exp.Expr) -> t.Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None and node is not root:
        yield parent
        if parent is root:
            return
        node, parent = parent, parent.parent


def aggregate_specs(plan: QueryPlan, nodes: list[exp.Expr]) -> tuple[list[AggregateSpec], list[str]]:
    """AggregateSpecs over argument columns __a<i> (each distinct argument expression once)."""
    arguments: list[str] = []

    def argument(node: exp.Expr) -> int:
        sql = node.sql(dialect="spark")
        if sql not in arguments:
            arguments.append(sql)
        return arguments.index(sql)

    specs = []
    for node in nodes:
        where = None
        if isinstance(node, exp.Filter):  # agg(...) FILTER (WHERE c)
            node, where = node.this, node.expression.this

        def kept(value: exp.Expr) -> exp.Expr:
            """FILTER of an aggregate that skips NULLs: the value of a row FILTER keeps, else NULL."""
            if where is None:
                return value
            return exp.Case(ifs=[exp.If(this=where.copy(), true=value.copy())])

        if isinstance(node, exp.Count):
            inner = node.this
            if isinstance(inner, exp.Star) or inner is None:
                specs.append(AggregateSpec("count") if where is None
                             else AggregateSpec("count", argument(kept(exp.Literal.number(1)))))
            elif isinstance(inner, exp.Distinct):
                if len(inner.expressions) != 1:
                    _unsupported_aggregate(plan, node, "count(DISTINCT) of more than one column")
                specs.append(AggregateSpec("count_distinct", argument(kept(inner.expressions[0]))))
            else:
                specs.append(AggregateSpec("count", argument(kept(inner))))
        elif isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
            value = node.this.this
            if isinstance(value, exp.Distinct):
                _unsupported_aggregate(plan, node, "array_agg(DISTINCT ... ORDER BY ...)")
            order = tuple((argument(key.this), bool(key.args.get("desc")), _nulls_first(key))
                          for key in node.this.expressions)
            specs.append(AggregateSpec("collect_list", argument(kept(value)), order=order))
        elif type(node) in _SIMPLE and not isinstance(node.this, exp.Distinct):
            func = _SIMPLE[type(node)]
            if func in ("first", "last"):  # NULLs are values to these: FILTER drops the rows themselves
                specs.append(AggregateSpec(func, argument(node.this),
                                           filter=None if where is None else argument(where)))
            else:
                specs.append(AggregateSpec(func, argument(kept(node.this))))
        elif is_anonymous_aggregate(node) and len(node.expressions) == 1:
            specs.append(AggregateSpec("avg", argument(kept(node.expressions[0]))))
        elif isinstance(node, (exp.ArgMin, exp.ArgMax)):  # a row whose ordering value is NULL is skipped
            func = "min_by" if isinstance(node, exp.ArgMin) else "max_by"
            specs.append(AggregateSpec(func, argument(node.this), argument(kept(node.expression))))
        else:
            _unsupported_aggregate(plan, node, node.sql(dialect="spark"))
    return specs, arguments


def runtime_computes(plan: QueryPlan) -> bool:
    """Whether the window runtime computes every aggregate of the query's windowed aggregation
    (else spark/around.py keeps the window's rows and Spark aggregates them)."""
    agg = plan.aggregation
    if agg is None:
        return True
    try:
        aggregate_specs(plan, aggregate_nodes(plan, agg))
    except SqlwinUnsupportedError:
        return False
    return True


def _nulls_first(key: exp.Ordered) -> bool:
    """Spark's default: NULLS FIRST ascending, NULLS LAST descending."""
    nulls_first = key.args.get("nulls_first")
    return (not key.args.get("desc")) if nulls_first is None else bool(nulls_first)


def _unsupported_aggregate(plan: QueryPlan, node: exp.Expr, what: str) -> t.NoReturn:
    raise SqlwinUnsupportedError(
        f"The window runtime cannot compute {what}", node_position(node, node.sql(dialect="spark")),
        ", ".join(SUPPORTED_AGGREGATES) + "; any Spark aggregate over TUMBLE, HOP, CUMULATE, SESSION, COUNT_WINDOW or "
        "SLIDE (the window's rows kept until it closes)", query=plan.sql)


def loose_names(agg: WindowAggregation) -> set[str]:
    """Names a select item or HAVING may use outside an aggregate: the GROUP BY keys that are
    columns and the window columns."""
    return {(identifier_name(k) or "").lower() for k in agg.group_keys} | set(WINDOW_COLUMNS)

"""GROUPING SETS / ROLLUP / CUBE on a windowed aggregation in a replay or a stream: a stage that
groups by the finest grouping, and SQL around it that merges each set per window (sql/around.py
holds the stage-and-SQL-around form, Around)."""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.errors import Position
from sqlwin.sql.around import STAGE_MARKER, Around, bare_text
from sqlwin.sql.dialect import SqlwinDialect

_ANALYTICS = (exp.GroupingSets, exp.Rollup, exp.Cube)
_GROUPING_FUNCTIONS = (exp.Grouping, exp.GroupingId)


def grouping_around(ast: exp.Select, relation_node: exp.Expr,
                    position_of: t.Callable[..., Position | None]) -> Around | None:
    """`GROUP BY window_start, window_end, GROUPING SETS (...)` (ROLLUP, CUBE) as a stage and the SQL
    around it, as Spark's own partial / final aggregation: the stage groups by every key of every
    set (the finest grouping) with each aggregate's partial form, and the SQL around it merges the
    partials per set of each window (count -> sum of counts, sum -> sum, min / max -> min / max,
    avg -> a sum over a count). None where an aggregate has no partial form (DISTINCT, percentiles,
    collect_list ...): the window runtime then has no grouping of its own to offer."""
    group = ast.args.get("group")
    if group is None or ast.args.get("with_") is not None:
        return None
    keys: dict[str, exp.Expr] = {}  # SQL -> expression, every key of every set

    def add(node: exp.Expr) -> None:
        if isinstance(node, (exp.Tuple, exp.Paren)):
            for child in (node.expressions if isinstance(node, exp.Tuple) else [node.this]):
                add(child)
        elif isinstance(node, _ANALYTICS):
            for child in node.expressions:
                add(child)
        elif not (isinstance(node, exp.Column) and node.name.lower() in ("window_start", "window_end", "window_time")):
            keys.setdefault(bare_text(node), node)

    bounds = []
    for node in group.expressions:
        if isinstance(node, exp.Column) and node.name.lower() in ("window_start", "window_end", "window_time"):
            bounds.append(node.name.lower())
        else:
            add(node)
    if not {"window_start", "window_end"} <= set(bounds):
        return None
    key_names = {}
    for i, (text, node) in enumerate(keys.items()):
        key_names[text] = node.name if isinstance(node, exp.Column) else f"__g{i}"
    partials: list[exp.Expr] = []
    merged: dict[int, exp.Expr] = {}
    having = ast.args.get("having")
    roots = [*ast.expressions, *([having] if having is not None else [])]
    for root in roots:
        for node in list(root.find_all(exp.AggFunc)):
            if isinstance(node.parent, exp.Filter) or id(node) in merged or isinstance(node, _GROUPING_FUNCTIONS):
                continue  # grouping() / grouping_id() belong to the SQL around: they read its sets
            merge = _partial(node, partials)
            if merge is None:
                return None
            merged[id(node)] = merge
        for node in list(root.find_all(exp.Filter)):
            if isinstance(node.this, exp.AggFunc):
                merge = _partial(node, partials)
                if merge is None:
                    return None
                merged[id(node)] = merge
    stage = ast.copy()
    for key in ("emit", "late_into", "having"):
        stage.set(key, None)
    stage.set("expressions", [*(exp.alias_(node.copy(), key_names[text], quoted=True) for text, node in keys.items()),
                              *(exp.column(b) for b in bounds), *partials])
    stage.set("group", exp.Group(expressions=[*(node.copy() for node in keys.values()),
                                              *(exp.column(b) for b in bounds)]))
    for key in ("emit", "late_into"):
        if ast.args.get(key) is not None:
            stage.set(key, ast.args[key].copy())

    def rewrite(node: exp.Expr) -> exp.Expr:
        if id(node) in merged:
            return merged[id(node)].copy()
        if bare_text(node) in keys and not isinstance(node, exp.Column):
            return exp.column(key_names[bare_text(node)], quoted=True)
        return node

    outer = ast.copy()
    # the copy's nodes are new objects: map the originals' identities onto them by walk order
    originals, copies = list(ast.walk()), list(outer.walk())
    merged = {id(c): merged[id(o)] for o, c in zip(originals, copies) if id(o) in merged}
    for key in ("emit", "late_into", "where"):
        outer.set(key, None)
    outer.set("from_", exp.From(this=exp.to_table(STAGE_MARKER)))
    outer = outer.transform(rewrite, copy=False)
    text = stage.sql(dialect=SqlwinDialect)
    around = Around(text, outer, "the finest grouping", position_of(relation_node), grouping=True)
    # a window's rows of every key in one micro-batch: the coarser sets hold several keys' rows
    around.per_window, around.per_window_text = position_of(group), "GROUPING SETS, ROLLUP or CUBE per window"
    return around


def _partial(node: exp.Expr, partials: list[exp.Expr]) -> exp.Expr | None:
    """Add `node`'s partial aggregates to `partials` (named __p<j>); its merge over them, or None."""
    filtered = node if isinstance(node, exp.Filter) else None
    agg = node.this if filtered is not None else node
    if agg.args.get("distinct") or isinstance(agg.this, exp.Distinct):
        return None

    def partial(kind: type, argument: exp.Expr | None) -> exp.Expr:
        name = f"__p{len(partials)}"
        inner = kind(this=argument.copy()) if argument is not None else kind(this=exp.Star())
        if filtered is not None:
            inner = exp.Filter(this=inner, expression=filtered.expression.copy())
        partials.append(exp.alias_(inner, name))
        return exp.column(name)

    if isinstance(agg, exp.Count):
        return exp.Sum(this=partial(exp.Count, None if isinstance(agg.this, exp.Star) else agg.this))
    if isinstance(agg, exp.Sum):
        return exp.Sum(this=partial(exp.Sum, agg.this))
    if isinstance(agg, (exp.Min, exp.Max)):
        return type(agg)(this=partial(type(agg), agg.this))
    if isinstance(agg, exp.Avg):
        total, count = partial(exp.Sum, agg.this), partial(exp.Count, agg.this)
        return exp.Div(this=exp.cast(exp.Sum(this=total), "double"),
                       expression=exp.Nullif(this=exp.Sum(this=count), expression=exp.Literal.number(0)))
    return None

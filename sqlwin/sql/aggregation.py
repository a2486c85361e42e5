"""The shapes a plan recognises around its window functions.

A windowed aggregation (`SELECT ... FROM <window fn> GROUP BY keys, window_start, window_end`, with
GROUPING SETS / ROLLUP / CUBE beside), one over another's windowed results (a propagation, AP-11),
and the keys whose rows form windows of their own (`window_keys`).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.sql.ast_nodes import TableArg, WindowTVF
from sqlwin.sql.dialect import SqlwinDialect
from sqlwin.sql.relation import WINDOW_COLUMNS, WindowRelation
from sqlwin.sql.text import identifier_name


@dataclass
class WindowAggregation:
    """`SELECT ... FROM <window fn> GROUP BY <partition keys>, window_start, window_end`.

    The shape every stream processor computes; recognising it lets the batch lowering
    use Spark's grouped window operators and the streaming layer keep per-window state.
    """

    relation: WindowRelation
    select: exp.Select
    group_keys: tuple[str, ...]  # non-window GROUP BY expressions, as SQL
    # GROUPING SETS / ROLLUP / CUBE beside the window columns: Spark computes them over the
    # annotated rows (complete input); the window runtime has one grouping per window.
    grouping_analytics: exp.Expr | None = None


@dataclass
class Propagation:
    """A windowed aggregation over the result of another (AP-11, window propagation): the inner
    one runs first and its results are the outer's input, as Apex chains windowed operators and
    Flink cascades window aggregations over `window_time`."""

    inner_sql: str  # the inner query alone, with the statement's CTEs it may read
    outer: "WindowRelation"  # the outer window function, whose TABLE argument is the inner result
    cte: str | None  # the CTE that holds the inner query (None: TABLE (SELECT ...))
    # The outer's watermark follows the inner's firings ('upstream'): the outer gave none of its own,
    # and the inner has one clock for the stream, so its firings come in the order of its windows.
    inherit: bool = False


def recognise_propagation(ast: exp.Expr, windows: list[WindowRelation]) -> Propagation | None:
    """The outer window function reads, as its TABLE, a query (a CTE of the statement, or TABLE (SELECT
    ...)) that holds every other window function of the statement."""
    if not isinstance(ast, exp.Select) or len(windows) < 2:
        return None
    from_ = ast.args.get("from_")
    outer = next((w for w in windows if from_ is not None and w.node is from_.this), None)
    if outer is None or ast.args.get("joins"):
        return None
    table = outer.node.find(TableArg).this
    with_ = ast.args.get("with_")
    ctes = list(with_.expressions) if with_ is not None else []
    if isinstance(table, exp.Subquery):
        body, cte, before = table.this, None, ctes
    elif isinstance(table, exp.Table) and not table.db:
        match = next((i for i, c in enumerate(ctes) if c.alias_or_name.lower() == table.name.lower()), None)
        if match is None:
            return None
        body, cte, before = ctes[match].this, ctes[match].alias_or_name, ctes[:match]
    else:
        return None
    # the inner query's window functions: its own, and those of the CTEs before it (a chain of three
    # or more: the inner query is itself a chain)
    inner_nodes = {id(n) for n in body.find_all(WindowTVF)}
    if not inner_nodes:
        return None
    inner_nodes |= {id(n) for c in before for n in c.find_all(WindowTVF)}
    if any(id(w.node) not in inner_nodes for w in windows if w is not outer):
        return None
    prefix = f"WITH {', '.join(c.sql(dialect=SqlwinDialect) for c in before)} " if before else ""
    body = body.copy()
    body.set("alias", None)  # TABLE (SELECT ...) names its query for Spark; alone it needs none
    outer_arg = outer.node.find(TableArg)
    inner = [w for w in windows if w is not outer]
    inherit = (outer_arg.args.get("watermark") is None and "watermark_strategy" not in outer.options
               and outer.time is not None and outer.time.name is not None
               and outer.time.name.lower() == "window_time"
               and all(not w.partition_by or w.watermark.scope == "stream" for w in inner))
    return Propagation(prefix + body.sql(dialect=SqlwinDialect), outer, cte, inherit)


def recognise_aggregation(ast: exp.Expr, windows: list[WindowRelation],
                 propagation: Propagation | None = None) -> WindowAggregation | None:
    """Recognise SELECT ... FROM <window fn> [WHERE ...] GROUP BY keys, window_start, window_end."""
    if propagation is not None:
        windows = [propagation.outer]
    if not isinstance(ast, exp.Select) or len(windows) != 1:
        return None
    relation = windows[0]
    from_ = ast.args.get("from_")
    if from_ is None or from_.this is not relation.node or ast.args.get("joins"):
        return None
    group = ast.args.get("group")
    if group is None:
        return None
    names = [e.name.lower() if isinstance(e, exp.Column) else None for e in group.expressions]
    if ("window_start" not in names or "window_end" not in names) and _hoist_window_columns(group):
        names = [e.name.lower() if isinstance(e, exp.Column) else None for e in group.expressions]
    if "window_start" not in names or "window_end" not in names:
        return None
    analytics = grouping_analytics(group)
    keys = tuple(e.sql(dialect="spark") for e, n in zip(group.expressions, names)
                 if n not in WINDOW_COLUMNS and not isinstance(e, GROUPING_ANALYTICS))
    return WindowAggregation(relation, ast, keys, analytics)


GROUPING_ANALYTICS = (exp.GroupingSets, exp.Rollup, exp.Cube)
_WINDOW_BOUNDS = ("window_start", "window_end")


def _hoist_window_columns(group: exp.Group) -> bool:
    """GROUPING SETS each of whose sets holds window_start and window_end (Flink accepts that form)
    group exactly as GROUP BY window_start, window_end, GROUPING SETS (the sets without them), the
    form the rest of sqlwin reads: `group` rewritten to it (True), or left as it is (False)."""
    if any(isinstance(e, (exp.Rollup, exp.Cube)) for e in group.expressions):
        return False
    found = [e for e in group.expressions if isinstance(e, exp.GroupingSets)]
    if len(found) != 1 or not found[0].expressions:
        return False
    sets, bounds = [], None
    for one in found[0].expressions:
        items = list(one.expressions) if isinstance(one, exp.Tuple) else [one.this] if isinstance(one, exp.Paren) \
            else [one]
        names = [i.name.lower() if isinstance(i, exp.Column) else None for i in items]
        if any(bound not in names for bound in _WINDOW_BOUNDS):
            return False
        bounds = bounds or [items[names.index(bound)] for bound in _WINDOW_BOUNDS]
        sets.append(exp.Tuple(expressions=[i.copy() for i, n in zip(items, names) if n not in _WINDOW_BOUNDS]))
    found[0].set("expressions", sets)
    group.set("expressions", [*(b.copy() for b in bounds), *group.expressions])
    return True


def grouping_analytics(group: exp.Group | None) -> exp.Expr | None:
    """The first GROUPING SETS / ROLLUP / CUBE of a GROUP BY (`WITH ROLLUP` / `WITH CUBE` too), or None."""
    if group is None:
        return None
    for node in group.expressions:
        if isinstance(node, GROUPING_ANALYTICS):
            return node
    for key in ("grouping_sets", "rollup", "cube"):
        value = group.args.get(key)
        if value:
            first = value[0] if isinstance(value, list) else value
            return first if isinstance(first, exp.Expr) else group
    return None


def window_keys(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> tuple[str, ...]:
    """The keys whose rows form windows of their own, as Spark SQL over the window function's input.

    PARTITION BY always. A data-dependent window (SESSION, SLIDE, COUNT_WINDOW) under a windowed
    aggregation is formed per GROUP BY key too, in every mode (docs/semantics.md, "Which rows form a
    window"): `group_keys` are that aggregation's keys beside the window columns, each added unless
    PARTITION BY has it already, with qualifiers dropped (the input is the only relation there). A key
    that is not over the input's columns (a SELECT alias, say) forms no windows: Spark reports it.
    """
    keys = list(relation.partition_by)
    if not relation.windower.data_dependent:
        return tuple(keys)
    columns = {name.lower(): name for name in relation.columns}
    seen = {key_text(k) for k in keys}
    for key in group_keys:
        try:
            node = exp.maybe_parse(key, dialect="spark")
        except Exception:  # noqa: BLE001 - a key sqlglot cannot read again is Spark's to judge
            continue
        names = list(node.find_all(exp.Column))
        if any(c.name.lower() in WINDOW_COLUMNS for c in names):
            continue
        if columns and any(c.name.lower() not in columns for c in names):
            continue
        node = node.transform(lambda n: exp.column(columns.get(n.name.lower(), n.name), quoted=True)
                              if isinstance(n, exp.Column) else n)
        text = node.sql(dialect="spark")
        if key_text(text) not in seen:
            seen.add(key_text(text))
            keys.append(text)
    return tuple(keys)


def key_text(sql: str) -> str:
    """A key compared with another: a column by its name (any case, quoted or not), else its SQL."""
    name = identifier_name(sql)
    return (name if name is not None else sql).lower().strip()

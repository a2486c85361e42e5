"""Complete input → native Spark SQL.

Over a finished table every row is on time and every window closes at end of input,
so a windowed query is ordinary Spark SQL once each window table function is replaced
by a relation that annotates every row with its window(s). That relation is written
only with Spark's own operators — `window()`, arithmetic on epoch microseconds,
`explode(sequence(...))`, window frames, `row_number()` — never a Python UDF, so the
query runs at Spark's own speed.

Two shapes are lowered differently because Spark has a faster native operator for them:
a GROUP BY over SESSION (Spark's merging `session_window`) and over COUNT_WINDOW
(one `row_number()` pass, windows as grouping keys). Everything else composes as a
derived table under the user's own SQL (joins, CTEs, WHERE, a second window...).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.errors import SqlwinError
from sqlwin.spark.complete_grouped import grouped_fast_path
from sqlwin.spark.complete_rejected import rejected_rows_sql
from sqlwin.spark.complete_sql import LoweringDialect, RawRelation, relation_alias, strip_modifiers, timestamp_type
from sqlwin.spark.complete_windows import annotate
from sqlwin.sql.around import stage_numbers
from sqlwin.sql.dialect import WindowTVF
from sqlwin.sql.plan import WINDOW_COLUMNS, QueryPlan, window_keys
from sqlwin.sql.text import quote_identifier

# function_plans.py lowers the registered functions through `annotate`, imported from here.
__all__ = ["LoweredQuery", "annotate", "complete_mode", "lower_complete", "name_select_items", "plain_plan",
           "run_as_written"]


@dataclass
class LoweredQuery:
    sql: str  # the Spark SQL that runs
    strategies: list[str]  # one line per window function: how it was lowered and why
    rejected_sql: str | None = None  # the rows no window takes (NULL key or time), as LATE ROWS INTO lists them


def complete_mode(plan: QueryPlan) -> str:
    """The complete-input mode in words, for explain."""
    if plan.plain_spark:
        return "Spark SQL as written (no window function of sqlwin: Spark parses and runs the text itself)"
    return ("complete input: finished tables (no table records its arrival order), every row on time, every "
            "window closed at end of input; native Spark SQL, no Python")


def plain_plan(query: str) -> QueryPlan:
    """The plan of a query sqlglot cannot read but Spark can: nothing of sqlwin's, run as written."""
    from sqlwin.sql.plan import EmitSpec

    return QueryPlan(query, exp.Select(), [], EmitSpec(), None, None)


def run_as_written(runner, query: str, err: SqlwinError):
    """A query sqlwin's parser refused: Spark's own SQL if it has none of sqlwin's words and Spark reads
    it (`GROUP BY window(ts, '1 hour')`), run exactly as written; else sqlwin's error (`err`), which says
    where and what would be accepted."""
    if not getattr(err, "plain_spark", False):
        raise err
    try:
        return runner.sql(query, query)
    except SqlwinError as spark_err:
        if getattr(spark_err, "spark_parse", False):
            raise err from None  # Spark cannot read it either: sqlwin's message is the more precise
        if getattr(err, "registered_form", False) and any(
                c in str(spark_err) for c in ("UNRESOLVABLE_TABLE_VALUED_FUNCTION", "UNRESOLVED_ROUTINE")):
            raise err from None  # the registered functions' form, in a session without them: say both forms
        raise


def lower_complete(plan: QueryPlan) -> LoweredQuery:
    """The whole query as Spark SQL, every window function replaced by native Spark."""
    try:
        return _lower_complete(plan)
    except SqlwinError as err:
        raise err.with_query(plan.sql) from None


def _stages_rejected(plans: list[QueryPlan], rejected: list[str | None]) -> str | None:
    """Several stages' rejected rows in one table, each with its `stage` (as a replay lists them):
    every stage's row columns, NULL where a stage's table has no such column. None where a stage is a
    windowed join (its rows come as a struct per side) or has no rows to reject."""
    if any(r is None or p.join is not None for p, r in zip(plans, rejected)):
        return None
    own = [{c: kind for c, kind in p.windows[0].columns.items() if c.lower() not in WINDOW_COLUMNS} for p in plans]
    names: dict[str, str] = {}
    for columns in own:
        for c, kind in columns.items():
            names.setdefault(c, kind)
    selects = []
    for number, columns, sql in zip(stage_numbers(plans), own, rejected):
        row = [quote_identifier(c) if c in columns else f"CAST(NULL AS {kind}) AS {quote_identifier(c)}"
               for c, kind in names.items()]
        selects.append(f"SELECT {', '.join(row)}, late_by, window_start, window_end, reason, {number} AS stage "
                       f"FROM ({sql})")
    return " UNION ALL ".join(selects)


def _lower_complete(plan: QueryPlan) -> LoweredQuery:
    if plan.plain_spark:
        # Nothing of sqlwin's: Spark runs the user's own text (sqlglot's rewriting of it is not always Spark's).
        return LoweredQuery(plan.sql, [])
    if plan.around is not None and not plan.around.grouping and plan.around.rows_sql is None:
        # (a grouping: Spark's own GROUPING SETS below; a window function's rows: its annotated rows)
        # SQL around a windowed stage: the stage lowered as the whole statement would be (its windows formed
        # as a replay's and a stream's are), the SQL around it over the stage's rows.
        parts = plan.around.parts
        stages = [_lower_complete(part.plan) for part in parts]
        rejected = stages[0].rejected_sql
        if len(parts) > 1:  # each stage's rejected rows with its number, as a replay's
            rejected = _stages_rejected([p.plan for p in parts], [s.rejected_sql for s in stages]) or rejected
        return LoweredQuery(plan.around.outer_over([s.sql for s in stages]),
                            [line for s in stages for line in s.strategies], rejected)
    ast = plan.ast.copy()
    nodes = {id(n): n for n in ast.find_all(WindowTVF)}
    originals = {id(w.node): w for w in plan.windows}
    # Map copied nodes back to their relations through their position in the walk order.
    relations = dict(zip(nodes, (originals[id(n)] for n in plan.ast.find_all(WindowTVF))))
    strategies: list[str] = []

    _group_count_windows_by_index(plan, ast)
    _order_collected_lists(plan, ast)
    fast = grouped_fast_path(plan)
    for node_id, node in nodes.items():
        relation = relations[node_id]
        if fast is not None and relation is plan.aggregation.relation:
            continue
        grouped = plan.aggregation is not None and relation is plan.aggregation.relation
        if plan.join is not None and relation in plan.join.sides:
            sql, why = _join_side(plan, plan.join.sides.index(relation))
            strategies.append(f"{relation.function} at {relation.position}: {why}")
            node.replace(RawRelation(this=sql, alias=relation_alias(relation)))
            continue
        group_keys = plan.aggregation.group_keys if grouped else ()
        sql, why = annotate(relation, group_keys, window_keys(relation, group_keys))
        strategies.append(f"{relation.function} at {relation.position}: {why}")
        node.replace(RawRelation(this=sql, alias=relation_alias(relation)))
    if fast is not None:
        ast, why = fast(ast, plan.aggregation, strip_modifiers)
        strategies.append(f"{plan.aggregation.relation.function} at {plan.aggregation.relation.position}: {why}")
    strip_modifiers(ast)
    return LoweredQuery(ast.sql(dialect=LoweringDialect, comments=False), strategies, rejected_rows_sql(plan, ast))


def _join_side(plan: QueryPlan, side: int) -> tuple[str, str]:
    """One side of a windowed join over a finished table: its annotated rows, NULL keys left out (the
    runtime rejects them), and what its insert mode keeps of a key's rows in a window -- every row
    ('product': Spark's join is the join), the earliest / latest by time ('first' / 'last'), or every
    value of each column gathered in time order ('collect'). Without arrival order, rows of the
    same time tie; a replay orders them by arrival."""
    join = plan.join
    relation = join.sides[side]
    keys = [quote_identifier(k) for k in join.keys[side]]
    sql, why = annotate(relation, keys)
    if join.insert == "product":
        return sql, why
    bounds = ["window_start", "window_end", "window_time"]
    time = quote_identifier(relation.time.name)
    if join.insert in ("first", "last"):
        order = "ASC" if join.insert == "first" else "DESC"
        ranked = (f"SELECT *, row_number() OVER (PARTITION BY {', '.join(keys + bounds)} ORDER BY {time} {order}) "
                  f"AS __rank FROM ({sql})")
        return f"SELECT * EXCEPT (__rank) FROM ({ranked}) WHERE __rank = 1", f"{why}; the {join.insert} row per key and window"
    keyed = {k.lower() for k in join.keys[side]}
    gathered = [f"transform(array_sort(collect_list(struct({time} AS o, {quote_identifier(c)} AS v))), x -> x.v) "
                f"AS {quote_identifier(c)}" for c in relation.columns if c.lower() not in keyed
                and c.lower() not in WINDOW_COLUMNS]
    columns = ", ".join(keys + gathered + bounds)
    return (f"SELECT {columns} FROM ({sql}) GROUP BY {', '.join(keys + bounds)}",
            f"{why}; each column's values per key and window gathered in time order (cogroup)")


def _group_count_windows_by_index(plan: QueryPlan, ast: exp.Expr) -> None:
    """Count windows are positional: two of them may span the same times. GROUP BY
    window_start, window_end over COUNT_WINDOW therefore also groups by window_index."""
    agg = plan.aggregation
    if agg is None or not agg.relation.windower.ordered:
        return
    group = ast.args.get("group")
    names = {e.name.lower() for e in group.expressions if isinstance(e, exp.Column)}
    if "window_index" not in names:
        group.append("expressions", exp.column("window_index"))


def _order_collected_lists(plan: QueryPlan, ast: exp.Expr) -> None:
    """collect_list / array_agg of a window lists values in event-time order, ties in arrival
    order, as the window runtime does (Spark's own order is whatever the shuffle left). With
    ORDER BY keys of its own an aggregate keeps them first and breaks their ties the same way."""
    agg = plan.aggregation
    if agg is None:
        return
    relation = agg.relation
    ties = []
    if relation.time is not None and relation.time.kind != "processing_time" \
            and relation.time.name.lower() not in WINDOW_COLUMNS:
        ties.append(exp.Ordered(this=exp.column(relation.time.name, quoted=True), nulls_first=True))
    arrival = relation.options.get("arrival_order")
    if arrival:
        ties.append(exp.Ordered(this=exp.column(arrival, quoted=True), nulls_first=True))
    elif relation.order_by:  # COUNT_WINDOW's row order
        ties += [exp.maybe_parse(term, into=exp.Ordered, dialect="spark") for term in relation.order_by]
    if not ties:
        return
    roots = [*ast.expressions, *([ast.args["having"].this] if ast.args.get("having") else [])]
    for root in roots:
        for node in list(root.find_all(exp.ArrayAgg)):
            if any(isinstance(a, (exp.Select, exp.Window)) for a in _ancestors_until(node, root)):
                continue  # a subquery's or an OVER (...) window function's own list
            order = node.this if isinstance(node.this, exp.Order) else exp.Order(this=node.this, expressions=[])
            order.set("expressions", [*order.expressions, *(t.copy() for t in ties)])
            node.set("this", order)


def _ancestors_until(node: exp.Expr, root: exp.Expr) -> t.Iterator[exp.Expr]:
    while node is not root and node.parent is not None:
        node = node.parent
        yield node


def name_select_items(plan: QueryPlan, columns_of: t.Callable[[str], list[str]]) -> None:
    """Give each unaliased item of the windowed aggregation's SELECT the name Spark itself gives it
    (`count(*)` is `count(1)`, `sum(v)` is `sum(v)`), in every mode: the lowerings rewrite these
    items, so without an alias their names would be the rewrite's (`COUNT(*)`, or an internal
    `__agg0` in a replay or a stream).

    Spark is asked, never imitated: `columns_of` analyses the user's SELECT and GROUP BY over a
    stand-in of the window function's output -- the input's columns and the window columns, no
    rows -- and returns the columns (nothing runs). Anything Spark cannot analyse there is left
    as it is: the query's own run reports it.
    """
    agg = plan.aggregation
    if agg is None or not agg.relation.columns:
        return
    items = agg.select.expressions
    if all(isinstance(e, (exp.Alias, exp.Column, exp.Star)) for e in items):
        return
    relation = agg.relation
    kind = "BIGINT" if relation.time is not None and relation.time.kind == "epoch_ms" else timestamp_type(relation)
    keep = [quote_identifier(c) for c in relation.columns if c.lower() not in WINDOW_COLUMNS]
    window = [f"CAST(NULL AS {'BIGINT' if c == 'window_index' else kind}) AS {c}" for c in WINDOW_COLUMNS]
    stand_in = f"SELECT {', '.join([*keep, *window])} FROM {relation.source} WHERE false"
    probe = exp.select(*(e.copy() for e in items))
    probe.set("from_", exp.From(this=RawRelation(this=stand_in, alias=relation_alias(relation))))
    if agg.select.args.get("group") is not None:
        probe.set("group", agg.select.args["group"].copy())
    for key in ("with_", "with"):  # the window function may read a CTE of the query
        if key in exp.Select.arg_types and plan.ast.args.get(key) is not None:
            probe.set(key, plan.ast.args[key].copy())
    strip_modifiers(probe)
    try:
        names = columns_of(probe.sql(dialect=LoweringDialect, comments=False))
    except Exception:  # noqa: BLE001 - the query's own run reports what Spark cannot analyse
        return
    if len(names) != len(items):
        return
    for item, name in zip(list(items), names):
        if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            item.replace(exp.alias_(item.copy(), name, quoted=True, copy=False))

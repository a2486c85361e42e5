"""The stateful lowering shared by replay and streaming: the query around the window runtime.

A stateful query is the windowed-aggregation shape

    SELECT <exprs over keys, window columns, aggregates> FROM <window fn>(TABLE src ...)
    [WHERE <row filter>] GROUP BY <keys>, window_start, window_end [HAVING ...] EMIT ...

and runs in three steps, each a plain Spark plan except the middle one:

1. `input_sql`: one row per input row, with the key columns, the time in epoch microseconds,
   the aggregates' arguments and the arrival columns (`__bucket` says which operator call
   handles the row: keys are hashed into buckets so that one Python call serves many keys).
2. The window runtime (`sqlwin.runtime`) on Python workers, bucket by bucket: replay
   (`applyInPandas`) or Structured Streaming (`transformWithStateInPandas`). It writes
   *records*: emissions, late rows and rejected rows, in one schema (`record_schema`).
3. `result_sql` / `late_sql`: the user's SELECT over the emission records (aggregates
   replaced by the runtime's values), and the late / rejected rows as their own table.

The parts: the input rows' columns (spark/input_rows.py), the aggregates the runtime computes
(spark/aggregates.py), the SQL around the runtime (spark/stateful_query.py: StatefulQuery), a
windowed join's (spark/joins.py). Here: `prepare_stateful`, which checks a query's shape and
derives the StatefulQuery, and the check of the input's types before any row runs; the names other
modules read are importable from here too.
"""

from __future__ import annotations

import dataclasses

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError, SqlwinValidationError
from sqlwin.runtime import AggregateSpec
from sqlwin.spark import layout
from sqlwin.spark.aggregates import (aggregate_identity, aggregate_nodes, aggregate_specs, is_anonymous_aggregate,
                                     loose_names, runtime_computes)
from sqlwin.spark.input_rows import single_order_column, source_sql, time_micros
from sqlwin.spark.joins import prepare_join
from sqlwin.spark.operator import CARRY, OperatorConfig, follows_processing_time
from sqlwin.spark.stateful_query import (RESULT_ORDER, STAGE_COLUMNS, STAGE_VIEW, SYSTEM_COLUMNS, UPSTREAM_ROW,
                                         StatefulQuery, can_spread_clock, chain_late)
from sqlwin.sql.plan import QueryPlan, WindowAggregation, WindowRelation, node_position
from sqlwin.sql.text import identifier_name

__all__ = ["RESULT_ORDER", "SPREAD_KEY", "STAGE_VIEW", "SYSTEM_COLUMNS", "UPSTREAM_ROW", "StatefulQuery",
           "can_spread_clock", "chain_late", "check_input_types", "partial_aggregation", "prepare_stateful",
           "runtime_computes", "source_sql", "time_micros"]


def prepare_stateful(plan: QueryPlan, mode: str, bucket_count: int,
                     bucket_ids: tuple[int, ...] = (), carry: bool = False, spread: bool = False,
                     partial: bool = False, pre_aggregate: bool = False) -> StatefulQuery:
    """Check that the query has the windowed-aggregation shape and derive everything around the runtime.

    `pre_aggregate`: a stream's no-key partial aggregation may be aggregated per input partition
    before its stateful stage, where exact (streaming.pre_aggregation decides, knowing the input's types).
    `carry`: the second stage of a chain, whose input has the first stage's records in a CARRY
    column: they bypass the query's WHERE and are never row columns."""
    if plan.join is not None:  # window functions joined per key and window (spark/joins.py)
        return prepare_join(plan, mode, bucket_count, bucket_ids, spread)
    agg = _require_aggregation(plan, mode)
    rel = agg.relation
    if rel.processing_time and mode == "replay" \
            and not rel.options.get("arrival_time"):
        raise SqlwinValidationError(
            "Processing time in a replay needs the recorded arrival times", rel.position,
            "WITH (arrival_order = offset_col, arrival_time = arrival_ts_col)", query=plan.sql)
    _check_count_order(plan, rel, mode)
    keys = list(agg.group_keys)
    clock_positions = _clock_positions(plan, rel, keys)
    calls = aggregate_nodes(plan, agg)  # the aggregate calls of the SELECT list and HAVING
    where = plan.ast.args.get("where")
    # A data-dependent window (SESSION, COUNT_WINDOW, SLIDE) is formed from every row of its table, as
    # SQL's window function reads them; WHERE then keeps rows of the windows (as over a finished
    # table): it filters every aggregate, and a window none of whose rows it keeps gives no row
    # (`where_guard`: a count of the rows it keeps). Other windows do not depend on their rows:
    # WHERE filters the rows before they reach the runtime.
    inside = where is not None and rel.windower.data_dependent
    computed = calls
    if inside:
        guard = exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=where.this.copy()))
        computed = [_filtered(node, where.this) for node in calls] + [guard]
    specs, arguments = aggregate_specs(plan, computed)
    watermark = rel.watermark
    if clock_positions == () or (clock_positions is not None and clock_positions != tuple(range(len(keys)))):
        watermark = dataclasses.replace(watermark, scope="stream")  # one clock per runtime
        clock_positions = clock_positions or ()
    else:
        watermark = dataclasses.replace(watermark, scope="key")
        clock_positions = None  # the runtime's own keys are the clocks
    processing_time = rel.processing_time
    if (watermark.idle_timeout is not None and watermark.idle_clock == "event_time" and watermark.scope == "stream"
            and not processing_time):
        raise SqlwinValidationError(
            "An event-time idle timeout judges a key against the stream's newest event time: it needs a clock per "
            "key (the whole stream is never silent by its own event time)", rel.position,
            "PARTITION BY the GROUP BY keys, or idle_clock = 'processing_time'", query=plan.sql)
    emit = plan.emit
    timers = follows_processing_time(watermark, emit, processing_time)
    if timers and mode == "replay" and not rel.options.get("arrival_time"):
        # EARLY / LATE EVERY an interval, an idle timeout on the processing clock, the Bytewax clock:
        # each follows processing time, which a replay only knows from the recorded arrival times.
        raise SqlwinValidationError(
            "This query follows processing time, which a replay reads from the recorded arrival times",
            rel.position, "WITH (arrival_order = offset_col, arrival_time = arrival_ts_col), or EMIT EARLY / "
            "LATE EVERY n ROWS and idle_clock = 'event_time'", query=plan.sql)
    stage_columns = STAGE_COLUMNS if plan.propagation is None and _reads_stage(rel) else ()
    row_columns = [c for c in rel.columns if c not in stage_columns] if plan.late_into else []
    config = OperatorConfig(
        windower=rel.windower, watermark=watermark, emit=emit, aggregates=tuple(specs),
        processing_time=processing_time, key_count=len(keys), clock_positions=clock_positions,
        argument_count=len(arguments), row_count=len(row_columns), output_late=bool(plan.late_into),
        timers=timers,
    )
    with_ = plan.ast.args.get("with_")
    with_sql = f"{with_.sql(dialect='spark')} " if with_ else ""
    condition = where.this.sql(dialect="spark") if where is not None and not inside else None
    if carry:
        condition = f"{CARRY} IS NOT NULL OR ({condition})" if condition else None
    from_sql = f"FROM {source_sql(rel)}" + (f" WHERE {condition}" if condition else "")
    if where is not None and any(c.name.lower() in ("window_start", "window_end", "window_time", "window_index")
                                 for c in where.find_all(exp.Column)):
        raise SqlwinUnsupportedError(
            f"In {mode} mode WHERE filters input rows, before they reach a window", node_position(where),
            "a condition on window columns in HAVING", query=plan.sql)
    key_names = [_key_name(sql, i) for i, sql in enumerate(keys)]
    clock_keys = keys if clock_positions is None else [keys[i] for i in clock_positions]
    if watermark.idle_timeout is not None and watermark.idle_clock == "event_time":
        # A key is idle against the newest event time of the whole stream: with a clock per key,
        # the buckets are told the stream's batch extremes (`spread`) and judge their own keys;
        # a clock per PARTITION BY subset (several runtimes a bucket) runs in one bucket.
        if spread and clock_positions is None:
            count = bucket_count
        else:
            spread, count = False, 1
    else:
        spread = spread and not clock_keys and bool(keys) and can_spread_clock(watermark)
        count = bucket_count if clock_keys or spread else 1
    merge = None
    if partial and not keys and clock_positions == () and bucket_count > 1 and not carry:
        split = partial_aggregation(rel, plan.emit, watermark, specs, arguments)
        if split is not None:  # no key: a hash of the rows spreads them, the buckets' partials merge
            specs, merge = split
            keys = [f"pmod(hash({', '.join([time_micros(rel), *arguments])}), {bucket_count})"]
            key_names = [SPREAD_KEY]
            config = dataclasses.replace(config, aggregates=tuple(specs), key_count=1)
            spread, count = True, bucket_count
    return StatefulQuery(
        plan=plan, relation=rel, config=config, key_names=key_names, argument_sql=arguments,
        aggregate_sql=[aggregate_identity(n) for n in calls], row_columns=row_columns,
        source_sql=from_sql, with_sql=with_sql, key_sql=keys, where_sql=condition,
        bucket_count=count, bucket_ids=tuple(bucket_ids)[:count], carry=carry,
        where_guard=len(calls) if inside else None, spread=spread and count > 1, partial_merge=merge,
        pre_aggregate=pre_aggregate and merge is not None and mode == "streaming",
    )


SPREAD_KEY = "__spread"  # the hidden key a windowed aggregation with no key is spread by


def partial_aggregation(rel: WindowRelation, emit, watermark, specs: list[AggregateSpec],
                        arguments: list[str]) -> tuple[list[AggregateSpec], tuple[str, ...]] | None:
    """A windowed aggregation with no key as partial aggregates per bucket and their merge, as
    Spark's partial / final aggregation: (the partial specs, the merged SQL of each aggregate over
    the partial columns __agg<j>), or None where it does not merge. It merges for windows fixed by
    time (TUMBLE, HOP, CUMULATE: a row's windows do not depend on the other rows, as a SESSION's
    or a COUNT_WINDOW's do), EMIT FINAL (each window fires once, in the batch the stream's clock
    closes it, in every bucket), one clock for the stream that combines, and aggregates with a
    partial form: count, sum, min, max over numbers, avg over numbers (a sum and a count),
    max_by / min_by (with the max / min of their ordering value beside them). Other queries run
    in one bucket."""
    if not rel.windower.aligned or not emit.is_final_only or emit.allowed_lateness:
        return None
    if watermark.scope != "stream" or not can_spread_clock(watermark):
        return None
    partial: list[AggregateSpec] = []
    merge: list[str] = []
    for spec in specs:
        j = len(partial)
        this, after = layout.aggregate(j), layout.aggregate(j + 1)  # the partial columns
        if spec.func == "count":
            partial.append(spec)
            merge.append(f"CAST(sum({this}) AS BIGINT)")
        elif spec.func in ("min", "max"):
            partial.append(spec)
            merge.append(f"{spec.func}({this})")
        elif spec.func == "sum" and _numeric_argument(rel, arguments[spec.arg]):
            partial.append(spec)
            merge.append(f"sum({this})")
        elif spec.func == "avg" and _numeric_argument(rel, arguments[spec.arg]):
            # each bucket's sum and count; merged, their sums divided (NULL where no value was seen)
            partial += [AggregateSpec("sum", spec.arg), AggregateSpec("count", spec.arg)]
            merge.append(f"CAST(sum({this}) AS DOUBLE) / NULLIF(sum({after}), 0)")
        elif spec.func in ("max_by", "min_by"):
            # max_by(v, k): each bucket's max_by and max(k); merged, the max_by of those
            partial += [spec, AggregateSpec("max" if spec.func == "max_by" else "min", spec.arg2)]
            merge.append(f"{spec.func}({this}, {after})")
        else:
            return None
    return partial, tuple(merge)


def _numeric_argument(rel: WindowRelation, sql: str) -> bool:
    """A plain column of an integer or floating type (a sum's partials merge to the same type)."""
    kind = rel.columns.get(sql.strip("`").lower()) or rel.columns.get(sql.strip("`"), "")
    return kind in ("tinyint", "smallint", "int", "integer", "bigint", "long", "float", "double")

def _filtered(node: exp.Expr, condition: exp.Expr) -> exp.Expr:
    """`node` FILTER (WHERE condition), AND-ed with a FILTER of its own."""
    if isinstance(node, exp.Filter):
        both = exp.and_(node.expression.this.copy(), condition.copy())
        return exp.Filter(this=node.this.copy(), expression=exp.Where(this=both))
    return exp.Filter(this=node.copy(), expression=exp.Where(this=condition.copy()))


def _reads_stage(rel: WindowRelation) -> bool:
    """The window function reads a chain's first stage (a view `__sqlwin_stage_*`)."""
    return (identifier_name(rel.source) or "").startswith(STAGE_VIEW)


def _require_aggregation(plan: QueryPlan, mode: str) -> WindowAggregation:
    agg = plan.aggregation
    if plan.join_refusal is not None:
        raise plan.join_refusal.with_query(plan.sql)
    group = plan.ast.args.get("group") if isinstance(plan.ast, exp.Select) else None
    if agg is None and len(plan.windows) == 1 and plan.join is None and group is not None:
        # a GROUP BY over the window function that does not group by its window in every grouping
        raise SqlwinUnsupportedError(
            f"The {mode} mode aggregates a window function's rows per window: each grouping of GROUP BY holds "
            "window_start and window_end (a grouping without them spans windows, which a stream never closes)",
            node_position(group.expressions[0] if group.expressions else group),
            "GROUP BY keys, window_start, window_end; GROUP BY window_start, window_end, GROUPING SETS ((k), ()) "
            "(or ROLLUP / CUBE beside them); grouping sets that each hold window_start and window_end",
            query=plan.sql)
    if agg is None and len(plan.windows) == 1 and plan.join is None:
        # every other kind's rows run as SQL around a stage (sql/around.py), given when (or as) their
        # windows close; the global window never closes
        raise SqlwinUnsupportedError(
            f"The {mode} mode gives a window function's rows when their window closes: "
            f"{plan.windows[0].function}'s one window never closes", plan.windows[0].position,
            "an aggregation over it with EMIT (SELECT keys, aggregates FROM GLOBAL_WINDOW(...) GROUP BY keys, "
            "window_start, window_end EMIT ...), the rows of a window that closes (TUMBLE, HOP, CUMULATE, SESSION, "
            "COUNT_WINDOW, SLIDE); or the query over a finished table (without arrival_order)", query=plan.sql)
    if agg is None or len(plan.windows) != 1:
        where = plan.windows[0].position if plan.windows else None
        raise SqlwinUnsupportedError(
            f"The {mode} mode runs one windowed aggregation per query", where,
            "SELECT keys, window_start, window_end, aggregates FROM TUMBLE(...) GROUP BY keys, window_start, "
            "window_end EMIT ...; a windowed join (TUMBLE(...) l JOIN TUMBLE(...) r ON keys and window bounds); "
            "an aggregation over such a result's window_time; any SQL around one of these in a subquery or CTE "
            "(projections, filters, joins to tables, a window Top-N, an aggregation per window)",
            query=plan.sql)
    if agg.grouping_analytics is not None:
        raise SqlwinUnsupportedError(
            f"In {mode} mode GROUPING SETS, ROLLUP and CUBE are merged from the finest grouping of each window, "
            "which needs every aggregate in a partial form", node_position(agg.grouping_analytics),
            "count, sum, min, max and avg (FILTER too) beside GROUPING SETS; other aggregates (DISTINCT, "
            "percentiles, collect_list ...) with GROUP BY keys, window_start, window_end, or over a finished "
            "table (without arrival_order)", query=plan.sql)
    inputs = {c.lower() for c in agg.relation.columns}
    having = plan.ast.args.get("having")
    for root in [*plan.ast.expressions, *([having.this] if having is not None else [])]:
        for column in root.find_all(exp.Column):
            if column.name.lower() in SYSTEM_COLUMNS and column.name.lower() not in inputs:
                raise SqlwinValidationError(
                    f"{column.name} is not a column of the query's input: sqlwin adds {', '.join(SYSTEM_COLUMNS)} to "
                    f"every {mode} result, after the query", node_position(column, column.name),
                    f"{column.name} read from the result (e.g. sw.sql(query).where(\"firing = 'final'\"))",
                    query=plan.sql)
    _check_grouped_columns(plan, agg)
    if plan.ast.args.get("order") is not None or plan.ast.args.get("limit") is not None:
        raise SqlwinUnsupportedError(
            f"ORDER BY / LIMIT are not part of a {mode} query: results come in emission order",
            node_position(plan.ast.args.get("order") or plan.ast.args.get("limit")),
            "ordering the returned DataFrame (replay) or the sink's table (streaming)", query=plan.sql)
    return agg

def _check_grouped_columns(plan: QueryPlan, agg: WindowAggregation) -> None:
    """A column outside every aggregate must be a GROUP BY key (or a window column), as Spark's
    MISSING_AGGREGATION says over a finished table; the runtime keeps nothing else per window, so
    unchecked such a column would surface as an unresolvable internal name."""
    keys = set(agg.group_keys)
    names = loose_names(agg)
    aliases = {e.alias.lower() for e in plan.ast.expressions if isinstance(e, exp.Alias)}

    def visit(node: exp.Expr, allowed: set[str]) -> None:
        if isinstance(node, (exp.AggFunc, exp.Filter, exp.Lambda, exp.Subquery)) or is_anonymous_aggregate(node):
            return
        if node.sql(dialect="spark") in keys:
            return
        if isinstance(node, exp.Column):
            if node.name.lower() in names | allowed:
                return
            raise SqlwinValidationError(
                f'[MISSING_AGGREGATION] The non-aggregating expression "{node.sql(dialect="spark")}" is based on '
                "columns which are not participating in the GROUP BY clause", node_position(node, node.name),
                f"group by it, or aggregate it (first({node.name}), collect_set({node.name}))", query=plan.sql)
        for child in node.iter_expressions():
            visit(child, allowed)

    for item in plan.ast.expressions:
        visit(item, set())
    having = plan.ast.args.get("having")
    if having is not None:
        visit(having.this, aliases)  # HAVING may name the SELECT's aliases, as in Spark

def _clock_positions(plan: QueryPlan, rel: WindowRelation, keys: list[str]) -> tuple[int, ...] | None:
    """Which GROUP BY keys carry the clock: the PARTITION BY columns (none: one clock for the stream)."""
    if rel.watermark.scope == "stream" or not rel.partition_by:
        return ()
    normal = [_normal(k) for k in keys]
    positions = []
    for column in rel.partition_by:
        if _normal(column) not in normal:
            raise SqlwinValidationError(
                f"PARTITION BY {column} must also be a GROUP BY key: each key has its own clock",
                rel.position, f"GROUP BY {', '.join([*rel.partition_by, 'window_start', 'window_end'])}",
                query=plan.sql)
        positions.append(normal.index(_normal(column)))
    return tuple(sorted(positions)) if len(positions) < len(keys) else None


def _normal(sql: str) -> str:
    """A column reference's name, lower case (`t.K` and `k` are the same key); other SQL as written."""
    name = identifier_name(sql)
    return (name if name is not None else sql).lower().strip()


def _key_name(sql: str, index: int) -> str:
    """A key column keeps its own name (whatever characters it holds); an expression is __k<i>."""
    name = identifier_name(sql)
    return name if name is not None else layout.key(index)


def _check_count_order(plan: QueryPlan, rel: WindowRelation, mode: str) -> None:
    """A stream counts rows as they arrive; ORDER BY may only say how, not contradict it."""
    if not rel.order_by:
        return
    column = single_order_column(rel, plan)
    arrival = rel.options.get("arrival_order")
    if arrival and _normal(column) != _normal(arrival):
        raise SqlwinValidationError(
            f"In {mode} mode COUNT_WINDOW counts rows in arrival order ({arrival}), not by {column}",
            rel.position, f"ORDER BY {arrival}, or no ORDER BY", query=plan.sql)


_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
_ARRIVAL_TYPES = {"arrival_order": ("tinyint", "smallint", "int", "bigint", "timestamp"),
                  "arrival_batch": ("tinyint", "smallint", "int", "bigint", "timestamp"),
                  "arrival_time": ("int", "bigint", "timestamp")}


def check_input_types(stateful: StatefulQuery, schema) -> None:
    """Refuse, before any row runs, input the runtime cannot take: a sum or average of a value that
    is not a number, an arrival column that is not a number or a TIMESTAMP. (Without this a replay
    failed inside a Python worker, and a string arrival column as a NumberFormatException.)"""
    rel, plan = stateful.relation, stateful.plan
    for option, accepted in _ARRIVAL_TYPES.items():
        column = rel.options.get(option)
        kind = rel.columns.get(column, "") if column else ""
        if kind and not kind.startswith(accepted):
            raise SqlwinValidationError(
                f"{option} = {column} is {kind.upper()}: it must be a number or a TIMESTAMP", rel.position,
                f"WITH ({option} = <an integer or TIMESTAMP column>), or CAST({column} AS BIGINT) in a subquery",
                query=plan.sql)
    types = {field.name: field.dataType.simpleString() for field in schema.fields}
    for spec, text in zip(stateful.config.aggregates, stateful.aggregate_sql):
        if spec.func not in ("sum", "avg") or spec.arg is None:
            continue
        kind = types.get(layout.argument(spec.arg), "")
        if kind and not kind.startswith(_NUMERIC):
            node = next((n for n in plan.ast.find_all(exp.AggFunc) if aggregate_identity(n) == text), None)
            raise SqlwinValidationError(
                f"{text} needs a number; its argument is {kind.upper()}",
                node_position(node) if node is not None else rel.position,
                f"{spec.func}(CAST({stateful.argument_sql[spec.arg]} AS DOUBLE)), or a numeric column",
                query=plan.sql)

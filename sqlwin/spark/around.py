"""SQL around the windows in a replay or a stream (sqlwin/sql/around.py finds it): the stage (each
of several) runs through the window runtime as any stateful query does; the SQL around it runs as
Spark SQL over the stages' results -- once over a replay's, per micro-batch over a stream's (in
foreachBatch; a stream of several stages runs a stateful branch per stage, spark/streaming.py).

That is the answer the whole statement gives over a finished table where every piece of the SQL
around sees each window's results whole, in one micro-batch: `stage_plans` checks it and says why
where it does not hold.
"""

from __future__ import annotations

import re
import typing as t
import uuid

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.sql.aggregation import window_keys
from sqlwin.sql.around import Around
from sqlwin.sql.ast_nodes import TableArg
from sqlwin.sql.dialect import SqlwinDialect, WindowTVF
from sqlwin.sql.plan import QueryPlan
from sqlwin.spark.stateful import RESULT_ORDER, SYSTEM_COLUMNS, runtime_computes  # results carry the first two
from sqlwin.spark.stateful_query import late_in_order

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession



def stage_plans(plan: QueryPlan, mode: str, streams: t.Iterable[str] = ()) -> list[QueryPlan]:
    """Each stage's own plan, in statement order, after checking that the SQL around them runs per
    micro-batch with the statement's answer -- each piece of SQL that combines rows of two stages
    per window too: exact per micro-batch only where both close a window in the same one.
    `streams`: the names (views) of a stream's sources, which the SQL around the stages must not
    read (they are streams, not tables)."""
    around = plan.around
    if around.refusal is not None:
        raise around.refusal
    names = {s.lower() for s in streams}
    for table in around.outer.find_all(exp.Table):
        if table.name.lower() in names and not table.db:
            raise SqlwinUnsupportedError(
                "The SQL around the window functions reads a stream of the query: only the window functions read "
                "streams, the SQL around their results reads tables", around.position,
                "a window function over each stream (a windowed join: TUMBLE(...) l JOIN TUMBLE(...) r ON keys and "
                "window bounds), or a table in place of the stream", query=plan.sql)
    stages = [part.plan for part in around.parts]
    for stage in stages:
        _check_stage(plan, around, stage, mode)
    for where, what, read in around.across:
        _check_across(plan, [around.parts[i] for i in sorted(read)], where, what)
    return stages


def _check_stage(plan: QueryPlan, around: Around, stage: QueryPlan, mode: str) -> None:
    """One stage's results read per micro-batch: final firings, each window whole in one micro-batch."""
    emit = stage.emit
    join_complete = stage.join is not None and stage.join.emit_mode == "complete"
    if (not emit.is_final_only or emit.allowed_lateness or join_complete) and around.rows_sql is None:
        raise SqlwinUnsupportedError(
            f"SQL around window functions reads each window's final result: in {mode} mode it runs over the results "
            "as they fire, and with early, late or retracting firings a result is a change of an earlier one, "
            "which a projection, a filter or a Top-N of the rows cannot see", plan.emit_position or around.position,
            "EMIT FINAL (no ALLOWED LATENESS) with SQL around the windows; or the windowed query alone, whose "
            "results carry op / firing / emit_seq, and the SQL around it over the sink's table", query=plan.sql)
    if around.per_window is not None:
        held = around.per_window_columns or frozenset()
        for relation in stage.windows:
            # a clock per key: a window of each key closes in one micro-batch, whole where the SQL
            # around partitions by the key too
            keys = {p.strip("`").lower() for p in relation.partition_by}
            if relation.partition_by and relation.watermark.scope != "stream" and not keys <= held:
                raise SqlwinUnsupportedError(
                    f"{around.per_window_text[0].upper()}{around.per_window_text[1:]} needs each window's results "
                    "in one micro-batch: with a clock per key (PARTITION BY) the windows of different keys close "
                    "in different micro-batches", around.per_window,
                    "one clock for the stream (no PARTITION BY on the window function, or WITH (watermark_scope = "
                    "'stream')), or a PARTITION BY of the SQL around that holds the window's keys", query=plan.sql)


def _check_across(plan: QueryPlan, parts: list, where, what: str) -> None:
    """A piece combining rows of several stages per window (a join of their results on the window
    bounds, an aggregation over their union per window) sees a window's rows of every stage whole
    only where each stage closes it in the same micro-batch: the same clock -- one source, the same
    rows reaching it (WHERE), the same watermark and options -- and the same windows, fixed ones."""
    names = " and ".join(part.name for part in parts)
    facts = []
    for part in parts:
        stage = part.plan
        if stage.aggregation is None or stage.join is not None or stage.propagation is not None:
            reason = f"{part.name} is a windowed join or a chain, whose windows close by clocks of their own"
            break
        relation = stage.aggregation.relation
        where_sql = stage.ast.args.get("where")
        facts.append({"table": (relation.source or "").lower(), "rows kept (WHERE)":
                      where_sql.sql(dialect="spark") if where_sql is not None else "",
                      "time column": relation.time, "watermark": relation.watermark, "options": relation.options,
                      "PARTITION BY": relation.partition_by, "windows": relation.windower})
        if not relation.windower.aligned:
            reason = (f"{part.name}'s {relation.function} windows are formed from their rows (they close by what "
                      "each stage's keys hold)")
            break
    else:
        differ = [fact for fact in facts[0] if any(other[fact] != facts[0][fact] for other in facts[1:])]
        if not differ:
            return
        reason = f"their {', '.join(differ)} differ, so one can close a window in a micro-batch the other has not"
    raise SqlwinUnsupportedError(
        f"{what[0].upper()}{what[1:]} combines the results of {names} per window: each window must be whole in one "
        f"micro-batch in every stage, and {reason}", where,
        "stages with one window function each over the same table, WHERE, watermark and windows (TUMBLE, HOP or "
        "CUMULATE), or each stage's results read on their own (a UNION ALL of them, projections, filters)",
        query=plan.sql)


def outer_frame(spark: "SparkSession", around: Around,
                stage_results: "DataFrame | list[DataFrame]") -> "DataFrame":
    """The SQL around the stage over `stage_results` (a replay's result, a micro-batch's; one per stage
    where there are several): the stage's own columns only, as over a finished table (its firings are
    final: op / firing / emit_seq say nothing more)."""
    results = stage_results if isinstance(stage_results, list) else [stage_results]
    views = [f"__sqlwin_around_{uuid.uuid4().hex[:12]}" for _ in results]
    for view, frame in zip(views, results):
        keep = [c for c in frame.columns if c not in SYSTEM_COLUMNS and c not in RESULT_ORDER]
        frame.select(*keep).createOrReplaceTempView(view)
    try:  # analysed now: the DataFrame keeps its plan, and a stream leaves no view per micro-batch behind
        return spark.sql(around.outer_sql(views))
    finally:
        for view in views:
            spark.catalog.dropTempView(view)


def stages_late(lates: list[tuple["DataFrame", int]]) -> "DataFrame":
    """Several stages' late and rejected rows in one table: each stage's (DataFrame, number of its first
    stateful stage), with `stage` (a chain's own numbers shifted to the statement's); each stage's row
    columns, the others' NULL."""
    from pyspark.sql import functions as F

    frames = []
    for frame, number in lates:
        if "stage" in frame.columns:  # a chain: its stages 1, 2, ... are number, number + 1, ...
            frame = frame.withColumn("stage", F.col("stage") + F.lit(number - 1))
        else:
            frame = frame.withColumn("stage", F.lit(number))
        frames.append(frame)
    combined = frames[0]
    for frame in frames[1:]:
        combined = combined.unionByName(frame, allowMissingColumns=True)
    return late_in_order(combined, frames[0].columns)


def stage_lines(strategies: list[list[str]], numbers: list[int] | None = None) -> list[str]:
    """explain's lines of each stage, each marked with its stage where there are several: `numbers`,
    each stage's first number (stage_numbers). A chain's lines already say their stage ("stage 2: ...",
    numbered within the chain): those are shifted to the statement's numbers instead."""
    if len(strategies) == 1:
        return strategies[0]
    numbers = numbers or list(range(1, len(strategies) + 1))
    out = []
    for first, lines in zip(numbers, strategies):
        chain = any(_CHAIN_LINE.match(line) for line in lines)
        out += [_renumbered(line, first - 1) if chain else f"stage {first}, {line}" for line in lines]
    return out


def explained_sql(around: Around, stage_sql: list[str], numbers: list[int] | None = None) -> str:
    """explain's Spark SQL: each stage's (`numbers` as for stage_lines), then the SQL around their results."""
    if len(stage_sql) == 1:
        return f"{stage_sql[0]}\n  -- then, over the stage's results: {around.outer_sql('<stage>')}"
    numbers = numbers or list(range(1, len(stage_sql) + 1))
    lines = [f"-- stage {first} ({part.name}):\n  " + "\n".join(  # a chain's own comments renumbered, not the SQL
                 _renumbered(line, first - 1) if line.lstrip().startswith("-- stage") else line
                 for line in sql.split("\n"))
             for first, part, sql in zip(numbers, around.parts, stage_sql)]
    return "\n  ".join([*lines, f"-- then, over the stages' results: {around.outer_sql('<stage>')}"])


_CHAIN_LINE = re.compile(r"stage \d+: ")


def _renumbered(text: str, shift: int) -> str:
    """A chain's explain text with its stage numbers ("stage 2", "stage 1's") shifted by `shift`."""
    if not shift:
        return text
    return re.sub(r"\bstage (\d+)\b", lambda m: f"stage {int(m.group(1)) + shift}", text)


def describe(around: Around, mode: str) -> str:
    """explain: which part runs where."""
    when = "over the replay's results, once" if mode == "replay" else \
        "per micro-batch, in foreachBatch, over the batch's results of the stage"
    per_window = f" ({around.per_window_text}: each window's results are whole in one micro-batch, " \
                 "one clock for the stream closing it in every bucket at once)" if around.per_window else ""
    if around.others:
        names = "; ".join(f"<stage {i + 1}>: the window functions in {part.name}" for i, part in enumerate(around.parts))
        stage = f"{len(around.parts)} stateful stages, each on its own ({names})"
    elif around.rows_sql is None:
        stage = f"the window functions in {around.name} are the stateful stage"
    else:
        stage = ("the window function's rows are the stateful stage (each distinct row per window with its copies, "
                 + ("kept until the window closes)" if around.per_window or "EMIT FINAL" in around.stage_sql
                    else "given as they arrive)"))
    return (f"around: {stage}; the SQL around their results runs as Spark SQL {when}{per_window}: "
            f"{around.outer_sql('<stage results>')}")


def rows_for_aggregates(plan: QueryPlan, planner: t.Callable[[str], QueryPlan]) -> QueryPlan:
    """A windowed aggregation with an aggregate the window runtime has no state for (percentiles,
    approx_count_distinct, collect_set, string_agg ...), over TUMBLE, HOP, CUMULATE, SESSION,
    COUNT_WINDOW or SLIDE: the window's rows are the stage (kept until the window closes) and Spark
    aggregates them per window, in the micro-batch that closes it -- the same statement, its window
    function read as rows. So are GROUPING SETS / ROLLUP / CUBE that no finest grouping gives
    (sql/grouping.py): over SESSION, COUNT_WINDOW or SLIDE, whose windows the keys outside the sets
    form, and with an aggregate that has no partial form. Any other plan is returned as it is."""
    agg = plan.aggregation
    if (agg is None or plan.join is not None or plan.propagation is not None
            or plan.around is not None
            or not agg.relation.windower.closes
            or (runtime_computes(plan) and agg.grouping_analytics is None)):
        return plan
    ast = plan.ast.copy()
    node = next(n for n in ast.find_all(WindowTVF))
    alias = agg.relation.alias or "__rows"
    tvf = node.copy()
    tvf.set("alias", None)
    _form_per_group_keys(plan, tvf)
    node.replace(exp.Subquery(this=exp.select("*").from_(tvf), alias=exp.TableAlias(this=exp.to_identifier(alias))))
    rewritten = planner(ast.sql(dialect=SqlwinDialect))
    return rewritten if rewritten.around is not None else plan


def _form_per_group_keys(plan: QueryPlan, tvf: exp.Expr) -> None:
    """A SESSION's, COUNT_WINDOW's or SLIDE's windows under a windowed aggregation form per GROUP BY key
    too (sql/aggregation.window_keys), which a window function's rows form per PARTITION BY only: the
    keys beside PARTITION BY are added to it (`tvf`, rewritten), the clock kept one for the stream. A
    clock per PARTITION BY key would become one per every key: refused."""
    rel = plan.aggregation.relation
    formed = window_keys(rel, plan.aggregation.group_keys)
    extra = formed[len(rel.partition_by):]
    if not extra:
        return
    if rel.partition_by and rel.watermark.scope != "stream":
        raise SqlwinUnsupportedError(
            f"{rel.function} forms its windows per GROUP BY key too ({', '.join(extra)}), and this query's "
            "aggregation runs over the window function's rows, kept until each window closes (an aggregate Spark "
            "computes over a window's rows, or GROUPING SETS, ROLLUP or CUBE that no finest grouping gives): "
            "those rows' windows, formed per every key, would each keep a clock of their own, where the "
            "aggregation's clock is per PARTITION BY key", rel.position,
            f"WITH (watermark_scope = 'stream'), or every GROUP BY key in PARTITION BY "
            f"(PARTITION BY {', '.join(formed)}); or the query over a finished table", query=plan.sql)
    table_arg = tvf.find(TableArg)
    table_arg.set("partition_by", [*(table_arg.args.get("partition_by") or []),
                                   *(exp.maybe_parse(key, dialect="spark") for key in extra)])
    if not rel.partition_by:  # no key had a clock of its own
        table_arg.set_options({"watermark_scope": exp.Literal.string("stream")})

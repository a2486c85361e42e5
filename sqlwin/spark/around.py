"""SQL around the windows in a replay or a stream (sqlwin/sql/around.py finds it): the stage runs
through the window runtime as any stateful query does; the SQL around it runs as Spark SQL over
the stage's results -- once over a replay's, per micro-batch over a stream's (in foreachBatch).

That is the answer the whole statement gives over a finished table where every piece of the SQL
around sees each window's results whole, in one micro-batch: `stage_plan` checks it and says why
where it does not hold.
"""

from __future__ import annotations

import typing as t
import uuid

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.sql.around import Around
from sqlwin.sql.dialect import SqlwinDialect, WindowTVF
from sqlwin.sql.plan import QueryPlan
from sqlwin.spark.stateful import RESULT_ORDER, SYSTEM_COLUMNS, runtime_computes  # results carry the first two

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession



def stage_plan(plan: QueryPlan, mode: str, streams: t.Iterable[str] = ()) -> QueryPlan:
    """The stage's own plan, after checking that the SQL around it runs per micro-batch with the
    statement's answer. `streams`: the names (views) of a stream's sources, which the SQL around
    the stage must not read (they are streams, not tables)."""
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
    stage = around.stage
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
    return stage


def outer_frame(spark: "SparkSession", around: Around, stage_results: "DataFrame") -> "DataFrame":
    """The SQL around the stage over `stage_results` (a replay's result, a micro-batch's): the stage's
    own columns only, as over a finished table (its firings are final: op / firing / emit_seq say
    nothing more)."""
    view = f"__sqlwin_around_{uuid.uuid4().hex[:12]}"
    keep = [c for c in stage_results.columns if c not in SYSTEM_COLUMNS and c not in RESULT_ORDER]
    stage_results.select(*keep).createOrReplaceTempView(view)
    try:  # analysed now: the DataFrame keeps its plan, and a stream leaves no view per micro-batch behind
        return spark.sql(around.outer_sql(view))
    finally:
        spark.catalog.dropTempView(view)


def describe(around: Around, mode: str) -> str:
    """explain: which part runs where."""
    when = "over the replay's results, once" if mode == "replay" else \
        "per micro-batch, in foreachBatch, over the batch's results of the stage"
    per_window = f" ({around.per_window_text}: each window's results are whole in one micro-batch, " \
                 "one clock for the stream closing it in every bucket at once)" if around.per_window else ""
    stage = (f"the window functions in {around.name} are the stateful stage" if around.rows_sql is None else
             "the window function's rows are the stateful stage (each distinct row per window with its copies, "
             + ("kept until the window closes)" if around.per_window or "EMIT FINAL" in around.stage_sql
                else "given as they arrive)"))
    return (f"around: {stage}; the SQL around their results runs as Spark SQL {when}{per_window}: "
            f"{around.outer_sql('<stage results>')}")


def rows_for_aggregates(plan: QueryPlan, planner: t.Callable[[str], QueryPlan]) -> QueryPlan:
    """A windowed aggregation with an aggregate the window runtime has no state for (percentiles,
    approx_count_distinct, collect_set, string_agg ...), over TUMBLE, HOP, CUMULATE, SESSION,
    COUNT_WINDOW or SLIDE: the window's rows are the stage (kept until the window closes) and Spark
    aggregates them per window, in the micro-batch that closes it -- the same statement, its window
    function read as rows. Any other plan is returned as it is."""
    agg = plan.aggregation
    if (agg is None or agg.grouping_analytics is not None or plan.join is not None or plan.propagation is not None
            or plan.around is not None
            or not agg.relation.windower.closes
            or runtime_computes(plan)):
        return plan
    ast = plan.ast.copy()
    node = next(n for n in ast.find_all(WindowTVF))
    alias = agg.relation.alias or "__rows"
    tvf = node.copy()
    tvf.set("alias", None)
    node.replace(exp.Subquery(this=exp.select("*").from_(tvf), alias=exp.TableAlias(this=exp.to_identifier(alias))))
    rewritten = planner(ast.sql(dialect=SqlwinDialect))
    return rewritten if rewritten.around is not None else plan

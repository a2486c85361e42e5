"""A sqlwin query as the DataFrame of a Spark Declarative Pipeline's flow (the API: sqlwin.pipelines).

A pipeline (`spark-pipelines run`) calls each flow's query function once, when it registers the
flow, over Spark Connect, and forbids analysis in it (ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION):
no schema, no `spark.table(...).columns`, no collect. The datasets the function reads do not even
exist yet on a first run. So everything sqlwin learns from Spark it learns before: at definition
time, in the pipeline file's own code (where Spark may analyse, over stand-ins of the declared
schemas), and the query function only builds a DataFrame from SQL text and plans known in advance:

- complete input (a materialized view): the native Spark SQL of `lower_complete`, over the
  pipeline's datasets by name;
- a stream (a streaming table): the window runtime in transformWithStateInPandas, exactly as
  `sw.stream` runs it (`streaming.window_operator`), over the external streams the flow names: its
  input rows the stream's own input SQL (a WITH clause, a subquery, a join's sides), its records
  projected to the result rows by the same SQL the stream's sink writer runs per batch -- here over
  the stream itself, the pipeline writing it (append); a chain's stages one after the other. SQL
  text reads the streams as `spark.sql` arguments (`formatted`): a pipeline refuses temp views.

This module imports the planner's output and the lowerings, never sqlwin.api.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.spark.around import rows_for_aggregates
from sqlwin.spark.operator import stage_clock
from sqlwin.spark.propagation import chain_clock, outer_query, unrolled
from sqlwin.spark.replay import record_schema
from sqlwin.spark.runner import quiet_spark_error_log, spark_error
from sqlwin.spark.stateful import StatefulQuery, check_input_types, prepare_stateful
from sqlwin.sql.plan import QueryPlan
from sqlwin.sql.text import quote_identifier

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

SOURCE = "__sqlwin_pipeline_source_{}__"  # a stream's source, in the generated SQL (see `formatted`)


def formatted(spark: "SparkSession", sql: str, frames: dict[str, "DataFrame"]) -> "DataFrame":
    """`spark.sql(sql)` where each name of `frames` in the text reads that DataFrame (PySpark's
    `spark.sql("... {df} ...", df=...)`: a relation of the command, no temp view -- a pipeline
    refuses temp views). Braces of the text itself are kept."""
    text = sql.replace("{", "{{").replace("}", "}}")
    arguments = {}
    for i, (name, frame) in enumerate(frames.items()):
        text = text.replace(name, "{__f%d}" % i)
        arguments[f"__f{i}"] = frame
    return spark.sql(text, **arguments) if arguments else spark.sql(sql)


# --------------------------------------------------------------------------- complete input


def complete_frame(spark: "SparkSession", sql: str, sources: dict[str, str]) -> "DataFrame":
    """A materialized view's DataFrame: the lowered Spark SQL, analysed by the pipeline when it runs.
    `sources`: {SOURCE name in the SQL: the pipeline dataset it reads}, put back as the dataset's name
    (`spark.sql` text naming the datasets: the pipeline resolves those; a DataFrame passed into
    `spark.sql` it does not)."""
    for source, table in sources.items():
        name = ".".join(quote_identifier(part) for part in table.split("."))
        sql = sql.replace(f"`{source}`", name).replace(source, name)
    return spark.sql(sql)


# --------------------------------------------------------------------------- streams

RECORDS = "__sqlwin_pipeline_records_{}__"  # a stage's records, in the SQL over them (see `formatted`)
STAGE = "__sqlwin_pipeline_stage_{}__"  # a chain's stage results, read by the next stage's SQL


@dataclass
class FlowStage:
    """One stateful stage of a streaming table's flow: its query and its input rows' schema (known
    without analysis in the flow). A chain's later stage reads the stage before's results (STAGE)."""

    stateful: StatefulQuery
    row_schema: t.Any  # StructType


@dataclass
class StreamingFlow:
    """A streaming table's flow, prepared at definition time: `frame(spark)` is its query function's body.

    Each stage as `sw.stream` runs it: its input rows (`input_sql`: the sources' columns, a WITH clause
    or subquery, a join's sides) through the window runtime in transformWithStateInPandas, its records
    projected by the SQL the stream's sink writer runs per batch -- here over the stream itself, which
    the pipeline writes (append). A chain's later stage reads the stage before's results, which carry
    that stage's late and stats records through (a pipeline drops them: a flow writes one table)."""

    stages: list[FlowStage]
    sources: dict[str, "DataFrame"]  # the SOURCE name in the SQL -> the streaming DataFrame it reads

    def frame(self, spark: "SparkSession") -> "DataFrame":
        from sqlwin.spark.streaming import window_operator

        frames = dict(self.sources)
        result = None
        for number, stage in enumerate(self.stages):
            rows = formatted(spark, stage.stateful.input_sql(arrival=False), frames)
            records, _, _ = window_operator(stage.stateful, rows, stage.row_schema, None, keyed=True)
            result = stage_results(spark, stage.stateful, records, number, carry=number + 1 < len(self.stages))
            frames[STAGE.format(number)] = result
        return result


def stage_results(spark: "SparkSession", stateful: StatefulQuery, records: "DataFrame", number: int,
                  carry: bool) -> "DataFrame":
    """The sink writer's SQL over a stage's records (typed_emissions_sql, result_sql), over the stream;
    `carry`: a chain's stage before another, whose late and stats records go on to it (CARRY)."""
    name = RECORDS.format(number)
    if carry:
        sql = stateful.result_sql(f"({stateful.typed_emissions_sql(name, carry=True)})", carry=True)
    else:
        sql = stateful.result_sql(f"({stateful.typed_emissions_sql(name)})")
    return formatted(spark, sql, {name: records}).drop("__batch", "__seq")


def prepare_stream(spark: "SparkSession", plan: QueryPlan, plan_of: t.Callable[[str, dict], QueryPlan],
                   sources: dict[str, tuple["DataFrame", t.Any]], buckets: int) -> StreamingFlow:
    """A streaming table's flow for `plan` (planned over the SOURCE names with the declared schemas).

    `sources`: {SOURCE name: (the streaming DataFrame of an external source, its StructType)};
    `plan_of(text, views)`: a query's plan over those and `views` ({a stage's name: its StructType}).
    Spark analyses each stage's input rows here, over empty stand-ins of those schemas: the pipeline
    file's code may analyse, its query functions may not. Refused, in sqlwin's words, what one append
    flow cannot carry.

    The source is an external stream, not a dataset of the pipeline: Spark Connect turns
    transformWithStateInPandas into a plan through a Dataset of its input, which analyses that input
    when the flow is defined (DefineFlow), and a pipeline dataset does not resolve then -- it is
    resolved later, by the pipeline's graph (TABLE_OR_VIEW_NOT_FOUND, measured: even with the dataset
    defined before the flow)."""
    plan = rows_for_aggregates(plan, lambda text: plan_of(text, {}))
    _refuse(plan)
    first, later = unrolled(plan, lambda text: plan_of(text, {}))
    # A fixed layout of buckets, whatever the session's shuffle partitions: the flow's checkpoint (kept
    # by the pipeline, where sqlwin cannot note its layout as sw.stream does in sqlwin.json) holds
    # each bucket's state under its id, so the ids must be those of the run that wrote it.
    ids = tuple(range(buckets))
    stateful = prepare_stateful(first, "streaming", buckets, ids, spread=True, partial=False)
    chain_clock(stage_clock(stateful.relation.options, stateful.config.timers), later, plan.sql)
    stand_ins = {name: spark.createDataFrame([], schema) for name, (_, schema) in sources.items()}
    stages, views = [], {}
    for number, stage_plan in enumerate([None, *later]):
        if stage_plan is not None:  # a chain's later stage, over the stage before's results
            view = STAGE.format(number - 1)
            before = stages[-1].stateful
            records = spark.createDataFrame([], record_schema(before, stages[-1].row_schema))
            stand_ins[view] = stage_results(spark, before, records, number - 1, carry=True)
            views[view] = stand_ins[view].schema
            stateful = prepare_stateful(plan_of(outer_query(stage_plan, view, {}), views), "streaming", buckets,
                                        ids, carry=True, spread=True)
        row_schema = _analysed(spark, stateful.input_sql(arrival=False), stand_ins, plan.sql)  # a query function may not
        check_input_types(stateful, row_schema)
        stages.append(FlowStage(stateful, row_schema))
    return StreamingFlow(stages, {name: frame for name, (frame, _) in sources.items()})


def _analysed(spark: "SparkSession", sql: str, frames: dict[str, "DataFrame"], query: str):
    """The schema of `sql` over `frames` (stand-ins), asked of Spark; its errors point into `query`."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        with quiet_spark_error_log():
            return formatted(spark, sql, frames).schema
    except (AnalysisException, ParseException) as err:
        raise spark_error(err, query) from None


def _refuse(plan: QueryPlan) -> None:
    """What a pipeline's streaming table cannot hold, and why (docs/pipelines.md)."""
    if plan.late_into:
        raise SqlwinUnsupportedError(
            f"LATE ROWS INTO {plan.late_into} in a pipeline's streaming table: a flow writes one table, and the "
            "late rows are records of the same stateful operator as the results; a second flow for them would "
            "run that operator again, with its own state and micro-batches, so its late rows need not be the "
            "rows the results' flow judged late", plan.windows[0].position,
            "the query without LATE ROWS INTO (late rows are then dropped, as sw.stream drops them without a "
            "late sink), or sw.stream(..., late_sink=DIR) outside the pipeline, whose sink and late sink a "
            "pipeline reads as files", query=plan.sql)
    if plan.around is not None:
        raise SqlwinUnsupportedError(
            "SQL around a windowed stage in a pipeline's streaming table (a Top-N or aggregation per window, a "
            "filter, UNION ALL, a window function's rows, or an aggregate Spark computes over a window's rows): "
            "a stream runs that SQL per micro-batch over the stage's results (sw.stream: in foreachBatch), and a "
            "flow has no step per micro-batch -- it returns one streaming DataFrame, which the pipeline appends",
            plan.around.position,
            "the windowed stage alone as the streaming table, and the SQL around it as a materialized view over "
            "that table (swp.materialized_view; per window the same answer, since a window's final row is "
            "appended once); or sw.stream outside the pipeline", query=plan.sql)

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
  `sw.stream` runs it (`streaming.window_operator`), over `spark.readStream.table(source)`, its
  records projected to the result rows by the same SQL the stream's sink writer runs per batch --
  here a projection of the stream itself, the pipeline writing it (append).

This module imports the planner's output and the lowerings, never sqlwin.api.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlwin.errors import SqlwinUnsupportedError
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


@dataclass
class StreamingFlow:
    """A streaming table's flow, prepared at definition time: `frame(spark)` is its query function's body."""

    stateful: StatefulQuery
    sources: dict[str, "DataFrame"]  # the SOURCE name in the SQL -> the streaming DataFrame it reads
    row_schema: t.Any  # the input rows' schema (StructType), known without analysis in the flow

    def frame(self, spark: "SparkSession") -> "DataFrame":
        from sqlwin.spark.streaming import window_operator

        rel = self.stateful.relation
        rows = self.input_rows(self.sources[_source_name(rel.source)])
        records, _, _ = window_operator(self.stateful, rows, self.row_schema, None, keyed=True)
        # The sink writer's SQL per batch (typed_emissions_sql, result_sql), as DataFrame operations on
        # the stream: a pipeline resolves its datasets in DataFrames, not in spark.sql over a DataFrame.
        typed = records.where("__kind = 'emit'").selectExpr(*self.stateful.typed_emission_columns())
        outputs, condition = self.stateful.result_parts()
        if condition:
            typed = typed.where(condition)
        return typed.selectExpr(*outputs).drop("__batch", "__seq")

    def input_rows(self, source: "DataFrame") -> "DataFrame":
        """`input_sql` as DataFrame operations over the source (a stream, or a stand-in)."""
        rel = self.stateful.relation
        frame = source.alias(rel.source_alias) if rel.source_alias else source
        if self.stateful.where_sql:
            frame = frame.where(self.stateful.where_sql)
        return frame.selectExpr(*self.stateful.input_columns(arrival=False))


def _source_name(reference: str) -> str:
    return reference[1:-1].replace("``", "`") if reference.startswith("`") else reference


def prepare_stream(spark: "SparkSession", plan: QueryPlan, sources: dict[str, tuple[str, t.Any]],
                   buckets: int) -> StreamingFlow:
    """A streaming table's flow for `plan` (planned over the SOURCE names with the declared schemas).

    `sources`: {SOURCE name: (the streaming DataFrame of an external source, its StructType)}. Spark
    analyses the input rows here, over empty stand-ins of those schemas: the pipeline file's code may
    analyse, its query functions may not. Refused, in sqlwin's words, what one append flow cannot carry.

    The source is an external stream, not a dataset of the pipeline: Spark Connect turns
    transformWithStateInPandas into a plan through a Dataset of its input, which analyses that input
    when the flow is defined (DefineFlow), and a pipeline dataset does not resolve then -- it is
    resolved later, by the pipeline's graph (TABLE_OR_VIEW_NOT_FOUND, measured: even with the dataset
    defined before the flow)."""
    _refuse(plan)
    probe = prepare_stateful(plan, "streaming", 1)
    _refuse_input(probe, sources)
    stand_ins = {name: spark.createDataFrame([], schema) for name, (_, schema) in sources.items()}
    stand_in = stand_ins[_source_name(probe.relation.source)]
    frames = {name: frame for name, (frame, _) in sources.items()}
    check_input_types(probe, StreamingFlow(probe, frames, None).input_rows(stand_in).schema)
    # A fixed layout of buckets, whatever the session's shuffle partitions: the flow's checkpoint (kept
    # by the pipeline, where sqlwin cannot note its layout as sw.stream does in sqlwin.json) holds
    # each bucket's state under its id, so the ids must be those of the run that wrote it.
    stateful = prepare_stateful(plan, "streaming", buckets, tuple(range(buckets)), spread=True, partial=False)
    flow = StreamingFlow(stateful, frames, None)
    flow.row_schema = flow.input_rows(stand_in).schema  # analysed here: a query function may not
    return flow


def _refuse_input(stateful: StatefulQuery, sources: dict) -> None:
    """The window function's input must be one declared dataset, read as a stream (no CTE, no subquery)."""
    plan, rel = stateful.plan, stateful.relation
    if stateful.with_sql or _source_name(rel.source) not in sources:
        raise SqlwinUnsupportedError(
            "A pipeline's streaming table reads its window function's input straight from its source; "
            "a WITH clause or a subquery there is not built yet", rel.position,
            "TABLE <a name of sources=...>; the subquery's or CTE's work in that streaming DataFrame "
            "(arriving.where(...).select(...))", query=plan.sql)


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
    if plan.join is not None:
        raise SqlwinUnsupportedError(
            "A windowed join in a pipeline's streaming table is not built yet (sqlwin.pipelines runs one "
            "window function's input through the operator)", plan.windows[0].position,
            "sw.stream outside the pipeline, or a materialized view of the join (complete input)", query=plan.sql)
    if plan.propagation is not None:
        raise SqlwinUnsupportedError(
            "Two chained windowed aggregations in a pipeline's streaming table are not built yet",
            plan.propagation.outer.position,
            "sw.stream outside the pipeline, or a materialized view of the query (complete input)",
            query=plan.sql)

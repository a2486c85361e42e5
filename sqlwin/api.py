"""The Python API: `sw = sqlwin.attach(spark)`, then `sw.sql(...)` and `sw.explain(...)`."""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError

from sqlwin.sql.dialect import LateRowsInto, parse_one
from sqlwin.errors import SqlwinError, SqlwinSyntaxError, SqlwinUsageError
from sqlwin.spark.complete import (LoweredQuery, complete_mode, lower_complete, name_select_items, plain_plan,
                                   run_as_written)
from sqlwin.spark.replay import explain_replay, is_replay, run_replay
from sqlwin.spark.connect import check_connect_workers, connect_stream_paths, is_connect
from sqlwin.spark.runner import SparkRunner
from sqlwin.sql.check import unknown_table
from sqlwin.sql.plan import QueryPlan, build_plan, describe_plan, node_position, require_final_only

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sqlwin.spark.streaming import StreamingWindowQuery


@dataclass
class Explanation:
    """What `sw.explain(query)` returns: the IR, the lowering chosen and why, the Spark SQL."""

    plan: QueryPlan
    mode: str
    lowered: LoweredQuery

    def __str__(self) -> str:
        lines = [f"mode: {self.mode}", *describe_plan(self.plan, complete=self.mode.startswith(COMPLETE))]
        lines.append("lowering:")
        lines += [f"  {s}" for s in self.lowered.strategies] or ["  (no window function of sqlwin: Spark SQL, "
                                                                 "run by Spark as written)"]
        lines.append("spark sql:")
        lines.append(f"  {self.lowered.sql}")
        # The IR itself (durations in microseconds) is `explanation.plan`, for tools; the text
        # says everything in the query's own words (describe_plan).
        return "\n".join(lines)


class Sqlwin:
    """sqlwin bound to one SparkSession. Table names resolve through its catalog (temp views included)."""

    def __init__(self, spark: "SparkSession"):
        self.spark = spark
        self.runner = SparkRunner(spark)
        self.runner.planner = self.plan  # lowerings plan the parts of a query (AP-11) without the API

    # -- public ------------------------------------------------------------------

    def plan(self, query: str, tables: dict[str, str] | None = None) -> QueryPlan:
        """Parse and validate; the IR every execution mode reads. `tables`: {a table name the query
        reads: the view that stands for it} (a stream's sources, under views of sqlwin's own)."""
        resolver = _SchemaResolver(self.runner, query, tables=tables)
        plan = build_plan(query, resolver, self.spark.conf.get("spark.sql.session.timeZone") or "UTC",
                          tables=tables)
        stages = [part.plan for part in plan.around.parts] if plan.around is not None else []
        for one in (plan, *stages):
            if one is not None:  # count(*) is count(1), as in Spark
                name_select_items(one, lambda sql: self.runner.sql(sql, query).columns)
        if plan.around is not None:
            plan.around.adopt_names(plan.ast)
        return plan

    def sql(self, query: str) -> "DataFrame":
        """Run a windowed query over finished tables: a DataFrame.

        A table recording arrival (WITH (arrival_order = col ...)) is replayed through the window
        runtime, as the live stream would have run; LATE ROWS INTO registers the late rows as a
        temp view. Any other table is complete input, lowered to native Spark SQL.
        """
        try:
            plan = self.plan(query)
        except SqlwinSyntaxError as err:
            return run_as_written(self.runner, query, err)  # Spark SQL sqlglot cannot read, or the error
        self._refuse_streams(plan)
        if choose_mode(plan) == REPLAY:
            if is_connect(self.spark):  # the replay runs sqlwin's code in the server's Python workers
                check_connect_workers(self.spark)
            return run_replay(self.runner, plan).result
        lowered = lower_complete(plan)
        result = self.runner.sql(lowered.sql, query)
        if plan.late_into and lowered.rejected_sql:  # no row of a finished table is late: those no window takes
            self.runner.sql(lowered.rejected_sql, query).createOrReplaceTempView(plan.late_into)
        return result

    def _refuse_streams(self, plan: QueryPlan) -> None:
        """sw.sql reads finished tables: a streaming DataFrame registered as a view, read by a query
        with sqlwin's windows, WATERMARK or EMIT, would be lowered as complete input (its WATERMARK
        dropped, and Spark refusing the append mode it needs). Say how to stream it instead."""
        if plan.plain_spark:
            return  # Spark's own SQL: spark.sql's answer, a streaming DataFrame included
        ctes = {cte.alias_or_name.lower() for cte in plan.ast.find_all(exp.CTE)}
        for table in plan.ast.find_all(exp.Table):
            if not isinstance(table.this, exp.Identifier) or table.name.lower() in ctes \
                    or isinstance(table.parent, LateRowsInto):
                continue
            reference = exp.table_(table.this.copy(), db=table.args.get("db"), catalog=table.args.get("catalog"))
            if self.runner.is_streaming(reference.sql(dialect="spark")):
                raise SqlwinUsageError(
                    f"{table.name} is a stream (a streaming DataFrame): sw.sql runs a query over finished tables",
                    node_position(table.this, table.name),
                    f"sw.stream(query, sources={{'{table.name}': <the streaming DataFrame>}}, sink=DIR, "
                    "checkpoint=DIR), or `sqlwin stream` over a directory of files", query=plan.sql)

    def rejected(self, query: str) -> "DataFrame | None":
        """The input rows a query over finished tables leaves out of every window -- a NULL key or a
        NULL time -- with `reason` (as LATE ROWS INTO lists them); None for a replay or a query
        without a window function (a replay's rejected rows are in its LATE ROWS INTO table)."""
        try:
            plan = self.plan(query)
        except SqlwinSyntaxError:
            return None
        if plan.plain_spark or choose_mode(plan) != COMPLETE:
            return None
        lowered = lower_complete(plan)
        return self.runner.sql(lowered.rejected_sql, query) if lowered.rejected_sql else None

    def stream(self, query: str, sources: dict[str, t.Any], sink: str, checkpoint: str,
               late_sink: str | None = None, source_format: str = "parquet",
               source_options: dict[str, str] | None = None, trigger: dict | None = None,
               buckets: int | None = None, name: str | None = None) -> "StreamingWindowQuery":
        """Start `query` as a Structured Streaming query; results land in `sink` per micro-batch.

        sources: {table name in the query: a streaming DataFrame, or a directory of files in
        `source_format`}. Results are parquet under `sink/batch_id=N/` (late rows, with LATE ROWS
        INTO, under `late_sink`), each batch replaced if Spark re-runs it: exactly once across
        restarts from `checkpoint`. `name`: the stream's name in the Spark UI (default: sqlwin, the
        query's first words and the sink). `handle.batch_progress()`: each micro-batch's own figures.
        """
        from sqlwin.spark.streaming import start_stream

        if is_connect(self.spark):  # the server resolves paths in its own working directory, runs sqlwin's code
            sources, sink, late_sink, checkpoint = connect_stream_paths(self.spark, sources, sink, late_sink,
                                                                        checkpoint)
            check_connect_workers(self.spark)
        return start_stream(self.runner, self.plan, query, sources, sink, checkpoint, late_sink=late_sink,
                            source_format=source_format, source_options=source_options,
                            trigger=trigger, buckets=buckets, name=name)

    def explain(self, query: str, stream: bool = False) -> Explanation:
        """How sqlwin runs `query`: by `sql` (complete input or replay), or with `stream=True` as
        `stream` would run it (the tables it names stand for the sources: same columns)."""
        try:
            plan = self.plan(query)
        except SqlwinSyntaxError as err:
            if stream:
                raise
            run_as_written(self.runner, query, err)  # raises unless Spark reads it
            plan = plain_plan(query)
        if stream:
            from sqlwin.spark.streaming import explain_stream

            return Explanation(plan, "streaming (the window runtime in a Structured Streaming query)",
                               explain_stream(self.runner, plan))
        mode = choose_mode(plan)
        if mode == REPLAY:
            return Explanation(plan, "replay (the window runtime over the recorded arrival order)",
                               explain_replay(self.runner, plan))
        return Explanation(plan, complete_mode(plan), lower_complete(plan))

    def apply_changelog(self, changes: "DataFrame", keys: t.Sequence[str]) -> "DataFrame":
        """The table a changelog leaves (a replay's result, or a stream's sink read back): per
        window, named by `keys` (e.g. ["user_id", "window_start", "window_end"]), its last change
        by emit_seq unless that change retracts it. RETRACTING and ACCUMULATING results fold to
        the EMIT FINAL result; see docs/semantics.md, "Applying a changelog"."""
        from sqlwin.spark.changelog import apply_changelog

        return apply_changelog(changes, keys)

    def timeline(self, query: str, keys: t.Sequence | None = None, max_keys: int = 8, label: str | None = None):
        """A picture of the query's windows, a lane per key: rows, watermark, late rows, firings
        (a matplotlib Figure; Jupyter shows it). Needs the `timeline` extra; see docs/timeline.md."""
        from sqlwin.timeline import timeline_figure

        return timeline_figure(self, query, keys=keys, max_keys=max_keys, label=label)


COMPLETE, REPLAY, STREAMING = "complete input", "replay", "streaming"


def choose_mode(plan: QueryPlan, streaming: bool = False) -> str:
    """The one choice of execution mode, shared by sql, explain and stream: a live stream when
    started with `stream`; a replay when a window function's table records its arrival
    (`arrival_order`); else complete input, which must be EMIT FINAL."""
    if streaming:
        return STREAMING
    if is_replay(plan):
        return REPLAY
    require_final_only(plan, "complete-input")
    return COMPLETE


class _SchemaResolver:
    """Column types of a window function's input: a catalog table, a temp view, or a CTE of the query."""

    def __init__(self, runner: SparkRunner, query: str, resolving: frozenset[str] = frozenset(),
                 tables: dict[str, str] | None = None):
        self.runner = runner
        self.query = query
        self.resolving = resolving
        self.tables = tables
        self._ctes: dict[str, exp.Expr] | None = None

    def __call__(self, name: str) -> dict[str, str] | None:
        """`name`: the table reference as Spark SQL text (`` `my cte` ``, db.t)."""
        ctes = self._cte_definitions()
        cte = _cte_name(name)
        if cte in ctes and cte not in self.resolving:
            return self._cte_schema(cte)
        schema = self.runner.table_schema(name)
        if schema is None and cte not in ctes:
            raise unknown_table(name, [*self.runner.table_names(), *ctes])
        return schema

    def _cte_definitions(self) -> dict[str, exp.Expr]:
        if self._ctes is None:
            ast = parse_one(self.query)
            with_ = ast.args.get("with_")
            self._ctes = {c.alias.lower(): c for c in with_.expressions} if with_ else {}
        return self._ctes

    def _cte_schema(self, name: str) -> dict[str, str] | None:
        ast = parse_one(self.query)
        probe = exp.select("*").from_(exp.Table(this=exp.to_identifier(name, quoted=True)))
        with_ = ast.args.get("with_")
        if with_ is not None:  # the CTEs up to this one (it reads only earlier ones): no later window function
            ctes = list(with_.expressions)
            upto = next((i for i, c in enumerate(ctes) if c.alias.lower() == name), len(ctes) - 1)
            with_ = exp.With(expressions=ctes[:upto + 1], recursive=with_.args.get("recursive"))
        probe.set("with_", with_)
        from sqlwin.sql.dialect import SqlwinDialect

        probe_sql = probe.sql(dialect=SqlwinDialect)
        inner = _SchemaResolver(self.runner, probe_sql, self.resolving | {name}, self.tables)
        try:
            lowered = lower_complete(build_plan(probe_sql, inner, tables=self.tables))
            df = self.runner.sql(lowered.sql, self.query)
        except SqlwinError:
            return None  # reported with its real position when the whole query is planned
        return {f.name: f.dataType.simpleString() for f in df.schema.fields}


def _cte_name(reference: str) -> str | None:
    """The CTE a table reference (Spark SQL text) can stand for: a one-part name, lower case."""
    try:
        table = exp.to_table(reference, dialect="spark")
    except SqlglotError:
        return None
    return table.name.lower() if not (table.args.get("db") or table.args.get("catalog")) else None


def attach(spark: "SparkSession") -> Sqlwin:
    """sqlwin for this SparkSession."""
    return Sqlwin(spark)

"""Replay: a finished table that records arrival runs through the window runtime on Spark.

The rows are hash-partitioned by their clock key into as many partitions as the session's
shuffle partitions (`spark.sql.shuffle.partitions`; one for a single clock), sorted within each
partition by recorded batch and arrival, and streamed through the runtime in Arrow chunks
(`mapInArrow`): never collected to the driver, never a whole partition in memory. Each partition
replays its rows micro-batch by micro-batch in the recorded arrival order, exactly as the
streaming operator would have seen them, and ends the input at the end of the table. Queries the
vectorised runtime covers (sqlwin.runtime.vector) take whole runs of micro-batches at once.
"""

from __future__ import annotations

import dataclasses
import typing as t
import uuid
from dataclasses import dataclass

from sqlwin.spark import layout
from sqlwin.runtime import select
from sqlwin.spark.operator import TIMESTAMP, choose_runtime, value_kind, record_columns
from sqlwin.spark.replay_worker import replay_columns, replay_partition
from sqlwin.spark.stateful import (RESULT_ORDER, STAGE_VIEW, UPSTREAM_ROW, StatefulQuery, chain_late, check_input_types,
                                   prepare_stateful)
from sqlwin.sql.joins import describe_join
from sqlwin.spark import around
from sqlwin.spark.propagation import chain_stages, outer_query
from sqlwin.sql.around import stage_numbers
from sqlwin.sql.plan import QueryPlan

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.spark.runner import SparkRunner


@dataclass
class ReplayResult:
    result: "DataFrame"
    late: "DataFrame | None"
    query: StatefulQuery
    batched: "DataFrame"  # the result with __batch: the arrival batch after which each row was emitted
    ordered: "DataFrame | None" = None  # the result with __batch and __seq (emission order)
    late_batched: "DataFrame | None" = None  # the late rows with __batch
    stages: int = 1  # a chain's stages (window propagation): its last stage's number


def is_replay(plan: QueryPlan) -> bool:
    return any("arrival_order" in w.options for w in plan.windows)


def run_replay(runner: "SparkRunner", plan: QueryPlan, late_row_struct: str | None = None) -> ReplayResult:
    """`late_row_struct`: a chain's second stage, whose late rows hold their row as one struct column."""
    plan = around.rows_for_aggregates(plan, runner.planner)
    if plan.around is not None:
        return _replay_around(runner, plan)
    if plan.propagation is not None:
        return _replay_chain(runner, plan)
    query = prepare_stateful(plan, "replay", runner.shuffle_partitions, spread=True, partial=True)
    rows = runner.sql(query.input_sql(arrival=True), plan.sql)
    check_input_types(query, rows.schema)
    schema = record_schema(query, rows)
    config = query.config
    batch_times = None
    if config.timers and query.relation.options.get("arrival_time"):
        # Processing time passes for every bucket at every batch: each bucket learns the
        # stream's batch times (one row per micro-batch, small next to the rows).
        batch_times = [(int(r[0]), int(r[1])) for r in
                       rows.groupBy("__batch").agg({"__ptime": "max"}).dropna().collect()]
    from pyspark.sql.pandas.types import to_arrow_schema

    vectorised = choose_runtime(config, rows.schema, many_batches=True).vectorised
    # One clock for the stream over every partition: each is told the stream's clock per batch.
    stream_clock = _stream_clock(rows, query) if query.spread else None
    function = replay_partition(config, integral_flags(rows), vectorised, batch_times,
                                to_arrow_schema(schema, timezone="UTC"), stream_clock)
    positions = config.clock_positions
    clock_keys = [layout.key(i) for i in (range(config.key_count) if positions is None else positions)]
    columns = replay_columns(config, vectorised)
    if query.spread:
        spread = rows.repartition(query.bucket_count, "__bucket")
    elif clock_keys and query.bucket_count > 1:
        spread = rows.repartition(query.bucket_count, *clock_keys)
    else:  # one clock for the stream (or a mode that judges every key against the others)
        spread = rows.repartition(1)
    # Only what the runtime reads goes to Python (Spark prunes the rest before the shuffle).
    records = spread.sortWithinPartitions("__batch", "__order").select(*columns).mapInArrow(function, schema)
    name = f"__sqlwin_records_{uuid.uuid4().hex[:12]}"
    records.createOrReplaceTempView(name)
    typed = f"({query.typed_emissions_sql(name)})"
    # In emission order: gathered into one partition and sorted there. A global orderBy would
    # first run a sampling job for its range partitioning, which replays the whole input again.
    ordered = runner.sql(query.result_sql(typed), plan.sql).repartition(1).sortWithinPartitions(*RESULT_ORDER)
    result = ordered.drop(*RESULT_ORDER)
    late = late_batched = None
    if plan.late_into:
        late_batched = runner.sql(query.late_sql(name, late_row_struct), plan.sql)
        late = _in_batch_order(late_batched)
        late.createOrReplaceTempView(plan.late_into)
    return ReplayResult(result, late, query, ordered.drop("__seq"), ordered, late_batched)


def _stream_clock(rows: "DataFrame", query: StatefulQuery):
    """The stream's clock per recorded batch, for a replay whose one clock is spread over the
    partitions: (batch, side, newest event time) arrays, sorted by batch, of the batches in which
    it moves -- the newest time of the batch's rows with a key and a time, over the whole stream
    (per side for a join). One aggregation per batch, collected to the driver and handed to every
    partition with the replay's function (Spark broadcasts a large one), so that each partition
    replays those batches too, with rows of its own or not, and commits the clock one partition
    holding every row would (as a stream's buckets are told the batch's extremes). With
    'max_event_time' / 'upstream' the clock moves only where a batch's newest time passes the
    newest before it; other strategies move with every batch that has rows."""
    import numpy as np
    from pyspark.sql import functions as F

    config = query.config
    valid = F.col(layout.TIME).isNotNull()
    for name in layout.keys(config.key_count):
        valid &= F.col(name).isNotNull()
    side = F.col(layout.argument(0)).cast("bigint") if query.plan.join is not None else F.lit(0).cast("bigint")
    per_batch = rows.where(valid).groupBy(F.col(layout.BATCH).cast("bigint").alias("b"), side.alias("s")) \
        .agg(F.max(layout.TIME).alias("t"))
    found = per_batch.toPandas()
    if found.empty:
        return (np.empty(0, np.int64),) * 3
    found = found.sort_values(["s", "b"], kind="stable")
    batches, sides, times = (found[c].to_numpy(np.int64) for c in ("b", "s", "t"))
    if config.watermark.strategy in ("max_event_time", "upstream"):
        keep = np.ones(len(batches), bool)
        for one in np.unique(sides):  # per side: where the running maximum rises
            mine = np.flatnonzero(sides == one)
            before = np.maximum.accumulate(times[mine])
            keep[mine[1:]] = times[mine[1:]] > before[:-1]
        batches, sides, times = batches[keep], sides[keep], times[keep]
    order = np.argsort(batches, kind="stable")
    return batches[order], sides[order], times[order]


def _in_batch_order(late: "DataFrame") -> "DataFrame":
    return late.repartition(1).sortWithinPartitions("__batch").drop("__batch")


def _replay_chain(runner: "SparkRunner", plan: QueryPlan) -> ReplayResult:
    """AP-11: the inner windowed aggregation replays first; its results, in the order and the arrival
    batches it emitted them, are the recorded stream the outer aggregation replays."""
    # The inner stage's late and rejected rows go where the query sends its own (LATE ROWS INTO).
    inner = run_replay(runner, dataclasses.replace(runner.planner(plan.propagation.inner_sql), late_into=plan.late_into))
    view = f"{STAGE_VIEW}{uuid.uuid4().hex[:12]}"
    inner.ordered.selectExpr("*", "row_number() OVER (ORDER BY __batch, __seq) AS __arrival").drop("__seq") \
        .createOrReplaceTempView(view)
    outer = runner.planner(outer_query(plan, view, {"arrival_order": "__arrival", "arrival_batch": "__batch"}))
    outer = dataclasses.replace(outer, late_into=plan.late_into)  # a chain's middle stage: not in its text
    result = run_replay(runner, outer, late_row_struct=UPSTREAM_ROW)
    result.stages = inner.stages + 1
    if plan.late_into:  # every stage's late rows, each with its stage
        result.late_batched = chain_late(inner.late_batched, result.late_batched, result.stages)
        result.late = _in_batch_order(result.late_batched)
        result.late.createOrReplaceTempView(plan.late_into)
    return result


def _replay_around(runner: "SparkRunner", plan: QueryPlan) -> ReplayResult:
    """Each stage replays (as the statement alone would); the SQL around them runs once over their
    results (spark/around.py). With several stages, LATE ROWS INTO gets every stage's late and
    rejected rows, each with its stage's number."""
    stages = [run_replay(runner, one) for one in around.stage_plans(plan, "replay")]
    result = around.outer_frame(runner.spark, plan.around, [stage.result for stage in stages])
    first = stages[0]
    # `batched` / `ordered`: the (first) stage's results, with the batch each was emitted after (the
    # SQL around them has no batches of its own: over a stream it runs per micro-batch of them)
    replayed = ReplayResult(result, first.late, first.query, first.batched, first.ordered, first.late_batched,
                            stages=sum(stage.stages for stage in stages))
    if len(stages) > 1 and plan.late_into:
        numbers = stage_numbers([part.plan for part in plan.around.parts])
        replayed.late_batched = around.stages_late([(s.late_batched, n) for s, n in zip(stages, numbers)])
        replayed.late = _in_batch_order(replayed.late_batched)
        replayed.late.createOrReplaceTempView(plan.late_into)
    return replayed


def explain_replay(runner: "SparkRunner", plan: QueryPlan):
    """What `run_replay` runs, for explain: the engine path and why, and the Spark SQL around it."""
    from sqlwin.spark.complete import LoweredQuery

    plan = around.rows_for_aggregates(plan, runner.planner)
    if plan.around is not None:
        stages = [explain_replay(runner, one) for one in around.stage_plans(plan, "replay")]
        numbers = stage_numbers([part.plan for part in plan.around.parts])
        return LoweredQuery(around.explained_sql(plan.around, [stage.sql for stage in stages], numbers),
                            [*around.stage_lines([stage.strategies for stage in stages], numbers),
                             around.describe(plan.around, "replay")])

    if plan.propagation is not None:
        inner_plan = runner.planner(plan.propagation.inner_sql)
        inner = explain_replay(runner, inner_plan)
        number = chain_stages(inner_plan, runner.planner) + 1
        inherit = (f"its watermark follows stage {number - 1}'s firings (watermark_strategy 'upstream')"
                   if plan.propagation.inherit else "its own watermark over window_time")
        earlier = inner.strategies if inner_plan.propagation is not None else [f"stage 1: {s}" for s in inner.strategies]
        return LoweredQuery(f"{inner.sql}\n  -- stage {number}, over stage {number - 1}'s results: {plan.sql}",
                            earlier + [f"stage {number}: {plan.propagation.outer.function} replays stage "
                                       f"{number - 1}'s results in the order and arrival batches they were emitted "
                                       f"(window propagation); {inherit}"])
    query = prepare_stateful(plan, "replay", runner.shuffle_partitions, spread=True, partial=True)
    input_sql = query.input_sql(arrival=True)
    rows = runner.sql(input_sql, plan.sql)  # analysed only: the schema decides the engine path
    check_input_types(query, rows.schema)
    engine = choose_runtime(query.config, rows.schema, many_batches=True).description
    positions = query.config.clock_positions
    if query.partial_merge is not None:
        spread = (f"hash-partitioned by a hash of each row (no GROUP BY key) into {query.bucket_count} partitions, "
                  "one clock for the stream (each partition also replays every batch in which the stream's newest "
                  "event time moves), partial aggregates per partition merged per window by Spark SQL")
    elif query.spread:
        spread = (f"hash-partitioned by the GROUP BY keys into {query.bucket_count} partitions, one clock for the "
                  "stream: each partition also replays every batch in which the stream's newest event time moves "
                  "(one aggregation per recorded batch)")
    elif positions != () and query.bucket_count > 1:
        spread = f"hash-partitioned by the clock key into {query.bucket_count} partitions"
    else:
        spread = "one partition (one clock for the stream" + (
            ", which 'min_event_time' or an idle timeout judges in one place)" if query.key_sql else
            ", no GROUP BY key to spread its rows by)")
    strategies = [f"replay: rows {spread}, sorted by arrival batch and order, through {engine} in Arrow "
                  "chunks (mapInArrow)",
                  "result: emissions in emission order, typed and projected by Spark SQL"]
    if plan.join is not None:
        strategies.insert(0, describe_join(plan.join))
    return LoweredQuery(f"{input_sql}\n  -- then, over the runtime's records: {query.result_sql('<records>')}",
                        strategies)


def integral_flags(rows) -> tuple[bool | str, ...]:
    """Per key / argument / row column: True an integer column (pandas shows a nullable one as
    float), TIMESTAMP a timestamp column, else False. `rows`: the input rows, or their schema."""
    fields = [f for f in _schema(rows).fields
              if any(layout.index_of(f.name, prefix) is not None for prefix in ("__k", "__a", "__r"))]
    kinds = [value_kind(f.dataType) for f in fields]
    return tuple(TIMESTAMP if kind == select.TIMESTAMP else kind == select.INTEGER for kind in kinds)


def record_schema(query: StatefulQuery, rows):
    """The records' Spark schema: keys and carried row columns keep their types, aggregates get theirs.
    `rows`: the input rows, or their schema."""
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    types = {f.name: f.dataType for f in _schema(rows).fields}
    config = query.config
    spark_type = {"string": StringType(), "bigint": LongType()}
    fixed = {name: spark_type[kind] for name, kind in layout.RECORD_TYPES.items()}
    aggregates = {layout.aggregate(i): aggregate_type(spec, types) for i, spec in enumerate(config.aggregates)}
    fields = []
    for name in record_columns(config):
        if name in fixed:
            kind = fixed[name]
        elif name in aggregates:
            kind = aggregates[name]
        elif layout.index_of(name, "__r") is not None and config.late_from_arguments:  # a join's late rows:
            kind = types[layout.argument(layout.index_of(name, "__r"))]  # its arguments
        else:
            kind = types[name]
        fields.append(StructField(name, kind, True))
    return StructType(fields)


def _schema(rows):
    """A DataFrame's schema, or the schema itself."""
    from pyspark.sql.types import StructType

    return rows if isinstance(rows, StructType) else rows.schema


def aggregate_type(spec, types: dict):
    """The Spark type of one aggregate's value, as Spark's own aggregate would type it."""
    from pyspark.sql.types import (
        ArrayType,
        DecimalType,
        DoubleType,
        IntegralType,
        LongType,
    )

    if spec.func == "window_join":
        from sqlwin.spark.joins import join_result_type

        return join_result_type(spec, types)
    arg = types.get(layout.argument(spec.arg)) if spec.arg is not None else None
    if spec.func in ("count", "count_distinct"):
        return LongType()
    if spec.func == "sum":
        if isinstance(arg, IntegralType):
            return LongType()
        if isinstance(arg, DecimalType):
            return DecimalType(min(38, arg.precision + 10), arg.scale)
        return DoubleType()
    if spec.func == "avg":
        return DoubleType()
    if spec.func == "collect_list":
        return ArrayType(arg, True)
    return arg

"""Streaming: the window runtime inside `transformWithStateInPandas`, checkpointed and restartable.

Plan of a streaming query (see docs/semantics.md, "Streaming and replay"):

    source ──(input_sql)──▶ rows ──mapInArrow(pack_rows)──▶ one Arrow blob per batch and bucket
                                  ─┬─ union ── control rows (end of input), one per bucket
                                   ▼
        groupBy(__bucket).transformWithStateInPandas(WindowProcessor)   RocksDB state, timers
                                   ▼
                 records ──foreachBatch──▶ result_sql ─▶ <sink>/batch_id=N/   (overwritten on retry)
                          (one job; an        └▶ late_sql  ─▶ <late sink>/batch_id=N/
                           Observation counts)

A vectorised runtime keeps a bucket's state in segments (sqlwin.runtime.segments): a batch
reads and writes what its keys touch. The general runtime keeps one value per bucket. Timers
wake every bucket when time passes, so idle timeouts and processing-time windows fire without rows:
- with `arrival_time = col`, processing time is read from the rows (the recorded clock tests
  and replays use): Spark's event-time watermark over that column, timers in EventTime mode;
- otherwise, with a query that needs processing time, the wall clock (ProcessingTime mode).

Writing each micro-batch into its own `batch_id=N` directory, replaced when Spark re-runs the
batch after a failure, makes the sink exactly-once: a restart from the checkpoint neither
loses nor duplicates rows.

Here: starting a stream (its sources, its one or two stateful stages through the operator) and
explaining it. The rest in modules of their own: the handle of a running stream (stream_handle.py),
the sink writer (stream_sink.py), what the checkpoint holds besides Spark's state (checkpoint.py),
the sources read from directories and their malformed rows (stream_sources.py).
"""

from __future__ import annotations

import functools
import os
import typing as t
import uuid
from pathlib import Path

from pyspark.sql import functions as F

from sqlwin.errors import SqlwinUnsupportedError, SqlwinUsageError
from sqlwin.outputs import METADATA, claim_sinks
from sqlwin.spark import layout, supervision
from sqlwin.spark.around import (describe as describe_around, explained_sql, rows_for_aggregates, stage_lines,
                                 stage_plans as around_stages)
from sqlwin.spark.checkpoint import (CONTROL, bucket_layout, check_chain_restart, check_restart, check_source_count,
                                     kept_layout, load_progress, remember_source_schemas, spread_layout,
                                     stored_metadata)
from sqlwin.spark.connect import is_connect
from sqlwin.spark.driver_state import DriverOperator
from sqlwin.spark.operator import OperatorConfig, choose_runtime, clock_packer, joint_clock, pack_rows, stage_clock
from sqlwin.spark.lazy_processor import LazyProcessor
from sqlwin.spark.processor import WindowProcessor
from sqlwin.spark.pre_aggregation import PreAggregation, pre_aggregator
from sqlwin.spark.replay import aggregate_type, integral_flags, record_schema
from sqlwin.spark.stateful import check_input_types, prepare_stateful
from sqlwin.spark.stateful_query import STAGE_VIEW, StatefulQuery, can_spread_clock
from sqlwin.spark.stream_handle import STAGE_COLUMN, Branch, Stage, StreamingWindowQuery, branch_column, row_stages
from sqlwin.spark.stream_sink import sink_writer
from sqlwin.spark.stream_sources import SOURCE_VIEW, read_directory, with_malformed
from sqlwin.sql.around import stage_numbers
from sqlwin.sql.explain import interval_text
from sqlwin.sql.joins import describe_join
from sqlwin.spark.propagation import chain_clock, chain_stages, later_timers, outer_query, unrolled
from sqlwin.sql.text import quote_identifier

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.errors import Position
    from sqlwin.spark.runner import SparkRunner
    from sqlwin.sql.plan import QueryPlan

ARRIVAL_SLACK_US = 86_400_000_000  # see start_stream: the arrival clock's watermark


def start_stream(runner: "SparkRunner", plan_of: t.Callable[[str], QueryPlan], query_text: str, sources: dict[str, t.Any], sink: str, checkpoint: str,
                 late_sink: str | None = None, source_format: str = "parquet",
                 source_options: dict[str, str] | None = None, trigger: dict | None = None,
                 buckets: int | None = None, name: str | None = None) -> StreamingWindowQuery:
    """Start `query_text` over streaming `sources` ({name: streaming DataFrame or directory}).

    `plan_of`: the query's plan, made once the sources are registered as the tables it names.
    The one stream on `checkpoint` (issue 21): its directories are checked and the checkpoint's lock
    taken before anything is written; the lock is held while the stream runs (supervision).
    """
    run_id = uuid.uuid4().hex
    start = supervision.begin(checkpoint, {"sink": sink, "late sink": late_sink},
                              {name: s for name, s in sources.items() if isinstance(s, (str, os.PathLike))},
                              run_id, "spark connect" if is_connect(runner.spark) else "here")
    try:
        handle = _start_stream(runner, plan_of, query_text, sources, sink, checkpoint, late_sink, source_format,
                               source_options, trigger, buckets, run_id, name)
    except BaseException:
        start.abandon()
        raise
    return start.supervise(handle, runner.spark)


def _start_stream(runner: "SparkRunner", plan_of: t.Callable[[str], QueryPlan], query_text: str,
                  sources: dict[str, t.Any], sink: str, checkpoint: str, late_sink: str | None,
                  source_format: str, source_options: dict[str, str] | None, trigger: dict | None,
                  buckets: int | None, run_id: str, query_name: str | None = None) -> StreamingWindowQuery:
    spark = runner.spark
    # Each source is registered as a view of sqlwin's own, which the plan reads in place of its name
    # (`plan_of(text, tables=...)`): a temp view of the user's with that name stays as it was.
    views = {name: f"{SOURCE_VIEW}{uuid.uuid4().hex[:12]}_{i}" for i, name in enumerate(sources)}
    plan_of = functools.partial(plan_of, tables=views)
    # Refused before anything is written: sinks holding another checkpoint's results, overlaps with inputs.
    claim = claim_sinks(Path(checkpoint) / METADATA, checkpoint, {"sink": sink, "late sink": late_sink},
                        {name: s for name, s in sources.items() if isinstance(s, (str, os.PathLike))})
    # From here on, absolute paths: Spark's JVM may have another working directory than this
    # process (a notebook that changed directory, a test); messages above named the user's paths.
    sink, late_sink, checkpoint = (None if p is None else os.path.abspath(p) for p in (sink, late_sink, checkpoint))
    schemas = stored_metadata(checkpoint).get("source_schemas") or {}
    malformed: dict[str, "DataFrame"] = {}  # source's view -> its rows with a value that did not convert
    read_schemas: dict[str, str] = {}
    for name, source in sources.items():
        if isinstance(source, (str, os.PathLike)):
            frame, bad, schema = read_directory(spark, str(source), source_format, source_options or {},
                                                 schemas.get(name))
            read_schemas[name] = schema.json()
            if bad is not None:
                malformed[views[name]] = bad
        else:
            frame = source
        if not frame.isStreaming:
            raise SqlwinUsageError(f"Source {name} is not a streaming DataFrame",
                                   hint="spark.readStream...load(), or a directory of files")
        frame.createOrReplaceTempView(quote_identifier(views[name]))
    read_twice = tuple(os.path.abspath(str(sources[name])) for name in sources if views[name] in malformed)
    plan = rows_for_aggregates(plan_of(query_text), plan_of)
    around, beside = None, []
    if plan.around is not None:  # SQL around the window functions: per micro-batch over the stage's results
        around = plan.around
        plan, *beside = around_stages(plan, "streaming", views.values())
    first, later = unrolled(plan, plan_of)
    # A query a stream refuses is refused before anything is written into the checkpoint.
    probe = prepare_stateful(first, "streaming", 1)
    probe_schema = runner.sql(probe.input_sql(arrival=False), query_text).schema
    check_input_types(probe, probe_schema)
    # a chain's clocks: its stages' timers, each in its own operator (refused here if they cannot agree)
    stream_clock = chain_clock(stage_clock(probe.relation.options, probe.config.timers), later, query_text)
    clocks = [stream_clock]
    for index, one in enumerate(beside, start=1):  # so is a stage side by side (a chain: its first stage)
        one_first, one_later = unrolled(one, plan_of)
        beside_probe = prepare_stateful(one_first, "streaming", 1)
        check_input_types(beside_probe, runner.sql(beside_probe.input_sql(arrival=False), query_text).schema)
        clocks.append(chain_clock(stage_clock(beside_probe.relation.options, beside_probe.config.timers),
                                  one_later, query_text))
        if clocks.count("arrival") > 1:
            raise _one_recorded_clock(around.parts[index].position, query_text)
    if beside:  # each stage's operator keeps its own timers; the wall clock's wait for the stream's end wins
        stream_clock = joint_clock(clocks)
    bucket_ids = bucket_layout(spark, checkpoint, query_text, buckets)
    buckets = len(bucket_ids)
    # One clock for the stream: spread over the buckets by the GROUP BY keys (a chain: each stage
    # by its own keys, stage 2 told the batch extremes of stage 1's results).
    spread = spread_layout(checkpoint, True)
    # The general runtime's state in pieces of keys where its batches touch only their own keys
    # (runtime/keyed.py); a checkpoint of an earlier version keeps a bucket's state as one value.
    keyed = kept_layout(checkpoint, "keyed_state", True)
    # A windowed aggregation with no key: partial aggregates per bucket, merged per window (a
    # checkpoint of an earlier version keeps its one bucket).
    partial = kept_layout(checkpoint, "partial_aggregation", spread and not later)
    # ... its partial aggregates started per input partition, before the stateful stage (the
    # operator's state then holds merged partials: a checkpoint of an earlier version keeps its rows').
    pre = kept_layout(checkpoint, "pre_aggregation", partial)
    # ... and the merge of those partials on the driver, in foreachBatch, not in a Python stateful
    # operator (driver_state.py): one stage alone in its stream.
    on_driver = kept_layout(checkpoint, "driver_state", pre and not later and not beside)
    # min_by / max_by in the vectorised runtime (an earlier version's checkpoint holds them in
    # the general runtime's state, and keeps it).
    state_layout = {"keyed": keyed, "by_aggregates": kept_layout(checkpoint, "vectorised_min_max_by", True)}
    stateful = prepare_stateful(first, "streaming", buckets, bucket_ids, spread=spread, partial=partial,
                                pre_aggregate=pre)
    if not later and not beside:
        check_restart(checkpoint, query_text, stateful, plan_of)
    else:
        check_chain_restart(checkpoint, query_text)
    claim.commit()  # the checkpoint's identity in sqlwin.json, a marker naming it in each sink
    remember_source_schemas(checkpoint, read_schemas)
    control_dir = Path(checkpoint) / CONTROL
    control_dir.mkdir(parents=True, exist_ok=True)
    control = spark.readStream.schema("__bucket INT, __control STRING").json(str(control_dir))
    output, schema, _ = _window_operator(runner, stateful, query_text, control, **state_layout,
                                         driver=checkpoint if on_driver else None)
    settings = dict(buckets=buckets, bucket_ids=bucket_ids, spread=spread, partial=partial)
    if later:  # rows of the sources that did not convert are the first stage's rejected rows
        output, malformed = with_malformed(output, malformed, stateful, schema), {}
    output, schema, stateful, inners = _later_stages(runner, plan_of, query_text, stateful, output, schema, later,
                                                     control, settings, state_layout)
    output = with_malformed(output, malformed, stateful, schema)
    branches: list[Branch] = []
    if beside:  # each stage a branch over the same sources, its records tagged with its number, one union
        output, branches = _branches(runner, plan_of, query_text, Branch(stateful, {n: n for n in schema.names},
                                                                          tuple(inners)),
                                     output, around, beside, control, settings, state_layout)
    stages = [stage.query for stage in inners] + [stateful] + [
        query for branch in branches[1:] for query in (*(stage.query for stage in branch.inners), branch.query)]
    control_buckets = tuple(sorted({b for query in stages for b in (query.bucket_ids or range(query.bucket_count))}))
    handle = StreamingWindowQuery(None, sink, late_sink, checkpoint, buckets, stateful, stream_clock,
                                  control_buckets=control_buckets, read_twice=read_twice, inners=tuple(inners), run_id=run_id)
    handle.around, handle.branches = around, tuple(branches)
    handle.row_stages = row_stages([(branch.first, branch.inners[0].query if branch.inners else branch.query)
                                    for branch in branches] or [(1, inners[0].query if inners else stateful)])
    handle.bucket_stats = load_progress(checkpoint)
    check_source_count(checkpoint, output, query_text)
    writer = output.writeStream.foreachBatch(sink_writer(stateful, handle)) \
        .option("checkpointLocation", str(Path(checkpoint) / "spark")) \
        .queryName(query_name or stream_name(query_text, sink))  # the Spark UI's name for it
    if trigger:
        writer = writer.trigger(**trigger)
    handle.restart = writer.start  # a start whose Python worker did not connect back is made again (supervision)
    handle.query = writer.start()
    return handle


def _later_stages(runner: "SparkRunner", plan_of: t.Callable[[str], QueryPlan], query_text: str,
                  stateful: StatefulQuery, output: "DataFrame", schema, later: list[QueryPlan], control: "DataFrame",
                  settings: dict, state_layout: dict):
    """A chain's later stages over its first stage's records (`stateful`, `output`, `schema`): each a
    stateful operator over the stage before's results, which carries the earlier stages' late, rejected
    and stats records through. (the last stage's records, their schema, its query, the stages before it)"""
    inners: list[Stage] = []
    for later_plan in later:
        inners.append(Stage(stateful, stateful.carried_schema(schema)))
        view = f"{STAGE_VIEW}{uuid.uuid4().hex[:12]}"
        output.createOrReplaceTempView(f"{view}_records")
        typed = f"({stateful.typed_emissions_sql(f'{view}_records', carry=True)})"
        runner.sql(stateful.result_sql(typed, carry=True), query_text).drop("__batch", "__seq") \
            .createOrReplaceTempView(view)
        stage_plan = plan_of(outer_query(later_plan, view, {}))
        stateful = prepare_stateful(stage_plan, "streaming", settings["buckets"], settings["bucket_ids"], carry=True,
                                    spread=settings["spread"])
        output, schema, _ = _window_operator(runner, stateful, query_text, control, **state_layout)
    return output, schema, stateful, inners


def _branches(runner: "SparkRunner", plan_of: t.Callable[[str], QueryPlan], query_text: str, first: Branch,
              output: "DataFrame", around, beside: list[QueryPlan], control: "DataFrame", settings: dict,
              state_layout: dict):
    """Stages side by side in one stream: the first stage's records (`output`; `first` its branch) and a
    stateful branch per later stage over the same sources (a chain: its stages one after the other),
    each with the checkpoint's bucket ids and layout; every branch's record columns renamed apart
    (`Branch.columns`), tagged with its branch's index (STAGE_COLUMN) and unioned before the one sink,
    which splits them again. Each branch knows the number of its first stage (a chain takes one number
    per stage: stage_numbers)."""
    numbers = stage_numbers([part.plan for part in around.parts])
    branches = [first]
    tagged = output.withColumn(STAGE_COLUMN, F.lit(1))
    for index, plan in enumerate(beside, start=2):
        plan, later = unrolled(plan, plan_of)
        query = prepare_stateful(plan, "streaming", settings["buckets"], settings["bucket_ids"],
                                 spread=settings["spread"], partial=settings["partial"] and not later)
        records, branch_schema, _ = _window_operator(runner, query, query_text, control, **state_layout)
        records, branch_schema, query, inners = _later_stages(runner, plan_of, query_text, query, records,
                                                              branch_schema, later, control, settings, state_layout)
        columns = {name: branch_column(index, name) for name in branch_schema.names}
        records = records.select(*(F.col(name).alias(renamed) for name, renamed in columns.items()))
        tagged = tagged.unionByName(records.withColumn(STAGE_COLUMN, F.lit(index)), allowMissingColumns=True)
        branches.append(Branch(query, columns, tuple(inners), numbers[index - 1]))
    return tagged, branches


def _one_recorded_clock(where: "Position | None", query_text: str) -> SqlwinUnsupportedError:
    """Stages side by side in a stream, `where` the second that follows the recorded arrival times."""
    return SqlwinUnsupportedError(
        "Of stages side by side in a stream, one may follow the recorded arrival times (arrival_time): Spark keeps "
        "one event-time watermark for a stream, which is how an operator reads that clock, so a second stage's "
        "clock would move with the first one's rows", where,
        "the statement replayed (WITH (arrival_order = ...)), the stages in streams of their own, or the wall clock "
        "(no arrival_time): each stage's operator then keeps timers of its own", query=query_text)


def stream_name(query_text: str, sink: str) -> str:
    """The stream's name in the Spark UI (Structured Streaming tab) and StreamingQuery.name: the
    query's first words (comments left out) and its sink -- unique among running streams, as Spark
    wants, since one sink takes one stream."""
    import re

    words = " ".join(re.sub(r"--[^\n]*|/\*.*?\*/", " ", query_text, flags=re.S).split())
    return f"sqlwin: {words if len(words) <= 60 else words[:57] + '...'} -> {sink}"


def _window_operator(runner: "SparkRunner", stateful: StatefulQuery, query_text: str, control: "DataFrame",
                     keyed: bool = False, by_aggregates: bool = True, driver: str | None = None):
    """One stateful stage: the query's input rows packed, with the control rows, through the window
    runtime in transformWithStateInPandas. (records, their schema, the clock that drives timers)
    `keyed`, `by_aggregates`: the checkpoint's state layout (`kept_layout`). `driver`: the checkpoint,
    when its layout runs a pre-aggregated stage on the driver (driver_state.py): the records are then
    the packed partials, and the stage's DriverOperator is `stateful.driver`."""
    rows = runner.sql(stateful.input_sql(arrival=False), query_text)
    return window_operator(stateful, rows, rows.schema, control, keyed=keyed, by_aggregates=by_aggregates,
                           driver=driver)


def window_operator(stateful: StatefulQuery, rows: "DataFrame", row_schema, control: "DataFrame | None",
                    keyed: bool = False, by_aggregates: bool = True, driver: str | None = None):
    """`_window_operator` over input rows whose schema is known (`row_schema`): nothing here analyses a
    DataFrame, so a pipeline's flow function, which may not, builds its stream with it
    (sqlwin/spark/pipeline.py). `control`: the end-of-input rows (None: the input never ends)."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

    schema = record_schema(stateful, row_schema)  # (the same columns and types over partial aggregates)
    # PACKED_SCHEMA as a StructType: a DDL string is parsed by the server (over Spark Connect), an analysis
    packed_schema = StructType([StructField("__bucket", IntegerType()), StructField("__pack", LongType()),
                                StructField("__newest", LongType()), StructField("__blob", BinaryType())])
    config = stateful.config
    clock = stage_clock(stateful.relation.options, config.timers)
    pre = pre_aggregation(stateful, row_schema, clock, by_aggregates)
    packer = pack_rows
    if stateful.spread:  # every bucket is told the stream's batch extremes
        side = "__a0" if stateful.plan.join is not None else None
        packer = clock_packer(stateful.bucket_ids or range(stateful.bucket_count), config.key_count, side,
                              before=pre_aggregator(pre) if pre is not None else None)
    _known_schema(rows, row_schema)
    if pre is not None:  # the operator reads rows of partial aggregates, and merges them
        config, row_schema = pre.merged, pre_aggregated_schema(pre, row_schema)
    packed = rows.mapInArrow(packer, packed_schema).withColumn("__control", F.lit(None).cast(StringType()))
    operator_input = packed if control is None else packed.unionByName(control, allowMissingColumns=True)
    input_schema = StructType([*packed_schema.fields, StructField("__control", StringType())])
    time_mode = "None"
    if clock == "arrival":
        # Spark's watermark over the arrival times is the recorded clock the timers follow. Spark
        # drops rows at or before its watermark; rows of a later batch may carry the same arrival
        # time (a replay's still clock), so the column is shifted a day ahead and the watermark
        # delayed by the same day: the watermark is exactly the newest arrival time, and no row
        # is dropped unless it arrives a day behind the clock.
        operator_input = operator_input.withColumn(
            "__ptime_ts", F.timestamp_micros(F.col("__newest") + F.lit(ARRIVAL_SLACK_US))) \
            .withWatermark("__ptime_ts", "1 day")
        input_schema = input_schema.add(StructField("__ptime_ts", TimestampType()))
        time_mode = "EventTime"
    elif clock == "processing":
        time_mode = "ProcessingTime"
    _known_schema(operator_input, input_schema)
    choice = choose_runtime(config, row_schema, segmented_general=keyed, by_aggregates=by_aggregates)
    runtime_class = choice.runtime if choice.segmented else None
    processor = WindowProcessor(config, integral_flags(row_schema), clock, _tick_ms(config), input_schema.names,
                                row_schema.names, runtime_class, schema)
    if driver is not None and pre is not None:  # the few partial rows merged in foreachBatch, on the driver
        stateful.driver = DriverOperator(processor, schema, driver)
        return operator_input, schema, clock
    # Spark's driver unpickles the processor to plan the first micro-batch: the shell keeps that light.
    output = operator_input.groupBy("__bucket").transformWithStateInPandas(LazyProcessor(processor), schema,
                                                                           "Append", time_mode)
    return output, schema, clock


def pre_aggregation(stateful: StatefulQuery, row_schema, clock: str, by_aggregates: bool) -> PreAggregation | None:
    """How a stream's no-key partial aggregation is aggregated per input partition before its
    stateful stage (pre_aggregation.py), or None: not asked for (the checkpoint's layout), not
    exact for this query, or a runtime that does not count rows by their weight."""
    if not stateful.pre_aggregate or not stateful.spread or clock != "none":  # (its clock rows: the raw rows')
        return None
    pre = PreAggregation.of(stateful.config, integral_flags(row_schema))
    if pre is None:
        return None
    choice = choose_runtime(pre.merged, pre_aggregated_schema(pre, row_schema), by_aggregates=by_aggregates)
    return pre if choice.segmented and getattr(choice.runtime, "takes_weights", False) else None


def pre_aggregated_schema(pre: PreAggregation, row_schema):
    """The Spark schema of the rows of partial aggregates (pre_aggregator's columns): each partial
    typed as Spark types its aggregate."""
    from pyspark.sql.types import LongType, StructField, StructType

    types = {f.name: f.dataType for f in row_schema.fields}
    fields = [StructField(name, types[name], True) for name in pre.passed]
    fields += [StructField(layout.argument(j), aggregate_type(spec, types), True)
               for j, spec in enumerate(pre.config.aggregates)]
    return StructType([*fields, StructField(layout.WEIGHT, LongType(), False)])


def _known_schema(frame: "DataFrame", schema) -> None:
    """Tell a Spark Connect DataFrame its schema, known here: mapInArrow and transformWithStateInPandas
    ask for its columns, which would analyse the plan -- one more round trip, and refused in a
    pipeline's flow function (sqlwin/spark/pipeline.py). A classic DataFrame has no such cache."""
    if getattr(frame, "_cached_schema", False) is None:
        frame._cached_schema = schema


def explain_stream(runner: "SparkRunner", plan: "QueryPlan", buckets: int | None = None, alone: bool = True):
    """What `start_stream` runs, for explain: the clock, the buckets, the engine path and why, the
    Spark SQL around the operator. The tables the query names give the input's schema (a stream's
    source has the same columns); nothing is started and no checkpoint is written."""
    from sqlwin.spark.complete import LoweredQuery

    plan = rows_for_aggregates(plan, runner.planner)
    if plan.around is not None:
        plans = around_stages(plan, "streaming")
        stages = [explain_stream(runner, one, buckets, alone=len(plans) == 1) for one in plans]
        numbers = stage_numbers([part.plan for part in plan.around.parts])
        lines = [line for line in stage_lines([s.strategies for s in stages], numbers) if ", sink:" not in line]
        sink = [line for line in stages[0].strategies if line.startswith("sink:")]
        if len(plans) > 1:
            lines.append(f"stages: {len(plans)} stateful branches of one streaming query over the same sources, their "
                         "records tagged with their stage and unioned before the one sink (foreachBatch), which "
                         "splits them per stage: each stage's results, late and rejected rows (with `stage`) and "
                         "figures (status()['stages'])")
        return LoweredQuery(explained_sql(plan.around, [s.sql for s in stages], numbers).replace(
                                "-- then, over the stage", "-- then, per micro-batch, over the stage"),
                            [*lines, *(sink if len(plans) > 1 else []), describe_around(plan.around, "streaming")])
    if plan.propagation is not None:
        inner_plan = runner.planner(plan.propagation.inner_sql)
        inner = explain_stream(runner, inner_plan, buckets, alone=False)
        number = chain_stages(inner_plan, runner.planner) + 1
        earlier = [s for s in inner.strategies if not s.startswith("sink:")]
        if inner_plan.propagation is None:
            earlier = [f"stage 1: {s}" for s in earlier]
        return LoweredQuery(f"{inner.sql}\n  -- stage {number}, over stage {number - 1}'s results: {plan.sql}",
                            earlier + [_later_stage(plan, number)])
    probe = prepare_stateful(plan, "streaming", 1)
    probe_schema = runner.sql(probe.input_sql(arrival=False), plan.sql).schema
    check_input_types(probe, probe_schema)
    count = buckets or runner.shuffle_partitions
    stateful = prepare_stateful(plan, "streaming", count, spread=True, partial=True, pre_aggregate=True)
    input_sql = stateful.input_sql(arrival=False)
    rows = runner.sql(input_sql, plan.sql)
    config = stateful.config
    clock_kind = stage_clock(stateful.relation.options, config.timers)
    pre = pre_aggregation(stateful, rows.schema, clock_kind, True)
    choice = choose_runtime(config, rows.schema)
    engine = f"{choice.description}, {choice.storage}"
    if clock_kind == "arrival":
        clock = ("processing time read from the rows' arrival_time: Spark's event-time watermark over it "
                 "drives the timers (EventTime mode)")
    elif clock_kind == "processing":
        clock = "processing time from the wall clock: timers in ProcessingTime mode"
    else:
        clock = "no timers: windows close as event time (the watermark) moves with the rows"
    spread_note = (" by the GROUP BY keys; one clock for the stream: each input partition also sends every bucket "
                   "its batch's oldest and newest event time, so every bucket commits the stream's clock"
                   if stateful.spread else "")
    if stateful.partial_merge is not None:
        spread_note = (" by a hash of each row (no GROUP BY key): each bucket keeps partial aggregates of a window "
                       "and fires them when the stream's clock closes it (every bucket in the same micro-batch; "
                       "each input partition sends every bucket its batch's event-time extremes); per micro-batch "
                       "Spark SQL merges the partials of each window: "
                       + ", ".join(f"{sql} -> {merged}" for sql, merged in zip(stateful.aggregate_sql,
                                                                           stateful.partial_merge)))
        if pre is not None:
            length, offset = pre.pane
            spread_note += (f"; before that, each input partition aggregates its rows per bucket and pane of "
                            f"{interval_text(length)}" + (f" (offset {interval_text(offset)})" if offset else "")
                            + ": a pane's rows share their windows, so the operator "
                            "merges a few rows of partial aggregates a batch, each counted as the rows it stands "
                            "for (late rows too)")
    strategies = [
        (f"streaming: Structured Streaming; each micro-batch's rows packed per bucket (mapInArrow) into "
         f"{stateful.bucket_count} buckets (the session's shuffle partitions at the first start, kept by the "
         f"checkpoint){spread_note}" if stateful.bucket_count > 1 else
         "streaming: Structured Streaming; each micro-batch's rows packed (mapInArrow) into one bucket: one clock "
         "for the stream, which one operator call judges" + _one_bucket_reason(stateful)),
        (f"operator: on the driver, in the sink's foreachBatch: the micro-batch's few rows of partial aggregates "
         f"collected and merged through {engine}, the state a file per micro-batch in the checkpoint "
         f"(sqlwin-driver-state/<batch id>; no Python stateful operator, whose fixed cost is ~290 ms a micro-batch)"
         if alone and pre is not None and stateful.partial_merge is not None else
         f"operator: groupBy(bucket).transformWithStateInPandas through {engine}; RocksDB state in the checkpoint"),
        f"clock: {clock}",
        "sink: foreachBatch writes <sink>/batch_id=N/ (replaced when Spark re-runs a batch: exactly once)"
        + ("; late and rejected rows to <late sink>/batch_id=N/" if plan.late_into else ""),
    ]
    if plan.join is not None:
        strategies.insert(0, describe_join(plan.join))
    return LoweredQuery(f"{input_sql}\n  -- then, per micro-batch, over the operator's records: "
                        f"{stateful.result_sql('<records>')}", strategies)


def _one_bucket_reason(stateful: StatefulQuery) -> str:
    """Why a stream with one clock runs in one bucket."""
    if not stateful.key_sql:
        return " (no GROUP BY key to spread its rows by)"
    if not can_spread_clock(stateful.config.watermark):
        return (" (a 'min_event_time' clock or an idle timeout needs every row in one place: a late row must not "
                "lower the oldest time, and only the runtime knows which rows are late; an idle stream's clock jumps "
                "past the last open window of every key)")
    return ""


def _later_stage(plan: "QueryPlan", number: int) -> str:
    """Stage `number` (2 or more) of a chain: its window function over the stage before's results."""
    before = number - 1
    inherit = (f"its watermark follows stage {before}'s firings (watermark_strategy 'upstream')"
               if plan.propagation.inherit else "its own watermark over window_time")
    earlier = "stage 1's" if number == 2 else f"stages 1-{before}'s"
    outer = plan.propagation.outer
    if later_timers(plan):
        inherit += (f"; it follows the wall clock at which stage {before}'s results reach it, on timers of its own "
                    "(ProcessingTime mode)")
    return (f"stage {number}: {outer.function} over stage {before}'s results (window propagation), "
            "another transformWithStateInPandas in the same stream, its rows spread over the buckets by its own "
            f"GROUP BY keys where it has some, every bucket told the batch extremes of stage {before}'s results; "
            f"{inherit}; its results go to the sink, and {earlier} late, rejected and progress records pass "
            f"through it unchanged (to the late sink, with their stage)")


def _tick_ms(config: OperatorConfig) -> int:
    """How often wall-clock timers wake a bucket: often enough for the query's shortest duration."""
    candidates = [config.watermark.idle_timeout, config.emit.early_interval, config.emit.late_interval,
                  getattr(config.windower, "slide", None), getattr(config.windower, "step", None)]
    shortest = min([c // 1000 for c in candidates if c], default=1000)
    return max(100, min(1000, shortest))

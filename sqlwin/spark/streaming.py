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
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import typing as t
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import functions as F

from sqlwin.errors import SqlwinError, SqlwinUnsupportedError, SqlwinUsageError
from sqlwin.spark.around import describe as describe_around, outer_frame, rows_for_aggregates, stage_plan as around_stage
from sqlwin.spark.connect import is_connect
from sqlwin.spark.operator import (CARRIED, END_OF_INPUT, OperatorConfig, choose_runtime, clock_packer,
                                   pack_rows)
from sqlwin.spark.replay import integral_flags, record_schema
from sqlwin.spark.processor import WindowProcessor
from sqlwin.spark.stateful import (STAGE_VIEW, UPSTREAM_ROW, StatefulQuery, can_spread_clock, chain_late,
                                   check_input_types, prepare_stateful)
from sqlwin.outputs import claim_sinks, read_metadata, write_json
from sqlwin.spark import supervision
from sqlwin.sql.joins import describe_join
from sqlwin.spark.propagation import outer_query
from sqlwin.sql.plan import describe_emit, describe_time, describe_watermark, describe_windower
from sqlwin.sql.text import JSON_OPTIONS, quote_identifier

SOURCE_VIEW = "__sqlwin_source_"  # a stream's source is read through a view of this prefix, not its name

if t.TYPE_CHECKING:
    from sqlwin.sql.around import Around
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery

    from sqlwin.spark.runner import SparkRunner
    from sqlwin.sql.plan import QueryPlan

ARRIVAL_SLACK_US = 86_400_000_000  # see start_stream: the arrival clock's watermark
METADATA = "sqlwin.json"  # in the checkpoint: what a restart must keep (bucket count, query)


# --------------------------------------------------------------------------- the handle


@dataclass
class StreamingWindowQuery:
    """A running sqlwin stream: Spark's StreamingQuery plus where its results go."""

    query: "StreamingQuery"
    sink: str
    late_sink: str | None
    checkpoint: str
    buckets: int
    stateful: StatefulQuery
    clock: str = "none"  # 'none' | 'arrival' (recorded arrival_time) | 'processing' (wall clock)
    batches: list[dict] = field(default_factory=list)  # per micro-batch: rows out, late rows
    bucket_stats: dict = field(default_factory=dict)  # bucket -> its figures (operator.stats_record)
    result_schema: t.Any = None  # StructType of the sink's rows, known after the first batch
    late_schema: t.Any = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # this start of the stream
    _records: dict = field(default_factory=dict, repr=False)  # batch record files read so far, by name
    control_buckets: tuple = ()  # the bucket ids every stage of the stream has (end of input reaches each)
    read_twice: tuple = ()  # directories read by two branches, good and malformed rows (_read_directory)
    inner: "Stage | None" = None  # a chain's first stage (its records reach the sink carried)
    restart: t.Any = field(default=None, repr=False)  # starts the query again (supervision: a failed worker start)
    supervisor: t.Any = field(default=None, repr=False)  # supervision.Supervisor: the checkpoint's lock, restarts
    around: "Around | None" = None  # SQL around the window functions, run per micro-batch (spark/around.py)

    def refresh(self) -> None:
        """What the sink writer recorded, read back from the checkpoint. The writer runs where
        Spark runs foreachBatch -- this process, or a Spark Connect server's -- so the figures
        travel through the checkpoint either way: one path for both."""
        self.bucket_stats = _load_progress(self.checkpoint)
        batches = _load_batches(self.checkpoint, self.run_id, self._records)
        if batches:
            self.batches = [{k: v for k, v in b.items() if not k.endswith("_schema")} for b in batches]
            from pyspark.sql.types import StructType

            for name in ("result_schema", "late_schema"):
                known = [b[name] for b in batches if b.get(name)]
                if known:
                    setattr(self, name, StructType.fromJson(json.loads(known[-1])))

    def batch_progress(self, after: int = -1) -> list[dict]:
        """This run's micro-batches after batch `after`, oldest first, each with its own figures as
        the sink writer recorded them when it had written the batch: `rows_in` (rows the batch took
        in), `results`, `late_rows`, `rejected_rows` (NULL key or time, malformed), `late` (rows
        written to the late sink), and the stream after it: `watermark` (the lowest .. highest
        watermark over the keys, in the time column's unit), `keys`, `open_windows`."""
        self.refresh()
        return [b for b in self.batches if b["batch"] > after]

    def batch_figures(self, rows_before: int, kinds: dict[str, int]) -> dict:
        """A micro-batch's own figures (see batch_progress), in the sink writer once the batch's stats
        are kept: `rows_before` is the stream's rows before it (`_total("rows")`)."""
        return {"rows_in": self._total("rows") - rows_before, "late_rows": kinds["late"],
                "rejected_rows": kinds["rejected"],
                "watermark": _watermark_range(self.bucket_stats.values(), self.stateful),
                "keys": self._total("keys"), "open_windows": self._total("open_windows")}

    def process_all_available(self, timeout_s: float = 600.0) -> None:
        """Block until every row available now is processed. A stream that failed raises its
        failure (in sqlwin's words when it has them: a directory that cannot be written, a Python
        worker that did not connect back after every attempt to start again)."""
        while True:
            try:
                return self._process_available(timeout_s)
            except Exception as err:  # noqa: BLE001 - said again in sqlwin's words, or raised as it is
                self._recover_or_raise(err)

    def await_termination(self, timeout_s: float | None = None) -> bool | None:
        """Spark's awaitTermination, with the failure raised as `process_all_available` raises it."""
        while True:
            try:
                return self.query.awaitTermination() if timeout_s is None else self.query.awaitTermination(timeout_s)
            except Exception as err:  # noqa: BLE001
                self._recover_or_raise(err)

    def _recover_or_raise(self, err: Exception) -> None:
        """Return when the supervisor started the query again (Spark's Python worker did not connect
        back); else raise the failure, in sqlwin's words when it has them."""
        if self.supervisor is not None and self.supervisor.keep_running():
            return
        failure = supervision.stream_failure(err, self.supervisor.attempts if self.supervisor else None)
        if failure is None:
            raise err
        raise failure from err

    def _process_available(self, timeout_s: float) -> None:
        """With wall-clock timers Spark keeps running timer batches, so `processAllAvailable`
        never returns: wait instead until the source has no data left and no trigger runs."""
        if self.clock != "processing":
            self.query.processAllAvailable()
            self.refresh()
            return
        import time

        deadline = time.monotonic() + timeout_s
        quiet = 0
        while time.monotonic() < deadline:
            status = self.query.status
            if not self.query.isActive:
                self.query.awaitTermination()  # raises the query's failure
                return
            quiet = quiet + 1 if not status["isDataAvailable"] and not status["isTriggerActive"] else 0
            if quiet >= 3:
                self.refresh()
                return
            time.sleep(0.2)

    def end_input(self) -> None:
        """The stream has ended: close every window (BW-12), as a replay does at the end of its table."""
        control = Path(self.checkpoint) / "sqlwin-control"
        rows = [{"__bucket": b, "__control": END_OF_INPUT} for b in self.control_buckets or self.stateful.bucket_ids]
        path = control / f"end-{uuid.uuid4().hex}.json"
        tmp = control / f".{path.name}.tmp"
        tmp.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        os.replace(tmp, path)
        self.process_all_available()

    def stop(self) -> None:
        """Stop the stream and release its checkpoint (restart later from the same checkpoint)."""
        try:
            self.query.stop()
        finally:
            if self.supervisor is not None:
                self.supervisor.stop()

    @property
    def is_active(self) -> bool:
        if self.supervisor is not None:
            self.supervisor.keep_running()  # a start whose Python worker did not connect back: again
        return self.query.isActive

    def status(self, progress: dict | None = None) -> dict:
        """Figures for a progress line: rows/s, watermark, open state, late rows. `progress`: one
        of Spark's progress reports (`query.recentProgress`) for that batch's own figures (rows
        in, rows/s, watermark, state); the stream's figures are as of now. Default: the last."""
        self.refresh()
        progress = progress if progress is not None else (self.query.lastProgress or {})
        state = (progress.get("stateOperators") or [{}])[0]
        rows_in = _input_rows(progress, self.read_twice)
        seconds = ((progress.get("durationMs") or {}).get("triggerExecution") or 0) / 1000
        return {
            "batch": progress.get("batchId"),
            "input_rows": rows_in,
            "rows_per_second": rows_in / seconds if seconds else 0.0,
            "watermark": (progress.get("eventTime") or {}).get("watermark"),
            "state_rows": state.get("numRowsTotal"),
            "state_bytes": state.get("memoryUsedBytes"),
            "results": sum(b["results"] for b in self.batches),
            "keys": self._total("keys"),
            "open_windows": self._total("open_windows"),
            "key_watermarks": _watermark_range(self.bucket_stats.values(), self.stateful),
            "late_rows": self._total("late"),
            "rejected_rows": self._total("rejected"),  # NULL key or time, malformed: routed with LATE ROWS INTO
            "rows": self._total("rows"),  # rows in = rows in windows + late rows + rejected rows
            "stages": self.stage_figures(),
        }

    def _total(self, figure: str, stage: int | None = None) -> int:
        """A figure summed over the buckets (of one `stage` of a chain): the stream's whole life,
        restarts included. A chain's rows are its first stage's (the second's are its results)."""
        entries = [s for b, s in self.bucket_stats.items() if stage is None or s.get("stage", 1) == stage]
        if figure != "rows":
            return sum(s.get(figure) or 0 for s in entries)
        # Every row taken in: a bucket's rows (those it accepted) and those it rejected (NULL key or
        # time); the sources' entry counts its malformed rows once, as rows and as rejected.
        return sum((s.get("rows") or 0) + (0 if b == SOURCES else s.get("rejected") or 0)
                   for b, s in self.bucket_stats.items() if s.get("stage") != 2)

    def stage_figures(self) -> dict[int, dict[str, int]] | None:
        """A chain's late and rejected rows per stage (1: its source's rows, 2: the first stage's
        results); None for one stage. Rows of a source that did not convert are stage 1's."""
        if self.inner is None:
            return None
        return {stage: {"late": self._total("late", stage), "rejected": self._total("rejected", stage)}
                for stage in (1, 2)}


def _input_rows(progress: dict, read_twice: tuple[str, ...]) -> int:
    """The rows a batch read. A CSV / JSON directory whose malformed rows are routed is scanned by
    two branches (`_read_directory`) and Spark counts each of its rows twice (its progress has
    one source, FileStreamSource[file:<directory>], with twice the rows): such a source is halved."""
    sources = progress.get("sources") or []
    if not sources:
        return progress.get("numInputRows", 0) or 0
    total = 0
    for source in sources:
        rows = int(source.get("numInputRows") or 0)
        described = source.get("description") or ""
        total += rows // 2 if any(described.endswith(f"{path}]") for path in read_twice) else rows
    return total


def _watermark_range(stats, stateful: StatefulQuery) -> str | None:
    """The lowest and highest watermark over the keys, in the time column's own unit."""
    lows = [s["watermark_low"] for s in stats if s.get("watermark_low") is not None]
    highs = [s["watermark_high"] for s in stats if s.get("watermark_high") is not None]
    if not lows:
        return None
    import datetime as dt

    def show(micros: int) -> str:
        if stateful._epoch_ms:
            return str(micros // 1000)
        try:
            return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)).isoformat(sep=" ")
        except OverflowError:  # an unbounded delay: a watermark before year 1 (or past 9999)
            return "before 0001-01-01" if micros < 0 else "after 9999-12-31"

    return f"{show(min(lows))} .. {show(max(highs))}"


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
    schemas = _stored(checkpoint).get("source_schemas") or {}
    malformed: dict[str, "DataFrame"] = {}  # source's view -> its rows with a value that did not convert
    read_schemas: dict[str, str] = {}
    for name, source in sources.items():
        if isinstance(source, (str, os.PathLike)):
            frame, bad, schema = _read_directory(spark, str(source), source_format, source_options or {},
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
    around = None
    if plan.around is not None:  # SQL around the window functions: per micro-batch over the stage's results
        around = plan.around
        plan = around_stage(plan, "streaming", views.values())
    upstream = None
    if plan.propagation is not None:
        # AP-11: the inner windowed aggregation is the first stateful stage of the same stream; its
        # results, as a view, are the outer query's input, the second stage.
        upstream = plan_of(plan.propagation.inner_sql)
        if upstream.propagation is not None or upstream.aggregation is None:
            prepare_stateful(upstream, "streaming", 1)  # says why the inner query cannot run
            raise SqlwinUnsupportedError("A stream chains two windowed aggregations, not more",
                                         plan.propagation.outer.position, query=query_text)
        # The first stage's late and rejected rows go where the query sends its own (LATE ROWS INTO).
        upstream = dataclasses.replace(upstream, late_into=plan.late_into)
    first = upstream if upstream is not None else plan
    # A query a stream refuses is refused before anything is written into the checkpoint.
    probe = prepare_stateful(first, "streaming", 1)
    probe_schema = runner.sql(probe.input_sql(arrival=False), query_text).schema
    check_input_types(probe, probe_schema)
    bucket_ids = _bucket_layout(spark, checkpoint, query_text, buckets)
    buckets = len(bucket_ids)
    # One clock for the stream: spread over the buckets by the GROUP BY keys (a chain: each stage
    # by its own keys, stage 2 told the batch extremes of stage 1's results).
    spread = _spread_layout(checkpoint, True)
    # The general runtime's state in pieces of keys where its batches touch only their own keys
    # (runtime/keyed.py); a checkpoint of an earlier version keeps a bucket's state as one value.
    keyed = _kept_layout(checkpoint, "keyed_state", True)
    # A windowed aggregation with no key: partial aggregates per bucket, merged per window (a
    # checkpoint of an earlier version keeps its one bucket).
    partial = _kept_layout(checkpoint, "partial_aggregation", spread and upstream is None)
    # min_by / max_by in the vectorised runtime (an earlier version's checkpoint holds them in
    # the general runtime's state, and keeps it).
    layout = {"keyed": keyed, "by_aggregates": _kept_layout(checkpoint, "vectorised_min_max_by", True)}
    stateful = prepare_stateful(first, "streaming", buckets, bucket_ids, spread=spread, partial=partial)
    if upstream is None:
        _check_restart(checkpoint, query_text, stateful, plan_of)
    else:
        _check_chain_restart(checkpoint, query_text)
    claim.commit()  # the checkpoint's identity in sqlwin.json, a marker naming it in each sink
    _remember_source_schemas(checkpoint, read_schemas)
    control_dir = Path(checkpoint) / "sqlwin-control"
    control_dir.mkdir(parents=True, exist_ok=True)
    control = spark.readStream.schema("__bucket INT, __control STRING").json(str(control_dir))
    output, schema, clock = _window_operator(runner, stateful, query_text, control, **layout)
    control_buckets = tuple(stateful.bucket_ids or range(stateful.bucket_count))
    inner = None
    if upstream is not None:
        if clock != "none":
            raise SqlwinUnsupportedError(
                "A stream of two chained windowed aggregations follows event time only", first.windows[0].position,
                "event-time windows and EMIT without intervals in the inner query", query=query_text)
        # Rows of the sources that did not convert are the first stage's rejected rows.
        output = _with_malformed(output, malformed, stateful, schema)
        malformed = {}
        inner = Stage(stateful, stateful.carried_schema(schema))
        view = f"{STAGE_VIEW}{uuid.uuid4().hex[:12]}"
        output.createOrReplaceTempView(f"{view}_records")
        typed = f"({stateful.typed_emissions_sql(f'{view}_records', carry=True)})"
        runner.sql(stateful.result_sql(typed, carry=True), query_text).drop("__batch", "__seq") \
            .createOrReplaceTempView(view)
        outer = plan_of(outer_query(plan, view, {}))
        stateful = prepare_stateful(outer, "streaming", buckets, bucket_ids, carry=True, spread=spread)
        output, schema, clock = _window_operator(runner, stateful, query_text, control, **layout)
        control_buckets = tuple(sorted(set(control_buckets) | set(stateful.bucket_ids or range(stateful.bucket_count))))
        if clock != "none":
            raise SqlwinUnsupportedError(
                "A stream of two chained windowed aggregations follows event time only", outer.windows[0].position,
                "event-time windows and EMIT without intervals in the outer query", query=query_text)
    output = _with_malformed(output, malformed, stateful, schema)
    handle = StreamingWindowQuery(None, sink, late_sink, checkpoint, buckets, stateful, clock,
                                  control_buckets=control_buckets, read_twice=read_twice, inner=inner, run_id=run_id)
    handle.around = around
    handle.bucket_stats = _load_progress(checkpoint)
    writer = output.writeStream.foreachBatch(_sink_writer(stateful, handle)) \
        .option("checkpointLocation", str(Path(checkpoint) / "spark")) \
        .queryName(query_name or stream_name(query_text, sink))  # the Spark UI's name for it
    if trigger:
        writer = writer.trigger(**trigger)
    handle.restart = writer.start  # a start whose Python worker did not connect back is made again (supervision)
    handle.query = writer.start()
    return handle


def stream_name(query_text: str, sink: str) -> str:
    """The stream's name in the Spark UI (Structured Streaming tab) and StreamingQuery.name: the
    query's first words (comments left out) and its sink -- unique among running streams, as Spark
    wants, since one sink takes one stream."""
    import re

    words = " ".join(re.sub(r"--[^\n]*|/\*.*?\*/", " ", query_text, flags=re.S).split())
    return f"sqlwin: {words if len(words) <= 60 else words[:57] + '...'} -> {sink}"


def _with_malformed(output: "DataFrame", malformed: dict[str, "DataFrame"], stateful: StatefulQuery,
                    schema) -> "DataFrame":
    """The operator's records with the sources' rows that did not convert, as rejected rows: of
    every directory source (a join's sides, a chain's input), counted and routed, each with its own
    columns where the operator reads that source (a join: on its side)."""
    for name, bad in malformed.items():
        output = output.unionByName(_malformed_records(bad, stateful, schema, name))
    return output


@dataclass
class Stage:
    """A chain's first stage, as its sink writer sees it: its records come carried (JSON) in the
    second stage's records, in this schema."""

    query: StatefulQuery
    carried_schema: t.Any


def _window_operator(runner: "SparkRunner", stateful: StatefulQuery, query_text: str, control: "DataFrame",
                     keyed: bool = False, by_aggregates: bool = True):
    """One stateful stage: the query's input rows packed, with the control rows, through the window
    runtime in transformWithStateInPandas. (records, their schema, the clock that drives timers)
    `keyed`, `by_aggregates`: the checkpoint's state layout (`_kept_layout`)."""
    rows = runner.sql(stateful.input_sql(arrival=False), query_text)
    return window_operator(stateful, rows, rows.schema, control, keyed=keyed, by_aggregates=by_aggregates)


def window_operator(stateful: StatefulQuery, rows: "DataFrame", row_schema, control: "DataFrame | None",
                    keyed: bool = False, by_aggregates: bool = True):
    """`_window_operator` over input rows whose schema is known (`row_schema`): nothing here analyses a
    DataFrame, so a pipeline's flow function, which may not, builds its stream with it
    (sqlwin/spark/pipeline.py). `control`: the end-of-input rows (None: the input never ends)."""
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

    schema = record_schema(stateful, row_schema)
    # PACKED_SCHEMA as a StructType: a DDL string is parsed by the server (over Spark Connect), an analysis
    packed_schema = StructType([StructField("__bucket", IntegerType()), StructField("__pack", LongType()),
                                StructField("__newest", LongType()), StructField("__blob", BinaryType())])
    config = stateful.config
    clock = "arrival" if stateful.relation.options.get("arrival_time") else (
        "processing" if config.timers else "none")
    packer = pack_rows
    if stateful.spread:  # every bucket is told the stream's batch extremes
        side = "__a0" if stateful.plan.join is not None else None
        packer = clock_packer(stateful.bucket_ids or range(stateful.bucket_count), config.key_count, side)
    _known_schema(rows, row_schema)
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
    output = operator_input.groupBy("__bucket").transformWithStateInPandas(processor, schema, "Append", time_mode)
    return output, schema, clock


def _known_schema(frame: "DataFrame", schema) -> None:
    """Tell a Spark Connect DataFrame its schema, known here: mapInArrow and transformWithStateInPandas
    ask for its columns, which would analyse the plan -- one more round trip, and refused in a
    pipeline's flow function (sqlwin/spark/pipeline.py). A classic DataFrame has no such cache."""
    if getattr(frame, "_cached_schema", False) is None:
        frame._cached_schema = schema


def explain_stream(runner: "SparkRunner", plan: "QueryPlan", buckets: int | None = None):
    """What `start_stream` runs, for explain: the clock, the buckets, the engine path and why, the
    Spark SQL around the operator. The tables the query names give the input's schema (a stream's
    source has the same columns); nothing is started and no checkpoint is written."""
    from sqlwin.spark.complete import LoweredQuery

    plan = rows_for_aggregates(plan, runner.planner)
    if plan.around is not None:
        stage = explain_stream(runner, around_stage(plan, "streaming"), buckets)
        return LoweredQuery(f"{stage.sql}\n  -- then, per micro-batch, over the stage's results: "
                            f"{plan.around.outer_sql('<stage>')}",
                            [*stage.strategies, describe_around(plan.around, "streaming")])
    if plan.propagation is not None:
        inner = explain_stream(runner, runner.planner(plan.propagation.inner_sql), buckets)
        return LoweredQuery(f"{inner.sql}\n  -- stage 2, over stage 1's results: {plan.sql}",
                            [f"stage 1: {s}" for s in inner.strategies if not s.startswith("sink:")]
                            + [_second_stage(plan)])
    probe = prepare_stateful(plan, "streaming", 1)
    probe_schema = runner.sql(probe.input_sql(arrival=False), plan.sql).schema
    check_input_types(probe, probe_schema)
    count = buckets or runner.shuffle_partitions
    stateful = prepare_stateful(plan, "streaming", count, spread=True, partial=True)
    input_sql = stateful.input_sql(arrival=False)
    rows = runner.sql(input_sql, plan.sql)
    config = stateful.config
    choice = choose_runtime(config, rows.schema)
    engine = f"{choice.description}, {choice.storage}"
    if stateful.relation.options.get("arrival_time"):
        clock = ("processing time read from the rows' arrival_time: Spark's event-time watermark over it "
                 "drives the timers (EventTime mode)")
    elif config.timers:
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
    strategies = [
        (f"streaming: Structured Streaming; each micro-batch's rows packed per bucket (mapInArrow) into "
         f"{stateful.bucket_count} buckets (the session's shuffle partitions at the first start, kept by the "
         f"checkpoint){spread_note}" if stateful.bucket_count > 1 else
         "streaming: Structured Streaming; each micro-batch's rows packed (mapInArrow) into one bucket: one clock "
         "for the stream, which one operator call judges" + _one_bucket_reason(stateful)),
        f"operator: groupBy(bucket).transformWithStateInPandas through {engine}; RocksDB state in the checkpoint",
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


def _second_stage(plan: "QueryPlan") -> str:
    inherit = ("its watermark follows stage 1's firings (watermark_strategy 'upstream')"
               if plan.propagation.inherit else "its own watermark over window_time")
    return (f"stage 2: {plan.propagation.outer.function} over stage 1's results (window propagation), a second "
            "transformWithStateInPandas in the same stream, its rows spread over the buckets by its own GROUP BY "
            f"keys where it has some, every bucket told the batch extremes of stage 1's results; {inherit}; its "
            "results go to the sink, and stage 1's late, rejected and progress records pass through it unchanged "
            "(to the late sink, stage 1)")


def _sink_writer(stateful: StatefulQuery, handle: StreamingWindowQuery):
    """foreachBatch: project one micro-batch of records into the result and late sinks.

    One Spark job per batch: the operator's records flow straight into the result file, and an
    Observation gathers, on the way, each bucket's stats record and how many records of each
    kind there are (no separate pass, no cache). With a late sink and late or rejected rows, the
    records are cached and a second job writes those. Over Spark Connect a write reports no
    observed metrics: there the records are cached and one more job counts them. No global sort
    (one output file, sorted within it by emission order) and no count job (the written file's
    footer says how many rows).
    """

    def write(records_df: "DataFrame", batch_id: int) -> None:
        from pyspark.sql import Observation

        spark = records_df.sparkSession
        observation = Observation(f"sqlwin_{uuid.uuid4().hex}") if not is_connect(spark) else None
        if observation is not None:
            records_df = records_df.observe(observation, *_summary_columns())
        # read twice (the late rows; the SQL around the windows may read the results twice): computed once
        cached = bool(handle.late_sink) or observation is None or handle.around is not None
        if cached:
            records_df = records_df.persist()
        name = f"__sqlwin_batch_{uuid.uuid4().hex[:12]}"
        try:
            records_df.createOrReplaceTempView(name)
            typed = f"({stateful.typed_emissions_sql(name)})"
            result = spark.sql(stateful.result_sql(typed)).drop("__batch")
            order = "__seq"
            if handle.around is not None:  # the SQL around the windows, over this batch's results
                result, order = outer_frame(spark, handle.around, result), None
            handle.result_schema = result.drop("__seq").schema
            written = _write_batch(result, handle.sink, batch_id, order=order, shuffle=not cached)
            summary = observation.get if observation is not None else \
                records_df.agg(*_summary_columns()).first().asDict()
            rows_before = handle._total("rows")
            kinds = _summarise(summary, handle, batch_id)
            _save_progress(handle.checkpoint, handle.bucket_stats)
            late = 0
            if handle.late_sink:
                late_rows = _late_rows(spark, stateful, handle.inner, name).drop("__batch")
                handle.late_schema = late_rows.schema
                late = _write_batch(late_rows, handle.late_sink, batch_id,
                                    records=kinds["late"] + kinds["rejected"])
            figures = {"batch": batch_id, "results": written, "late": late,
                       **handle.batch_figures(rows_before, kinds)}
            handle.batches.append(figures)
            _save_batch(handle, {**figures,
                                 "result_schema": handle.result_schema.json() if handle.result_schema else None,
                                 "late_schema": handle.late_schema.json() if handle.late_schema else None})
        finally:
            spark.catalog.dropTempView(name)
            if cached:
                records_df.unpersist()

    return supervision.guard_writer(write, handle)  # the checkpoint's lock kept; an unwritable directory named


_KINDS = ("emit", "late", "rejected")


def _late_rows(spark, stateful: StatefulQuery, inner: Stage | None, records: str) -> "DataFrame":
    """A batch's late and rejected rows (`records`: its records' view). A chain's are both stages':
    the first stage's (carried through the second as JSON) with its source's columns, the second's
    with the first stage's result row as one struct column, each with the stage that judged it."""
    if inner is None:
        return spark.sql(stateful.late_sql(records))
    carried = spark.table(records).where(F.col("__kind") == CARRIED) \
        .select(F.from_json("__stats", inner.carried_schema, JSON_OPTIONS).alias("__p"), "__batch") \
        .select("__p.*", "__batch")
    view = f"{records}_stage1"
    carried.createOrReplaceTempView(view)
    try:  # a DataFrame keeps the plan it was analysed with: the view may go at once
        first = spark.sql(inner.query.late_sql(view))
        second = spark.sql(stateful.late_sql(records, row_struct=UPSTREAM_ROW))
        return chain_late(first, second)
    finally:
        spark.catalog.dropTempView(view)


def _summary_columns() -> list:
    """What the sink writer observes of a batch's records: the stats records, a count per kind.
    A chain's first stage's records come carried (JSON) through its second: counted by their own
    kind, its stats apart."""
    carried = F.col("__kind") == CARRIED
    kind = F.when(carried, F.get_json_object("__stats", "$.__kind")).otherwise(F.col("__kind"))
    reason = F.when(carried, F.get_json_object("__stats", "$.__reason")).otherwise(F.col("__reason"))
    return [F.collect_list(F.when(F.col("__kind") == "stats", F.col("__stats"))).alias("stats"),
            F.collect_list(F.when(carried & (kind == "stats"), F.get_json_object("__stats", "$.__stats")))
            .alias("stage1_stats"),
            *(F.count_if(kind == k).alias(k) for k in _KINDS),
            F.count_if(reason == MALFORMED).alias(MALFORMED)]


def _summarise(summary: dict, handle: StreamingWindowQuery, batch_id: int) -> dict[str, int]:
    """Keep each bucket's stats record; how many records of each other kind the batch had.

    Rows that did not convert never reach a bucket: the sources' own entry (SOURCES) counts them,
    once per batch id, so a batch Spark runs again after a failure does not count them twice.
    A chain's stages share bucket ids: the first stage's buckets are kept as "1:<bucket>", and
    each entry says its stage."""
    chain = handle.inner is not None
    for text in summary.get("stats") or []:
        figures = json.loads(text)
        if chain:
            figures["stage"] = 2
        handle.bucket_stats[figures.pop("bucket")] = figures
    for text in summary.get("stage1_stats") or []:
        figures = json.loads(text)
        handle.bucket_stats[f"1:{figures.pop('bucket')}"] = {**figures, "stage": 1}
    bad = int(summary.get(MALFORMED) or 0)
    sources = handle.bucket_stats.setdefault(SOURCES, {"rejected": 0, "rows": 0, "last_batch": -1})
    if bad and batch_id > sources["last_batch"]:
        sources["rejected"] += bad
        sources["rows"] += bad
        sources["last_batch"] = batch_id
    return {kind: int(summary.get(kind) or 0) for kind in _KINDS}


SOURCES = -1  # bucket_stats' entry for what the sources rejected before any bucket (malformed rows)


PROGRESS = "sqlwin-progress.json"  # in the checkpoint: each bucket's latest figures


def _load_progress(checkpoint: str) -> dict:
    """The buckets' figures as the last batch left them: a restart reports the whole stream at
    once, not only the buckets its first batches touch. Progress only: never read for results."""
    try:
        stored = json.loads((Path(checkpoint) / PROGRESS).read_text())
    except (OSError, ValueError):
        return {}
    return {int(bucket) if bucket.lstrip("-").isdigit() else bucket: figures for bucket, figures in stored.items()}


def _save_progress(checkpoint: str, stats: dict) -> None:
    path = Path(checkpoint) / PROGRESS
    tmp = path.with_name(f".{PROGRESS}.tmp")
    tmp.write_text(json.dumps({str(bucket): figures for bucket, figures in stats.items()}))
    os.replace(tmp, path)


BATCHES = "sqlwin-batches"  # in the checkpoint: what each run's sink writer wrote, per batch


def _save_batch(handle: StreamingWindowQuery, record: dict) -> None:
    folder = Path(handle.checkpoint) / BATCHES
    folder.mkdir(exist_ok=True)
    path = folder / f"{handle.run_id}-{record['batch']:012d}.json"
    tmp = folder / f".{path.name}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)  # a re-run of the batch replaces its record
    if record["batch"] % RECORDS_KEPT == 0:
        _prune_batch_records(folder, record["batch"] - RECORDS_KEPT)


RECORDS_KEPT = 100  # batch records kept in the checkpoint, as Spark keeps 100 batches of its own logs


def _prune_batch_records(folder: Path, below: int) -> None:
    """Delete the batch records of batches before `below`: a long stream's checkpoint must not
    grow a file per batch for ever (measured: 200 records after 200 batches, before). The
    records are progress figures, read by status polls soon after each batch."""
    for old in folder.glob("*.json"):
        try:
            if int(old.stem.rsplit("-", 1)[1]) < below:
                old.unlink()
        except (ValueError, IndexError, OSError):
            continue


def _load_batches(checkpoint: str, run_id: str, known: dict) -> list[dict]:
    """This run's batch records in batch order; `known` (name -> record) keeps those read
    before, so a status poll reads only the batches written since."""
    folder = Path(checkpoint) / BATCHES
    for path in folder.glob(f"{run_id}-*.json") if folder.exists() else []:
        if path.name not in known:
            try:
                known[path.name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
    return [known[name] for name in sorted(known)]


def _write_batch(frame: "DataFrame", sink: str, batch_id: int, records: int | None = None,
                 order: str | None = None, shuffle: bool = False) -> int:
    """Write (or replace) `sink/batch_id=N/` as one parquet file; how many rows it holds.

    `records`: how many operator records feed `frame`, when known -- none means nothing to write
    (and a re-run of the batch that now emits nothing removes what the first run wrote).
    `shuffle`: `frame` is computed here, not read from a cache: one file through an exchange, so
    the operator upstream keeps its parallelism (coalesce(1) would run it as one task).
    """
    target = Path(sink) / f"batch_id={batch_id}"
    if records is None or records:
        one_file = frame.repartition(1) if shuffle else frame.coalesce(1)
        if order:
            one_file = one_file.sortWithinPartitions(order).drop(order)
        one_file.write.mode("overwrite").parquet(str(target))
        count = _parquet_rows(target)
        if count:
            return count
    if target.exists():
        shutil.rmtree(target)
    return 0


def _parquet_rows(directory: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(part).metadata.num_rows for part in directory.glob("*.parquet"))


CORRUPT = "_corrupt_record"  # Spark's column for a CSV / JSON line with a value that did not convert
MALFORMED = "malformed"  # the reason such a row is rejected with


def _read_directory(spark, path: str, source_format: str, options: dict[str, str],
                    stored_schema: str | None = None):
    """A directory of files as a streaming source: (the stream of good rows, the stream of rows
    with a value that did not convert or None, the schema).

    The schema is the one the checkpoint stored at the stream's first start (`stored_schema`),
    else what the files there now give: a file that arrives later with other types cannot change
    it, so a restart reads the stream as it was read before. CSV and JSON are read PERMISSIVE
    with Spark's corrupt-record column: a row with a value that does not convert is not windowed
    with NULLs in it but routed, whole, to the rejected rows (reason `malformed`).
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import StringType, StructField, StructType

    read_options = _read_options(source_format, options)
    shown, path = path, os.path.abspath(path)  # messages say what the user wrote; Spark gets it absolute
    if stored_schema is not None:
        schema = StructType.fromJson(json.loads(stored_schema))
    else:
        try:
            schema = spark.read.format(source_format).options(**read_options).load(path).schema
        except AnalysisException as err:
            condition = err.getCondition() or ""
            if condition == "PATH_NOT_FOUND":
                raise SqlwinUsageError(f"The source directory {shown} does not exist",
                                       hint="an existing directory, with a first file of the stream in it") from None
            if condition == "UNABLE_TO_INFER_SCHEMA":
                raise SqlwinUsageError(
                    f"The source directory {shown} has no {source_format} file yet to take the stream's columns from",
                    hint=f"put a first {source_format} file in it before starting the stream (later files must "
                         "have its columns); or, from Python, pass sw.stream a streaming DataFrame with its schema"
                ) from None
            raise
    routed = source_format in ("csv", "json") and CORRUPT not in schema.fieldNames() \
        and not any(k.lower() in ("mode", "columnnameofcorruptrecord") for k in options)
    if not routed:
        reader = spark.readStream.format(source_format).schema(schema).options(**read_options)
        return reader.load(path), None, schema
    raw = spark.readStream.format(source_format).schema(StructType([*schema.fields, StructField(CORRUPT, StringType())])) \
        .options(**read_options, mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT).load(path)
    columns = [F.col(quote_identifier(f.name)) for f in schema.fields]
    # Both branches read every column of the file: a CSV / JSON reader parses (and flags) only the
    # columns a query reads, so both must judge a row by the same columns; and a query that reads
    # only the corrupt-record column is refused by Spark (QUERY_ONLY_CORRUPT_RECORD_COLUMN). The
    # condition is always true, written so that the optimizer cannot fold it away (`hash(...) IS
    # NOT NULL` it folds: a hash is never NULL) and prune the columns.
    every_column = F.length(F.coalesce(*[c.cast("string") for c in columns], F.lit(""))) >= 0
    good = raw.where(F.col(CORRUPT).isNull() & every_column).select(*columns)
    bad = raw.where(F.col(CORRUPT).isNotNull() & every_column)
    return good, bad, schema


def _stored(checkpoint: str) -> dict:
    """The checkpoint's sqlwin.json ({} for a new checkpoint; a SqlwinUsageError naming it when damaged)."""
    return read_metadata(Path(checkpoint) / METADATA, checkpoint)


def _store(checkpoint: str, stored: dict) -> None:
    """Write sqlwin.json atomically: a process killed while writing must not leave a checkpoint
    whose sqlwin.json is empty (the crash sweep killed one there; the restart failed with
    "Expecting value")."""
    Path(checkpoint).mkdir(parents=True, exist_ok=True)
    write_json(Path(checkpoint) / METADATA, stored)


def _remember_source_schemas(checkpoint: str, schemas: dict[str, str]) -> None:
    """Keep each directory source's schema in sqlwin.json at the first start (see _read_directory)."""
    stored = _stored(checkpoint)
    known = stored.setdefault("source_schemas", {})
    if all(name in known for name in schemas):
        return
    for name, schema in schemas.items():
        known.setdefault(name, schema)
    _store(checkpoint, stored)


def _malformed_records(bad: "DataFrame", stateful: StatefulQuery, schema, source: str) -> "DataFrame":
    """The rows of `source` that did not convert as the operator's records of rejected rows: with
    LATE ROWS INTO, the row's columns as Spark could read them (NULL where a value did not convert),
    where the operator reads that source (a join: on its side)."""
    filled = stateful.late_row_sql(source, {name.lower(): name for name in bad.columns})
    columns = []
    for column in schema.fields:
        if column.name == "__kind":
            value = F.lit("rejected")
        elif column.name == "__reason":
            value = F.lit(MALFORMED)
        elif column.name in filled:
            value = F.expr(filled[column.name])
        else:
            value = F.lit(None)
        columns.append(value.cast(column.dataType).alias(column.name))
    return bad.select(*columns)


def _read_options(source_format: str, options: dict[str, str]) -> dict[str, str]:
    defaults = {"header": "true", "inferSchema": "true"} if source_format == "csv" else {}
    return {**defaults, **options}


def _bucket_layout(spark, checkpoint: str, query_text: str, requested: int | None) -> tuple[int, ...]:
    """The bucket ids of the stream's state: fixed at the first start and kept on restarts.

    A new stream gets one bucket per shuffle partition of the session, so the cluster's
    parallelism sets it, and each bucket's id is an integer Spark's hash partitioner sends to a
    partition of its own: the operator's tasks are balanced, one Python call each. A restart
    keeps the checkpoint's layout whatever the session's setting now (Spark keeps the
    checkpoint's shuffle partitions for its state too). Checkpoints of earlier versions hold
    only a count: their ids are 0 .. count-1.
    """
    stored = _stored(checkpoint)
    if "buckets" in stored:
        ids = tuple(stored.get("bucket_ids") or range(int(stored["buckets"])))
        if requested is not None and requested != len(ids):
            raise SqlwinUsageError(
                f"The checkpoint at {checkpoint} was started with {len(ids)} buckets, not {requested}",
                hint="the same bucket count, or a fresh checkpoint")
        return ids
    partitions = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 1))
    ids = _partition_aligned_ids(spark, partitions, requested or partitions)
    stored.update({"buckets": len(ids), "bucket_ids": list(ids), "partitions": partitions, "query": query_text})
    _store(checkpoint, stored)
    return ids


def _spread_layout(checkpoint: str, wanted: bool) -> bool:
    """Whether this stream's one clock is spread over its buckets (a checkpoint of an earlier
    version ran such a stream in one bucket, and keeps doing so)."""
    return _kept_layout(checkpoint, "stream_clock_spread", wanted)


def _kept_layout(checkpoint: str, name: str, wanted: bool) -> bool:
    """A choice of state layout, decided at the first start and kept by the checkpoint, whose
    state lives where the first start put it: a checkpoint an earlier version ran without the
    choice keeps the layout it has."""
    stored = _stored(checkpoint)
    if name in stored:
        return bool(stored[name])
    offsets = Path(checkpoint) / "spark" / "offsets"
    ran = offsets.is_dir() and any(offsets.iterdir())  # Spark planned a batch: its state is where it is
    stored[name] = chosen = wanted and not ran
    _store(checkpoint, stored)
    return chosen


def state_settings(stateful: StatefulQuery) -> dict[str, str]:
    """What a stream's state depends on, in the query's own words: a restart may change anything
    else (the SELECT list, HAVING, aliases, formatting, the sinks, the trigger), none of these."""
    plan, rel = stateful.plan, stateful.relation
    return {
        "window": describe_windower(rel.windower, rel.time),
        "time column": describe_time(rel.time),
        "partition by": ", ".join(rel.partition_by) or "(none: one stream)",
        # the query's own keys (a windowed aggregation with no key is spread by a hidden one)
        "group keys": ", ".join(stateful.key_sql if stateful.partial_merge is None else ()) or "(none)",
        "watermark": describe_watermark(stateful.config.watermark),
        "emit": describe_emit(plan.emit),
        "aggregates": ", ".join(stateful.aggregate_sql) or "(none)",
        "late rows": "kept (LATE ROWS INTO)" if stateful.config.output_late else "counted only",
    }


def _check_restart(checkpoint: str, query_text: str, stateful: StatefulQuery,
                   plan_of: t.Callable[[str], QueryPlan]) -> None:
    """Refuse, before any batch runs, a query whose state would not fit the checkpoint's.

    The checkpoint's query (sqlwin.json) is planned again over today's sources and its state
    settings compared with the new query's; a change the state can carry is recorded as the
    checkpoint's query from now on.
    """
    stored = _stored(checkpoint)
    before = stored.get("query")
    if not before or before == query_text:
        return
    now = state_settings(stateful)
    try:
        then = state_settings(prepare_stateful(plan_of(before), "streaming", stateful.bucket_count,
                                               stateful.bucket_ids))
    except SqlwinError as err:
        raise SqlwinUsageError(
            f"The checkpoint at {checkpoint} holds the state of another query, which no longer plans over "
            f"these sources ({err.message}):\n  {before}",
            hint="the checkpoint's own query and sources, or a fresh checkpoint") from None
    changed = [f"  {name}: {then[name]}  ->  {now[name]}" for name in now if then.get(name) != now[name]]
    if changed:
        raise SqlwinUsageError(
            f"The checkpoint at {checkpoint} holds the state of another query; what changed:\n"
            + "\n".join(changed),
            hint="the checkpoint's query (its SELECT list, HAVING, aliases and layout may change; the window, "
                 "time column, PARTITION BY and GROUP BY keys, watermark, EMIT, aggregates and LATE ROWS INTO may not), "
                 "or a fresh checkpoint")
    stored["query"] = query_text
    _store(checkpoint, stored)


def _check_chain_restart(checkpoint: str, query_text: str) -> None:
    """A stream of two chained aggregations restarts with its checkpoint's query only (its text,
    up to whitespace): the outer stage's state settings depend on the inner stage's result
    columns, which `_check_restart` cannot compare without building the checkpoint's inner stage,
    so no change is taken on trust."""
    before = _stored(checkpoint).get("query")
    if not before or before.split() == query_text.split():
        return
    raise SqlwinUsageError(
        f"The checkpoint at {checkpoint} holds the state of another query; a stream of two chained "
        f"windowed aggregations restarts only with the query that started it:\n  {before}",
        hint="that query, or a fresh checkpoint")


def _partition_aligned_ids(spark, partitions: int, count: int) -> tuple[int, ...]:
    """`count` INT bucket ids, the i-th sent by Spark's hash partitioning (pmod(hash(id), n), as
    groupBy's exchange computes it) to partition i mod n: every partition gets its share."""
    wanted = {p: [] for p in range(partitions)}
    need = {p: len(range(p, count, partitions)) for p in range(partitions)}
    limit = 64 * max(count, partitions)
    rows = spark.range(limit).selectExpr("CAST(id AS INT) AS b", f"pmod(hash(CAST(id AS INT)), {partitions}) AS p") \
        .collect()
    for b, p in rows:
        if len(wanted[p]) < need[p]:
            wanted[p].append(b)
    return tuple(wanted[i % partitions][i // partitions] for i in range(count))


def _tick_ms(config: OperatorConfig) -> int:
    """How often wall-clock timers wake a bucket: often enough for the query's shortest duration."""
    candidates = [config.watermark.idle_timeout, config.emit.early_interval, config.emit.late_interval,
                  getattr(config.windower, "slide", None), getattr(config.windower, "step", None)]
    shortest = min([c // 1000 for c in candidates if c], default=1000)
    return max(100, min(1000, shortest))

"""The window runtime on Python workers: one bucket of keys per call, for replay and streaming.

Keys are hashed into buckets (one per shuffle partition); one call handles every key of its
bucket with the runtime's own per-key clocks: one call and one state round trip per key was
measured 7x slower than Spark's own streaming aggregation, one call per bucket is within reach
of it. A vectorised runtime's state is kept in segments (`SegmentedBucket`,
sqlwin.runtime.segments), so a micro-batch reads and writes only what its keys touch; the
general runtime's state is one value per bucket (`BucketState`).

Everything here runs inside Spark's Python workers and must not import pyspark at module level
beyond what the streaming processor needs (the processor class is created lazily).
"""

from __future__ import annotations

import functools
import math
import typing as t
from dataclasses import dataclass

import pandas as pd

import numpy as np

from sqlwin.runtime import AggregateSpec, BatchResult, WindowRuntime
from sqlwin.runtime import select
from sqlwin.runtime.keyed import KeyedWindowRuntime, RowBatch
from sqlwin.runtime.select import RuntimeChoice
from sqlwin.spark import layout
from sqlwin.runtime.segments import SegmentedState, Store
from sqlwin.runtime.snapshots import OtherSnapshotKind, seal, unseal
from sqlwin.runtime.columns import Columns

if t.TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class OperatorConfig:
    """What a Python worker needs to run the runtime for one bucket (pickled with the function)."""

    windower: t.Any
    watermark: t.Any  # WatermarkSpec, scope already resolved for one runtime
    emit: t.Any
    aggregates: tuple[AggregateSpec, ...]
    processing_time: bool
    key_count: int
    clock_positions: tuple[int, ...] | None  # None: one runtime, a clock per key; else a runtime per clock key
    argument_count: int
    row_count: int  # input columns carried for LATE ROWS INTO (0: late rows are only counted)
    output_late: bool
    timers: bool  # processing time matters (windows, idle timeout, Bytewax aging, intervals)
    # A late / rejected row's carried columns are its arguments (a windowed join: each side's
    # columns are already the join's arguments), not row columns of their own.
    late_from_arguments: bool = False

    @property
    def late_width(self) -> int:
        """How many __r columns a late / rejected record carries."""
        return self.argument_count if self.late_from_arguments else self.row_count


EMIT, LATE, REJECTED, STATS = "emit", "late", "rejected", "stats"
# A record of an earlier stage of a chain (its late, rejected and stats records), carried through
# this stage unchanged: its own record, as JSON, in __stats (see stateful.CARRY).
CARRIED = "carried"
CARRY = "__carry"  # the input column that holds such a record
END_OF_INPUT = "end_of_input"  # the control row that ends a stream
END_BATCH = 2**62  # where end-of-input firings sort in a replay


def record_columns(config: OperatorConfig) -> list[str]:
    """The records' column names (layout.record_columns), in the order the tuples of `records` /
    `stats_record` hold them."""
    return layout.record_columns(config.key_count, len(config.aggregates), config.late_width)


def column_values(series: pd.Series, integral: bool = False) -> list:
    """A pandas column as Python values, with SQL NULL as None (pandas shows it as NaN / NaT)."""
    values = series.tolist()
    if series.dtype.kind == "f" and series.hasnans:
        values = [None if v != v else v for v in values]
    elif series.dtype.kind == "M" and series.hasnans:
        values = [None if v is pd.NaT else v for v in values]
    if integral and series.dtype.kind == "f":  # a nullable integer column arrives as float
        values = [None if v is None else int(v) for v in values]
    return values


def value_kind(data_type) -> str:
    """A Spark type as the runtimes read its values: select.INTEGER, FLOAT, TIMESTAMP or OTHER."""
    from pyspark.sql.types import BooleanType, DoubleType, FloatType, IntegralType, TimestampNTZType, TimestampType

    if isinstance(data_type, BooleanType):
        return select.OTHER
    if isinstance(data_type, IntegralType):
        return select.INTEGER
    if isinstance(data_type, (FloatType, DoubleType)):
        return select.FLOAT
    return select.TIMESTAMP if isinstance(data_type, (TimestampType, TimestampNTZType)) else select.OTHER


def choose_runtime(config: OperatorConfig, schema, many_batches: bool = False, segmented_general: bool = True,
                   by_aggregates: bool = True) -> RuntimeChoice:
    """The runtime that runs this query's buckets (sqlwin.runtime.select.choose), the kinds of its
    aggregate arguments read from the Spark schema of the input rows. `many_batches`: a replay;
    `segmented_general`, `by_aggregates`: a stream's checkpoint layout."""
    types = {f.name: f.dataType for f in schema.fields}

    def kind(index: int) -> str:
        return value_kind(types.get(layout.argument(index)))

    c = config
    return select.choose(c.windower, c.watermark, c.emit, c.aggregates, c.processing_time, c.timers, c.clock_positions,
                         [kind(i) for i in range(c.argument_count)], many_batches=many_batches,
                         segmented_general=segmented_general, by_aggregates=by_aggregates)


TIMESTAMP = "timestamp"  # the flag of a timestamp column (replay.integral_flags)


def _flags(config: OperatorConfig, integral: tuple[bool, ...]) -> tuple[list[bool], list[bool], list[bool]]:
    """The flags of the key, argument and carried (argument, then row) columns: True an integer
    column, TIMESTAMP a timestamp column, else False."""
    c = config
    flags = list(integral) + [False] * (c.key_count + c.argument_count + c.row_count)
    return (flags[:c.key_count], flags[c.key_count:c.key_count + c.argument_count],
            flags[c.key_count:c.key_count + c.argument_count + c.row_count])


def _row_values(frame: t.Callable[[], pd.DataFrame], config: OperatorConfig, flags: list[bool]):
    """row_values(i) of Columns: row i's arguments and carried columns, as the general runtime sees
    them. Late and rejected rows only: the frame is read once, on the first call."""
    values: list | None = None
    names = layout.arguments(config.argument_count) + layout.carried_columns(config.row_count)

    def row_values(i: int) -> tuple:
        nonlocal values
        if values is None:
            data = frame()
            values = [column_values(data[name], flag) for name, flag in zip(names, flags)]
        return tuple(column[i] for column in values)

    return row_values


def batch_columns(frame: pd.DataFrame, config: OperatorConfig, integral: tuple[bool, ...]) -> Columns:
    """A bucket's micro-batch (arrival order) as the vectorised runtime's columns."""
    c = config
    key_flags, arg_flags, carried = _flags(config, integral)
    codes, keys, key_null = _combine_keys([_pandas_key(frame[layout.key(i)], flag) for i, flag in enumerate(key_flags)],
                                          len(frame))
    time = frame["__time"]
    time_null = time.isna().to_numpy()
    times = _filled(time, time_null, np.int64)
    args = []
    for i in range(c.argument_count):
        column = frame[layout.argument(i)]
        null = column.isna().to_numpy()
        if arg_flags[i] == TIMESTAMP:
            args.append((_micros(_arrow_times(column), null), null))
        else:
            args.append((_filled(column, null, np.int64 if arg_flags[i] else np.float64), null))
    return Columns(codes, keys, key_null, times, time_null, args, _row_values(lambda: frame, config, carried))


def _arrow_times(column: pd.Series) -> "pa.Array":
    """A pandas column of Python datetimes (aware or naive) as an Arrow timestamp array."""
    import pyarrow as pa

    return pa.array(column, from_pandas=True)


def _micros(column: "pa.Array", null: np.ndarray) -> np.ndarray:
    """A timestamp column as datetime64[us] (0 where NULL): the vectorised runtime compares and
    keeps timestamps as epoch microseconds (UTC for an aware type, the wall clock for a naive one),
    and Arrow turns them back into the output's timestamp type."""
    import pyarrow as pa

    if column.type == pa.null():  # every value NULL
        return np.zeros(len(null), "datetime64[us]")
    micros = column.cast(pa.timestamp("us", tz=getattr(column.type, "tz", None))).cast(pa.int64())
    return micros.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view("datetime64[us]")


def _filled(column: pd.Series, null: np.ndarray, dtype) -> np.ndarray:
    """A column's values as `dtype`, 0 where NULL. An integer column with NULLs comes as Python
    ints (unpack_rows): converted value by value, never through a double."""
    if not null.any():
        return column.to_numpy().astype(dtype)
    if column.dtype == object:
        return np.fromiter((0 if n else v for v, n in zip(column.tolist(), null.tolist())), dtype, len(column))
    return column.fillna(0).to_numpy().astype(dtype)


def arrow_columns(table: "pa.Table", config: OperatorConfig, integral: tuple[bool, ...]) -> Columns:
    """Rows in Arrow (one replay run, arrival order) as the vectorised runtime's columns: the same
    values `batch_columns` reads from the pandas frame of `table` (NaN is NULL, as pandas reads
    it), without building that frame (only late and rejected rows need it)."""
    import pyarrow.compute as pc

    c = config
    key_flags, arg_flags, carried = _flags(config, integral)
    codes, keys, key_null = _combine_keys([_arrow_key(_array(table, layout.key(i)), flag) for i, flag in enumerate(key_flags)],
                                          table.num_rows)
    time = _array(table, "__time")
    time_null = time.is_null().to_numpy(zero_copy_only=False)
    times = time.fill_null(0).to_numpy().astype(np.int64, copy=False)
    args = []
    for i in range(c.argument_count):
        column = _array(table, layout.argument(i))
        null = pc.is_null(column, nan_is_null=True).to_numpy(zero_copy_only=False)
        if arg_flags[i] == TIMESTAMP:
            args.append((_micros(column, null), null))
            continue
        values = column.fill_null(0).to_numpy(zero_copy_only=False)
        args.append((values.astype(np.int64 if arg_flags[i] else np.float64, copy=False), null))
    return Columns(codes, keys, key_null, times, time_null, args,
                   _row_values(lambda: rows_frame(table), config, carried))


def _array(table: "pa.Table", name: str) -> "pa.Array":
    column = table.column(name)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _pandas_key(column: pd.Series, integral: bool) -> tuple:
    """One key column: (code per row, its distinct values as Python values, NULL mask)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), column_values(pd.Series(uniques, dtype=column.dtype), integral), \
        column.isna().to_numpy()


def _arrow_key(column: "pa.Array", integral: bool) -> tuple:
    """`_pandas_key` of an Arrow column: strings and integers encoded by Arrow, other types (whose
    Python values pandas decides: timestamps, decimals, floats with NaN) through pandas."""
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
        return _pandas_key(column.to_pandas(timestamp_as_object=True), integral)
    encoded = column.dictionary_encode()
    indices = encoded.indices
    null = indices.is_null().to_numpy(zero_copy_only=False)
    codes = indices.fill_null(len(encoded.dictionary)).to_numpy().astype(np.int64)  # NULL: a code of its own
    return codes, encoded.dictionary.to_pylist() + [None], null


def _combine_keys(parts: list[tuple], n: int):
    """(code per row, distinct key tuples, NULL-key mask) from the key columns' `_pandas_key`
    triples: a key holding a NULL is rejected."""
    if not parts:
        return np.zeros(n, np.int64), [()], np.zeros(n, bool)
    if len(parts) == 1:
        codes, values, null = parts[0]
        return codes, [(v,) for v in values], null
    null = np.zeros(n, bool)
    codes = np.zeros(n, np.int64)
    for part_codes, values, part_null in parts:  # renumbered 0..m-1 at each step: never overflows
        codes = pd.factorize(codes * max(1, len(values)) + part_codes)[0].astype(np.int64)
        null |= part_null
    _, first = np.unique(codes, return_index=True)  # the first row of each key
    keys = [tuple(values[part_codes[row]] for part_codes, values, _ in parts) for row in first.tolist()]
    return codes, keys, null


class BucketState:
    """The runtimes of one bucket: one with a clock per key, or one per clock key (scope 'stream')."""

    def __init__(self, config: OperatorConfig, integral: tuple[bool, ...] = (), vectorised: type | None = None):
        self.config = config
        self.integral = integral  # per input column __k*, __a*, __r*: a nullable integer column
        # a vectorised runtime class (over columns, `choose_runtime`), else WindowRuntime over rows
        self.vectorised = vectorised is not None
        self.runtime_class = vectorised or WindowRuntime
        self.runtimes: dict[tuple, t.Any] = {}
        self.now: int | None = None  # newest processing time seen
        self.ended_counts: dict[str, int] = {}  # counts of runtimes ended by end of input

    # -- state ---------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        return seal("BucketState", {"now": self.now, "runtimes": {k: r.snapshot() for k, r in self.runtimes.items()},
                                    "ended_counts": self.ended_counts})

    @classmethod
    def restore(cls, blob: bytes | None, config: OperatorConfig, integral: tuple[bool, ...] = (),
                vectorised: type | None = None) -> "BucketState":
        state = cls(config, integral, vectorised)
        if blob:
            data = unseal(blob, "BucketState").state
            state.now = data["now"]
            state.ended_counts = data.get("ended_counts", {})
            state.runtimes = {k: state._restore_runtime(v) for k, v in data["runtimes"].items()}
            if any(isinstance(r, WindowRuntime) for r in state.runtimes.values()):
                state.vectorised, state.runtime_class = False, WindowRuntime  # carries on with it
        return state

    def _restore_runtime(self, blob: bytes):
        """A runtime from its snapshot. A checkpoint written by the general runtime (an earlier
        version, or a query the vectorised one did not cover then) carries on with it."""
        c = self.config
        args = (c.windower, c.watermark, c.emit, c.aggregates, c.processing_time)
        try:
            return self.runtime_class.restore(blob, *args)
        except OtherSnapshotKind:
            return WindowRuntime.restore(blob, *args)

    def _runtime(self, clock_key: tuple):
        runtime = self.runtimes.get(clock_key)
        if runtime is None:
            c = self.config
            runtime = self.runtime_class(c.windower, c.watermark, c.emit, c.aggregates, c.processing_time)
            if self.now is not None and c.timers:
                runtime.advance_processing_time(self.now)
            self.runtimes[clock_key] = runtime
        return runtime

    # -- driving ---------------------------------------------------------------------------

    def process(self, frame: pd.DataFrame, batch_time: int, stream_bounds: dict | None = None) -> list[BatchResult]:
        """One micro-batch of this bucket's rows, in arrival order. `stream_bounds`: the whole
        stream's batch extremes per side, when the stream's one clock is spread over buckets
        (the batch then reaches every bucket, with rows of its own or not)."""
        if len(frame) == 0 and not stream_bounds:
            return []
        self.now = batch_time if self.now is None else max(self.now, batch_time)
        if self.vectorised:
            return [self._runtime(()).process_columns(batch_columns(frame, self.config, self.integral), batch_time,
                                                      stream_bounds)]
        return self.process_rows(self.rows_of(frame), batch_time, stream_bounds)

    def process_batches(self, frame: pd.DataFrame, batch_times: list[int]) -> list[tuple[int, list[BatchResult]]]:
        """A run of whole micro-batches (sorted by __batch, then arrival): (batch, results) per batch.

        `batch_times`: the processing time of each batch in the run, in batch order.
        """
        batches = frame["__batch"].to_numpy().astype(np.int64)
        if self.vectorised and not self.config.timers:
            self.now = batch_times[-1] if self.now is None else max(self.now, batch_times[-1])
            runtime = self._runtime(())
            return [(b, [r]) for b, r in runtime.process_batches(batch_columns(frame, self.config, self.integral),
                                                                 batches)]
        rows = self.rows_of(frame)
        edges = np.concatenate([[0], np.flatnonzero(np.diff(batches)) + 1, [len(rows)]]).tolist()
        out = []
        for (start, stop), now in zip(zip(edges, edges[1:]), batch_times):
            self.now = now if self.now is None else max(self.now, now)
            out.append((int(batches[start]), self.process_rows(rows[start:stop], now)))
        return out

    def rows_of(self, frame: pd.DataFrame) -> list[tuple]:
        return frame_rows(frame, self.config, self.integral)

    def process_rows(self, rows: list[tuple], batch_time: int, stream_bounds: dict | None = None) -> list[BatchResult]:
        c = self.config
        if c.clock_positions is None or c.clock_positions == ():
            return [self._runtime(()).process_batch(rows, batch_time, stream_bounds)]
        by_clock: dict[tuple, list] = {}
        for row in rows:
            key = row[0]
            by_clock.setdefault(tuple(key[i] for i in c.clock_positions), []).append(row)
        return [self._runtime(clock).process_batch(part, batch_time) for clock, part in by_clock.items()]


    def advance(self, now: int) -> list[BatchResult]:
        self.now = now if self.now is None else max(self.now, now)
        return [runtime.advance_processing_time(self.now) for runtime in self.runtimes.values()]

    def end_of_input(self) -> list[BatchResult]:
        results = [runtime.end_of_input() for runtime in self.runtimes.values()]
        self.ended_counts = self.counts()  # the stream's figures outlive its runtimes
        self.runtimes.clear()  # an ended runtime refuses input; a new stream starts afresh
        return results

    def stats_record(self, bucket: int) -> tuple:
        open_windows, keys = 0, 0
        marks = []
        for runtime in self.runtimes.values():
            open_windows += runtime.open_window_count
            keys += runtime.key_count
            marks += runtime.key_watermarks()
        return stats_record(self.config, bucket, _figures(keys, open_windows, marks, self.counts()))

    def counts(self) -> dict[str, int]:
        total: dict[str, int] = dict(self.ended_counts)
        for runtime in self.runtimes.values():
            for name, value in runtime.counts.items():
                total[name] = total.get(name, 0) + value
        return total


def frame_rows(frame: pd.DataFrame, config: OperatorConfig, integral: tuple[bool, ...]) -> list[tuple]:
    """A bucket's rows (a frame, arrival order) as the general runtime takes them: (key, time, values)."""
    c = config
    n = len(frame)
    flags = iter(integral)
    keys_columns = [column_values(frame[name], next(flags, False)) for name in layout.keys(c.key_count)]
    keys = list(zip(*keys_columns)) if keys_columns else [()] * n
    times = column_values(frame["__time"], True)
    value_columns = [column_values(frame[name], next(flags, False))
                     for name in layout.arguments(c.argument_count) + layout.carried_columns(c.row_count)]
    values = list(zip(*value_columns)) if value_columns else [()] * n
    return list(zip(keys, times, values))


class SegmentedBucket:
    """One bucket whose state is in segments of a Store (streaming): a vectorised runtime, or the
    general one where its batches touch only their own keys and the due ones (KeyedWindowRuntime).

    The same driving methods as BucketState; state is written to the store as the batch runs
    (Spark commits it with the batch). A checkpoint of the one-value layout (`legacy`, a
    BucketState snapshot) is moved into segments on its first batch. State the general runtime
    wrote where the query is now vectorised (a checkpoint started before the vectorised runtime
    covered its shape) carries on in the general runtime, in segments: never dropped.
    """

    def __init__(self, config: OperatorConfig, integral: tuple[bool, ...], runtime_class: type, store: Store,
                 legacy: bytes | None = None, columnar: bool = False):
        self.config, self.integral = config, integral
        c = config
        args = (c.windower, c.watermark, c.emit, c.aggregates, c.processing_time)
        runtime = None
        if legacy:
            general = issubclass(runtime_class, KeyedWindowRuntime)
            runtime = BucketState.restore(legacy, config, integral, None if general else runtime_class).runtimes.get(())
        if isinstance(runtime, WindowRuntime):
            runtime_class = KeyedWindowRuntime
            runtime = KeyedWindowRuntime.from_runtime(runtime)
        if runtime is not None:
            self.state = SegmentedState.from_runtime(runtime, store)
        else:
            self.state = SegmentedState(runtime_class, args, store, carry_on=KeyedWindowRuntime)
        self.general = issubclass(self.state.runtime_class, KeyedWindowRuntime)
        self.state.columnar = columnar and not self.general  # emissions as blocks of columns (`block_frames`)

    def process(self, table: "pa.Table", batch_time: int, stream_bounds: dict | None = None) -> list[BatchResult]:
        """As BucketState.process, the rows in Arrow (`unpack_rows`)."""
        if table.num_rows == 0 and not stream_bounds:
            return []
        if self.general:
            rows = RowBatch.of(frame_rows(rows_frame(table), self.config, self.integral))
            return [self.state.process_columns(rows, batch_time, stream_bounds)]
        return [self.state.process_columns(arrow_columns(table, self.config, self.integral), batch_time,
                                           stream_bounds)]

    def advance(self, now: int) -> list[BatchResult]:
        return []  # event time only: nothing moves without rows

    def end_of_input(self) -> list[BatchResult]:
        return [self.state.end_of_input()]

    def stats_record(self, bucket: int) -> tuple:
        s = self.state
        return stats_record(self.config, bucket, _figures(s.key_count, s.open_window_count, s.key_watermarks(),
                                                          s.counts))

    def counts(self) -> dict[str, int]:
        return self.state.counts


def stats_record(config: OperatorConfig, bucket: int, figures: dict) -> tuple:
    """A 'stats' record for progress reports: the bucket's figures as JSON in __stats.

    figures: keys, open_windows, watermark_low / watermark_high (µs, or None), and the runtime
    counts (rows, late, rejected, unassigned, emissions), all over the stream's whole life.
    """
    import json

    width = len(record_columns(config))
    return (STATS, *(None,) * (width - 2), json.dumps({"bucket": bucket, **figures}))


def _figures(keys: int, open_windows: int, marks: list[int], counts: dict[str, int]) -> dict:
    low, high = (min(marks), max(marks)) if marks else (None, None)
    return {"keys": keys, "open_windows": open_windows, "watermark_low": low, "watermark_high": high,
            **{name: int(value) for name, value in counts.items()}}


def records(config: OperatorConfig, results: t.Iterable[BatchResult], batch: int | None) -> list[tuple]:
    """Emissions, late rows and rejected rows as tuples in `record_columns` order."""
    k, a, r = config.key_count, len(config.aggregates), config.late_width
    no_key, no_aggs, no_row = (None,) * k, (None,) * a, (None,) * r
    carried = slice(0, config.argument_count) if config.late_from_arguments else slice(config.argument_count, None)
    out: list[tuple] = []
    for result in results:
        for e in result.emissions:
            out.append((EMIT, *e.key, e.window_start, e.window_end, e.window_index, *e.values,
                        e.op, e.firing, e.seq, batch, None, None, None, *no_row, None))
        if not config.output_late:
            continue
        for late in result.late:
            row = tuple(late.values[carried])
            out.append((LATE, *late.key, late.window_start, late.window_end, None, *no_aggs,
                        None, None, None, batch, late.event_time, late.late_by_us, "late", *row, None))
        for rejected in result.rejected:
            key = rejected.key if rejected.key is not None and len(rejected.key) == k else no_key
            row = tuple(rejected.values[carried])
            out.append((REJECTED, *key, None, None, None, *no_aggs, None, None, None, batch,
                        rejected.event_time, None, rejected.reason, *row, None))
    return out


def block_frames(results: t.Iterable[BatchResult], arrow_schema) -> list[pd.DataFrame]:
    """The emission blocks of `results` (a columnar runtime's) as frames of records in the
    operator's output schema: typed columns, no Python object per emission. Integers with NULLs
    as Python ints (a double would round a time in year 9999), timestamps as datetimes."""
    return [_block_batch(block, None, arrow_schema).to_pandas(integer_object_nulls=True, timestamp_as_object=True)
            for result in results for block in result.blocks]


def carried_records(config: OperatorConfig, payloads: t.Iterable[str]) -> list[tuple]:
    """An earlier stage's records (JSON), passed on as 'carried' records of this stage."""
    width = len(record_columns(config))
    return [(CARRIED, *(None,) * (width - 2), payload) for payload in payloads]


def records_frame(config: OperatorConfig, rows: list[tuple]) -> pd.DataFrame:
    columns = record_columns(config)
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    data = list(zip(*rows))
    return pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in zip(columns, data)})


# --------------------------------------------------------------------------- streaming input


PACKED_SCHEMA = "__bucket INT, __pack BIGINT, __newest BIGINT, __blob BINARY"


def pack_rows(batches: t.Iterator["pa.RecordBatch"], clock: t.Callable | None = None) -> t.Iterator["pa.RecordBatch"]:
    """mapInArrow body: a stream's input rows packed, per Arrow batch and bucket, into one Arrow
    IPC blob each (schema PACKED_SCHEMA).

    transformWithStateInPandas hands a processor its rows one Python tuple at a time (PySpark
    4.3's worker regroups rows by key through itertuples): at 100,000 rows a batch that was the
    largest cost of the whole operator. Packed, the processor receives a few rows per bucket and
    reads the Arrow data as it is (`unpack_rows`). `__pack` keeps the order rows came in: the
    partition, then the blob's place in it (the rows' own order within a blob is kept);
    `__newest` is the newest arrival time in the blob (__ptime), for the arrival clock's watermark.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    context = TaskContext.get()
    next_pack = (context.partitionId() if context else 0) << 40
    for batch in batches:
        if batch.num_rows == 0:
            continue
        buckets = batch.column("__bucket").to_numpy(zero_copy_only=False)
        order = np.argsort(buckets, kind="stable")
        edges = np.concatenate([[0], np.flatnonzero(np.diff(buckets[order])) + 1, [len(order)]])
        ids, packs, newest, blobs = [], [], [], []
        for start, stop in zip(edges[:-1].tolist(), edges[1:].tolist()):
            part = batch.take(pa.array(order[start:stop]))
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_batch(part)
            ids.append(int(buckets[order[start]]))
            packs.append(next_pack)
            next_pack += 1
            newest.append(pc.max(part.column("__ptime")).as_py())
            blobs.append(sink.getvalue().to_pybytes())
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int32()), pa.array(packs, pa.int64()), pa.array(newest, pa.int64()),
             pa.array(blobs, pa.binary())], names=["__bucket", "__pack", "__newest", "__blob"])
        if clock is not None:  # clock_packer: the batch's extremes, to every bucket
            extremes = clock(batch)
            if extremes is not None:
                yield extremes


CLOCK_PACK = -1  # a packed row whose __pack is this carries an input partition's batch extremes


def clock_packer(bucket_ids: t.Sequence[int], key_count: int, side_column: str | None):
    """mapInArrow body for a stream whose one clock is spread over buckets: `pack_rows`, and per
    input partition and Arrow batch one clock row for *every* bucket, its __blob as JSON: the
    partition's oldest and newest event time per side ({side: [low, high]}) over rows with a key
    and a time -- the rows that move a clock -- and under "ptime" its newest arrival time (the
    batch's processing time where the query reads one). Each bucket combines what every partition
    sent it (`stream_bounds_of`): the whole stream's extremes, in the same micro-batch, whatever
    bucket holds the rows, and the same again when Spark runs the batch again (they are a
    function of its input)."""
    import json

    import pyarrow.compute as pc

    def extremes(batch: "pa.RecordBatch") -> "pa.RecordBatch | None":
        import pyarrow as pa

        valid = pc.is_valid(batch.column("__time"))
        for i in range(key_count):
            valid = pc.and_(valid, pc.is_valid(batch.column(layout.key(i))))
        timed = batch.filter(valid)
        sides = timed.column(side_column).to_numpy(zero_copy_only=False) if side_column else None
        times = timed.column("__time").to_numpy(zero_copy_only=False).astype(np.int64)
        found: dict = {}
        if timed.num_rows:
            for side in (np.unique(sides).tolist() if sides is not None else [0]):
                mine = times[sides == side] if sides is not None else times
                found[str(int(side))] = [int(mine.min()), int(mine.max())]
        ptime = pc.max(batch.column("__ptime")).as_py()
        if ptime is not None:
            found["ptime"] = int(ptime)
        if not found:
            return None
        blob = json.dumps(found).encode()
        n = len(ids)
        return pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int32()), pa.array([CLOCK_PACK] * n, pa.int64()), pa.nulls(n, pa.int64()),
             pa.array([blob] * n, pa.binary())], names=["__bucket", "__pack", "__newest", "__blob"])

    ids = list(bucket_ids)
    return functools.partial(pack_rows, clock=extremes)


def stream_bounds_of(packed: pd.DataFrame) -> tuple[pd.DataFrame, dict | None, int | None]:
    """(the data rows, the stream's batch extremes per side combined from the clock rows or None,
    the stream's newest arrival time in the batch or None)."""
    import json

    clock = (packed["__pack"] == CLOCK_PACK).to_numpy()
    if not clock.any():
        return packed, None, None
    bounds: dict[int, tuple[int, int]] = {}
    ptime = None
    for blob in packed.loc[clock, "__blob"].tolist():
        for name, value in json.loads(blob).items():
            if name == "ptime":
                ptime = value if ptime is None else max(ptime, value)
                continue
            low, high = value
            known = bounds.get(int(name))
            bounds[int(name)] = (low, high) if known is None else (min(known[0], low), max(known[1], high))
    return packed[~clock], bounds or None, ptime


def unpack_rows(packed: pd.DataFrame, columns: list[str]) -> "pa.Table":
    """The rows of `packed` (PACKED_SCHEMA rows of one bucket) in the order they came in (by
    __order), as Arrow: a vectorised runtime reads the columns as they are (arrow_columns), the
    general one a frame of them (`rows_frame`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(packed) == 0:  # (a bucket told the stream's clock, with no rows of its own)
        return pa.table({name: pa.array([], pa.int64()) for name in columns})
    blobs = packed.sort_values("__pack", kind="stable")["__blob"]
    table = pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs])
    return table.take(pc.sort_indices(table, [("__order", "ascending")]))  # a stable sort


def rows_frame(table: "pa.Table") -> pd.DataFrame:
    """Input rows in Arrow as a frame, read as a replay reads its rows: timestamps as Python objects
    (years 1 to 9999, not pandas' nanosecond range), so a stream and a replay see the same values.
    Integers with NULLs as Python ints, not float64: a time in year 9999 (2.5e17 µs) is past a
    double's 2^53 and came back a minute off (a chain's second stage, whose carried rows have no time)."""
    return table.to_pandas(timestamp_as_object=True, integer_object_nulls=True)


# --------------------------------------------------------------------------- replay


class _StreamClock:
    """A replay's stream clock (replay._stream_clock: batch, side and newest time arrays, sorted by
    batch) handed out in order: the clock batches up to a batch, each as {side: (time, time)}."""

    def __init__(self, arrays):
        self.batches, self.sides, self.times = (np.asarray(a, np.int64) for a in arrays)
        self.position = 0

    def until(self, batch: int | float) -> dict[int, dict[int, tuple[int, int]]]:
        """The clock batches not handed out yet, up to `batch` (inclusive)."""
        out: dict[int, dict[int, tuple[int, int]]] = {}
        for b, side, time in zip(*(a.tolist() for a in self._take(batch))):
            out.setdefault(b, {})[side] = (time, time)
        return out

    def arrays_until(self, batch: int | float) -> tuple[np.ndarray, np.ndarray]:
        """(batches, newest times) of the clock batches not handed out yet up to `batch` (one side)."""
        batches, _, times = self._take(batch)
        return np.asarray(batches, np.int64), np.asarray(times, np.int64)

    def _take(self, batch: int | float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        stop = len(self.batches) if batch == math.inf else int(np.searchsorted(self.batches, batch, "right"))
        start, self.position = self.position, max(self.position, stop)
        return self.batches[start:stop], self.sides[start:stop], self.times[start:stop]


def replay_partition(config: OperatorConfig, integral: tuple[bool, ...], vectorised: type | None,
                     batch_times: list[tuple[int, int]] | None, arrow_schema, stream_clock=None):
    """mapInArrow body: replay one partition's recorded rows (sorted by __batch, __order), then end
    the input.

    The rows stream through in Arrow chunks: each run of whole micro-batches goes to the
    runtime at once (the rows of the last batch of a chunk wait for the next chunk), so memory
    holds one chunk and the open state, never the partition. `batch_times` (when the query has
    timers and arrival times) is the stream's (batch, time) list: processing time passes for
    every partition at every batch, as it does in a live stream (where a timer wakes each bucket).
    `stream_clock`: one clock for the stream over every partition (replay._stream_clock): the
    batches in which it moves, replayed here too with rows of this partition or not.
    """
    if vectorised is not None and not config.timers:
        return _vector_replay(config, integral, vectorised, arrow_schema, stream_clock)
    spread = stream_clock is not None

    def emit(out: list[tuple]) -> t.Iterator["pa.RecordBatch"]:
        yield from _tuple_batches(out, arrow_schema)

    def replay(chunks: t.Iterator["pa.RecordBatch"]) -> t.Iterator["pa.RecordBatch"]:
        state = BucketState(config, integral, vectorised)
        clock = _GlobalClock(batch_times)
        stream_time = dict(batch_times or ())
        moves = _StreamClock(stream_clock) if spread else None
        pending: pd.DataFrame | None = None

        def run(frame: pd.DataFrame, upto: int | float) -> list[tuple]:
            """The batches of `frame`, and the stream clock's batches up to `upto`."""
            out: list[tuple] = []
            bounds = moves.until(upto) if spread else {}
            batches = frame["__batch"].to_numpy()
            edges = np.concatenate([[0], np.flatnonzero(np.diff(batches)) + 1]).astype(np.int64) if len(frame) \
                else np.empty(0, np.int64)
            # each batch's time: the newest arrival time among its rows (0 without any)
            ptimes = frame["__ptime"].to_numpy(dtype=np.float64, na_value=np.nan) if "__ptime" in frame \
                else np.full(len(frame), np.nan)
            newest = np.fmax.reduceat(ptimes, edges) if len(ptimes) else ptimes
            times = [None if t != t else int(t) for t in newest.tolist()]
            if not config.timers and not spread:
                for b, results in state.process_batches(frame, [t or 0 for t in times]):
                    out += records(config, results, b)
                return out
            ends = np.append(edges[1:], len(frame)).tolist()
            spans = {int(batches[a]): (a, z, newest_time) for a, z, newest_time in zip(edges.tolist(), ends, times)}
            rows = state.rows_of(frame) if len(frame) else []
            for batch in sorted(set(spans) | set(bounds)):  # time passes between batches
                start, stop, newest_time = spans.get(batch, (0, 0, None))
                if spread and batch in stream_time:  # the batch's time: the whole stream's newest arrival
                    newest_time = stream_time[batch]
                now = None
                if config.timers:
                    now, after = clock.before(batch)
                    if now is not None:
                        out += records(config, state.advance(now), after)
                batch_time = newest_time if newest_time is not None else (now if now is not None else 0)
                state.now = batch_time if state.now is None else max(state.now, batch_time)
                out += records(config, state.process_rows(rows[start:stop], batch_time, bounds.get(batch)), batch)
            return out

        for chunk in chunks:
            if chunk.num_rows == 0:
                continue
            # Timestamps (keys, carried columns) as Python objects: years 1 to 9999, not pandas' ns range.
            frame = chunk.to_pandas(timestamp_as_object=True, integer_object_nulls=True)
            if pending is not None:
                frame = pd.concat([pending, frame], ignore_index=True)
            batches = frame["__batch"].to_numpy()
            last = np.flatnonzero(batches == batches[-1])[0]  # sorted: the last batch's first row
            pending = frame.iloc[last:]
            if last:
                yield from emit(run(frame.iloc[:last].reset_index(drop=True), int(batches[last - 1])))
        out: list[tuple] = []
        if pending is not None and len(pending):
            out += run(pending.reset_index(drop=True), math.inf)  # and the stream's clock after it
        final, last_batch = clock.before(END_BATCH)
        if final is not None and config.timers:
            out += records(config, state.advance(final), last_batch)
        out += records(config, state.end_of_input(), END_BATCH)
        yield from emit(out)

    return replay


def replay_columns(config: OperatorConfig, vectorised: type | None) -> list[str]:
    """The input columns replay_partition reads (the rest is left out before Spark ships the rows
    to Python): keys, time, arguments, carried columns, batch, and arrival time where it matters."""
    c = config
    columns = (layout.keys(c.key_count) + [layout.TIME] + layout.arguments(c.argument_count)
               + layout.carried_columns(c.row_count) + [layout.BATCH])
    return columns if vectorised is not None and not c.timers else columns + ["__ptime"]


REPLAY_RUN_ROWS = 1 << 16  # the vectorised replay's runs: at least this many rows (whole batches)


def _vector_replay(config: OperatorConfig, integral: tuple[bool, ...], vectorised: type, arrow_schema,
                   stream_clock=None):
    """replay_partition for a query the vectorised runtime covers (event time, no timers).

    Spark's Arrow chunks are gathered into runs of whole micro-batches of at least
    REPLAY_RUN_ROWS rows (a run's cost is a few NumPy passes plus a dictionary lookup per
    distinct key, so longer runs cost less per row), read as columns without a pandas frame,
    and the runtime's emissions go to Arrow as columns (EmissionBlocks). Memory holds one run
    (or one recorded batch, if longer) and the open windows.
    """
    import pyarrow as pa

    def replay(chunks: t.Iterator["pa.RecordBatch"]) -> t.Iterator["pa.RecordBatch"]:
        c = config
        runtime = vectorised(c.windower, c.watermark, c.emit, c.aggregates, c.processing_time)
        runtime.columnar = True
        moves = _StreamClock(stream_clock) if stream_clock is not None else None
        last = None
        for run in _batch_runs(chunks, REPLAY_RUN_ROWS):
            batches = _array(run, "__batch").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            # the stream's clock batches up to this run's last (see replay_partition)
            clock = moves.arrays_until(int(batches[-1])) if moves is not None else None
            results = runtime.process_batches(arrow_columns(run, config, integral), batches, clock)
            yield from _result_batches(config, results, arrow_schema)
            last = run
        if moves is not None and last is not None:  # the stream's clock after this partition's last rows
            clock = moves.arrays_until(math.inf)
            if len(clock[0]):
                empty = last.slice(0, 0)
                results = runtime.process_batches(arrow_columns(empty, config, integral), np.empty(0, np.int64), clock)
                yield from _result_batches(config, results, arrow_schema)
        yield from _result_batches(config, [(END_BATCH, runtime.end_of_input())], arrow_schema)

    return replay


def _batch_runs(chunks: t.Iterator["pa.RecordBatch"], rows: int) -> t.Iterator["pa.Table"]:
    """Tables of whole batches (the chunks' rows sorted by __batch), each of at least `rows` rows
    but the last: a batch whose rows are still coming waits for the next chunk."""
    import pyarrow as pa

    pending: list = []
    count = 0
    for chunk in chunks:
        if chunk.num_rows == 0:
            continue
        pending.append(chunk)
        count += chunk.num_rows
        if count < rows:
            continue
        table = pa.Table.from_batches(pending).combine_chunks()
        batches = _array(table, "__batch").to_numpy()
        last = int(np.searchsorted(batches, batches[-1]))  # the last batch's first row
        if last == 0:  # one batch so far: keep gathering it
            pending = table.to_batches()
            continue
        yield table.slice(0, last)
        rest = table.slice(last)
        pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending).combine_chunks()


def _result_batches(config: OperatorConfig, results: list[tuple[int, BatchResult]], arrow_schema):
    """Arrow batches of the records of (batch, result) pairs: emission blocks as columns, late and
    rejected rows through tuples (few, and each carries its row's values)."""
    tuples: list[tuple] = []
    for batch, result in results:
        for block in result.blocks:
            yield _block_batch(block, batch, arrow_schema)
        tuples += records(config, [result], batch)
    yield from _tuple_batches(tuples, arrow_schema)


def _block_batch(block, batch: int, arrow_schema) -> "pa.RecordBatch":
    """An EmissionBlock as 'emit' records (`record_columns` layout, the replay's Arrow schema)."""
    import pyarrow as pa

    n = len(block)

    def constant(value, kind):
        return pa.nulls(n, kind).fill_null(pa.scalar(value, kind))

    def column(values, null, kind):
        array = pa.array(values, mask=null, from_pandas=True)  # NaN is NULL, as the tuples' path reads it
        return array if array.type == kind else array.cast(kind)

    fixed = {"__kind": lambda k: constant(EMIT, k), "__wstart": lambda k: column(block.starts, block.start_null, k),
             "__wend": lambda k: column(block.ends, block.end_null, k),
             "__windex": lambda k: pa.nulls(n, k) if block.indexes is None else column(block.indexes, None, k),
             "__op": lambda k: constant(block.op, k), "__firing": lambda k: constant(block.firing, k),
             "__seq": lambda k: column(block.seq, None, k),
             "__batch": lambda k: constant(batch, k) if block.batch is None else column(block.batch, None, k)}
    arrays = []
    for field in arrow_schema:
        name = field.name
        if name in fixed:
            arrays.append(fixed[name](field.type))
        elif layout.index_of(name, "__k") is not None:
            i = layout.index_of(name, "__k")
            arrays.append(pa.array([key[i] for key in block.keys], field.type, from_pandas=True))
        elif layout.index_of(name, "__agg") is not None:
            values, null = block.values[layout.index_of(name, "__agg")]
            arrays.append(column(values, null, field.type))
        else:  # late and rejected rows' columns, stats
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def _tuple_batches(out: list[tuple], arrow_schema) -> t.Iterator["pa.RecordBatch"]:
    """Records as tuples (`records`) in Arrow, column by column (a pandas frame of objects in
    between cost a third of a replay's Python time: 0.53 of 1.6 s per million rows, cProfile)."""
    import pyarrow as pa

    if out:
        arrays = [pa.array(column, type=field.type, from_pandas=True)  # NaN is NULL, as pandas reads it
                  for column, field in zip(zip(*out), arrow_schema)]
        yield from pa.Table.from_arrays(arrays, schema=arrow_schema).to_batches()


class _GlobalClock:
    """The stream's processing time as of a batch: the newest arrival time of the batches before it."""

    def __init__(self, batch_times: list[tuple[int, int]] | None):
        self.times = sorted(batch_times or [])
        self.index = 0
        self.now: int | None = None
        self.batch: int | None = None  # the last batch whose time is in `now`

    def before(self, batch: int) -> tuple[int | None, int | None]:
        while self.index < len(self.times) and self.times[self.index][0] < batch:
            self.batch, time = self.times[self.index]
            self.now = time if self.now is None else max(self.now, time)
            self.index += 1
        return self.now, self.batch

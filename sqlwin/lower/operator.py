"""The window runtime on Python workers: one bucket of keys per call, for replay and streaming.

Keys are hashed into a few buckets; one call handles every key of its bucket with the runtime's
own per-key clocks, and the bucket's whole state is one value. The issue that introduced this
measured why: one call and one state round trip per key is 7x slower than Spark's own streaming
aggregation, one call per bucket is within reach of it.

Everything here runs inside Spark's Python workers and must not import pyspark at module level
beyond what the streaming processor needs (the processor class is created lazily).
"""

from __future__ import annotations

import pickle
import typing as t

import pandas as pd

from sqlwin.lower.stateful import OperatorConfig
from sqlwin.runtime import BatchResult, WindowRuntime

EMIT, LATE, REJECTED, STATS = "emit", "late", "rejected", "stats"
END_OF_INPUT = "end_of_input"  # the control row that ends a stream
END_BATCH = 2**62  # where end-of-input firings sort in a replay


def record_columns(config: OperatorConfig) -> list[str]:
    """The records' column names, in the order of `record_schema` (sqlwin.lower.spark_types)."""
    return (["__kind"] + [f"__k{i}" for i in range(config.key_count)]
            + ["__wstart", "__wend", "__windex"] + [f"__agg{i}" for i in range(len(config.aggregates))]
            + ["__op", "__firing", "__seq", "__batch", "__etime", "__late_by", "__reason"]
            + [f"__r{i}" for i in range(config.row_count)])


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


class BucketState:
    """The runtimes of one bucket: one with a clock per key, or one per clock key (scope 'stream')."""

    def __init__(self, config: OperatorConfig, integral: tuple[bool, ...] = ()):
        self.config = config
        self.integral = integral  # per input column __k*, __a*, __r*: a nullable integer column
        self.runtimes: dict[tuple, WindowRuntime] = {}
        self.now: int | None = None  # newest processing time seen

    # -- state ---------------------------------------------------------------------------

    def snapshot(self) -> bytes:
        return pickle.dumps({"now": self.now, "runtimes": {k: r.snapshot() for k, r in self.runtimes.items()}},
                            protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, blob: bytes | None, config: OperatorConfig, integral: tuple[bool, ...] = ()) -> "BucketState":
        state = cls(config, integral)
        if blob:
            data = pickle.loads(blob)
            state.now = data["now"]
            c = config
            state.runtimes = {k: WindowRuntime.restore(v, c.windower, c.watermark, c.emit, c.aggregates,
                                                       c.processing_time)
                              for k, v in data["runtimes"].items()}
        return state

    def _runtime(self, clock_key: tuple) -> WindowRuntime:
        runtime = self.runtimes.get(clock_key)
        if runtime is None:
            c = self.config
            runtime = WindowRuntime(c.windower, c.watermark, c.emit, c.aggregates, c.processing_time)
            if self.now is not None and c.timers:
                runtime.advance_processing_time(self.now)
            self.runtimes[clock_key] = runtime
        return runtime

    # -- driving ---------------------------------------------------------------------------

    def process(self, frame: pd.DataFrame, batch_time: int) -> list[BatchResult]:
        """One micro-batch of this bucket's rows, in arrival order."""
        c = self.config
        n = len(frame)
        if n == 0:
            return []
        flags = iter(self.integral)
        keys_columns = [column_values(frame[f"__k{i}"], next(flags, False)) for i in range(c.key_count)]
        keys = list(zip(*keys_columns)) if keys_columns else [()] * n
        times = column_values(frame["__time"], True)
        value_columns = [column_values(frame[f"__a{i}"], next(flags, False)) for i in range(c.argument_count)]
        value_columns += [column_values(frame[f"__r{i}"], next(flags, False)) for i in range(c.row_count)]
        values = list(zip(*value_columns)) if value_columns else [()] * n
        rows = zip(keys, times, values)
        self.now = batch_time if self.now is None else max(self.now, batch_time)
        if c.clock_positions is None or c.clock_positions == ():
            return [self._runtime(()).process_batch(rows, batch_time)]
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
        self.runtimes.clear()  # an ended runtime refuses input; a new stream starts afresh
        return results

    def stats_record(self, bucket: int) -> tuple:
        """A 'stats' record for progress reports: open windows, lowest and highest watermark, late rows.

        Carried in the record columns __windex (open windows), __wstart / __wend (watermarks, µs),
        __late_by (late rows so far) and __etime (the bucket).
        """
        c = self.config
        open_windows, late = 0, 0
        marks = []
        for runtime in self.runtimes.values():
            open_windows += sum(len(ks.windows) for ks in runtime._keys.values())
            late += runtime.counts["late"]
            keys = [()] if runtime.watermark_spec.scope == "stream" else list(runtime._keys)
            marks += [m for m in (runtime.watermark(k) for k in keys) if isinstance(m, int)]
        low, high = (min(marks), max(marks)) if marks else (None, None)
        return (STATS, *(None,) * c.key_count, low, high, open_windows, *(None,) * len(c.aggregates),
                None, None, None, None, bucket, late, None, *(None,) * c.row_count)

    def counts(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for runtime in self.runtimes.values():
            for name, value in runtime.counts.items():
                total[name] = total.get(name, 0) + value
        return total


def records(config: OperatorConfig, results: t.Iterable[BatchResult], batch: int | None) -> list[tuple]:
    """Emissions, late rows and rejected rows as tuples in `record_columns` order."""
    k, a, r = config.key_count, len(config.aggregates), config.row_count
    no_key, no_aggs, no_row = (None,) * k, (None,) * a, (None,) * r
    out: list[tuple] = []
    for result in results:
        for e in result.emissions:
            out.append((EMIT, *e.key, e.window_start, e.window_end, e.window_index, *e.values,
                        e.op, e.firing, e.seq, batch, None, None, None, *no_row))
        if not config.output_late:
            continue
        for late in result.late:
            row = tuple(late.values[config.argument_count:])
            out.append((LATE, *late.key, late.window_start, late.window_end, None, *no_aggs,
                        None, None, None, batch, late.event_time, late.late_by_us, "late", *row))
        for rejected in result.rejected:
            key = rejected.key if rejected.key is not None and len(rejected.key) == k else no_key
            row = tuple(rejected.values[config.argument_count:])
            out.append((REJECTED, *key, None, None, None, *no_aggs, None, None, None, batch,
                        rejected.event_time, None, rejected.reason, *row))
    return out


def records_frame(config: OperatorConfig, rows: list[tuple]) -> pd.DataFrame:
    columns = record_columns(config)
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    data = list(zip(*rows))
    return pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in zip(columns, data)})


# --------------------------------------------------------------------------- replay


def replay_function(config: OperatorConfig, integral: tuple[bool, ...], batch_times: list[tuple[int, int]] | None):
    """applyInPandas body: replay one bucket's recorded rows batch by batch, then end the input.

    `batch_times` (when the query has timers and arrival times) is the stream's (batch, time)
    list: processing time passes for every bucket at every batch, as it does in a live stream
    (where a timer wakes each bucket), not only at the batches holding its own rows.
    """

    def replay(frame: pd.DataFrame) -> pd.DataFrame:
        state = BucketState(config, integral)
        frame = frame.sort_values(["__batch", "__order"], kind="stable")
        out: list[tuple] = []
        clock = _GlobalClock(batch_times)
        for batch, rows in frame.groupby("__batch", sort=True):
            batch = int(batch)
            now, after = clock.before(batch)
            if now is not None and config.timers:
                # Time passed after batch `after` (a stream's timers fire there, before this batch).
                out += records(config, state.advance(now), after)
            times = rows["__ptime"].dropna()
            batch_time = int(times.max()) if len(times) else (now if now is not None else 0)
            out += records(config, state.process(rows, batch_time), batch)
        final, last = clock.before(END_BATCH)
        if final is not None and config.timers:
            out += records(config, state.advance(final), last)
        out += records(config, state.end_of_input(), END_BATCH)
        return records_frame(config, out)

    return replay


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

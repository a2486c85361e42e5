"""A bucket's runtimes and their state: one call of the worker code handles every key of its bucket.

`BucketState` holds the general runtime (or a vectorised one) as one value per bucket: a replay,
or a stream whose state is one value. `SegmentedBucket` keeps a runtime's state in segments of
keys (sqlwin.runtime.segments), so a micro-batch reads and writes only what its keys touch.
Both take a bucket's rows (bucket_input.py) and give BatchResults (records.py writes them).
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime import BatchResult, WindowRuntime
from sqlwin.runtime.keyed import KeyedWindowRuntime, RowBatch
from sqlwin.runtime.segments import SegmentedState, Store
from sqlwin.runtime.snapshots import OtherSnapshotKind, seal, unseal
from sqlwin.spark.bucket_input import arrow_columns, batch_columns, frame_rows, rows_frame
from sqlwin.spark.operator import OperatorConfig
from sqlwin.spark.records import stats_record

if t.TYPE_CHECKING:
    import pyarrow as pa


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


def _figures(keys: int, open_windows: int, marks: list[int], counts: dict[str, int]) -> dict:
    low, high = (min(marks), max(marks)) if marks else (None, None)
    return {"keys": keys, "open_windows": open_windows, "watermark_low": low, "watermark_high": high,
            **{name: int(value) for name, value in counts.items()}}

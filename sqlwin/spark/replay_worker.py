"""The replay body on Python workers (mapInArrow): one partition's recorded rows through the
runtime, a run of whole micro-batches at a time, then the end of input. `replay_partition` runs a
BucketState (buckets.py) over pandas chunks; a query the vectorised runtime covers (event time,
no timers) goes through Arrow as columns, in runs of at least REPLAY_RUN_ROWS rows. A stream
clock spread over partitions (`StreamClock`) and processing time (`_GlobalClock`) are replayed
batch by batch, as a live stream would see them.
"""

from __future__ import annotations

import math
import typing as t

import numpy as np
import pandas as pd

from sqlwin.spark import layout
from sqlwin.spark.bucket_input import arrow_columns, column_array
from sqlwin.spark.buckets import BucketState
from sqlwin.spark.operator import END_BATCH, OperatorConfig
from sqlwin.spark.records import records, result_batches, tuple_batches

if t.TYPE_CHECKING:
    import pyarrow as pa


class StreamClock:
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
        yield from tuple_batches(out, arrow_schema)

    def replay(chunks: t.Iterator["pa.RecordBatch"]) -> t.Iterator["pa.RecordBatch"]:
        state = BucketState(config, integral, vectorised)
        clock = _GlobalClock(batch_times)
        stream_time = dict(batch_times or ())
        moves = StreamClock(stream_clock) if spread else None
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
        moves = StreamClock(stream_clock) if stream_clock is not None else None
        last = None
        for run in _batch_runs(chunks, REPLAY_RUN_ROWS):
            batches = column_array(run, "__batch").to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            # the stream's clock batches up to this run's last (see replay_partition)
            clock = moves.arrays_until(int(batches[-1])) if moves is not None else None
            results = runtime.process_batches(arrow_columns(run, config, integral), batches, clock)
            yield from result_batches(config, results, arrow_schema)
            last = run
        if moves is not None and last is not None:  # the stream's clock after this partition's last rows
            clock = moves.arrays_until(math.inf)
            if len(clock[0]):
                empty = last.slice(0, 0)
                results = runtime.process_batches(arrow_columns(empty, config, integral), np.empty(0, np.int64), clock)
                yield from result_batches(config, results, arrow_schema)
        yield from result_batches(config, [(END_BATCH, runtime.end_of_input())], arrow_schema)

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
        batches = column_array(table, "__batch").to_numpy()
        last = int(np.searchsorted(batches, batches[-1]))  # the last batch's first row
        if last == 0:  # one batch so far: keep gathering it
            pending = table.to_batches()
            continue
        yield table.slice(0, last)
        rest = table.slice(last)
        pending, count = rest.to_batches(), rest.num_rows
    if count:
        yield pa.Table.from_batches(pending).combine_chunks()


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

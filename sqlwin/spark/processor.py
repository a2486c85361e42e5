"""The streaming operator's processor, run by Spark's Python workers (transformWithStateInPandas).

A worker module: it imports the runtime and the record layout (sqlwin.spark.operator), never the
parser or the API, so unpickling the processor on a worker does not load sqlglot. Spark gets it
wrapped in a LazyProcessor (sqlwin.spark.lazy_processor), which the driver unpickles without it.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd
import pyarrow.compute as pc
from pyspark.sql.streaming import StatefulProcessor


if t.TYPE_CHECKING:
    import pyarrow as pa
from sqlwin.spark.bucket_input import rows_frame
from sqlwin.spark.buckets import BucketState, SegmentedBucket
from sqlwin.spark.lazy_processor import declare_state
from sqlwin.spark.operator import CARRY, END_OF_INPUT, OperatorConfig
from sqlwin.spark.packing import stream_bounds_of, unpack_rows
from sqlwin.spark.records import block_frames, carried_records, records, records_frame


class WindowProcessor(StatefulProcessor):
    """One bucket of keys: restore its runtimes, apply the batch (or the timer), save them.

    Its input: packed rows (operator.pack_rows) and control rows; `columns` names them (Spark
    may hand them over as _0, _1, ...), `row_columns` the packed rows' own columns.
    """

    def __init__(self, config: OperatorConfig, integral: tuple[bool, ...], clock: str, tick_ms: int,
                 columns: list[str], row_columns: list[str], segmented: type | None = None, schema=None):
        self.config, self.integral, self.clock, self.tick_ms = config, integral, clock, tick_ms
        self.columns, self.row_columns = columns, row_columns
        # The runtime class whose state is kept in segments of keys (a vectorised one, or the
        # general one's KeyedWindowRuntime); None: a bucket's whole state in one value.
        self.segmented = segmented
        # The output's schema (a StructType): the vectorised runtime's emissions then leave as
        # typed columns (block_frames), not as a Python object per emission.
        self.schema = schema
        self._arrow_schema = None

    def init(self, handle) -> None:
        self.handle = handle
        self.state, self.store = declare_state(handle, self.segmented is not None)

    def handleInputRows(self, key, rows, timerValues) -> t.Iterator[pd.DataFrame]:
        bucket = self._load()
        frame = _concat(list(rows))
        if len(frame.columns) == len(self.columns):  # Spark may hand columns over as _0, _1, ...
            frame.columns = self.columns
        control = frame["__control"].notna()
        packed, stream_bounds, stream_ptime = stream_bounds_of(frame[~control])
        data = unpack_rows(packed, self.row_columns)
        out: list[tuple] = []
        if CARRY in data.column_names:  # an earlier stage's late, rejected and stats records: passed on
            passed = data.column(CARRY).is_valid()
            if pc.any(passed).as_py():
                out += carried_records(self.config, data.column(CARRY).filter(passed).to_pylist())
                data = data.filter(pc.invert(passed))
        now = self._now(timerValues)
        if now is not None and self.config.timers:
            out += records(self.config, bucket.advance(now), None)
        batch_time = self._batch_time(data, now, stream_ptime)
        results = bucket.process(data if isinstance(bucket, SegmentedBucket) else rows_frame(data), batch_time,
                                 stream_bounds)
        if control.any() and (frame.loc[control, "__control"] == END_OF_INPUT).any():
            results += bucket.end_of_input()
        blocks = block_frames(results, self._arrow_schema) if self._arrow_schema is not None else []
        out += records(self.config, results, None)
        out.append(bucket.stats_record(int(key[0])))
        self._save(bucket, timerValues)
        yield from blocks
        yield records_frame(self.config, out)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> t.Iterator[pd.DataFrame]:
        bucket = self._load()
        now = self._now(timerValues)
        out = records(self.config, bucket.advance(now), None) if now is not None else []
        out.append(bucket.stats_record(int(key[0])))
        self._save(bucket, timerValues)
        yield records_frame(self.config, out)

    def close(self) -> None:
        pass

    # -- helpers ------------------------------------------------------------------------

    def _load(self) -> BucketState | SegmentedBucket:
        # get() is None when there is no value: no separate exists() round trip.
        if self.segmented is None:
            value = self.state.get()
            return BucketState.restore(value[0] if value else None, self.config, self.integral, None)
        if self.schema is not None and self._arrow_schema is None:
            from pyspark.sql.pandas.types import to_arrow_schema

            self._arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        columnar = self._arrow_schema is not None
        bucket = SegmentedBucket(self.config, self.integral, self.segmented, self.store, columnar=columnar)
        if bucket.state.fresh:  # no directory yet: a new bucket, or a checkpoint of the one-value layout
            value = self.state.get()
            if value is not None:
                bucket = SegmentedBucket(self.config, self.integral, self.segmented, self.store, legacy=value[0],
                                         columnar=columnar)
                self.state.clear()  # moved into segments
        return bucket

    def _save(self, bucket: BucketState | SegmentedBucket, timerValues) -> None:
        if isinstance(bucket, BucketState):
            self.state.update((bucket.snapshot(),))
        if not self.config.timers:
            return
        for timer in list(self.handle.listTimers()):
            self.handle.deleteTimer(timer)
        if self.clock == "arrival":
            # Wake at the next advance of the recorded clock (the watermark over arrival_time).
            base = max(timerValues.getCurrentWatermarkInMs(), (bucket.now or 0) // 1000)
            self.handle.registerTimer(base + 1)
        else:
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + self.tick_ms)

    def _now(self, timerValues) -> int | None:
        if self.clock == "arrival":
            watermark = timerValues.getCurrentWatermarkInMs()
            return watermark * 1000 if watermark > 0 else None
        if self.clock == "processing":
            return timerValues.getCurrentProcessingTimeInMs() * 1000
        return None

    def _batch_time(self, data: "pa.Table", now: int | None, stream_ptime: int | None = None) -> int:
        """The batch's processing time: with arrival times, the batch's newest -- the whole
        stream's (`stream_ptime`) when its one clock is spread over buckets, else this bucket's."""
        if self.clock == "arrival":
            if stream_ptime is not None:
                return int(stream_ptime)
            newest = pc.max(data.column("__ptime")).as_py() if data.num_rows else None
            return int(newest) if newest is not None else (now or 0)
        return now or 0


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """The chunks Spark hands over (at most maxRecordsPerBatch rows each) as one frame.

    Column by column with NumPy: pd.concat checks an all-NULL object column (the control column
    of every data row) value by value, a quarter of the processor's time at 12k rows a bucket.
    """
    if len(frames) == 1:
        return frames[0]
    if any(isinstance(dtype, pd.api.extensions.ExtensionDtype) for f in frames for dtype in f.dtypes):
        return pd.concat(frames, ignore_index=True)
    return pd.DataFrame({i: np.concatenate([f.iloc[:, i].to_numpy() for f in frames])
                         for i in range(frames[0].shape[1])}).set_axis(frames[0].columns, axis=1)

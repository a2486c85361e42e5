"""The streaming operator's processor, run by Spark's Python workers (transformWithStateInPandas).

A worker module: it imports the runtime and the record layout (sqlwin.spark.operator), never the
parser or the API, so unpickling the processor on a worker does not load sqlglot.
"""

from __future__ import annotations

import typing as t

import pandas as pd
from pyspark.sql.streaming import StatefulProcessor

from sqlwin.spark.operator import END_OF_INPUT, BucketState, OperatorConfig, records, records_frame


class WindowProcessor(StatefulProcessor):
    """One bucket of keys: restore its runtimes, apply the batch (or the timer), save them."""

    def __init__(self, config: OperatorConfig, integral: tuple[bool, ...], clock: str, tick_ms: int,
                 columns: list[str], vectorised: type | None = None):
        self.config, self.integral, self.clock, self.tick_ms = config, integral, clock, tick_ms
        self.columns = columns
        self.vectorised = vectorised

    def init(self, handle) -> None:
        from pyspark.sql.types import BinaryType, StructField, StructType

        self.handle = handle
        self.state = handle.getValueState("bucket", StructType([StructField("blob", BinaryType(), True)]))

    def handleInputRows(self, key, rows, timerValues) -> t.Iterator[pd.DataFrame]:
        bucket = self._load()
        frame = pd.concat(list(rows), ignore_index=True)
        if len(frame.columns) == len(self.columns):  # Spark may hand columns over as _0, _1, ...
            frame.columns = self.columns
        control = frame["__control"].notna()
        data = frame[~control].sort_values("__order", kind="stable")
        out: list[tuple] = []
        now = self._now(timerValues)
        if now is not None and self.config.timers:
            out += records(self.config, bucket.advance(now), None)
        out += records(self.config, bucket.process(data, self._batch_time(data, now)), None)
        if control.any() and (frame.loc[control, "__control"] == END_OF_INPUT).any():
            out += records(self.config, bucket.end_of_input(), None)
        out.append(bucket.stats_record(int(key[0])))
        self._save(bucket, timerValues)
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

    def _load(self) -> BucketState:
        blob = self.state.get()[0] if self.state.exists() else None
        return BucketState.restore(blob, self.config, self.integral, self.vectorised)

    def _save(self, bucket: BucketState, timerValues) -> None:
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

    def _batch_time(self, data: pd.DataFrame, now: int | None) -> int:
        if self.clock == "arrival":
            times = data["__ptime"].dropna()
            return int(times.max()) if len(times) else (now or 0)
        return now or 0

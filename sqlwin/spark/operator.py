"""The window runtime on Python workers: what the driver and the worker modules share.

Keys are hashed into buckets (one per shuffle partition); one call handles every key of its
bucket with the runtime's own per-key clocks: one call and one state round trip per key was
measured 7x slower than Spark's own streaming aggregation, one call per bucket is within reach
of it. This module holds what every piece of that worker code reads: the operator's config
(`OperatorConfig`), the kinds and columns of the records it writes, how a Spark type's values
are read, and the choice of runtime. The rest, by idea: buckets.py (a bucket's runtimes and
state), bucket_input.py (its input rows as the runtimes read them), records.py (what it
writes), packing.py (a stream's input packed per bucket), replay_worker.py (the replay body);
processor.py is the streaming processor.

Everything here runs inside Spark's Python workers and must not import pyspark at module level
beyond what the streaming processor needs (the processor class is created lazily).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

import pandas as pd

from sqlwin.runtime import AggregateSpec
from sqlwin.runtime import select
from sqlwin.runtime.select import RuntimeChoice
from sqlwin.spark import layout
# A stream's input packed per bucket (packing.py): streaming.py imports these from here.
from sqlwin.spark.packing import CLOCK_PACK, PACKED_SCHEMA, clock_packer, pack_rows, stream_bounds_of, unpack_rows

__all__ = ["CARRIED", "CARRY", "CLOCK_PACK", "EMIT", "END_BATCH", "END_OF_INPUT", "LATE", "PACKED_SCHEMA", "REJECTED",
           "STATS", "TIMESTAMP", "OperatorConfig", "choose_runtime", "clock_packer", "column_values",
           "follows_processing_time", "joint_clock", "pack_rows", "record_columns", "stage_clock", "stream_bounds_of", "unpack_rows",
           "value_kind"]


def follows_processing_time(watermark, emit=None, processing_time: bool = False) -> bool:
    """Whether a stage's windows move with processing time (`OperatorConfig.timers`): processing-time
    windows, a watermark behind ingestion time or Bytewax's aging clock, EMIT EARLY / LATE EVERY an
    interval, an idle timeout on the processing clock. A stream then needs timers; a replay reads the
    time from the recorded arrival times."""
    return bool(processing_time or watermark.strategy in ("bytewax", "ingestion_time")
                or (emit is not None and (emit.early_interval or emit.late_interval))
                or (watermark.idle_timeout is not None and watermark.idle_clock == "processing_time"))


def stage_clock(options: t.Mapping[str, t.Any], timers: bool) -> str:
    """The clock that drives a stage's timers in a stream: 'arrival' (processing time read from the
    rows' recorded `arrival_time`), 'processing' (the wall clock) or 'none' (event time only: nothing
    moves without rows)."""
    return "arrival" if options.get("arrival_time") else "processing" if timers else "none"


def joint_clock(clocks: t.Iterable[str]) -> str:
    """The clock a stream of several stages waits on (each stage's operator keeps its own timers): the
    wall clock where any stage follows it, else the recorded arrival times where one reads them."""
    clocks = set(clocks)
    return "processing" if "processing" in clocks else "arrival" if "arrival" in clocks else "none"


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

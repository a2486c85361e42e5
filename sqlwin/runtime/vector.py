"""The vectorised runtimes, and which configurations they cover.

The general `WindowRuntime` walks rows one by one through Python objects; a vectorised runtime
takes a micro-batch as columns (columns.py) and keeps its state as columns, in NumPy:
FixedFinalRuntime (TUMBLE, HOP, CUMULATE; fixed_final.py), CountFinalRuntime (COUNT_WINDOW;
count_final.py) and SessionFinalRuntime (SESSION; session_final.py), their aggregates in
column_aggregates.py and their state in pieces of keys in pieces.py.

They cover the most common shape -- event time, the max / min event-time strategies with a clock
per key or per stream, EMIT FINAL (no early / late / changes firings, no allowed lateness), the
aggregates count, sum, min, max and avg over numbers and min_by / max_by (values and orderings of
numbers or timestamps) -- and produce exactly what `WindowRuntime` produces for it: the same
emissions in the same order with the same `seq`, the same late and rejected rows, the same counts
(the differential tests run both). `supports(...)` says whether a configuration is covered;
anything else runs on the general path.
"""

from __future__ import annotations

import typing as t

from sqlwin.runtime.column_aggregates import BY_AGGREGATES, VECTOR_AGGREGATES
from sqlwin.runtime.columns import Columns
from sqlwin.runtime.count_final import CountFinalRuntime
from sqlwin.runtime.fixed_final import FixedFinalRuntime
from sqlwin.runtime.model import AggregateSpec
from sqlwin.runtime.session_final import SessionFinalRuntime

__all__ = ["BY_AGGREGATES", "VECTOR_AGGREGATES", "VECTOR_RUNTIMES", "Columns", "CountFinalRuntime",
           "FixedFinalRuntime", "SessionFinalRuntime", "supports", "vector_class"]

VECTOR_RUNTIMES = (FixedFinalRuntime, CountFinalRuntime, SessionFinalRuntime)


def supports(windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool) -> bool:
    """Whether a vectorised runtime computes this configuration (else use WindowRuntime)."""
    return vector_class(windower, watermark, emit, aggregates, processing_time) is not None


def vector_class(windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool,
                 many_batches: bool = False):
    """The vectorised runtime for this configuration (FixedFinalRuntime, CountFinalRuntime,
    SessionFinalRuntime) or None. `many_batches`: a replay, which hands over runs of small
    batches; sessions take those one batch at a time, where the general runtime is faster."""
    for runtime in VECTOR_RUNTIMES:
        if runtime.covers(windower, watermark, emit, aggregates, processing_time, many_batches):
            return runtime
    return None

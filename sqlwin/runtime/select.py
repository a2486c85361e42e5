"""The runtime contract, and the one place that chooses which runtime runs a query.

Every window runtime keeps the `Runtime` protocol below: the replay and the streaming operator
drive whichever `choose` returns, as Beam's `create_trigger_driver` picks its batch or general
trigger driver. Three runtimes compute the same answer (the differential tests run them side by
side):

- the vectorised ones (vector.py: FixedFinalRuntime, CountFinalRuntime, SessionFinalRuntime):
  NumPy over a batch's columns, for event-time EMIT FINAL with the aggregates they cover over
  numbers (min_by / max_by also over timestamps);
- KeyedWindowRuntime (keyed.py): the general runtime whose batches touch only their own keys and
  the ones their event-time clock makes due, so a stream keeps its state in segments of keys;
- WindowRuntime (engine.py): everything, one state value per bucket (timers, processing time and
  idle timeouts visit every key as time passes).

The choice depends on the query's shape and on the kinds of its aggregate arguments (what the
input's schema says), and a stream's checkpoint may hold back a choice a newer version would make
(`segmented_general`, `by_aggregates`: its state stays where the first start put it).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlwin.runtime.engine import WindowRuntime
from sqlwin.runtime.keyed import KeyedWindowRuntime, keyed_state_applies
from sqlwin.runtime.model import BatchResult
from sqlwin.runtime.vector import BY_AGGREGATES, VECTOR_AGGREGATES, vector_class

# The kind of a value column, as the vectorised runtimes read it.
INTEGER, FLOAT, TIMESTAMP, OTHER = "integer", "float", "timestamp", "other"
ValueKind = t.Literal["integer", "float", "timestamp", "other"]


class Runtime(t.Protocol):
    """What the replay and the streaming operator call on a runtime (a bucket's, or a clock key's)."""

    counts: dict[str, int]

    def process_batch(self, rows: t.Iterable, batch_time_us: int,
                      stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        """One micro-batch of (key, event time µs, values) rows in arrival order. `stream_bounds`:
        the whole stream's batch extremes per side, when one clock for the stream is spread over
        runtimes that each hold some of its keys."""

    def batch_of(self, rows: t.Iterable) -> t.Any:
        """Row tuples as this runtime's batch form (columns, or a RowBatch)."""

    def end_of_input(self) -> BatchResult:
        """Close every window; the runtime then refuses input."""

    def key_watermarks(self) -> list[int]:
        """The lowest and highest effective watermark over the keys (empty before any row)."""

    def snapshot(self) -> bytes:
        """Everything a restarted query needs to continue exactly."""

    @classmethod
    def restore(cls, snapshot: bytes, windower=None, watermark=None, emit=None, aggregates=None,
                processing_time=None) -> "Runtime":
        """The runtime of `snapshot()`; configuration given must match the snapshot's."""


@dataclass(frozen=True)
class RuntimeChoice:
    """The runtime class for each bucket; `segmented`: a stream keeps its state in segments of keys
    (sqlwin.runtime.segments), else one value per bucket. `description` says which runtime and why,
    `storage` how a stream keeps its state (both for explain)."""

    runtime: type
    segmented: bool
    description: str
    storage: str

    @property
    def vectorised(self) -> type | None:
        """The vectorised runtime class, or None (the general runtime)."""
        return None if issubclass(self.runtime, WindowRuntime) else self.runtime


def choose(windower, watermark, emit, aggregates: t.Sequence, processing_time: bool, timers: bool,
           clock_positions: tuple[int, ...] | None, argument_kinds: t.Sequence[ValueKind], *,
           many_batches: bool = False, segmented_general: bool = True, by_aggregates: bool = True) -> RuntimeChoice:
    """The runtime that runs a query of this shape.

    argument_kinds: the kind of each aggregate argument column (values[i]). many_batches: a replay,
    which hands a runtime runs of batches at once. segmented_general / by_aggregates False: a
    stream whose checkpoint keeps the general runtime's state in one value / min_by and max_by in
    the general runtime."""
    def kind(index: int | None) -> str | None:
        return None if index is None else (argument_kinds[index] if index < len(argument_kinds) else OTHER)

    def covered(spec) -> bool:
        by = spec.func in BY_AGGREGATES
        allowed = (INTEGER, FLOAT, TIMESTAMP) if by else (INTEGER, FLOAT)
        return (by_aggregates or not by) and all(kind(i) in (None,) + allowed for i in (spec.arg, spec.arg2))

    covers = ("event-time EMIT FINAL with " + " / ".join(VECTOR_AGGREGATES)
              + " over numbers (min_by / max_by also over timestamps)")
    vector = None
    if clock_positions in (None, ()) and all(covered(a) for a in aggregates):
        vector = vector_class(windower, watermark, emit, aggregates, processing_time, many_batches)
    if vector is not None:
        return RuntimeChoice(vector, True, f"the vectorised runtime ({vector.__name__}): {covers}",
                             "its state in segments: a batch reads and writes only the keys it touches")
    general = f"the general window runtime (the vectorised one covers {covers}" + (
        ", and no SESSION in replay)" if many_batches else ")")
    if keyed_state_applies(watermark, emit, processing_time, timers, clock_positions):
        if segmented_general:
            return RuntimeChoice(KeyedWindowRuntime, True, general,
                                 "its state in segments of keys: a batch reads and writes only the keys it touches "
                                 "and those whose windows its clock closes")
        return RuntimeChoice(WindowRuntime, False, general,
                             "one state value per bucket (the layout of a checkpoint an earlier version started)")
    return RuntimeChoice(WindowRuntime, False, general,
                         "one state value per bucket (timers, processing time or an idle timeout visit every key "
                         "as time passes)")

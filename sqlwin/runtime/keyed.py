"""The general runtime with its state in pieces of keys (segments.py): a batch reads and writes
only the keys it touches and the keys whose windows its clock may close.

`KeyedWindowRuntime` is the general `WindowRuntime` with the methods segments.SegmentedState
drives a vectorised runtime through: the state of some keys as a piece (their KeyState fields,
their clocks, the order they were first seen), what a directory keeps of a piece (sizes, the
earliest watermark at which a window of it closes or leaves), and a runtime assembled from pieces
and the stream's globals (clocks of scope 'stream', processing time, sequences, counts).

It holds for the queries whose batches touch no other key than their own and the ones their
clock makes due (`keyed_state_applies`): event time without timers. Processing time, Bytewax's
and ingestion-time clocks, timed EMIT intervals and idle timeouts visit every key as time passes,
and keep a bucket's state as one value.

Rows come as a `RowBatch`: the general runtime's row tuples with the few columns SegmentedState
reads to find the keys' pieces (their distinct keys, times, NULL masks).
"""

from __future__ import annotations

import itertools
import math
import typing as t
from dataclasses import dataclass

import numpy as np

from sqlwin.runtime.clock import restore_clock
from sqlwin.runtime.engine import WindowRuntime
from sqlwin.runtime.model import BatchResult


def keyed_state_applies(watermark, emit, processing_time: bool, timers: bool,
                        clock_positions: tuple[int, ...] | None) -> bool:
    """A query whose batches touch only their own keys and the keys their event-time clock makes
    due: no timers (EMIT intervals, processing time), no clock that ages with processing time, no
    idle timeout, and one clock per key or one for the stream (not one per PARTITION BY subset)."""
    return (not timers and not processing_time and watermark.idle_timeout is None
            and watermark.strategy in ("max_event_time", "min_event_time", "upstream")
            and (clock_positions is None or clock_positions == ()))


@dataclass
class RowBatch:
    """One micro-batch of rows (key, time, values) in arrival order, with what SegmentedState
    reads: the distinct keys (first-seen order), each row's time and NULL masks."""

    rows: list
    keys: list
    time: np.ndarray
    time_null: np.ndarray
    key_null: np.ndarray

    @property
    def n(self) -> int:
        return len(self.rows)

    @classmethod
    def of(cls, rows: list) -> "RowBatch":
        n = len(rows)
        seen: dict = {}
        time = np.zeros(n, np.int64)
        time_null = np.zeros(n, bool)
        key_null = np.zeros(n, bool)
        for i, (key, event_time, _) in enumerate(rows):
            seen.setdefault(key, None)
            if key is None or any(part is None for part in key):
                key_null[i] = True
            if event_time is None:
                time_null[i] = True
            else:
                time[i] = event_time
        return cls(rows, list(seen), time, time_null, key_null)


class KeyedWindowRuntime(WindowRuntime):
    """WindowRuntime whose state segments.SegmentedState keeps in pieces of keys."""

    SEGMENT_KEYS = 4_096  # keys per segment: a touched segment is rewritten whole (Python objects)
    columnar = False  # the vectorised runtimes' flag: this one emits Emission objects

    def __init__(self, windower, watermark, emit, aggregates, processing_time: bool = False):
        super().__init__(windower, watermark, emit, aggregates, processing_time)
        self._seq_of: dict[tuple, int] = {}  # each key's first-seen number over the stream
        self._next_key_seq = 0
        self._key_list: list[tuple] = []

    # -- what SegmentedState calls ------------------------------------------------------------

    def process_columns(self, batch: RowBatch, batch_time_us: int = 0, stream_bounds=None) -> BatchResult:
        return self.process_batch(batch.rows, batch_time_us, stream_bounds)

    def batch_of(self, rows) -> RowBatch:
        """Row tuples (key, time, values) as process_columns takes them."""
        return RowBatch.of(list(rows))

    def config(self) -> tuple:
        return (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, self.processing_time)

    def key_list(self) -> list[tuple]:
        """The keys in state order (first seen, over the stream): positions index this list."""
        if len(self._key_list) != len(self._keys):
            self._key_list = list(self._keys)
        return self._key_list

    def globals_state(self) -> dict:
        """What belongs to the whole stream: the stream's clock, processing time, sequences, counts."""
        return {"stream_clock": self._clocks.stream.snapshot(), "now": self._now,
                "last_activity": self._last_activity, "max_event": self._max_event, "row_seq": self._row_seq,
                "emit_seq": self._emit_seq, "ended": self._ended, "counts": dict(self.counts),
                "next_key_seq": self._number_keys()}

    def key_piece(self, positions: np.ndarray, owner: np.ndarray | None = None, label: int = 0) -> dict:
        """The state of the keys at `positions`: their KeyState fields, clocks (scope 'key') and
        first-seen numbers."""
        self._number_keys()
        keys = self.key_list()
        chosen = [keys[i] for i in np.asarray(positions, np.int64).tolist()]
        by_key = self._clocks.by_key
        return {"keys": chosen, "seq": [self._seq_of[k] for k in chosen],
                "states": [self._keys[k].snapshot() for k in chosen],
                "clocks": [by_key[k].snapshot() if k in by_key else None for k in chosen],
                # what piece_summary needs of the query
                "lateness": self._logic.lateness, "closes": self._logic.closes_by_time}

    @classmethod
    def piece_summary(cls, piece: dict) -> dict:
        """Sizes; `min_end`: the lowest watermark at which one of the piece's windows may close or
        leave the state (a window that has not closed: its end; one kept for allowed lateness:
        its end plus the lateness), None if none ever does by time; `raw`: the clocks' range."""
        lateness = piece.get("lateness", 0)
        due = math.inf
        count = 0
        for state in piece["states"]:
            for w in state["windows"]:
                count += 1
                end = w["end"]
                if end is None:
                    continue
                point = end + lateness if w.get("closed") else end
                if point < due:
                    due = point
        raws = [c["raw"] for c in piece["clocks"] if c is not None and c.get("raw") is not None]
        return {"keys": len(piece["keys"]), "windows": count,
                "min_end": None if due == math.inf or not piece.get("closes", True) else int(due),
                "raw": (min(raws), max(raws)) if raws else None}

    @classmethod
    def from_pieces(cls, config: tuple, globals_state: dict, pieces: t.Sequence[dict]) -> "KeyedWindowRuntime":
        """A runtime over the keys of `pieces`, in the order the stream first saw them."""
        runtime = cls(*config)
        g = globals_state
        runtime._clocks.stream = restore_clock(g["stream_clock"])
        runtime._now, runtime._last_activity, runtime._max_event = g["now"], g["last_activity"], g["max_event"]
        runtime._row_seq, runtime._emit_seq, runtime._ended = g["row_seq"], g["emit_seq"], g["ended"]
        runtime.counts = dict(g["counts"])
        runtime._next_key_seq = g["next_key_seq"]
        key_state = runtime._logic.key_state
        entries = sorted(((seq, key, state, clock) for p in pieces
                          for key, seq, state, clock in zip(p["keys"], p["seq"], p["states"], p["clocks"])),
                         key=lambda entry: entry[0])
        for seq, key, state, clock in entries:
            runtime._keys[key] = key_state.restore(state)
            runtime._seq_of[key] = seq
            if clock is not None:
                runtime._clocks.by_key[key] = restore_clock(clock)
        return runtime

    @classmethod
    def stream_raw(cls, globals_state: dict) -> int | None:
        """The stream's clock (scope 'stream'; a join: its furthest side) as the globals hold it."""
        clock = globals_state["stream_clock"]
        raws = [side["raw"] for side in clock["sides"]] if "sides" in clock else [clock["raw"]]
        raws = [r for r in raws if r is not None]
        return max(raws) if raws else None

    @classmethod
    def from_runtime(cls, runtime: WindowRuntime) -> "KeyedWindowRuntime":
        """The state of a WindowRuntime (a checkpoint's one value), as this class."""
        keyed = cls(*(runtime.windower, runtime.watermark_spec, runtime.emit, runtime.aggregate_specs,
                      runtime.processing_time))
        for name in ("_keys", "_clocks", "_now", "_last_activity", "_max_event", "_row_seq", "_emit_seq",
                     "_ended", "counts"):
            setattr(keyed, name, getattr(runtime, name))
        return keyed

    # -- helpers ----------------------------------------------------------------------------------

    def _number_keys(self) -> int:
        """Number the keys added since the pieces were read (they come last, in first-seen order)."""
        if len(self._seq_of) < len(self._keys):
            for key in itertools.islice(self._keys, len(self._seq_of), None):
                self._seq_of[key] = self._next_key_seq
                self._next_key_seq += 1
        return self._next_key_seq


__all__ = ["KeyedWindowRuntime", "RowBatch", "keyed_state_applies"]

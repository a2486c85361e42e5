"""The window runtime: the loop over micro-batches, rows, keys and clocks.

The semantics are in the package docstring. What a window kind decides (which windows a row
joins, lateness, closing, merging, its per-key state) is in windows.py; when windows fire, in
triggers.py; what a firing holds, in accumulation.py; the clocks, in clock.py; the snapshot
format, in snapshots.py. This module drives them: rows in, then the batch commits (clocks move,
due windows close), timers as processing time passes, idle timeouts, the end of input.
"""

from __future__ import annotations

import math
import operator
import typing as t

from sqlwin.ir import EmitSpec, WatermarkSpec
from sqlwin.runtime import snapshots, windows
from sqlwin.runtime.accumulation import Accumulation
from sqlwin.runtime.aggregates import make_aggregates
from sqlwin.runtime.join import WindowJoin
from sqlwin.runtime.clock import Clocks, check_watermark
from sqlwin.runtime.model import (FINAL, ON_TIME, AggregateSpec, BatchResult, Emission, RejectedRow, Row,
                                  RuntimeConfigError)
from sqlwin.runtime.snapshots import check_restored_config
from sqlwin.runtime.triggers import Trigger, check_emit

INF = math.inf


def _holds_none(key: tuple) -> bool:
    for part in key:  # identity, not ==: a key part may be any value
        if part is None:
            return True
    return False


class WindowRuntime:
    """Windows of a keyed stream, driven micro-batch by micro-batch. See the package docstring."""

    def __init__(self, windower, watermark: WatermarkSpec, emit: EmitSpec,
                 aggregates: t.Sequence[AggregateSpec], processing_time: bool = False):
        self.windower, self.watermark_spec, self.emit = windower, watermark, emit
        self.aggregate_specs = tuple(aggregates)
        self.processing_time = bool(processing_time)
        logic_class = windows.logic_class(windower)
        aggregates = make_aggregates(self.aggregate_specs, {WindowJoin.name: WindowJoin})
        check_watermark(watermark, self.processing_time)
        check_emit(emit)
        self._panes = Accumulation(aggregates, emit, self._emit)
        self._logic = logic_class(windower, watermark, emit, self.processing_time, self._panes)
        self._trigger = Trigger(emit, self._logic, self._panes)
        # Everything below is the state a snapshot carries.
        self._keys: dict[tuple, windows.KeyState] = {}
        self._clocks = Clocks(watermark)
        self._now: int | None = None  # processing time of the last batch / timer advance
        self._last_activity: int | None = None  # processing time of the stream's last row
        self._max_event: int | None = None  # newest event time of the stream (event-time idleness)
        self._row_seq = 0
        self._emit_seq = 0
        self._ended = False
        self.counts = {"rows": 0, "late": 0, "rejected": 0, "unassigned": 0, "emissions": 0}

    # -- public API ------------------------------------------------------------------

    def process_batch(self, rows: t.Iterable[Row], batch_time_us: int,
                      stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        """Apply one micro-batch (rows in arrival order) that arrived at processing time batch_time_us.

        `stream_bounds`: this runtime holds some of the stream's keys (one bucket of several) and the
        batch's oldest and newest event time over the *whole* stream, per input side ({0: (low,
        high)} for one input), counting every row with a key and a time. A clock for the stream
        then commits what one runtime holding every key would (VS-16: a batch's rows are checked
        against the watermark the previous batches left, so the buckets' batch extremes combine
        exactly), and an event-time idle timeout judges its keys against the stream's newest time.
        Rows late for every window are among them, which changes nothing for the newest time (such
        a row is behind the clock) but would for the oldest: 'min_event_time' cannot combine so.
        """
        self._check_running()
        out = BatchResult()
        self._advance(batch_time_us, out)  # timers due by now fire before the batch's rows
        batch: dict[tuple, list[int]] = {}  # clock owner -> [min, max] time of the batch's on-time rows
        keys_seen: dict[tuple, None] = {}
        # The watermarks the batch's rows are checked against: they move only when the batch
        # commits, so each owner's is looked up once per batch.
        marks: dict[tuple, t.Any] = {}
        logic, keys, counts = self._logic, self._keys, self.counts
        place, new_key, needs_time = logic.place, logic.key_state, logic.needs_time
        after_row = self._trigger.after_row if self._trigger.per_row else None
        per_key = self._clocks.per_key
        sided = self._clocks.sides > 1  # a windowed join: a clock per side, the row's first value its side
        processing_time = self.processing_time
        now = self._now
        accepted = unassigned = 0
        for key, event_time, values in rows:
            values = tuple(values)
            if key is None or (isinstance(key, tuple) and _holds_none(key)):
                self._reject(out, key, event_time, values, "null_key")  # QX-20: never silently dropped
                continue
            if processing_time:
                time = now
            elif event_time is None and needs_time:
                self._reject(out, key, event_time, values, "null_time")
                continue
            else:
                time = event_time
            self._row_seq += 1
            accepted += 1
            ks = keys.get(key)
            if ks is None:
                ks = keys[key] = new_key()
            keys_seen[key] = None
            owner = key if per_key else ()
            wm = marks[owner] if owner in marks else marks.setdefault(owner, self.watermark(key))
            touched = place(key, ks, time, self._row_seq, values, wm, out)
            if not touched:
                if touched is None:  # late for every window it belongs to: it does not move the clock
                    continue
                unassigned += 1
            if time is not None:
                mover = (owner, values[0]) if sided else owner
                bounds = batch.get(mover)
                if bounds is None:
                    batch[mover] = [time, time]
                elif time < bounds[0]:
                    bounds[0] = time
                elif time > bounds[1]:
                    bounds[1] = time
                if ks.last_event is None or time > ks.last_event:
                    ks.last_event = time
                if self._max_event is None or time > self._max_event:
                    self._max_event = time
            if after_row is not None and touched:
                after_row(key, ks, touched, out)
        counts["rows"] += accepted
        counts["late"] += len(out.late)
        counts["unassigned"] += unassigned
        if stream_bounds:
            self._take_stream_bounds(stream_bounds, batch)
        self._commit(batch, keys_seen, out)
        return out

    def _take_stream_bounds(self, bounds: t.Mapping[int, tuple[int, int]], batch: dict) -> None:
        """Widen the batch's clock movers to the whole stream's extremes (see process_batch)."""
        if self.watermark_spec.strategy == "min_event_time":
            raise RuntimeConfigError("A 'min_event_time' clock cannot combine buckets' batch extremes",
                                     hint="one runtime for the whole stream")
        if bounds:
            newest = max(high for _, high in bounds.values())
            self._max_event = newest if self._max_event is None else max(self._max_event, newest)
        if self._clocks.per_key:
            return  # each key's clock is the key's own, and all its rows are here
        sided = self._clocks.sides > 1
        for side, (low, high) in bounds.items():
            mover = ((), side) if sided else ()
            known = batch.get(mover)
            batch[mover] = [low, high] if known is None else [min(known[0], low), max(known[1], high)]

    def advance_processing_time(self, now_us: int) -> BatchResult:
        """Let processing time pass without rows: idle timeouts, processing-time windows, intervals."""
        self._check_running()
        out = BatchResult()
        self._advance(now_us, out)
        return out

    def end_of_input(self) -> BatchResult:
        """Close every window (the watermark jumps to +inf). Partial COUNT_WINDOWs are not emitted."""
        self._check_running()
        out = BatchResult()
        self._ended = True
        for key, ks in self._keys.items():
            self._flush_windows(key, ks, out)
            ks.clear()  # partial count windows go without a firing (as Quix, Flink)
        return out

    def watermark(self, key: tuple = ()) -> int | float | None:
        """The effective watermark governing `key` (None before any row; +inf after end of input)."""
        if self._ended:
            return INF
        if self.processing_time:
            return None if self._now is None else self._now - self.watermark_spec.delay
        return self._clocks.effective(key)

    def open_windows(self, key: tuple = ()) -> list[tuple]:
        """(start, end) of the windows `key` holds (open or kept for lateness), for inspection."""
        ks = self._keys.get(key)
        return [] if ks is None else [w.bounds() for w in sorted(ks.windows.values(), key=windows.order)]

    @property
    def open_window_count(self) -> int:
        """Windows held over all keys (open, or kept for allowed lateness)."""
        return sum(len(ks.windows) for ks in self._keys.values())

    @property
    def key_count(self) -> int:
        return len(self._keys)

    def key_watermarks(self) -> list[int]:
        """The lowest and highest effective watermark over the keys (scope 'stream': the stream's)."""
        keys = list(self._keys) if self._clocks.per_key else [()]
        marks = [m for m in (self.watermark(k) for k in keys) if isinstance(m, int)]
        return [min(marks), max(marks)] if marks else []

    def snapshot(self) -> bytes:
        """Everything a restarted query needs to continue exactly, as bytes (snapshots.py)."""
        config = (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, self.processing_time)
        state = {
            "keys": [(key, ks.snapshot()) for key, ks in self._keys.items()],
            "clocks": self._clocks.snapshot(),
            "now": self._now, "last_activity": self._last_activity, "max_event": self._max_event,
            "row_seq": self._row_seq, "emit_seq": self._emit_seq, "ended": self._ended,
            "counts": dict(self.counts),
        }
        return snapshots.seal("WindowRuntime", state, config)

    @classmethod
    def restore(cls, snapshot: bytes, windower=None, watermark: WatermarkSpec | None = None,
                emit: EmitSpec | None = None, aggregates: t.Sequence[AggregateSpec] | None = None,
                processing_time: bool | None = None) -> "WindowRuntime":
        """Rebuild a runtime from `snapshot()` (this version's or an earlier one's). Configuration
        passed here must match the snapshot's."""
        sealed = snapshots.unseal(snapshot, "WindowRuntime")
        stored, state = sealed.config, sealed.state
        check_restored_config(stored, (windower, watermark, emit, aggregates, processing_time))
        runtime = cls(*stored)
        key_state = runtime._logic.key_state
        runtime._keys = {key: key_state.restore(fields) for key, fields in state["keys"]}
        runtime._clocks.restore(state["clocks"])
        runtime._now, runtime._last_activity = state["now"], state["last_activity"]
        runtime._max_event, runtime._ended = state["max_event"], state["ended"]
        runtime._row_seq, runtime._emit_seq = state["row_seq"], state["emit_seq"]
        runtime.counts = dict(state["counts"])
        return runtime

    # -- output ------------------------------------------------------------------------

    def _reject(self, out, key, event_time, values, reason: str) -> None:
        self.counts["rejected"] += 1
        out.rejected.append(RejectedRow(key, event_time, values, reason))

    def _emit(self, out, key, start, end, values, op, firing, index) -> None:
        self._emit_seq += 1
        self.counts["emissions"] += 1
        out.emissions.append(Emission(key, start, end, values, op, firing, self._emit_seq, index))

    # -- closing -----------------------------------------------------------------------

    def _close_due(self, keys: t.Iterable[tuple], firing: str, out) -> None:
        """Close what the watermark reached and purge what passed the lateness horizon, per key."""
        logic, trigger = self._logic, self._trigger
        if not logic.closes_by_time:
            return  # they close when full / at end of input, never by time
        reached = operator.gt if logic.inclusive_end else operator.ge  # has `wm` closed a window ending at `end`?
        for key in keys:
            ks = self._keys[key]
            wm = self.watermark(key)
            if wm is None:
                continue
            horizon = logic.horizon(wm)
            for wid, window in sorted(ks.windows.items(), key=windows.by_order):
                if not window.closed and reached(wm, window.end):
                    trigger.close(out, key, window, firing)
                if reached(horizon, window.end):
                    trigger.purge(out, key, window)
                    logic.purge(ks, wid, window)
            logic.forget(ks, horizon)

    def _flush_windows(self, key, ks: windows.KeyState, out) -> None:
        """End of input / idle: every window closes now, firing FINAL, and leaves the state."""
        logic, trigger = self._logic, self._trigger
        if not logic.flushes:
            return  # partial count windows never fire
        for wid, window in sorted(ks.windows.items(), key=windows.by_order):
            if not window.closed:
                trigger.close(out, key, window, FINAL)
            trigger.purge(out, key, window)
            logic.purge(ks, wid, window)

    # -- time passing ------------------------------------------------------------------

    def _advance(self, now: int, out) -> None:
        """Processing time moves to `now` (never backwards); fire every timer due by then."""
        previous = self._now
        self._now = now if previous is None else max(previous, now)
        if self.processing_time:
            self._close_due(list(self._keys), ON_TIME, out)
        elif self.watermark_spec.strategy in ("bytewax", "ingestion_time"):
            self._clocks.age(self._now)
            self._close_due(list(self._keys), ON_TIME, out)
        spec = self.watermark_spec
        if spec.idle_timeout is not None and (spec.idle_clock == "processing_time" or self.processing_time):
            self._idle_by_processing_time(out)  # with processing time both clocks are the same
        if previous is not None:
            self._trigger.tick(previous, self._now, self._keys, out)

    def _commit(self, batch: dict, keys_seen: dict, out) -> None:
        """The batch is applied: move the watermark(s), then close what they reached."""
        now = self._now
        for key in keys_seen:
            self._keys[key].last_activity = now
        if keys_seen:
            self._last_activity = now
        if self.processing_time:
            return  # processing-time windows close on timers (`_advance`)
        sided = self._clocks.sides > 1
        for mover, (low, high) in batch.items():
            if sided:  # (owner, side)
                self._clocks.commit(mover[0], low, high, now, mover[1])
            else:
                self._clocks.commit(mover, low, high, now)
        self._close_due(list(keys_seen) if self._clocks.per_key else list(self._keys), ON_TIME, out)
        if self.watermark_spec.idle_timeout is not None and self.watermark_spec.idle_clock == "event_time":
            self._idle_by_event_time(out)

    # -- idle timeout ------------------------------------------------------------------

    def _idle_by_processing_time(self, out) -> None:
        timeout, now = self.watermark_spec.idle_timeout, self._now
        if not self._clocks.per_key:
            if self._last_activity is not None and now - self._last_activity >= timeout:
                self._flush_idle(list(self._keys), out)
            return
        idle = [key for key, ks in self._keys.items()
                if ks.last_activity is not None and now - ks.last_activity >= timeout]
        self._flush_idle(idle, out)

    def _idle_by_event_time(self, out) -> None:
        # VS-12: a key is idle when the stream's newest event time is idle_timeout past its own.
        timeout = self.watermark_spec.idle_timeout
        idle = [key for key, ks in self._keys.items()
                if ks.last_event is not None and self._max_event - ks.last_event >= timeout]
        self._flush_idle(idle, out)

    def _flush_idle(self, keys: list[tuple], out) -> None:
        """VS-11: after the silence, every open window of the key (or the stream) closes, FINAL.

        With event time the clock jumps past those windows, so later rows for them are late as
        they would be after the watermark closed them. Processing-time windows and GLOBAL
        windows close directly; COUNT_WINDOWs stay (a partial count window never fires).
        """
        keys = [key for key in keys if any(not w.closed for w in self._keys[key].windows.values())]
        logic = self._logic
        if not keys or not logic.idles_out:
            return
        if self.processing_time or not logic.closes_by_time:
            for key in keys:
                self._flush_windows(key, self._keys[key], out)
            return
        # The clock jumps to where the last open window closes (SLIDE: past its inclusive end).
        reach = (1 if logic.inclusive_end else 0) + self.watermark_spec.delay
        for key in keys:
            ends = [w.end for w in self._keys[key].windows.values() if not w.closed]
            self._clocks.of(key).jump(max(ends) + reach, self._now)
        self._close_due(keys if self._clocks.per_key else list(self._keys), FINAL, out)

    def _check_running(self) -> None:
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")

"""The window state machine. The semantics it implements are in the package docstring."""

from __future__ import annotations

import bisect
import math
import pickle
import typing as t

from sqlwin.ir import EmitSpec, WatermarkSpec
from sqlwin.runtime import assign
from sqlwin.runtime.aggregates import make_aggregates
from sqlwin.runtime.assign import COUNT, FIXED, GLOBAL, SESSION, SLIDE
from sqlwin.runtime.clock import Clock
from sqlwin.runtime.model import (
    CHANGES,
    DELETE,
    EARLY,
    FINAL,
    INSERT,
    LATE,
    ON_TIME,
    UPDATE_AFTER,
    UPDATE_BEFORE,
    AggregateSpec,
    BatchResult,
    Emission,
    LateRow,
    RejectedRow,
    Row,
    RuntimeConfigError,
)

SNAPSHOT_VERSION = 1
INF = math.inf

# --------------------------------------------------------------------------- state


class _Window:
    """One window of one key: its accumulators and its firing bookkeeping.

    start / end are microseconds ([start, end) or SLIDE's [start, end]); for COUNT_WINDOW they
    are row positions and first_time / last_time are what an emission shows; GLOBAL has None.
    """

    __slots__ = ("start", "end", "last", "acc", "delta", "pending", "early_count", "late_count",
                 "fired", "fired_values", "closed", "first_time", "last_time", "full")

    def __init__(self, start, end, acc, delta, closed=False):
        self.start, self.end = start, end
        self.last = start  # SESSION: the time of its last row
        self.acc, self.delta = acc, delta  # delta: rows since the last firing (DISCARDING only)
        self.pending = 0  # rows since the last firing
        self.early_count = 0  # rows since the last firing while open
        self.late_count = 0  # rows since the last firing while closed (allowed lateness)
        self.fired = False  # has emitted under its current identity (start, end)
        self.fired_values: tuple | None = None
        self.closed = closed  # the watermark reached its end (kept only for allowed lateness)
        self.first_time = self.last_time = None
        self.full = False  # COUNT_WINDOW: its last row arrived

    def __getstate__(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state):
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)


class _KeyState:
    __slots__ = ("windows", "rows", "tombstones", "count", "last_activity", "last_event")

    def __init__(self):
        self.windows: dict = {}  # window id -> _Window
        self.rows: list = []  # SLIDE: (order key, time, values) of rows a new window may need
        self.tombstones: list = []  # SESSION: purged sessions a later row must not overlap
        self.count = 0  # COUNT_WINDOW: rows seen
        self.last_activity: int | None = None  # processing time of the key's last row
        self.last_event: int | None = None  # newest event time of the key

    def __getstate__(self):
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state):
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)


def _sort_key(window: _Window) -> tuple:
    """Emission order within a key: by window end, then start; GLOBAL last."""
    end = INF if window.end is None else window.end
    start = -INF if window.start is None else window.start
    return (end, start)


# --------------------------------------------------------------------------- runtime


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
        self._kind = assign.kind_of(windower)
        self._aggs = make_aggregates(self.aggregate_specs)
        _check_watermark(watermark, self.processing_time)
        _check_emit(emit)
        self._late_rows = emit.late_rows or (1 if emit.allowed_lateness and not emit.late_interval else None)
        self._discarding = emit.accumulation == "DISCARDING"
        self._retracting = emit.accumulation == "RETRACTING"
        self._stream_scope = watermark.scope == "stream"
        # Whether a row can fire a window by itself (else firings come only at commits and timers).
        self._row_firings = bool(self._kind == COUNT or emit.changes or emit.early_rows or self._late_rows)
        # Everything below is the state a snapshot carries.
        self._keys: dict[tuple, _KeyState] = {}
        self._clocks: dict[tuple, Clock] = {}  # scope 'key'
        self._stream_clock = Clock()  # scope 'stream'
        self._now: int | None = None  # processing time of the last batch / timer advance
        self._last_activity: int | None = None  # processing time of the stream's last row
        self._max_event: int | None = None  # newest event time of the stream (event-time idleness)
        self._row_seq = 0
        self._emit_seq = 0
        self._ended = False
        self.counts = {"rows": 0, "late": 0, "rejected": 0, "unassigned": 0, "emissions": 0}

    # -- public API ------------------------------------------------------------------

    def process_batch(self, rows: t.Iterable[Row], batch_time_us: int) -> BatchResult:
        """Apply one micro-batch (rows in arrival order) that arrived at processing time batch_time_us."""
        self._check_running()
        out = BatchResult()
        self._advance(batch_time_us, out)  # timers due by now fire before the batch's rows
        batch: dict[tuple, list[int]] = {}  # clock owner -> [min, max] time of the batch's on-time rows
        keys_seen: dict[tuple, None] = {}
        # The watermarks the batch's rows are checked against: they move only when the batch
        # commits, so each key's is looked up once per batch.
        marks: dict[tuple, t.Any] = {}
        for key, event_time, values in rows:
            self._process_row(key, event_time, tuple(values), batch, keys_seen, marks, out)
        self._commit(batch, keys_seen, out)
        return out

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
            ks.windows.clear()  # partial count windows go without a firing (as Quix, Flink)
            ks.rows.clear()
            ks.tombstones.clear()
        return out

    def watermark(self, key: tuple = ()) -> int | float | None:
        """The effective watermark governing `key` (None before any row; +inf after end of input)."""
        if self._ended:
            return INF
        if self.processing_time:
            return None if self._now is None else self._now - self.watermark_spec.delay
        clock = self._stream_clock if self._stream_scope else self._clocks.get(key)
        return None if clock is None else clock.effective(self.watermark_spec)

    def open_windows(self, key: tuple = ()) -> list[tuple]:
        """(start, end) of the windows `key` holds (open or kept for lateness), for inspection."""
        ks = self._keys.get(key)
        return [] if ks is None else [self._bounds(w) for w in sorted(ks.windows.values(), key=_sort_key)]

    @property
    def open_window_count(self) -> int:
        """Windows held over all keys (open, or kept for allowed lateness)."""
        return sum(len(ks.windows) for ks in self._keys.values())

    @property
    def key_count(self) -> int:
        return len(self._keys)

    def key_watermarks(self) -> list[int]:
        """The lowest and highest effective watermark over the keys (scope 'stream': the stream's)."""
        keys = [()] if self._stream_scope else list(self._keys)
        marks = [m for m in (self.watermark(k) for k in keys) if isinstance(m, int)]
        return [min(marks), max(marks)] if marks else []

    def snapshot(self) -> bytes:
        """Everything a restarted query needs to continue exactly, as bytes."""
        config = (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, self.processing_time)
        state = {name: getattr(self, name) for name in _STATE_FIELDS}
        return pickle.dumps({"version": SNAPSHOT_VERSION, "config": config, "state": state},
                            protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def restore(cls, snapshot: bytes, windower=None, watermark: WatermarkSpec | None = None,
                emit: EmitSpec | None = None, aggregates: t.Sequence[AggregateSpec] | None = None,
                processing_time: bool | None = None) -> "WindowRuntime":
        """Rebuild a runtime from `snapshot()`. Configuration passed here must match the snapshot's."""
        data = pickle.loads(snapshot)
        if data.get("version") != SNAPSHOT_VERSION:
            raise RuntimeConfigError(f"Unknown runtime snapshot version {data.get('version')!r}")
        stored = data["config"]
        check_restored_config(stored, (windower, watermark, emit, aggregates, processing_time))
        runtime = cls(*stored)
        for name, value in data["state"].items():
            setattr(runtime, name, value)
        return runtime

    # -- rows --------------------------------------------------------------------------

    def _process_row(self, key, event_time, values, batch, keys_seen, marks, out: BatchResult) -> None:
        reason = self._reject_reason(key, event_time)
        if reason:
            self.counts["rejected"] += 1
            out.rejected.append(RejectedRow(key, event_time, values, reason))
            return
        time = self._now if self.processing_time else event_time
        self._row_seq += 1
        self.counts["rows"] += 1
        ks = self._keys.get(key)
        if ks is None:
            ks = self._keys[key] = _KeyState()
        keys_seen[key] = None
        owner = () if self._stream_scope else key
        wm = marks[owner] if owner in marks else marks.setdefault(owner, self.watermark(key))
        touched = self._place(key, ks, time, self._row_seq, values, wm, out)
        if touched is None:  # late for every window it belongs to: it does not move the clock
            return
        if time is not None:
            self._note_time(key, ks, time, batch)
        if self._row_firings:
            self._after_row(key, ks, touched, out)

    def _reject_reason(self, key, event_time) -> str | None:
        if key is None or (isinstance(key, tuple) and _holds_none(key)):
            return "null_key"  # QX-20: counted and returned, never silently dropped
        if event_time is None and not self.processing_time and self._kind not in (COUNT, GLOBAL):
            return "null_time"
        return None

    def _note_time(self, key, ks: _KeyState, time: int, batch) -> None:
        owner = () if self._stream_scope else key
        bounds = batch.get(owner)
        batch[owner] = [time, time] if bounds is None else [min(bounds[0], time), max(bounds[1], time)]
        ks.last_event = time if ks.last_event is None else max(ks.last_event, time)
        self._max_event = time if self._max_event is None else max(self._max_event, time)

    def _place(self, key, ks, time, seq, values, wm, out) -> list[_Window] | None:
        """Put the row in its windows; return the windows it joined, or None if it was late for all."""
        if self._kind == FIXED:
            return self._place_fixed(key, ks, time, seq, values, wm, out)
        if self._kind == SESSION:
            return self._place_session(key, ks, time, seq, values, wm, out)
        if self._kind == SLIDE:
            return self._place_slide(key, ks, time, seq, values, wm, out)
        if self._kind == COUNT:
            return self._place_count(ks, time, seq, values)
        window = ks.windows.get(None)
        if window is None:
            window = ks.windows[None] = self._new_window(None, None)
        self._add(window, time, seq, values)
        return [window]

    def _horizon(self, wm) -> int | float:
        """Windows ending at or before this are gone: the watermark minus the allowed lateness."""
        return -INF if wm is None else wm - self.emit.allowed_lateness

    def _late(self, out, key, time, values, wm, start=None, end=None) -> None:
        self.counts["late"] += 1
        out.late.append(LateRow(key, time, values, wm - time, start, end))

    def _place_fixed(self, key, ks, time, seq, values, wm, out):
        spans = assign.fixed_windows(self.windower, time)
        if not spans:  # HOP with slide > size: a time in a gap joins no window (BW-05)
            self.counts["unassigned"] += 1
            return []
        horizon = self._horizon(wm)
        if self.watermark_spec.lateness_rule == "before_watermark" and time < horizon:
            for start, end in spans:
                self._late(out, key, time, values, wm, start, end)
            return None
        touched = []
        for start, end in spans:
            if end <= horizon:  # closed and purged: late for this window only
                self._late(out, key, time, values, wm, start, end)
                continue
            window = ks.windows.get((start, end))
            if window is None:  # a window may be born closed, kept by allowed lateness
                window = ks.windows[(start, end)] = self._new_window(start, end, wm is not None and end <= wm)
            self._add(window, time, seq, values)
            touched.append(window)
        return touched or None

    def _place_session(self, key, ks, time, seq, values, wm, out):
        gap = self.windower.gap
        horizon = self._horizon(wm)
        if self.watermark_spec.lateness_rule == "before_watermark":
            if time < horizon:
                self._late(out, key, time, values, wm)
                return None
        else:
            if time + gap <= horizon:  # the session it would open is already closed
                self._late(out, key, time, values, wm)
                return None
            for start, end in ks.tombstones:  # it would join (or bridge into) an emitted session
                if start < time + gap and time < end:
                    self._late(out, key, time, values, wm, start, end)
                    return None
        overlapping = sorted((w for w in ks.windows.values() if w.start < time + gap and time < w.end),
                             key=_sort_key)
        if len(overlapping) == 1 and overlapping[0].start <= time <= overlapping[0].last:
            window = overlapping[0]  # AP-05 case 1: fits without changing the session
        else:
            window = self._merge_sessions(key, ks, overlapping, time, wm, out)  # cases 2, 3, 4
        self._add(window, time, seq, values)
        window.last = max(window.last, time)
        return [window]

    def _merge_sessions(self, key, ks, old: list[_Window], time, wm, out) -> _Window:
        """A new session from the row's proto-session [t, t + gap) and every session it overlaps."""
        gap = self.windower.gap
        start = min([time] + [w.start for w in old])
        last = max([time] + [w.last for w in old])
        window = self._new_window(start, last + gap, wm is not None and last + gap <= wm)
        window.last = last
        for w in old:
            window.acc = [agg.merge(a, b) for agg, a, b in zip(self._aggs, window.acc, w.acc)]
            if self._discarding:
                window.delta = [agg.merge(a, b) for agg, a, b in zip(self._aggs, window.delta, w.delta)]
            window.pending += w.pending
            window.early_count += w.early_count
            window.late_count += w.late_count
            del ks.windows[(w.start, w.end)]
            if self._retracting and w.fired:  # AP-05: the replaced session is retracted
                firing = CHANGES if self.emit.changes else LATE if window.closed else EARLY
                self._emit(out, key, w.start, w.end, w.fired_values, DELETE, firing)
        ks.windows[(window.start, window.end)] = window
        return window

    def _place_slide(self, key, ks, time, seq, values, wm, out):
        size = self.windower.size
        # The row's own window [t - size, t] is the one that closes first; if it is gone, the
        # row is late, under either lateness rule (windows ending later still accept rows).
        if time < self._horizon(wm):
            self._late(out, key, time, values, wm, time - size, time)
            return None
        row = ((time, seq), time, values)
        bisect.insort(ks.rows, row, key=lambda r: r[0])
        touched = []
        for end, window in ks.windows.items():
            if end - size <= time <= end and end != time:
                self._add(window, time, seq, values)
                touched.append(window)
        own = ks.windows.get(time)
        if own is None:
            own = ks.windows[time] = self._new_window(time - size, time, wm is not None and wm > time)
            low = bisect.bisect_left(ks.rows, (time - size, -INF), key=lambda r: r[0])
            for (_, row_seq), row_time, row_values in ks.rows[low:]:
                if row_time <= time:
                    self._add(own, row_time, row_seq, row_values)
        else:
            self._add(own, time, seq, values)
        touched.append(own)
        return touched

    def _place_count(self, ks, time, seq, values):
        size, slide = self.windower.size, self.windower.slide
        index = ks.count
        ks.count += 1
        touched = []
        first_k = max(0, -(-(index - size + 1) // slide))
        for k in range(first_k, index // slide + 1):
            if not k * slide <= index < k * slide + size:
                continue  # slide > size: this row falls between windows
            window = ks.windows.get(k)
            if window is None:
                window = ks.windows[k] = self._new_window(k * slide, k * slide + size - 1)
            self._add(window, time, seq, values)
            if index == k * slide:  # the first row's time, even NULL (not the first non-NULL one)
                window.first_time = time
            window.last_time = time
            window.full = index == k * slide + size - 1
            touched.append(window)
        if not touched:
            self.counts["unassigned"] += 1
        return touched

    def _new_window(self, start, end, closed=False) -> _Window:
        delta = [agg.init() for agg in self._aggs] if self._discarding else None
        return _Window(start, end, [agg.init() for agg in self._aggs], delta, closed)

    def _add(self, window: _Window, time, seq, values) -> None:
        window.acc = [agg.add(s, time, seq, values) for agg, s in zip(self._aggs, window.acc)]
        if self._discarding:
            window.delta = [agg.add(s, time, seq, values) for agg, s in zip(self._aggs, window.delta)]
        window.pending += 1
        if window.closed:
            window.late_count += 1
        else:
            window.early_count += 1

    def _after_row(self, key, ks, touched: list[_Window], out) -> None:
        """Row-driven firings, in window order: CHANGES, EARLY EVERY n ROWS, late rows, full count windows."""
        for window in (sorted(touched, key=_sort_key) if len(touched) > 1 else touched):
            if window.full:
                self._fire(out, key, window, CHANGES if self.emit.changes else ON_TIME,
                           wanted=self.emit.changes or self.emit.final)
                del ks.windows[window.start // self.windower.slide]
            elif self.emit.changes:
                self._fire(out, key, window, LATE if window.closed else CHANGES)
            elif window.closed:
                if self._late_rows and window.late_count >= self._late_rows:
                    self._fire(out, key, window, LATE)
            elif self.emit.early_rows and window.early_count >= self.emit.early_rows:
                self._fire(out, key, window, EARLY)

    # -- firing ------------------------------------------------------------------------

    def _fire(self, out, key, window: _Window, firing: str, wanted: bool = True) -> None:
        """One trigger firing of a window, shaped by the accumulation mode and ONLY UPDATED."""
        new_rows = window.pending
        window.pending = window.early_count = window.late_count = 0
        if not wanted or (self._discarding and not new_rows):
            return  # a DISCARDING pane without new rows is empty
        values = self._results(window.delta if self._discarding else window.acc)
        if self._discarding:
            window.delta = [agg.init() for agg in self._aggs]
        start, end = self._bounds(window)
        index = window.start // self.windower.slide if self._kind == COUNT else None
        unchanged = window.fired and values == window.fired_values
        if unchanged and (self.emit.only_updated or self._retracting):
            return  # AP-09; a changelog has nothing to say about an unchanged result
        if self._discarding or not window.fired:
            self._emit(out, key, start, end, values, INSERT, firing, index)
        else:
            if self._retracting:
                self._emit(out, key, start, end, window.fired_values, UPDATE_BEFORE, firing, index)
            self._emit(out, key, start, end, values, UPDATE_AFTER, firing, index)
        window.fired, window.fired_values = True, values

    def _emit(self, out, key, start, end, values, op, firing, index=None) -> None:
        self._emit_seq += 1
        self.counts["emissions"] += 1
        out.emissions.append(Emission(key, start, end, values, op, firing, self._emit_seq, index))

    def _results(self, states) -> tuple:
        return tuple(agg.result(s) for agg, s in zip(self._aggs, states))

    def _bounds(self, window: _Window) -> tuple:
        if self._kind == COUNT:
            return (window.first_time, window.last_time)
        return (window.start, window.end)

    # -- closing -----------------------------------------------------------------------

    def _reached(self, end, wm) -> bool:
        """Has the watermark closed a window ending at `end`? SLIDE's end is inclusive."""
        return wm > end if self._kind == SLIDE else wm >= end

    def _close_due(self, keys: t.Iterable[tuple], firing: str, out) -> None:
        """Close what the watermark reached and purge what passed the lateness horizon, per key."""
        if self._kind in (COUNT, GLOBAL):
            return  # they close when full / at end of input, never by time
        for key in keys:
            ks = self._keys[key]
            wm = self.watermark(key)
            if wm is None:
                continue
            horizon = self._horizon(wm)
            for wid, window in sorted(ks.windows.items(), key=lambda item: _sort_key(item[1])):
                if not window.closed and self._reached(window.end, wm):
                    self._close(out, key, window, firing)
                if self._reached(window.end, horizon):
                    self._purge(out, key, ks, wid, window)
            self._forget(ks, horizon)

    def _close(self, out, key, window: _Window, firing: str) -> None:
        if not self.emit.changes:  # EMIT CHANGES already said everything, row by row
            self._fire(out, key, window, firing, wanted=self.emit.final)
        window.closed = True

    def _purge(self, out, key, ks: _KeyState, wid, window: _Window) -> None:
        if window.closed and window.pending and not self.emit.changes:
            self._fire(out, key, window, LATE)  # late rows not yet fired (LATE EVERY n > 1, interval)
        del ks.windows[wid]
        if (self._kind == SESSION and self.watermark_spec.lateness_rule == "window_closed"
                and not self.processing_time):  # processing-time rows are never late
            ks.tombstones.append((window.start, window.end))

    def _forget(self, ks: _KeyState, horizon) -> None:
        """Drop what no row that can still be accepted could need."""
        if self._kind == SESSION:
            # An accepted row has t + gap > horizon: it cannot overlap a session ending before t.
            gap = self.windower.gap
            ks.tombstones = [(s, e) for s, e in ks.tombstones if e + gap > horizon]
        elif self._kind == SLIDE and ks.rows:
            # A new window [u - size, u] needs u >= horizon, so rows before horizon - size are done.
            low = bisect.bisect_left(ks.rows, (horizon - self.windower.size, -INF), key=lambda r: r[0])
            del ks.rows[:low]

    def _flush_windows(self, key, ks: _KeyState, out) -> None:
        """End of input / idle: every window closes now, firing FINAL, and leaves the state."""
        for wid, window in sorted(ks.windows.items(), key=lambda item: _sort_key(item[1])):
            if self._kind == COUNT:
                continue
            if not window.closed:
                self._close(out, key, window, FINAL)
            self._purge(out, key, ks, wid, window)

    # -- time passing ------------------------------------------------------------------

    def _advance(self, now: int, out) -> None:
        """Processing time moves to `now` (never backwards); fire every timer due by then."""
        previous = self._now
        self._now = now if previous is None else max(previous, now)
        if self.processing_time:
            self._close_due(list(self._keys), ON_TIME, out)
        elif self.watermark_spec.strategy == "bytewax":
            for clock in self._all_clocks():
                clock.age(self._now)
            self._close_due(list(self._keys), ON_TIME, out)
        spec = self.watermark_spec
        if spec.idle_timeout is not None and (spec.idle_clock == "processing_time" or self.processing_time):
            self._idle_by_processing_time(out)  # with processing time both clocks are the same
        if previous is not None:
            self._interval_firings(previous, self._now, out)

    def _all_clocks(self) -> t.Iterable[Clock]:
        return [self._stream_clock] if self._stream_scope else list(self._clocks.values())

    def _interval_firings(self, previous: int, now: int, out) -> None:
        """EARLY / LATE EVERY <interval>: ticks at multiples of the interval in processing time.

        A tick fires the windows that received rows since their last firing (open windows for
        early, windows kept for allowed lateness for late); several missed ticks fire once.
        """
        for interval, closed, firing in ((self.emit.early_interval, False, EARLY),
                                         (self.emit.late_interval, True, LATE)):
            if not interval or now // interval == previous // interval:
                continue
            for key, ks in self._keys.items():
                for window in sorted(ks.windows.values(), key=_sort_key):
                    if window.closed == closed and window.pending and not window.full:
                        self._fire(out, key, window, firing)

    def _commit(self, batch: dict, keys_seen: dict, out) -> None:
        """The batch is applied: move the watermark(s), then close what they reached."""
        now = self._now
        for key in keys_seen:
            self._keys[key].last_activity = now
        if keys_seen:
            self._last_activity = now
        if self.processing_time:
            return  # processing-time windows close on timers (`_advance`)
        for owner, (low, high) in batch.items():
            clock = self._stream_clock if self._stream_scope else self._clocks.setdefault(owner, Clock())
            clock.commit(self.watermark_spec, low, high, now)
        self._close_due(list(self._keys) if self._stream_scope else list(keys_seen), ON_TIME, out)
        if self.watermark_spec.idle_timeout is not None and self.watermark_spec.idle_clock == "event_time":
            self._idle_by_event_time(out)

    # -- idle timeout ------------------------------------------------------------------

    def _idle_by_processing_time(self, out) -> None:
        timeout, now = self.watermark_spec.idle_timeout, self._now
        if self._stream_scope:
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
        if not keys or self._kind == COUNT:
            return
        if self.processing_time or self._kind == GLOBAL:
            for key in keys:
                self._flush_windows(key, self._keys[key], out)
            return
        slack = 1 if self._kind == SLIDE else 0  # SLIDE closes only when the watermark passes its end
        for key in keys:
            ends = [w.end for w in self._keys[key].windows.values() if not w.closed]
            clock = self._stream_clock if self._stream_scope else self._clocks.setdefault(key, Clock())
            clock.jump(max(ends) + slack + self.watermark_spec.delay, self._now)
        self._close_due(list(self._keys) if self._stream_scope else keys, FINAL, out)

    def _check_running(self) -> None:
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")


_STATE_FIELDS = ("_keys", "_clocks", "_stream_clock", "_now", "_last_activity", "_max_event",
                 "_row_seq", "_emit_seq", "_ended", "counts")


# --------------------------------------------------------------------------- checks


def check_restored_config(stored: tuple, given: tuple) -> None:
    """A snapshot's (windower, watermark, emit, aggregates, processing_time) against the query's
    now (None: not given); any difference is an error naming what changed."""
    names = ("windower", "watermark", "emit", "aggregates", "processing_time")
    for name, mine, theirs in zip(names, given, stored):
        if name == "aggregates" and mine is not None:
            mine = tuple(mine)
        if mine is not None and mine != theirs:
            raise RuntimeConfigError(
                f"The query's {name} changed since the checkpoint: {theirs!r} then, {mine!r} now",
                hint="restart from a fresh checkpoint location when the window definition changes")


def _check_watermark(spec: WatermarkSpec, processing_time: bool) -> None:
    if not isinstance(spec, WatermarkSpec):
        raise RuntimeConfigError(f"watermark must be a WatermarkSpec, got {spec!r}")
    choices = {
        "strategy": ("max_event_time", "min_event_time", "bytewax"),
        "scope": ("key", "stream"),
        "idle_clock": ("processing_time", "event_time"),
        "lateness_rule": ("window_closed", "before_watermark"),
    }
    for name, allowed in choices.items():
        if getattr(spec, name) not in allowed:
            raise RuntimeConfigError(f"Watermark {name} cannot be {getattr(spec, name)!r}", hint=" | ".join(allowed))
    if not isinstance(spec.delay, int) or spec.delay < 0:
        raise RuntimeConfigError(f"Watermark delay must be >= 0 microseconds, got {spec.delay!r}")
    if spec.idle_timeout is not None and spec.idle_timeout <= 0:
        raise RuntimeConfigError(f"idle_timeout must be positive, got {spec.idle_timeout!r}")
    if (spec.idle_timeout is not None and spec.idle_clock == "event_time" and spec.scope == "stream"
            and not processing_time):
        raise RuntimeConfigError(
            "An event-time idle timeout needs keys: a whole stream is never silent by its own event time",
            hint="idle_clock = 'processing_time', or watermark_scope = 'key'")


def _check_emit(emit: EmitSpec) -> None:
    if not isinstance(emit, EmitSpec):
        raise RuntimeConfigError(f"emit must be an EmitSpec, got {emit!r}")
    if emit.accumulation not in ("ACCUMULATING", "DISCARDING", "RETRACTING"):
        raise RuntimeConfigError(f"Unknown accumulation mode {emit.accumulation!r}",
                                 hint="ACCUMULATING | DISCARDING | RETRACTING")
    if emit.changes and (emit.early_rows or emit.early_interval):
        raise RuntimeConfigError("EMIT CHANGES already fires after every row; it takes no EARLY EVERY")
    for name in ("early_rows", "early_interval", "late_rows", "late_interval"):
        value = getattr(emit, name)
        if value is not None and (not isinstance(value, int) or value <= 0):
            raise RuntimeConfigError(f"EMIT {name} must be a positive integer, got {value!r}")
    if not isinstance(emit.allowed_lateness, int) or emit.allowed_lateness < 0:
        raise RuntimeConfigError(f"ALLOWED LATENESS must be >= 0, got {emit.allowed_lateness!r}")
    fires = emit.final or emit.changes or emit.early_rows or emit.early_interval
    if not fires:
        raise RuntimeConfigError("This EMIT clause never fires a window",
                                 hint="EMIT FINAL, EMIT CHANGES or EMIT EARLY EVERY ...")

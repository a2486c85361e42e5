"""Window kinds: what each decides, and the state it keeps per key (as Beam's WindowFn, Bytewax's
WindowerLogic).

A logic class per kind -- FixedLogic (TUMBLE, HOP, CUMULATE), SessionLogic, SlideLogic,
CountLogic (COUNT_WINDOW), GlobalLogic -- says which windows a row joins and whether it is late
for them (`place`), when a window closes (`inclusive_end`, `closes_by_time`, `fills`), what an
idle timeout and the end of input do to it (`idles_out`, `flushes`), what is kept after a window
goes (`purge`, `forget`), and how sessions merge. Each kind keeps its own per-key state dataclass (`KeyState` and its subclasses)
holding the key's windows (`Window` and its subclasses) by the kind's window id; a key state and
its windows snapshot to plain dicts of named fields and restore from them.

When windows fire is the trigger's (triggers.py); what a firing holds, the accumulation's
(accumulation.py); the loop over batches, rows, keys and clocks, the engine's (engine.py).
"""

from __future__ import annotations

import bisect
import math
import typing as t
from dataclasses import dataclass, field, fields

from sqlwin.runtime import assign
from sqlwin.runtime.model import LateRow

INF = math.inf

# --------------------------------------------------------------------------- windows


@dataclass(slots=True, eq=False)
class Window:
    """One window of one key: its accumulators and its firing bookkeeping.

    start / end are microseconds: [start, end), or SLIDE's [start, end]; GLOBAL has None.
    """

    start: t.Any
    end: t.Any
    acc: list  # one state per aggregate (accumulation.py)
    delta: list | None = None  # DISCARDING: the rows since the last firing
    closed: bool = False  # the watermark reached its end (kept only for allowed lateness)
    pending: int = 0  # rows since the last firing
    early_count: int = 0  # rows since the last firing while open
    late_count: int = 0  # rows since the last firing while closed (allowed lateness)
    fired: bool = False  # has emitted under its current identity (start, end)
    fired_values: tuple | None = None
    full: t.ClassVar[bool] = False  # only a COUNT_WINDOW fills
    number: t.ClassVar[int | None] = None  # COUNT_WINDOW's window number, an emission's window_index

    def bounds(self) -> tuple:
        """The window_start, window_end an emission shows."""
        return (self.start, self.end)


@dataclass(slots=True, eq=False)
class SessionWindow(Window):
    last: t.Any = None  # the time of its last row: the session ends one gap after it


@dataclass(slots=True, eq=False)
class CountedWindow(Window):
    """A COUNT_WINDOW: start / end are its first and last row position; what an emission shows
    is its first and last row's time (None without a time column)."""

    number: int = 0
    first_time: int | None = None
    last_time: int | None = None
    full: bool = False  # its last row arrived

    def bounds(self) -> tuple:
        return (self.first_time, self.last_time)


def order(window: Window) -> tuple:
    """Emission order within a key: by window end, then start; GLOBAL last."""
    end = INF if window.end is None else window.end
    start = -INF if window.start is None else window.start
    return (end, start)


def by_order(item: tuple) -> tuple:
    """`order` of a (window id, window) pair."""
    return order(item[1])


# --------------------------------------------------------------------------- per-key state


@dataclass(slots=True, eq=False)
class KeyState:
    """One key of a TUMBLE / HOP / CUMULATE stream: its windows by (start, end)."""

    windows: dict = field(default_factory=dict)  # window id -> Window
    last_activity: int | None = None  # processing time of the key's last row
    last_event: int | None = None  # newest event time of the key
    window_class: t.ClassVar[type] = Window

    @staticmethod
    def window_id(window: Window) -> t.Any:
        return (window.start, window.end)

    def clear(self) -> None:
        """End of input: nothing of the key's windows is needed any more."""
        self.windows.clear()

    def snapshot(self) -> dict:
        """The key's state as named fields (windows as a list of named fields, in their order)."""
        state = {name: getattr(self, name) for name in _names(type(self)) if name != "windows"}
        window_names = _names(self.window_class)
        state["windows"] = [{name: getattr(w, name) for name in window_names} for w in self.windows.values()]
        return state

    @classmethod
    def restore(cls, state: dict) -> "KeyState":
        """From `snapshot()`'s fields; fields this kind does not have are ignored, missing ones
        take their defaults."""
        ks = cls(**_pick(cls, state, skip="windows"))
        window_class, window_id = cls.window_class, cls.window_id
        names = _names(window_class)
        for window_state in state.get("windows", ()):
            try:  # the common case: every field present
                window = window_class(*[window_state[name] for name in names])
            except KeyError:
                window = window_class(**_pick(window_class, window_state))
            ks.windows[window_id(window)] = window
        return ks


@dataclass(slots=True, eq=False)
class SessionKeyState(KeyState):
    """One key of a SESSION stream: sessions by (start, end), and purged ones a later row must
    not overlap (lateness rule 'window_closed')."""

    tombstones: list = field(default_factory=list)  # (start, end) of purged sessions
    window_class: t.ClassVar[type] = SessionWindow

    def clear(self) -> None:
        self.windows.clear()
        self.tombstones.clear()


@dataclass(slots=True, eq=False)
class SlideKeyState(KeyState):
    """One key of a SLIDE stream: windows by their end, and the rows a new window may need."""

    rows: list = field(default_factory=list)  # ((time, seq), time, values) in (time, seq) order

    @staticmethod
    def window_id(window: Window) -> t.Any:
        return window.end

    def clear(self) -> None:
        self.windows.clear()
        self.rows.clear()


@dataclass(slots=True, eq=False)
class CountKeyState(KeyState):
    """One key of a COUNT_WINDOW stream: windows by number, and how many rows the key has seen."""

    count: int = 0
    window_class: t.ClassVar[type] = CountedWindow

    @staticmethod
    def window_id(window: Window) -> t.Any:
        return window.number


@dataclass(slots=True, eq=False)
class GlobalKeyState(KeyState):
    """One key of a GLOBAL_WINDOW stream: its one window, by None."""

    @staticmethod
    def window_id(window: Window) -> t.Any:
        return None


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _pick(cls: type, state: dict, skip: str = "") -> dict:
    return {name: state[name] for name in _names(cls) if name in state and name != skip}


# --------------------------------------------------------------------------- logic


def late(out, key, time, values, wm, start=None, end=None) -> None:
    """A row late for a window (or for the session it would open: no window named)."""
    out.late.append(LateRow(key, time, values, wm - time, start, end))


class WindowLogic:
    """What a window kind decides. `place` puts a row of one key in its windows:

    `place(key, ks, time, seq, values, wm, out)` -> the windows the row joined; [] if it joins
    none (counted 'unassigned'); None if it was late for every window it belongs to (then it
    does not move the clock). Late rows are written to out.late. `wm` is the key's effective
    watermark as the batch found it (None before any row).
    """

    key_state: type[KeyState] = KeyState
    needs_time = True  # a row without a time is rejected ('null_time')
    closes_by_time = True  # the watermark (or processing time) closes its windows
    idles_out = True  # an idle timeout closes its windows
    flushes = True  # the end of input (and an idle flush) fires its windows
    inclusive_end = False  # True: a window closes only when the watermark passes its end, not at it
    fills = False  # a window closes (and fires) when its last row arrives

    def __init__(self, windower, watermark, emit, processing_time: bool, panes):
        self.windower = windower
        self.lateness = emit.allowed_lateness
        self.before_watermark = watermark.lateness_rule == "before_watermark"
        self.processing_time = processing_time
        self._panes = panes
        self._add = panes.add
        self._init = panes.init
        self._delta = panes.delta

    def horizon(self, wm) -> int | float:
        """Windows ending at or before this are gone: the watermark minus the allowed lateness."""
        return -INF if wm is None else wm - self.lateness

    def place(self, key, ks, time, seq, values, wm, out) -> list[Window] | None:
        raise NotImplementedError

    def purge(self, ks: KeyState, wid, window: Window) -> None:
        """The window passed the lateness horizon (or was flushed): it leaves the key's state."""
        del ks.windows[wid]

    def forget(self, ks: KeyState, horizon) -> None:
        """Drop what no row that can still be accepted could need."""


class FixedLogic(WindowLogic):
    """TUMBLE, HOP, CUMULATE: windows aligned to the offset, known from a row's time alone."""

    def place(self, key, ks, time, seq, values, wm, out):
        spans = assign.fixed_windows(self.windower, time)
        if not spans:  # HOP with slide > size: a time in a gap joins no window (BW-05)
            return []
        horizon = -INF if wm is None else wm - self.lateness
        if self.before_watermark and time < horizon:
            for start, end in spans:
                late(out, key, time, values, wm, start, end)
            return None
        touched = []
        windows = ks.windows
        for span in spans:
            start, end = span
            if end <= horizon:  # closed and purged: late for this window only
                late(out, key, time, values, wm, start, end)
                continue
            window = windows.get(span)
            if window is None:  # a window may be born closed, kept by allowed lateness
                window = windows[span] = Window(start, end, self._init(), self._delta(),
                                                wm is not None and end <= wm)
            self._add(window, time, seq, values)
            touched.append(window)
        return touched or None


class SessionLogic(WindowLogic):
    """SESSION: [first row, last row + gap) per key; a row whose proto-session [t, t + gap)
    overlaps sessions merges them (AP-05); windows that only touch do not (BW-07)."""

    key_state = SessionKeyState

    def __init__(self, windower, watermark, emit, processing_time, panes):
        super().__init__(windower, watermark, emit, processing_time, panes)
        self.gap = windower.gap
        # Purged sessions a later row must not join: only where a row can be late for them.
        self.keeps_tombstones = not self.before_watermark and not processing_time

    def place(self, key, ks, time, seq, values, wm, out):
        gap = self.gap
        horizon = -INF if wm is None else wm - self.lateness
        if self.before_watermark:
            if time < horizon:
                late(out, key, time, values, wm)
                return None
        else:
            if time + gap <= horizon:  # the session it would open is already closed
                late(out, key, time, values, wm)
                return None
            for start, end in ks.tombstones:  # it would join (or bridge into) an emitted session
                if start < time + gap and time < end:
                    late(out, key, time, values, wm, start, end)
                    return None
        overlapping = sorted((w for w in ks.windows.values() if w.start < time + gap and time < w.end), key=order)
        if len(overlapping) == 1 and overlapping[0].start <= time <= overlapping[0].last:
            window = overlapping[0]  # AP-05 case 1: fits without changing the session
        else:
            window = self._merge(key, ks, overlapping, time, wm, out)  # cases 2, 3, 4
        self._add(window, time, seq, values)
        if time > window.last:
            window.last = time
        return [window]

    def _merge(self, key, ks, old: list[SessionWindow], time, wm, out) -> SessionWindow:
        """A new session from the row's proto-session [t, t + gap) and every session it overlaps."""
        start = min([time] + [w.start for w in old])
        last = max([time] + [w.last for w in old])
        end = last + self.gap
        window = SessionWindow(start, end, self._init(), self._delta(), wm is not None and end <= wm, last=last)
        for w in old:
            self._panes.absorb(window, w)
            del ks.windows[(w.start, w.end)]
            self._panes.replaced(out, key, w, window)
        ks.windows[(start, end)] = window
        return window

    def purge(self, ks, wid, window) -> None:
        del ks.windows[wid]
        if self.keeps_tombstones:  # processing-time rows are never late
            ks.tombstones.append((window.start, window.end))

    def forget(self, ks, horizon) -> None:
        # An accepted row has t + gap > horizon: it cannot overlap a session ending before t.
        if ks.tombstones:
            gap = self.gap
            ks.tombstones = [(s, e) for s, e in ks.tombstones if e + gap > horizon]


def _row_order(row: tuple) -> tuple:
    return row[0]


class SlideLogic(WindowLogic):
    """SLIDE: one window [t - size, t], both ends inclusive, per distinct row time t of a key,
    holding every row of the key with a time in it, including rows that arrive later."""

    key_state = SlideKeyState
    inclusive_end = True  # it closes only when the watermark passes its end

    def __init__(self, windower, watermark, emit, processing_time, panes):
        super().__init__(windower, watermark, emit, processing_time, panes)
        self.size = windower.size

    def place(self, key, ks, time, seq, values, wm, out):
        size = self.size
        # The row's own window [t - size, t] is the one that closes first; if it is gone, the
        # row is late, under either lateness rule (windows ending later still accept rows).
        if time < self.horizon(wm):
            late(out, key, time, values, wm, time - size, time)
            return None
        add = self._add
        bisect.insort(ks.rows, ((time, seq), time, values), key=_row_order)
        touched = []
        for end, window in ks.windows.items():
            if end - size <= time <= end and end != time:
                add(window, time, seq, values)
                touched.append(window)
        own = ks.windows.get(time)
        if own is None:
            closed = wm is not None and wm > time
            own = ks.windows[time] = Window(time - size, time, self._init(), self._delta(), closed)
            low = bisect.bisect_left(ks.rows, (time - size, -INF), key=_row_order)
            for (_, row_seq), row_time, row_values in ks.rows[low:]:
                if row_time <= time:
                    add(own, row_time, row_seq, row_values)
        else:
            add(own, time, seq, values)
        touched.append(own)
        return touched

    def forget(self, ks, horizon) -> None:
        # A new window [u - size, u] needs u >= horizon, so rows before horizon - size are done.
        if ks.rows:
            low = bisect.bisect_left(ks.rows, (horizon - self.size, -INF), key=_row_order)
            del ks.rows[:low]


class CountLogic(WindowLogic):
    """COUNT_WINDOW: per key, in arrival order, windows of `size` rows every `slide` rows;
    only a full window fires (on its last row); partial ones never do."""

    key_state = CountKeyState
    needs_time = False
    closes_by_time = False
    idles_out = False
    flushes = False
    fills = True

    def __init__(self, windower, watermark, emit, processing_time, panes):
        super().__init__(windower, watermark, emit, processing_time, panes)
        self.size, self.slide = windower.size, windower.slide
        self.needs_time = getattr(windower, "timed", False)  # a named time column: NULL joins no window

    def place(self, key, ks, time, seq, values, wm, out):
        size, slide = self.size, self.slide
        index = ks.count
        ks.count += 1
        touched = []
        first_k = max(0, -(-(index - size + 1) // slide))
        for k in range(first_k, index // slide + 1):
            if not k * slide <= index < k * slide + size:
                continue  # slide > size: this row falls between windows
            window = ks.windows.get(k)
            if window is None:
                window = ks.windows[k] = CountedWindow(k * slide, k * slide + size - 1, self._init(), self._delta(),
                                                       number=k)
            self._add(window, time, seq, values)
            if index == k * slide:  # the first row's time, even NULL (not the first non-NULL one)
                window.first_time = time
            window.last_time = time
            window.full = index == k * slide + size - 1
            touched.append(window)
        return touched


class GlobalLogic(WindowLogic):
    """GLOBAL_WINDOW: one window per key, closed only by the end of input (or an idle flush)."""

    key_state = GlobalKeyState
    needs_time = False
    closes_by_time = False

    def __init__(self, windower, watermark, emit, processing_time, panes):
        super().__init__(windower, watermark, emit, processing_time, panes)
        self.needs_time = getattr(windower, "timed", False)  # a named time column: NULL joins no window

    def place(self, key, ks, time, seq, values, wm, out):
        window = ks.windows.get(None)
        if window is None:
            window = ks.windows[None] = Window(None, None, self._init(), self._delta())
        self._add(window, time, seq, values)
        return [window]


LOGIC: dict[str, type[WindowLogic]] = {
    assign.FIXED: FixedLogic,
    assign.SESSION: SessionLogic,
    assign.SLIDE: SlideLogic,
    assign.COUNT: CountLogic,
    assign.GLOBAL: GlobalLogic,
}


def logic_class(windower) -> type[WindowLogic]:
    """The logic of a windower's kind, after checking its parameters."""
    return LOGIC[assign.kind_of(windower)]

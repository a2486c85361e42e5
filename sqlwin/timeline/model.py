"""The facts a timeline picture shows, in epoch microseconds: the windows of each lane (a key),
the input rows (Point: its arrival batch, the windows it was counted in or missed), the firings
(the query's results, with their op and firing), and per lane the effective watermark after each
arrival batch that moved it. `Timeline.figure()` draws them (sqlwin/timeline/drawing.py)."""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from sqlwin.timeline.drawing import draw_timeline
from sqlwin.timeline.text import time_text

if t.TYPE_CHECKING:
    from matplotlib.figure import Figure

CLOSING_FIRINGS = ("on_time", "final")


@dataclass(frozen=True)
class Window:
    """One window of one lane: [start, end) in epoch microseconds ([start, end] when inclusive_end).
    start and end are None for GLOBAL_WINDOW."""

    lane: tuple
    start: int | None
    end: int | None
    inclusive_end: bool = False

    def contains(self, time: int | None) -> bool:
        if self.start is None or self.end is None:
            return True  # the global window holds every row of its key
        if time is None:
            return False
        return self.start <= time <= self.end if self.inclusive_end else self.start <= time < self.end


@dataclass(frozen=True)
class Point:
    """One input row: its event time (µs; with processing time, its batch's time), the arrival batch
    it came in (None: complete input), and what happened to it."""

    lane: tuple
    time: int | None
    batch: int | None
    order: int | None
    label: str
    windows: tuple[Window, ...] = ()  # the windows it was counted in
    missed: tuple[Window | None, ...] = ()  # the windows it was late for (None: none can be named)
    late_by: int | None = None  # µs: effective watermark - time
    fully_late: bool = False  # late for every window it belongs to: it did not move the clock

    @property
    def late(self) -> bool:
        return bool(self.missed)


@dataclass(frozen=True)
class Firing:
    """One emission: its window, op, firing, emit_seq and the arrival batch after which it came
    (None: at the end of input, or a complete-input result)."""

    lane: tuple
    window: Window
    op: str
    firing: str
    seq: int | None
    batch: int | None
    values: str


@dataclass
class Timeline:
    """Everything a timeline picture shows, in epoch microseconds; `figure()` draws it."""

    query: str
    mode: str  # 'replay' or 'complete input'
    time_kind: str  # 'timestamp' or 'epoch_ms' (how times are shown)
    time_zone: str
    time_name: str
    function: str  # the window function: TUMBLE, HOP, CUMULATE, SESSION, SLIDE, COUNT_WINDOW, GLOBAL_WINDOW
    description: str
    lane_names: tuple[str, ...]
    lanes: list[tuple]
    windows: list[Window]
    points: list[Point]
    firings: list[Firing]
    # lane -> [(batch, effective watermark after it commits)], the batches that moved the lane's clock
    watermarks: dict[tuple, list[tuple[int, int | None]]] = field(default_factory=dict)
    lateness_rule: str = "window_closed"
    processing_time: bool = False  # the clock drawn is the recorded arrival time, not a watermark
    hidden_lanes: int = 0
    notes: list[str] = field(default_factory=list)

    def windows_of(self, lane: tuple) -> list[Window]:
        return [w for w in self.windows if w.lane == lane]

    def points_of(self, lane: tuple) -> list[Point]:
        return [p for p in self.points if p.lane == lane]

    def firings_of(self, lane: tuple) -> list[Firing]:
        return [f for f in self.firings if f.lane == lane]

    def watermark_before(self, lane: tuple, batch: int) -> int | None:
        """The effective watermark the rows of `batch` were checked against (None: no row yet)."""
        mark = None
        for b, value in self.watermarks.get(lane, []):
            if b < batch:
                mark = value
        return mark

    def batches_of(self, lane: tuple) -> list[int]:
        """The arrival batches that brought the lane rows or firings, in order."""
        return sorted({p.batch for p in self.points_of(lane) if p.batch is not None}
                      | {f.batch for f in self.firings_of(lane) if f.batch is not None})

    def replaced(self, window: Window) -> bool:
        """A session replaced by a merge: retracted with '-D' (RETRACTING)."""
        return any(f.window == window and f.op == "-D" for f in self.firings)

    @property
    def clock_name(self) -> str:
        return "processing time" if self.processing_time else "watermark"

    def closed_after(self, window: Window) -> int | None:
        """The batch after which `window` fired on time (None: at the end of input, or never)."""
        batches = [f.batch for f in self.firings if f.window == window and f.firing in CLOSING_FIRINGS]
        known = [b for b in batches if b is not None]
        return min(known) if known else None

    def figure(self, width: float = 12.0) -> "Figure":
        return draw_timeline(self, width=width)

    # -- text ---------------------------------------------------------------------------

    def time_text(self, micros: int | None) -> str:
        return time_text(micros, self.time_kind, self.time_zone)

    def window_text(self, window: Window | None) -> str:
        if window is None or window.start is None:
            return "the global window" if window is not None else "no window"
        close = "]" if window.inclusive_end else ")"
        return f"[{self.time_text(window.start)}, {self.time_text(window.end)}{close}"

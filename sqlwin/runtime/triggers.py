"""Triggers: when a window fires (as Beam's triggers: early, on time, late).

* On time: once, when the window closes ('on_time'; 'final' when the close came from the end of
  input or an idle timeout), if EMIT FINAL; EMIT CHANGES has already said everything.
* Per row: EMIT CHANGES fires every window a row touched ('changes'; 'late' for a window kept by
  allowed lateness); EARLY EVERY n ROWS fires an open window once n rows arrived since its last
  firing; LATE EVERY n ROWS (default 1 with ALLOWED LATENESS and no late interval) a closed one;
  a COUNT_WINDOW fires when its last row arrives.
* Per interval: EARLY / LATE EVERY <interval> tick at multiples of the interval in processing
  time; a tick fires the windows (open for early, kept for lateness for late) that received rows
  since their last firing; several missed ticks fire once.
* At purge: late rows of a kept window not yet fired fire ('late') before it goes.

What a firing holds is the accumulation's (accumulation.py).
"""

from __future__ import annotations

from sqlwin.ir import EmitSpec
from sqlwin.runtime.accumulation import MODES
from sqlwin.runtime.model import CHANGES, EARLY, LATE, ON_TIME, RuntimeConfigError
from sqlwin.runtime.windows import order


class Trigger:
    """The firings an EmitSpec asks for, over a window kind's logic and an accumulation."""

    def __init__(self, emit: EmitSpec, logic, panes):
        self.changes, self.final = emit.changes, emit.final
        self.early_rows = emit.early_rows
        self.late_rows = emit.late_rows or (1 if emit.allowed_lateness and not emit.late_interval else None)
        # Whether a row can fire a window by itself (else firings come only at commits and timers).
        self.per_row = bool(logic.fills or emit.changes or emit.early_rows or self.late_rows)
        self.intervals = tuple((interval, closed, firing) for interval, closed, firing in (
            (emit.early_interval, False, EARLY), (emit.late_interval, True, LATE)) if interval)
        self._fire = panes.fire

    def after_row(self, key, ks, touched: list, out) -> None:
        """Row-driven firings, in window order: CHANGES, EARLY EVERY n ROWS, late rows, full count windows."""
        fire = self._fire
        for window in (sorted(touched, key=order) if len(touched) > 1 else touched):
            if window.full:
                fire(out, key, window, CHANGES if self.changes else ON_TIME, self.changes or self.final)
                del ks.windows[ks.window_id(window)]
            elif self.changes:
                fire(out, key, window, LATE if window.closed else CHANGES)
            elif window.closed:
                if self.late_rows and window.late_count >= self.late_rows:
                    fire(out, key, window, LATE)
            elif self.early_rows and window.early_count >= self.early_rows:
                fire(out, key, window, EARLY)

    def close(self, out, key, window, firing: str) -> None:
        """The watermark (or a flush) reached the window: it fires unless EMIT CHANGES already did."""
        if not self.changes:
            self._fire(out, key, window, firing, self.final)
        window.closed = True

    def purge(self, out, key, window) -> None:
        """The window leaves the state: late rows not yet fired (LATE EVERY n > 1, interval) fire."""
        if window.closed and window.pending and not self.changes:
            self._fire(out, key, window, LATE)

    def tick(self, previous: int, now: int, keys: dict, out) -> None:
        """Processing time moved from `previous` to `now`: the interval firings due."""
        for interval, closed, firing in self.intervals:
            if now // interval == previous // interval:
                continue
            for key, ks in keys.items():
                for window in sorted(ks.windows.values(), key=order):
                    if window.closed == closed and window.pending and not window.full:
                        self._fire(out, key, window, firing)


def check_emit(emit: EmitSpec) -> None:
    """An EmitSpec the runtime can honour, else RuntimeConfigError."""
    if not isinstance(emit, EmitSpec):
        raise RuntimeConfigError(f"emit must be an EmitSpec, got {emit!r}")
    if emit.accumulation not in MODES:
        raise RuntimeConfigError(f"Unknown accumulation mode {emit.accumulation!r}", hint=" | ".join(MODES))
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

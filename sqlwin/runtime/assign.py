"""Which fixed windows a time falls in, and checks of the windower's parameters.

Fixed windows (TUMBLE, HOP, CUMULATE) are aligned to `offset` and repeat in both directions
of time, so negative times (before 1970, or before the alignment instant) get windows too.
Python's floor division rounds towards -inf, which is what alignment needs.
"""

from __future__ import annotations

from sqlwin.ir import Cumulate, CountWindow, GlobalWindow, Hop, Session, Slide, Tumble
from sqlwin.runtime.model import RuntimeConfigError

FIXED, SESSION, SLIDE, COUNT, GLOBAL = "fixed", "session", "slide", "count", "global"


def kind_of(windower: object) -> str:
    """The runtime's family of a windower, after checking its parameters."""
    checks = {
        Tumble: (FIXED, ("size",)),
        Hop: (FIXED, ("size", "slide")),
        Cumulate: (FIXED, ("step", "max_size")),
        Session: (SESSION, ("gap",)),
        Slide: (SLIDE, ("size",)),
        CountWindow: (COUNT, ("size", "slide")),
        GlobalWindow: (GLOBAL, ()),
    }
    entry = checks.get(type(windower))
    if entry is None:
        raise RuntimeConfigError(f"Unknown windower {windower!r}",
                                 hint="Tumble, Hop, Cumulate, Session, Slide, CountWindow, GlobalWindow")
    kind, positive = entry
    name = type(windower).__name__
    for attr in positive:
        value = getattr(windower, attr)
        if not isinstance(value, int) or value <= 0:
            # VS-17 / BX-10: a session needs a positive gap, every size must be positive.
            raise RuntimeConfigError(f"{name} {attr} must be a positive integer, got {value!r}")
    if isinstance(windower, Cumulate) and windower.max_size % windower.step:
        raise RuntimeConfigError("Cumulate step must divide its max_size")
    return kind


def fixed_windows(windower: Tumble | Hop | Cumulate, time: int) -> list[tuple[int, int]]:
    """The [start, end) windows containing `time`, in start order (then end order)."""
    if isinstance(windower, Tumble):
        start = _align(time, windower.size, windower.offset)
        return [(start, start + windower.size)]
    if isinstance(windower, Hop):
        return _hop(windower, time)
    return _cumulate(windower, time)


def _align(time: int, period: int, offset: int) -> int:
    return (time - offset) // period * period + offset


def _hop(w: Hop, time: int) -> list[tuple[int, int]]:
    # Windows start at offset + n * slide; walk back from the last start <= time while the
    # window still reaches past `time`. With slide > size some times fall in no window.
    start = _align(time, w.slide, w.offset)
    out = []
    while start + w.size > time:
        out.append((start, start + w.size))
        start -= w.slide
    return out[::-1]


def _cumulate(w: Cumulate, time: int) -> list[tuple[int, int]]:
    # Windows [p, p + k * step) of the max_size period p that contains `time`, for every k
    # whose window already reaches past `time` (Flink's CUMULATE).
    period_start = _align(time, w.max_size, w.offset)
    first_k = (time - period_start) // w.step + 1
    return [(period_start, period_start + k * w.step) for k in range(first_k, w.max_size // w.step + 1)]

"""Which fixed windows a time falls in, and checks of the windower's parameters.

Fixed windows (TUMBLE, HOP, CUMULATE) are aligned to `offset` and repeat in both directions
of time, so negative times (before 1970, or before the alignment instant) get windows too.
Python's floor division rounds towards -inf, which is what alignment needs.
"""

from __future__ import annotations

import numpy as np

from sqlwin.ir import Cumulate, CountWindow, GlobalWindow, Hop, Session, Slide, Tumble, WindowerError
from sqlwin.runtime.model import RuntimeConfigError

FIXED, SESSION, SLIDE, COUNT, GLOBAL = "fixed", "session", "slide", "count", "global"


FAMILIES = {Tumble: FIXED, Hop: FIXED, Cumulate: FIXED, Session: SESSION, Slide: SLIDE, CountWindow: COUNT,
            GlobalWindow: GLOBAL}


def family_of(windower: object) -> str | None:
    """The runtime's family of a windower (None: not one), unchecked."""
    return FAMILIES.get(type(windower))


def kind_of(windower: object) -> str:
    """The runtime's family of a windower, after checking its parameters."""
    kind = family_of(windower)
    if kind is None:
        raise RuntimeConfigError(f"Unknown windower {windower!r}",
                                 hint="Tumble, Hop, Cumulate, Session, Slide, CountWindow, GlobalWindow")
    try:
        windower.check()
    except WindowerError as err:
        raise RuntimeConfigError(err.message) from None
    return kind


def fixed_windows(windower: Tumble | Hop | Cumulate, time: int) -> list[tuple[int, int]]:
    """The [start, end) windows containing `time`, in start order (then end order)."""
    return _FORMULAS[type(windower)][0](windower, time)


def fixed_spans(windower: Tumble | Hop | Cumulate, times: np.ndarray):
    """`fixed_windows` over an int64 array of times, in NumPy: (row, start, end) arrays of every
    window each time falls in, ordered by row, then start, then end."""
    return _FORMULAS[type(windower)][1](windower, times)


def _tumble_spans(w: Tumble, times: np.ndarray):
    starts = (times - w.offset) // w.size * w.size + w.offset
    return np.arange(len(times), dtype=np.int64), starts, starts + w.size


def _hop_spans(w: Hop, times: np.ndarray):
    n = len(times)
    last = (times - w.offset) // w.slide * w.slide + w.offset
    k = -(-w.size // w.slide)  # at most this many windows hold one time
    back = np.arange(k - 1, -1, -1, dtype=np.int64) * w.slide  # earliest start first
    starts = last[:, None] - back[None, :]
    keep = starts + w.size > times[:, None]
    rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], starts.shape)
    return rows[keep], starts[keep], starts[keep] + w.size


def _cumulate_spans(w: Cumulate, times: np.ndarray):
    n = len(times)
    period = (times - w.offset) // w.max_size * w.max_size + w.offset
    steps = np.arange(1, w.max_size // w.step + 1, dtype=np.int64)
    first = (times - period) // w.step + 1
    keep = steps[None, :] >= first[:, None]
    ends = period[:, None] + steps[None, :] * w.step
    rows = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], ends.shape)
    starts = np.broadcast_to(period[:, None], ends.shape)
    return rows[keep], starts[keep], ends[keep]


def _tumble(w: Tumble, time: int) -> list[tuple[int, int]]:
    start = _align(time, w.size, w.offset)
    return [(start, start + w.size)]


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


def session_spans(times: np.ndarray, gap: int):
    """SESSION over one key's times in ascending order, in NumPy: rows less than `gap` apart share a
    session, a row exactly `gap` after the previous one starts a new one (BW-07), and a session is
    [first row, last row + gap). Returns (each row's session number, each session's start, end)."""
    n = len(times)
    new = np.ones(n, dtype=bool)
    new[1:] = np.diff(times) >= gap
    firsts = np.flatnonzero(new)
    lasts = np.append(firsts[1:] - 1, n - 1) if n else firsts
    return np.cumsum(new) - 1, times[firsts], times[lasts] + gap


def slide_spans(times: np.ndarray, size: int):
    """SLIDE over one key's times in ascending order, in NumPy: one window [e - size, e], both ends
    inclusive, per distinct time e, holding every row with e - size <= t <= e. Returns (row, window
    end) of every row in every window, by window end, then row."""
    ends = np.unique(times)
    first = np.searchsorted(times, ends - size, "left")
    counts = np.searchsorted(times, ends, "right") - first
    starts_at = np.cumsum(counts) - counts
    within = np.arange(counts.sum(), dtype=np.int64) - np.repeat(starts_at, counts)
    return np.repeat(first, counts) + within, np.repeat(ends, counts)


def count_spans(rows: int, size: int, slide: int):
    """COUNT_WINDOW over `rows` rows in their order, in NumPy: window j holds rows j*slide ..
    j*slide + size - 1, only complete windows count (QX-07), rows in the gaps of slide > size join
    none. Returns (row, window number, the window's first row, its last row) of every row in every
    window, by window, then row."""
    windows = (rows - size) // slide + 1 if rows >= size else 0
    index = np.repeat(np.arange(windows, dtype=np.int64), size)
    first = index * slide
    return first + np.tile(np.arange(size, dtype=np.int64), windows), index, first, first + size - 1


# The per-kind formulas of the fixed windows, keyed by the IR's class: (one time, an array of times).
_FORMULAS = {Tumble: (_tumble, _tumble_spans), Hop: (_hop, _hop_spans), Cumulate: (_cumulate, _cumulate_spans)}

"""The vectorised runtime of COUNT_WINDOW with EMIT FINAL: windows of rows per key, each fired by
the row that fills it, whatever the clock (the clock only shows in progress reports). Built on
FixedFinalRuntime (fixed_final.py): the same keys, clocks, accumulators and pieces.
"""

from __future__ import annotations

import typing as t

import numpy as np

from sqlwin.runtime.assign import COUNT, family_of
from sqlwin.runtime.columns import Columns
from sqlwin.runtime.fixed_final import FixedFinalRuntime, final_only
from sqlwin.runtime.model import ON_TIME, AggregateSpec, BatchResult, EmissionBlock, nullable


class CountFinalRuntime(FixedFinalRuntime):
    """COUNT_WINDOW with EMIT FINAL over columns: windows of `size` rows every `slide` rows per key,
    each fired when its last row arrives; its bounds are its first and last row's times.

    The windows are kept as positions ([k * slide, k * slide + size - 1] in the key's row count),
    with the first and last row's time beside them (`_first_time` / `_last_time`, NONE and a
    NULL flag when the row had none). Partial windows end with the input, without a firing.
    """

    takes_weights = False  # its windows depend on the other rows: rows of partial aggregates never reach it

    _STATE = FixedFinalRuntime._STATE + ("_count", "_first_time", "_first_null", "_last_time", "_last_null")
    _KEY_FIELDS = FixedFinalRuntime._KEY_FIELDS + ("_count",)
    _WINDOW_FIELDS = FixedFinalRuntime._WINDOW_FIELDS + ("_first_time", "_first_null", "_last_time", "_last_null")
    CLOCK_CLOSES = False  # a count window closes on its last row

    @classmethod
    def covers(cls, windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool,
               many_batches: bool = False) -> bool:
        return final_only(watermark, emit, aggregates, processing_time) and family_of(windower) == COUNT

    def __init__(self, windower, watermark, emit, aggregates, processing_time: bool = False):
        super().__init__(windower, watermark, emit, aggregates, processing_time)
        self._timed = getattr(windower, "timed", False)  # a named time column: a NULL time is rejected
        self._count = np.empty(0, np.int64)  # rows seen per key
        self._first_time = np.empty(0, np.int64)
        self._first_null = np.empty(0, bool)
        self._last_time = np.empty(0, np.int64)
        self._last_null = np.empty(0, bool)

    def process_columns(self, cols: Columns, batch_time_us: int = 0,
                        stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        """A count window fires on its last row, whatever the clock: the stream's extremes only
        move the clock that progress reports show."""
        self._check_open()
        out = BatchResult()
        admitted = self._admit(cols, lambda i: out.rejected, null_time_ok=not self._timed) if cols.n else None
        if admitted is not None:
            rows, key_of_row, _ = admitted
            self._put(out, self._emit_full(cols, rows, key_of_row)[0])
            self._commit(key_of_row, cols.time[rows], ~cols.time_null[rows])
        self._take_stream_bounds(stream_bounds)
        return out

    def process_batches(self, cols: Columns, batches: np.ndarray,
                        stream_clock: tuple[np.ndarray, np.ndarray] | None = None) -> list[tuple[int, BatchResult]]:
        """Count windows do not look at clocks: a run of batches is one pass, each emission going
        to the batch of the row that filled its window. (min_event_time clocks: batch by batch.)
        The stream's clock (`stream_clock`) only moves the clock progress reports show."""
        if self.watermark_spec.strategy != "max_event_time":
            return super().process_batches(cols, batches, stream_clock)
        if stream_clock is not None and self._stream and len(stream_clock[1]):
            self._take_stream_bounds({0: (0, int(np.max(stream_clock[1])))})
        self._check_open()
        results: dict[int, BatchResult] = {}

        def result(batch) -> BatchResult:
            return results.setdefault(batch, BatchResult())

        admitted = self._admit(cols, lambda i: result(int(batches[i])).rejected, null_time_ok=not self._timed)
        if admitted is not None:
            rows, key_of_row, _ = admitted
            block, filled_by = self._emit_full(cols, rows, key_of_row)
            self._put_run(result, block, batches[rows[filled_by]])
            self._commit(key_of_row, cols.time[rows], ~cols.time_null[rows])
        return sorted(results.items())

    def end_of_input(self) -> BatchResult:
        self._check_open()
        self._ended = True
        self._drop_windows(np.ones(len(self._wk), bool))  # partial count windows go without a firing
        return BatchResult()

    def open_windows(self, key: tuple = ()) -> list[tuple]:
        starts, start_null, ends, end_null, _ = self._bounds(self._key_windows(key))
        return list(zip(nullable(starts, start_null), nullable(ends, end_null)))

    # -- windows -------------------------------------------------------------------------

    def _positions(self, keys: list[tuple]) -> np.ndarray:
        before = len(self._keys)
        out = super()._positions(keys)
        if len(self._keys) > before:
            self._count = np.concatenate([self._count, np.zeros(len(self._keys) - before, np.int64)])
        return out

    def _emit_full(self, cols: Columns, rows, key_of_row) -> tuple[EmissionBlock | None, np.ndarray]:
        """Add the rows to their count windows; fire the windows they fill, in arrival order.
        Returns the emissions and, for each, the (admitted) row that filled its window."""
        size, slide = self.windower.size, self.windower.slide
        # Each row's position in its key's count: the rows before it, of this batch and before.
        order = np.argsort(key_of_row, kind="stable")
        sorted_keys = key_of_row[order]
        starts_at = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]])
        rank = np.arange(len(order)) - np.repeat(starts_at, np.diff(np.r_[starts_at, len(order)]))
        index = np.empty(len(order), np.int64)
        index[order] = self._count[sorted_keys] + rank
        np.add.at(self._count, key_of_row, 1)
        # The windows k holding each row: k * slide <= index < k * slide + size.
        most = -(-size // slide)
        last_k = index // slide
        ks = last_k[:, None] - np.arange(most - 1, -1, -1, dtype=np.int64)[None, :]
        keep = (ks >= 0) & (index[:, None] < ks * slide + size)
        span_row = np.broadcast_to(np.arange(len(index), dtype=np.int64)[:, None], ks.shape)[keep]
        ks = ks[keep]
        self.counts["unassigned"] += int((np.bincount(span_row, minlength=len(index)) == 0).sum())
        old_group, span_window = self._aggregate(cols, rows, key_of_row[span_row], ks * slide,
                                                 ks * slide + size - 1, span_row)
        self._renumber_times(old_group)
        times, null = cols.time[rows][span_row], cols.time_null[rows][span_row]
        if len(span_window):
            opened = index[span_row] == ks * slide  # the window's first row
            self._first_time[span_window[opened]] = times[opened]
            self._first_null[span_window[opened]] = null[opened]
            # the last row of each window in this batch: its last span
            last = len(span_window) - 1 - np.unique(span_window[::-1], return_index=True)[1]
            self._last_time[span_window[last]] = times[last]
            self._last_null[span_window[last]] = null[last]
        full = index[span_row] == ks * slide + size - 1
        if not full.any():
            return None, np.empty(0, np.int64)
        windows, filled_by = span_window[full], span_row[full]  # in arrival order: one per row
        block = self._fire(windows, ON_TIME, presorted=True)
        drop = np.zeros(len(self._wk), bool)
        drop[windows] = True
        self._drop_windows(drop)
        return block, filled_by

    def _renumber_times(self, old_group: np.ndarray) -> None:
        count = len(self._wk)
        for name, fill, dtype in (("_first_time", 0, np.int64), ("_first_null", True, bool),
                                  ("_last_time", 0, np.int64), ("_last_null", True, bool)):
            fresh = np.full(count, fill, dtype)
            fresh[old_group] = getattr(self, name)
            setattr(self, name, fresh)

    def _drop_windows(self, drop: np.ndarray) -> None:
        keep = ~drop
        for name in ("_first_time", "_first_null", "_last_time", "_last_null"):
            setattr(self, name, getattr(self, name)[keep])
        super()._drop_windows(drop)

    def _bounds(self, windows: np.ndarray) -> tuple:
        return (self._first_time[windows], self._first_null[windows], self._last_time[windows],
                self._last_null[windows], self._ws[windows] // self.windower.slide)

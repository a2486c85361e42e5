"""The vectorised runtime of SESSION with EMIT FINAL: a batch's rows merged into the open sessions
in one sort, purged sessions kept as tombstones while a row could still reach them. Built on
FixedFinalRuntime (fixed_final.py): the same keys, clocks, accumulators, closing and pieces.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime.assign import SESSION, family_of
from sqlwin.runtime.column_aggregates import accumulate
from sqlwin.runtime.columns import NONE, Columns
from sqlwin.runtime.fixed_final import FixedFinalRuntime, final_only
from sqlwin.runtime.model import AggregateSpec, BatchResult, EmissionBlock, LateRow


class SessionFinalRuntime(FixedFinalRuntime):
    """SESSION with EMIT FINAL over columns.

    Every row of a micro-batch is checked against the same watermark and the same purged sessions
    (they change only when the batch commits), so the batch's sessions are the connected pieces
    of the union of the open sessions [start, last + gap) and the on-time rows' [t, t + gap): one
    sort by (key, start) and a running maximum of `last` per key. A session is kept as its start
    and end (= last + gap); purged ones stay as tombstones (`_tk`, `_ts`, `_te`, in the order they
    were purged) while a later row could still reach them, as in the general runtime.

    Float sums and averages of merged sessions add the same values in another order than the
    general runtime, so they may differ from it in the last bits (integers are exact).
    """

    takes_weights = False  # its windows depend on the other rows: rows of partial aggregates never reach it

    _STATE = FixedFinalRuntime._STATE + ("_tk", "_ts", "_te")
    _TOMB_FIELDS = ("_ts", "_te")

    @classmethod
    def covers(cls, windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool,
               many_batches: bool = False) -> bool:
        """Not a replay's runs (`many_batches`): sessions take those one batch at a time, where the
        general runtime is faster."""
        return (final_only(watermark, emit, aggregates, processing_time) and family_of(windower) == SESSION
                and not many_batches)

    def __init__(self, windower, watermark, emit, aggregates, processing_time: bool = False):
        super().__init__(windower, watermark, emit, aggregates, processing_time)
        self._tk = np.empty(0, np.int64)
        self._ts = np.empty(0, np.int64)
        self._te = np.empty(0, np.int64)

    def _place(self, out: BatchResult, cols: Columns, rows: np.ndarray, key_of_row: np.ndarray, times: np.ndarray,
               known: np.ndarray, mark: np.ndarray) -> np.ndarray:
        """The on-time rows merged into sessions; a row is late when the session it would open is
        closed, or when it reaches a purged one. Only on-time rows move their clock."""
        spec, gap = self.watermark_spec, self.windower.gap
        tomb = np.full(len(rows), -1, np.int64)  # the purged session a row would reach, if any
        if spec.lateness_rule == "before_watermark":
            late = known & (times < mark)
        else:
            late = known & (times + gap <= mark)  # the session it would open is already closed
            tomb = self._tombstone_hits(~late, key_of_row, times)
            late |= tomb >= 0
        if late.any():
            self.counts["late"] += int(late.sum())
            for r in np.flatnonzero(late).tolist():
                t_ = tomb[r]
                start, end = (None, None) if t_ < 0 else (int(self._ts[t_]), int(self._te[t_]))
                out.late.append(LateRow(self._keys[key_of_row[r]], int(times[r]), tuple(cols.row_values(int(rows[r]))),
                                        int(mark[r] - times[r]), start, end))
        on_time = np.flatnonzero(~late)
        self._merge(cols, rows[on_time], key_of_row[on_time], times[on_time])
        return ~late

    def process_batches(self, cols: Columns, batches: np.ndarray,
                        stream_clock: tuple[np.ndarray, np.ndarray] | None = None) -> list[tuple[int, BatchResult]]:
        """Batch by batch (sessions merge as batches commit)."""
        return self._by_batch(cols, batches, stream_clock)

    def _tombstone_hits(self, candidates: np.ndarray, key_of_row: np.ndarray, times: np.ndarray) -> np.ndarray:
        """For each candidate row, the first purged session of its key that [t, t + gap) overlaps."""
        hits = np.full(len(times), -1, np.int64)
        rows = np.flatnonzero(candidates)
        if not len(self._tk) or not len(rows):
            return hits
        pairs = pd.DataFrame({"row": rows, "key": key_of_row[rows]}).merge(
            pd.DataFrame({"tomb": np.arange(len(self._tk)), "key": self._tk}), on="key")
        if pairs.empty:
            return hits
        pr, pt = pairs["row"].to_numpy(), pairs["tomb"].to_numpy()
        overlap = (self._ts[pt] < times[pr] + self.windower.gap) & (times[pr] < self._te[pt])
        pr, pt = pr[overlap], pt[overlap]
        order = np.lexsort((pt, pr))
        pr, pt = pr[order], pt[order]
        first = np.r_[True, pr[1:] != pr[:-1]] if len(pr) else np.empty(0, bool)
        hits[pr[first]] = pt[first]
        return hits

    def _merge(self, cols: Columns, rows: np.ndarray, keys: np.ndarray, times: np.ndarray) -> None:
        """The open sessions and the on-time rows, merged where they overlap (one gap apart: not)."""
        if not len(rows):
            return
        gap = self.windower.gap
        old = len(self._wk)
        item_key = np.concatenate([self._wk, keys])
        item_start = np.concatenate([self._ws, times])
        item_last = np.concatenate([self._we - gap, times])
        order = np.lexsort((item_start, item_key))
        sk, ss, sl = item_key[order], item_start[order], item_last[order]
        reach = pd.Series(sl).groupby(sk).cummax().to_numpy()  # the furthest last so far, per key
        new = np.ones(len(order), bool)
        new[1:] = (sk[1:] != sk[:-1]) | (ss[1:] >= reach[:-1] + gap)
        firsts = np.flatnonzero(new)
        group = np.empty(len(order), np.int64)
        group[order] = np.cumsum(new) - 1
        accs = accumulate(self.aggregate_specs, self._acc, self._admitted, len(firsts), group[:old], group[old:],
                          cols, rows)
        self._wk, self._ws = sk[firsts], ss[firsts]
        self._we = np.maximum.reduceat(sl, firsts) + gap
        self._acc = accs

    def _close_due(self, out: BatchResult, batch_keys: np.ndarray | None) -> EmissionBlock | None:
        """Close as fixed windows do; a purged session stays as a tombstone while a row could reach it."""
        closed = super()._close_due(out, batch_keys)
        if self.watermark_spec.lateness_rule == "window_closed" and closed is not None:
            self._tk = np.concatenate([self._tk, closed.positions])
            self._ts = np.concatenate([self._ts, closed.starts])
            self._te = np.concatenate([self._te, closed.ends])
        self._forget(batch_keys)
        return closed

    def _forget(self, batch_keys: np.ndarray | None) -> None:
        """Drop tombstones no acceptable row can reach: end + gap at or before the key's horizon."""
        if not len(self._tk):
            return
        if self._stream:
            if self._stream_raw == NONE:
                return
            horizon = np.full(len(self._tk), self._stream_raw - self.watermark_spec.delay, np.int64)
            judged = np.ones(len(self._tk), bool)
        else:
            judged = np.zeros(len(self._keys), bool)
            judged[batch_keys] = True
            raw = self._raw[self._tk]
            judged = judged[self._tk] & (raw != NONE)
            horizon = raw - self.watermark_spec.delay
        keep = ~(judged & (self._te + self.windower.gap <= horizon))
        self._tk, self._ts, self._te = self._tk[keep], self._ts[keep], self._te[keep]

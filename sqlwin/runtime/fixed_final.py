"""The vectorised runtime of fixed windows (TUMBLE, HOP, CUMULATE) with EMIT FINAL, in NumPy, and
the base of the other vectorised runtimes (count_final.py, session_final.py).

The general `WindowRuntime` walks rows one by one through Python objects; this one takes a
micro-batch as columns (columns.py) and keeps its state as columns (one array per field), so a
batch costs a few NumPy passes over its rows and the windows it touches, and a snapshot is a
handful of array buffers rather than one Python object per key and window. It produces exactly
what `WindowRuntime` produces for what it covers (vector.py says what that is).

Layout of the state: keys in first-seen order (`_keys`, with `_index` their position and `_first`
the stream-wide sequence at which each was first seen), one clock per key (`_raw`, NONE before
any row), and the open windows as parallel arrays (`_wk` key position, `_ws` start, `_we` end,
then per aggregate one or a few arrays, column_aggregates.py). All times are int64 microseconds.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime.assign import FIXED, family_of, fixed_spans
from sqlwin.runtime.clock import check_watermark
from sqlwin.runtime.column_aggregates import BY_AGGREGATES, VECTOR_AGGREGATES, accumulate, empty_acc, results
from sqlwin.runtime.columns import NONE, Columns
from sqlwin.runtime.model import (
    FINAL,
    INSERT,
    ON_TIME,
    AggregateSpec,
    BatchResult,
    EmissionBlock,
    LateRow,
    RuntimeConfigError,
    RejectedRow,
)
from sqlwin.runtime.pieces import KeyPieces
from sqlwin.runtime.snapshots import check_restored_config, seal, unseal
from sqlwin.runtime.triggers import check_emit


def final_only(watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool) -> bool:
    """What every vectorised runtime needs: event time, the max / min event-time strategies with
    one clock per key or per stream, EMIT FINAL (no early / late / changes firings, no allowed
    lateness), the aggregates count, sum, min, max and avg over numbers and min_by / max_by."""
    return (not processing_time and getattr(watermark, "sides", 1) == 1 and watermark.strategy in ("max_event_time", "min_event_time")
            and watermark.idle_timeout is None and emit.final and emit.is_final_only
            and not emit.allowed_lateness
            and all(a.func in VECTOR_AGGREGATES and (a.arg2 is None) == (a.func not in BY_AGGREGATES) and not a.order
                    and getattr(a, "filter", None) is None for a in aggregates))


class FixedFinalRuntime(KeyPieces):
    """TUMBLE / HOP / CUMULATE with EMIT FINAL over columns. The same API as WindowRuntime."""


    _STATE = ("_keys", "_first", "_raw", "_stream_raw", "_wk", "_ws", "_we", "_acc", "_key_seq", "_row_seq",
              "_emit_seq", "_ended", "counts")
    # The state by what it belongs to (segments.py keeps it in pieces of keys): per key, parallel
    # to _keys; per window, parallel to _wk (the window's key position; _acc too); per purged
    # session, parallel to _tk; and what belongs to the whole stream.
    _KEY_FIELDS: tuple[str, ...] = ("_first", "_raw")
    _WINDOW_FIELDS: tuple[str, ...] = ("_ws", "_we")
    _TOMB_FIELDS: tuple[str, ...] = ()
    _GLOBAL_FIELDS = ("_stream_raw", "_key_seq", "_row_seq", "_emit_seq", "_ended", "counts")
    # It counts a row of partial aggregates as the input rows it stands for (Columns.weights).
    takes_weights = True
    # Emissions as EmissionBlocks in BatchResult.blocks (a replay, which writes them to Arrow as
    # columns), else as Emission objects. Not state: whoever drives the runtime chooses.
    columnar = False

    @classmethod
    def covers(cls, windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool,
               many_batches: bool = False) -> bool:
        """Whether this runtime computes the configuration (`many_batches`: a replay's runs)."""
        return final_only(watermark, emit, aggregates, processing_time) and family_of(windower) == FIXED

    def __init__(self, windower, watermark, emit, aggregates: t.Sequence[AggregateSpec],
                 processing_time: bool = False):
        check_watermark(watermark, processing_time)
        check_emit(emit)
        if not self.covers(windower, watermark, emit, aggregates, processing_time):
            raise RuntimeConfigError("The vectorised runtime does not cover this query",
                                     hint="sqlwin.runtime.WindowRuntime")
        self.windower, self.watermark_spec, self.emit = windower, watermark, emit
        self.aggregate_specs = tuple(aggregates)
        self.processing_time = False
        self._stream = watermark.scope == "stream"
        self._argument_count = 1 + max([a.arg for a in self.aggregate_specs if a.arg is not None], default=-1)
        # -- state
        self._keys: list[tuple] = []
        self._index: dict[tuple, int] = {}
        self._first = np.empty(0, np.int64)  # stream-wide first-seen sequence of each key
        self._raw = np.empty(0, np.int64)  # clock per key (scope 'key')
        self._stream_raw = int(NONE)  # scope 'stream'
        self._wk = np.empty(0, np.int64)
        self._ws = np.empty(0, np.int64)
        self._we = np.empty(0, np.int64)
        self._acc: list[list[np.ndarray]] = [empty_acc(spec, np.float64) for spec in self.aggregate_specs]
        self._key_seq = 0
        self._row_seq = 0
        self._admitted = (np.empty(0, np.int64), 0)  # the last batch's admitted rows, sequence before them
        self._emit_seq = 0
        self._ended = False
        self.counts = {"rows": 0, "late": 0, "rejected": 0, "unassigned": 0, "emissions": 0}

    # -- public API ----------------------------------------------------------------------

    def process_batch(self, rows, batch_time_us: int,
                      stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        return self.process_columns(self.batch_of(rows), batch_time_us, stream_bounds)

    def batch_of(self, rows) -> Columns:
        """Row tuples (key, time, values) as process_columns takes them."""
        return Columns.from_rows(rows, self._argument_count)

    def process_columns(self, cols: Columns, batch_time_us: int = 0,
                        stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        """One micro-batch. `stream_bounds` as WindowRuntime.process_batch's: this runtime holds
        some of the stream's keys, and the whole stream's batch extremes move its one clock."""
        self._check_open()
        out = BatchResult()
        admitted = self._admit(cols, lambda i: out.rejected) if cols.n else None
        if admitted is None:
            if self._take_stream_bounds(stream_bounds):
                self._close_due(out, None)
            return out
        rows, key_of_row, batch_keys = admitted
        times = cols.time[rows]
        # The watermark each row is checked against: its clock as the batch found it.
        raw = np.full(len(rows), self._stream_raw, np.int64) if self._stream else self._raw[key_of_row]
        known = raw != NONE
        mark = np.where(known, raw - self.watermark_spec.delay, 0)
        moves_clock = self._place(out, cols, rows, key_of_row, times, known, mark)
        self._commit(key_of_row, times, moves_clock)
        self._take_stream_bounds(stream_bounds)
        self._close_due(out, None if self._stream else batch_keys)
        return out

    def _place(self, out: BatchResult, cols: Columns, rows: np.ndarray, key_of_row: np.ndarray, times: np.ndarray,
               known: np.ndarray, mark: np.ndarray) -> np.ndarray:
        """The batch's admitted rows into their windows, or into `out.late` (`mark`: the watermark
        each row is checked against, where `known`). Returns which rows move their clock."""
        # Windows of each row, and which of them the row is late for.
        span_row, starts, ends = self._spans(times)
        span_known = known[span_row]
        if self.watermark_spec.lateness_rule == "before_watermark":
            late_span = span_known & (times[span_row] < mark[span_row])
        else:
            late_span = span_known & (ends <= mark[span_row])
        spans_per_row = np.bincount(span_row, minlength=len(rows))
        late_per_row = np.bincount(span_row, weights=late_span, minlength=len(rows)).astype(np.int64)
        unassigned = spans_per_row == 0
        self.counts["unassigned"] += cols.weight(rows[unassigned])
        if late_span.any():
            self._late_rows(lambda r: out.late, cols, rows, key_of_row, times, mark, span_row, starts, ends, late_span)
        on_time = ~late_span
        self._aggregate(cols, rows, key_of_row[span_row[on_time]], starts[on_time], ends[on_time],
                        span_row[on_time])
        return unassigned | (late_per_row < spans_per_row)  # late for every window: it does not

    def process_batches(self, cols: Columns, batches: np.ndarray,
                        stream_clock: tuple[np.ndarray, np.ndarray] | None = None) -> list[tuple[int, BatchResult]]:
        """Many micro-batches at once: rows sorted by batch (then arrival), `batches` the batch of
        each row. The same as `process_columns` batch by batch, in a few passes over all rows.

        With 'max_event_time' a clock before a batch is the newest time of its owner's earlier
        rows (a row late for every window it belongs to is older than its clock, so counting it
        changes nothing): the clocks of every batch come from one segmented running maximum, and
        each window closes at the first batch whose clock reaches its end. Other strategies run
        batch by batch.

        `stream_clock`: (batches, newest times), ascending: the batches of the run in which the
        whole stream's clock moves and the newest event time of each over the whole stream, when
        this runtime holds some of the stream's keys (a replay spread over partitions). Those
        batches run here too, with rows of this runtime or not: they close windows.
        """
        self._check_open()
        clock_batches, clock_times = stream_clock if stream_clock is not None and self._stream else ((), ())
        if cols.n == 0 and not len(clock_batches):
            return []
        if self.watermark_spec.strategy != "max_event_time":
            return self._by_batch(cols, batches, stream_clock)
        results: dict[int, BatchResult] = {}

        def result(batch) -> BatchResult:
            out = results.get(batch)
            if out is None:
                out = results[batch] = BatchResult()
            return out

        admitted = self._admit(cols, lambda i: result(int(batches[i])).rejected) if cols.n else None
        if admitted is None and not len(clock_batches):
            return sorted(results.items())
        rows, key_of_row, _ = admitted if admitted is not None else (np.empty(0, np.int64),) * 3
        times, batch = cols.time[rows], batches[rows]
        if self._stream:
            # Groups: one per batch, the rows' and the stream's; each knows its newest time.
            g_batch, group_of_all = np.unique(np.concatenate([batch, np.asarray(clock_batches, np.int64)]),
                                              return_inverse=True)
            g_newest = np.full(len(g_batch), NONE, np.int64)
            np.maximum.at(g_newest, group_of_all, np.concatenate([times, np.asarray(clock_times, np.int64)]))
            group_of_row = group_of_all[:len(rows)]
            g_owner = np.zeros(len(g_batch), np.int64)
            g_first = g_batch  # one per group
            g_row = None  # keys go in first-seen order (below)
        else:
            owner = key_of_row
            # Groups: one per (owner, batch), in owner then batch order; each knows its newest time
            # and the clock before it (the running maximum of its owner's earlier groups).
            order = np.lexsort((np.arange(len(rows)), batch, owner))
            o_sorted, b_sorted = owner[order], batch[order]
            new_group = np.ones(len(rows), bool)
            new_group[1:] = (o_sorted[1:] != o_sorted[:-1]) | (b_sorted[1:] != b_sorted[:-1])
            group_of_sorted = np.cumsum(new_group) - 1
            group_of_row = np.empty(len(rows), np.int64)
            group_of_row[order] = group_of_sorted
            g_first = np.flatnonzero(new_group)
            g_owner, g_batch = o_sorted[g_first], b_sorted[g_first]
            g_row = order[g_first]  # the first row of each group, in arrival order within the chunk
            g_newest = np.maximum.reduceat(times[order], g_first)
        initial = np.full(len(g_first), self._stream_raw, np.int64) if self._stream else self._raw[g_owner]
        g_after = pd.Series(np.maximum(g_newest, initial)).groupby(g_owner).cummax().to_numpy()
        g_before = np.empty_like(g_after)
        g_before[0] = initial[0]
        g_before[1:] = np.where(g_owner[1:] == g_owner[:-1], g_after[:-1], initial[1:])
        raw = g_before[group_of_row]
        known = raw != NONE
        mark = np.where(known, raw - self.watermark_spec.delay, 0)
        span_row, starts, ends = self._spans(times)
        if self.watermark_spec.lateness_rule == "before_watermark":
            late_span = known[span_row] & (times[span_row] < mark[span_row])
        else:
            late_span = known[span_row] & (ends <= mark[span_row])
        self.counts["unassigned"] += cols.weight(rows[np.bincount(span_row, minlength=len(rows)) == 0])
        self._late_rows(lambda r: result(int(batch[r])).late, cols, rows, key_of_row, times, mark, span_row, starts,
                        ends, late_span)
        on_time = ~late_span
        self._aggregate(cols, rows, key_of_row[span_row[on_time]], starts[on_time], ends[on_time], span_row[on_time])
        # Each window closes at its owner's first group whose clock reaches end + delay.
        w_owner = np.zeros(len(self._wk), np.int64) if self._stream else self._wk
        target = self._we + self.watermark_spec.delay
        n_groups, n_windows = len(g_first), len(self._wk)
        all_owner = np.concatenate([g_owner, w_owner])
        all_value = np.concatenate([g_after, target])
        is_group = np.concatenate([np.ones(n_groups, bool), np.zeros(n_windows, bool)])
        all_batch = np.concatenate([g_batch, np.zeros(n_windows, np.int64)])
        merged = np.lexsort((all_batch, is_group, all_value, all_owner))  # a window before equal clocks
        positions = np.where(is_group[merged], np.arange(len(merged)), len(merged))
        next_group = np.minimum.accumulate(positions[::-1])[::-1]  # first group at or after each place
        where = np.empty(len(merged), np.int64)
        where[merged] = np.arange(len(merged))
        found = next_group[where[n_groups:]]
        closes = found < len(merged)
        group = np.where(closes, merged[np.minimum(found, len(merged) - 1)], 0)
        closes &= all_owner[group] == w_owner
        due = np.flatnonzero(closes)
        if len(due):
            g = group[due]
            emit_batch = g_batch[g]
            if self._stream:
                # every key in first-seen order: the rank of a window's key is its first-seen sequence
                rank = self._first[self._wk[due]]
            else:
                rank = g_row[g]  # keys in the order of their first row in the emitting batch
            due = due[np.lexsort((self._ws[due], self._we[due], rank, emit_batch))]
            emit_batch = g_batch[group[due]]
            self._put_run(result, self._fire(due, ON_TIME, None, presorted=True), emit_batch)
            drop = np.zeros(len(self._wk), bool)
            drop[due] = True
            self._drop_windows(drop)
        # The clocks as the last batch left them.
        if self._stream:
            self._stream_raw = int(g_after.max())
        else:
            self._raw[g_owner] = np.maximum(self._raw[g_owner], g_after)
        return sorted(results.items())

    def _by_batch(self, cols: Columns, batches: np.ndarray,
                  stream_clock: tuple[np.ndarray, np.ndarray] | None) -> list[tuple[int, BatchResult]]:
        """process_batches one batch at a time: each batch of the rows or of `stream_clock`."""
        clock = {}
        if stream_clock is not None and self._stream:
            clock = {int(b): int(high) for b, high in zip(np.asarray(stream_clock[0]).tolist(),
                                                         np.asarray(stream_clock[1]).tolist())}
        edges = np.concatenate([[0], np.flatnonzero(np.diff(batches)) + 1, [cols.n]]).astype(np.int64).tolist()
        spans = {int(batches[a]): (a, b) for a, b in zip(edges, edges[1:]) if b > a}
        out = []
        for b in sorted(set(spans) | set(clock)):
            a, z = spans.get(b, (0, 0))
            bounds = {0: (clock[b], clock[b])} if b in clock else None
            out.append((b, self.process_columns(cols.take(a, z), 0, bounds)))
        return out

    def advance_processing_time(self, now_us: int) -> BatchResult:
        self._check_open()
        return BatchResult()  # no timers: event time moves only with rows

    def end_of_input(self) -> BatchResult:
        self._check_open()
        out = BatchResult()
        self._ended = True
        self._put(out, self._fire(np.arange(len(self._wk)), FINAL))
        self._drop_windows(np.ones(len(self._wk), bool))
        return out

    def watermark(self, key: tuple = ()) -> int | float | None:
        if self._ended:
            return float("inf")
        raw = self._stream_raw if self._stream else (
            self._raw[self._index[key]] if key in self._index else NONE)
        return None if raw == NONE else int(raw) - self.watermark_spec.delay

    def open_windows(self, key: tuple = ()) -> list[tuple]:
        return [(int(self._ws[i]), int(self._we[i])) for i in self._key_windows(key)]

    def _key_windows(self, key: tuple) -> np.ndarray:
        """The open windows of `key`, by end, then start."""
        position = self._index.get(key)
        if position is None:
            return np.empty(0, np.int64)
        mine = np.flatnonzero(self._wk == position)
        return mine[np.lexsort((self._ws[mine], self._we[mine]))]

    @property
    def open_window_count(self) -> int:
        return len(self._wk)

    @property
    def key_count(self) -> int:
        return len(self._keys)

    def key_watermarks(self) -> list[int]:
        """The effective watermark of every key that has one (scope 'stream': the stream's)."""
        if self._stream:
            return [] if self._stream_raw == NONE else [self._stream_raw - self.watermark_spec.delay]
        raw = self._raw[self._raw != NONE]
        if not len(raw):
            return []
        return [int(raw.min()) - self.watermark_spec.delay, int(raw.max()) - self.watermark_spec.delay]

    def snapshot(self) -> bytes:
        config = (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, False)
        state = {name: getattr(self, name) for name in self._STATE}
        return seal(type(self).__name__, state, config)

    @classmethod
    def restore(cls, snapshot: bytes, windower=None, watermark=None, emit=None, aggregates=None,
                processing_time=None) -> "FixedFinalRuntime":
        sealed = unseal(snapshot, cls.__name__)  # another kind: snapshots.OtherSnapshotKind
        stored = sealed.config
        check_restored_config(stored, (windower, watermark, emit, aggregates, None))
        runtime = cls(*stored)
        for name, value in sealed.state.items():
            setattr(runtime, name, value)
        runtime._index = {key: i for i, key in enumerate(runtime._keys)}
        return runtime

    # -- keys --------------------------------------------------------------------------

    def _admit(self, cols: Columns, rejected_list, null_time_ok: bool = False) -> tuple | None:
        """Reject rows with a NULL key (else a NULL time) into `rejected_list(row)`; count the rest
        and place their keys, new ones joining the state in the order of their first row.

        Returns (admitted rows, key position of each, key positions in first-row order), or None
        when every row was rejected.
        """
        rejected = cols.key_null if null_time_ok else cols.key_null | cols.time_null
        if rejected.any():
            for i in np.flatnonzero(rejected).tolist():
                reason = "null_key" if cols.key_null[i] else "null_time"
                time = None if cols.time_null[i] else int(cols.time[i])
                rejected_list(i).append(RejectedRow(cols.keys[cols.key_codes[i]], time, tuple(cols.row_values(i)),
                                                    reason))
            self.counts["rejected"] += cols.weight(rejected)
        rows = np.flatnonzero(~rejected)
        if not len(rows):
            return None
        self._admitted = (rows, self._row_seq)  # each row's sequence, for min_by / max_by ties
        self._row_seq += len(rows)
        self.counts["rows"] += cols.weight(rows)
        codes = cols.key_codes[rows]
        distinct, first_row = np.unique(codes, return_index=True)
        distinct = distinct[np.argsort(first_row, kind="stable")]
        position = np.full(len(cols.keys), -1, np.int64)
        position[distinct] = self._positions([cols.keys[c] for c in distinct.tolist()])
        return rows, position[codes], position[distinct]

    def _positions(self, keys: list[tuple]) -> np.ndarray:
        """State positions of `keys` (given in first-seen order); new keys are added."""
        out = np.empty(len(keys), np.int64)
        index = self._index
        new = []
        for i, key in enumerate(keys):
            position = index.get(key)
            if position is None:
                position = index[key] = len(self._keys)
                self._keys.append(key)
                new.append(i)
            out[i] = position
        if new:
            self._first = np.concatenate([self._first, self._key_seq + np.arange(len(new), dtype=np.int64)])
            self._key_seq += len(new)
            self._raw = np.concatenate([self._raw, np.full(len(new), NONE, np.int64)])
        return out

    # -- windows -----------------------------------------------------------------------

    def _spans(self, times: np.ndarray):
        """(row, start, end) of every window each time falls in: by row, then start, then end."""
        return fixed_spans(self.windower, times)

    def _late_rows(self, late_of, cols, rows, key_of_row, times, mark, span_row, starts, ends, late_span) -> None:
        """The late spans' rows, each into `late_of(r)` (the late list of row r's batch)."""
        late = np.flatnonzero(late_span)
        for s in late.tolist():
            r = span_row[s]
            i = int(rows[r])
            key = self._keys[key_of_row[r]]
            row = LateRow(key, int(times[r]), tuple(cols.row_values(i)), int(mark[r] - times[r]),
                          int(starts[s]), int(ends[s]))
            weight = cols.weight_of(i)  # a row of partial aggregates: one late record per row it stands for
            late_of(r).extend([row] * weight)
            self.counts["late"] += weight

    def _aggregate(self, cols: Columns, rows, keys, starts, ends, span_row):
        """Add the on-time spans (in arrival order) to their windows, opening new ones.

        Returns (new position of each old window, window of each span): the windows are
        renumbered, and a subclass moves its own per-window arrays along.
        """
        if not len(keys):
            return np.arange(len(self._wk)), np.empty(0, np.int64)
        old = len(self._wk)
        all_k = np.concatenate([self._wk, keys])
        all_s = np.concatenate([self._ws, starts])
        all_e = np.concatenate([self._we, ends])
        order = np.lexsort((all_e, all_s, all_k))
        sk, ss, se = all_k[order], all_s[order], all_e[order]
        first = np.ones(len(order), bool)
        first[1:] = (sk[1:] != sk[:-1]) | (ss[1:] != ss[:-1]) | (se[1:] != se[:-1])
        group = np.empty(len(order), np.int64)
        group[order] = np.cumsum(first) - 1
        count = int(first.sum())
        old_group, new_group = group[:old], group[old:]
        accs = accumulate(self.aggregate_specs, self._acc, self._admitted, count, old_group, new_group, cols,
                          rows[span_row])
        self._wk, self._ws, self._we = sk[first], ss[first], se[first]  # group g is the g-th first
        self._acc = accs
        return old_group, new_group

    def _commit(self, key_of_row, times, moves) -> None:
        """The batch is applied: each clock moves to the newest (or oldest) time of its rows."""
        if not moves.any():
            return
        keys, times = key_of_row[moves], times[moves]
        newest = self.watermark_spec.strategy == "max_event_time"
        if self._stream:
            value = int(times.max() if newest else times.min())
            if self._stream_raw == NONE or value > self._stream_raw:
                self._stream_raw = value
            return
        bound = np.full(len(self._raw), NONE if newest else np.iinfo(np.int64).max, np.int64)
        (np.maximum if newest else np.minimum).at(bound, keys, times)
        touched = np.unique(keys)
        self._raw[touched] = np.maximum(self._raw[touched], bound[touched])

    def _take_stream_bounds(self, bounds: t.Mapping[int, tuple[int, int]] | None) -> bool:
        """Move the stream's clock to the whole stream's newest time of the batch (see
        WindowRuntime.process_batch); True when there were bounds to take."""
        if not bounds or not self._stream:
            return False
        if self.watermark_spec.strategy != "max_event_time":
            raise RuntimeConfigError("A 'min_event_time' clock cannot combine buckets' batch extremes",
                                     hint="one runtime for the whole stream")
        newest = max(int(high) for _, high in bounds.values())
        if self._stream_raw == NONE or newest > self._stream_raw:
            self._stream_raw = newest
        return True

    def _close_due(self, out: BatchResult, batch_keys: np.ndarray | None) -> EmissionBlock | None:
        """Fire and drop what the clocks reached: the batch's keys (scope 'key'), or every key."""
        if not len(self._wk):
            return None
        if self._stream:
            if self._stream_raw == NONE:
                return None
            due = self._we <= self._stream_raw - self.watermark_spec.delay
        else:
            in_batch = np.zeros(len(self._keys), bool)
            in_batch[batch_keys] = True
            raw = self._raw[self._wk]
            due = in_batch[self._wk] & (raw != NONE) & (self._we <= raw - self.watermark_spec.delay)
        if not due.any():
            return None
        rank = None
        if not self._stream:  # keys in the order of their first row in this batch
            rank = np.empty(len(self._keys), np.int64)
            rank[batch_keys] = np.arange(len(batch_keys))
        block = self._fire(np.flatnonzero(due), ON_TIME, rank)
        self._put(out, block)
        self._drop_windows(due)
        return block

    def _fire(self, windows: np.ndarray, firing: str, rank: np.ndarray | None = None,
              presorted: bool = False) -> EmissionBlock | None:
        """The emissions of `windows`, by key (rank, else first seen), then window end, then start."""
        if not len(windows):
            return None
        if not presorted:
            key_rank = (self._first if rank is None else rank)[self._wk[windows]]
            windows = windows[np.lexsort((self._ws[windows], self._we[windows], key_rank))]
        positions = self._wk[windows]
        keys = self._keys
        starts, start_null, ends, end_null, indexes = self._bounds(windows)
        seq = self._emit_seq + 1 + np.arange(len(windows), dtype=np.int64)
        self._emit_seq += len(windows)
        self.counts["emissions"] += len(windows)
        return EmissionBlock([keys[k] for k in positions.tolist()], positions, starts, start_null, ends, end_null,
                             indexes, [results(spec, self._acc[a], windows) for a, spec in enumerate(self.aggregate_specs)],
                             INSERT, firing, seq)

    def _put(self, out: BatchResult, block: EmissionBlock | None) -> None:
        if block is not None:
            if self.columnar:
                out.blocks.append(block)
            else:
                out.emissions.extend(block.emissions())

    def _put_run(self, result, block: EmissionBlock | None, batches: np.ndarray) -> None:
        """A run's emissions, `batches` the batch of each (ascending): `result(b)` is batch b's
        BatchResult. Columnar, the block goes whole to its first batch, with `batch` set."""
        if block is None:
            return
        if self.columnar:
            block.batch = batches
            result(int(batches[0])).blocks.append(block)
            return
        for emission, b in zip(block.emissions(), batches.tolist()):
            result(b).emissions.append(emission)

    def _bounds(self, windows: np.ndarray) -> tuple:
        """What an emission of each window shows: (start, its NULL mask, end, its NULL mask, and
        (count windows) the window's number, else None); masks None for no NULLs."""
        return self._ws[windows], None, self._we[windows], None, None


    def _drop_windows(self, drop: np.ndarray) -> None:
        keep = ~drop
        self._wk, self._ws, self._we = self._wk[keep], self._ws[keep], self._we[keep]
        self._acc = [[array[keep] for array in state] for state in self._acc]

    def _check_open(self) -> None:
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")

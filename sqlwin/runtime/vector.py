"""The vectorised runtime: fixed windows (TUMBLE, HOP, CUMULATE) with EMIT FINAL, in NumPy.

The general `WindowRuntime` walks rows one by one through Python objects; this one takes a
micro-batch as columns and keeps its state as columns (one array per field), so a batch costs a
few NumPy passes over its rows and the windows it touches, and a snapshot is a handful of array
buffers rather than one Python object per key and window.

It covers the most common shape -- a fixed windower, event time, the max / min event-time
strategies with a clock per key or per stream, EMIT FINAL (no early / late / changes firings, no
allowed lateness), the aggregates count, sum, min, max and avg over numbers and min_by / max_by
(values and orderings of numbers or timestamps) -- and produces
exactly what `WindowRuntime` produces for it: the same emissions in the same order with the same
`seq`, the same late and rejected rows, the same counts (the differential tests run both).
`supports(...)` says whether a configuration is covered; anything else runs on the general path.

Layout of the state: keys in first-seen order (`_keys`, with `_index` their position and `_first`
the stream-wide sequence at which each was first seen), one clock per key (`_raw`, NONE before
any row), and the open windows as parallel arrays (`_wk` key position, `_ws` start, `_we` end,
then per aggregate one or two arrays). All times are int64 microseconds.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime.assign import fixed_spans
from sqlwin.runtime.engine import _check_emit, _check_watermark, check_restored_config
from sqlwin.runtime.snapshots import seal, unseal
from sqlwin.runtime.model import (
    FINAL,
    INSERT,
    ON_TIME,
    AggregateSpec,
    BatchResult,
    EmissionBlock,
    LateRow,
    RejectedRow,
    RuntimeConfigError,
    nullable,
)

NONE = np.iinfo(np.int64).min  # a clock that has seen no row
VECTOR_AGGREGATES = ("count", "sum", "min", "max", "avg", "min_by", "max_by")
BY_AGGREGATES = ("min_by", "max_by")


def supports(windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool) -> bool:
    """Whether a vectorised runtime computes this configuration (else use WindowRuntime)."""
    return vector_class(windower, watermark, emit, aggregates, processing_time) is not None


def vector_class(windower, watermark, emit, aggregates: t.Sequence[AggregateSpec], processing_time: bool,
                 many_batches: bool = False):
    """The vectorised runtime for this configuration (FixedFinalRuntime, CountFinalRuntime,
    SessionFinalRuntime) or None. `many_batches`: a replay, which hands over runs of small
    batches; sessions take those one batch at a time, where the general runtime is faster."""
    from sqlwin.ir import CountWindow, Cumulate, Hop, Session, Tumble

    common = (not processing_time and getattr(watermark, "sides", 1) == 1 and watermark.strategy in ("max_event_time", "min_event_time")
              and watermark.idle_timeout is None and emit.final and emit.is_final_only
              and not emit.allowed_lateness
              and all(a.func in VECTOR_AGGREGATES and (a.arg2 is None) == (a.func not in BY_AGGREGATES) and not a.order
                      and getattr(a, "filter", None) is None for a in aggregates))
    if not common:
        return None
    if isinstance(windower, (Tumble, Hop, Cumulate)):
        return FixedFinalRuntime
    if isinstance(windower, CountWindow):
        return CountFinalRuntime
    if isinstance(windower, Session) and not many_batches:
        return SessionFinalRuntime
    return None


class Columns:
    """One micro-batch as columns, in arrival order.

    key_codes: int64 per row, an index into `keys` (the batch's distinct keys); key_null: where the
    key is NULL or holds a NULL (such rows are rejected, with their key as given).
    time / time_null: event time in microseconds and where it is NULL. args: one float64 or
    int64 array per aggregate argument, with its NULL mask. row_values(i): the values tuple of
    row i as the general runtime sees it (arguments, then carried columns), for late and rejected
    rows only.
    """

    __slots__ = ("n", "key_codes", "keys", "key_null", "time", "time_null", "args", "row_values")

    def __init__(self, key_codes, keys, key_null, time, time_null, args, row_values):
        self.n = len(time)
        self.key_codes, self.keys, self.key_null = key_codes, keys, key_null
        self.time, self.time_null = time, time_null
        self.args, self.row_values = args, row_values

    def take(self, start: int, stop: int) -> "Columns":
        """Rows start..stop-1 (one micro-batch of a longer run)."""
        sl = slice(start, stop)
        return Columns(self.key_codes[sl], self.keys, self.key_null[sl], self.time[sl], self.time_null[sl],
                       [(v[sl], m[sl]) for v, m in self.args], lambda i: self.row_values(start + i))

    @classmethod
    def from_rows(cls, rows: t.Iterable, argument_count: int) -> "Columns":
        """Row tuples (key, time, values), as WindowRuntime.process_batch takes them."""
        rows = list(rows)
        index: dict = {}
        keys: list = []
        codes = np.empty(len(rows), np.int64)
        key_null = np.zeros(len(rows), bool)
        times = np.zeros(len(rows), np.int64)
        time_null = np.zeros(len(rows), bool)
        for i, (key, time, _) in enumerate(rows):
            key_null[i] = key is None or any(part is None for part in key)
            code = index.get(key)
            if code is None:
                code = index[key] = len(keys)
                keys.append(key)
            codes[i] = code
            if time is None:
                time_null[i] = True
            else:
                times[i] = time
        args = []
        for a in range(argument_count):
            column = [row[2][a] for row in rows]
            null = np.array([v is None for v in column], bool)
            integral = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           for v in column if v is not None)
            dtype = np.int64 if integral else np.float64
            args.append((np.array([0 if v is None else v for v in column], dtype), null))
        return cls(codes, keys, key_null, times, time_null, args, lambda i: tuple(rows[i][2]))


class FixedFinalRuntime:
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
    # Emissions as EmissionBlocks in BatchResult.blocks (a replay, which writes them to Arrow as
    # columns), else as Emission objects. Not state: whoever drives the runtime chooses.
    columnar = False

    def __init__(self, windower, watermark, emit, aggregates: t.Sequence[AggregateSpec],
                 processing_time: bool = False):
        _check_watermark(watermark, processing_time)
        _check_emit(emit)
        if vector_class(windower, watermark, emit, aggregates, processing_time) is not type(self):
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
        self._acc: list[list[np.ndarray]] = [self._empty_acc(spec, np.float64) for spec in self.aggregate_specs]
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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
        out = BatchResult()
        admitted = self._admit(cols, lambda i: out.rejected) if cols.n else None
        if admitted is None:
            if self._take_stream_bounds(stream_bounds):
                self._close_due(out, None)
            return out
        spec = self.watermark_spec
        rows, key_of_row, batch_keys = admitted
        times = cols.time[rows]
        # The watermark each row is checked against: its clock as the batch found it.
        raw = np.full(len(rows), self._stream_raw, np.int64) if self._stream else self._raw[key_of_row]
        known = raw != NONE
        mark = np.where(known, raw - spec.delay, 0)
        # Windows of each row, and which of them the row is late for.
        span_row, starts, ends = self._spans(times)
        span_known = known[span_row]
        if spec.lateness_rule == "before_watermark":
            late_span = span_known & (times[span_row] < mark[span_row])
        else:
            late_span = span_known & (ends <= mark[span_row])
        spans_per_row = np.bincount(span_row, minlength=len(rows))
        late_per_row = np.bincount(span_row, weights=late_span, minlength=len(rows)).astype(np.int64)
        unassigned = spans_per_row == 0
        self.counts["unassigned"] += int(unassigned.sum())
        moves_clock = unassigned | (late_per_row < spans_per_row)  # late for every window: it does not
        if late_span.any():
            self._late_rows(out, cols, rows, key_of_row, times, mark, span_row, starts, ends, late_span)
        on_time = ~late_span
        self._aggregate(cols, rows, key_of_row[span_row[on_time]], starts[on_time], ends[on_time],
                        span_row[on_time])
        self._commit(key_of_row, times, moves_clock)
        self._take_stream_bounds(stream_bounds)
        self._close_due(out, None if self._stream else batch_keys)
        return out

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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
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
        self.counts["unassigned"] += int((np.bincount(span_row, minlength=len(rows)) == 0).sum())
        late = np.flatnonzero(late_span)
        self.counts["late"] += len(late)
        for s in late.tolist():
            r = span_row[s]
            i = int(rows[r])
            result(int(batch[r])).late.append(LateRow(
                self._keys[key_of_row[r]], int(times[r]), tuple(cols.row_values(i)), int(mark[r] - times[r]),
                int(starts[s]), int(ends[s])))
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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
        return BatchResult()  # no timers: event time moves only with rows

    def end_of_input(self) -> BatchResult:
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
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
        position = self._index.get(key)
        if position is None:
            return []
        mine = np.flatnonzero(self._wk == position)
        order = mine[np.lexsort((self._ws[mine], self._we[mine]))]
        return [(int(self._ws[i]), int(self._we[i])) for i in order]

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

    # -- pieces: the state of some keys, and a runtime assembled from pieces ----------------

    def config(self) -> tuple:
        return (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, False)

    def key_list(self) -> list[tuple]:
        """The keys in state order: positions index this list."""
        return self._keys

    @classmethod
    def stream_raw(cls, globals_state: dict) -> int | None:
        """The stream's clock (scope 'stream') as the globals hold it; None before any row."""
        raw = globals_state["_stream_raw"]
        return None if raw == NONE else int(raw)

    def globals_state(self) -> dict:
        """What belongs to the whole stream, not to a key: clocks of scope 'stream', sequences, counts."""
        return {name: getattr(self, name) for name in self._GLOBAL_FIELDS}

    def key_piece(self, positions: np.ndarray, owner: np.ndarray | None = None, label: int = 0) -> dict:
        """The state of the keys at `positions` (in that order): their clocks, windows and purged
        sessions, with window and tombstone key positions renumbered into the piece.

        `owner` (optional): the label of every key's piece, to pick this piece's windows with one
        comparison; else they are found from `positions`.
        """
        positions = np.asarray(positions, np.int64)
        renumber = np.full(len(self._keys), -1, np.int64)
        renumber[positions] = np.arange(len(positions), dtype=np.int64)
        mine = (owner[self._wk] == label) if owner is not None else renumber[self._wk] >= 0
        piece = {"keys": [self._keys[i] for i in positions.tolist()], "_wk": renumber[self._wk[mine]],
                 "_acc": [[array[mine] for array in state] for state in self._acc]}
        for name in self._KEY_FIELDS:
            piece[name] = getattr(self, name)[positions]
        for name in self._WINDOW_FIELDS:
            piece[name] = getattr(self, name)[mine]
        if self._TOMB_FIELDS:
            tomb = (owner[self._tk] == label) if owner is not None else renumber[self._tk] >= 0
            piece["_tk"] = renumber[self._tk[tomb]]
            for name in self._TOMB_FIELDS:
                piece[name] = getattr(self, name)[tomb]
        return piece

    @classmethod
    def piece_summary(cls, piece: dict) -> dict:
        """What a directory keeps of a piece: sizes, the earliest window end (what a clock of
        scope 'stream' must reach to close one), the clocks' range."""
        raw = piece["_raw"][piece["_raw"] != NONE]
        closes = cls is not CountFinalRuntime and len(piece["_we"])  # count windows close on rows
        return {"keys": len(piece["keys"]), "windows": len(piece["_wk"]),
                "min_end": int(piece["_we"].min()) if closes else None,
                "raw": (int(raw.min()), int(raw.max())) if len(raw) else None}

    @classmethod
    def from_pieces(cls, config: tuple, globals_state: dict, pieces: t.Sequence[dict]) -> "FixedFinalRuntime":
        """A runtime over the keys of `pieces` (their keys in piece order), with the stream's globals."""
        runtime = cls(*config)
        for name, value in globals_state.items():
            setattr(runtime, name, value)
        if not pieces:
            return runtime
        offsets = np.cumsum([0] + [len(p["keys"]) for p in pieces])
        runtime._keys = [key for p in pieces for key in p["keys"]]
        runtime._index = {key: i for i, key in enumerate(runtime._keys)}
        for name in cls._KEY_FIELDS:
            setattr(runtime, name, np.concatenate([p[name] for p in pieces]))
        windowed = [(p, o) for p, o in zip(pieces, offsets) if len(p["_wk"])]
        if windowed:
            runtime._wk = np.concatenate([p["_wk"] + o for p, o in windowed])
            for name in cls._WINDOW_FIELDS:
                setattr(runtime, name, np.concatenate([p[name] for p, _ in windowed]))
            runtime._acc = [[np.concatenate([p["_acc"][a][i] for p, _ in windowed]) for i in range(len(state))]
                            for a, state in enumerate(windowed[0][0]["_acc"])]
        if cls._TOMB_FIELDS:
            tombed = [(p, o) for p, o in zip(pieces, offsets) if len(p["_tk"])]
            if tombed:
                runtime._tk = np.concatenate([p["_tk"] + o for p, o in tombed])
                for name in cls._TOMB_FIELDS:
                    setattr(runtime, name, np.concatenate([p[name] for p, _ in tombed]))
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
            self.counts["rejected"] += int(rejected.sum())
        rows = np.flatnonzero(~rejected)
        if not len(rows):
            return None
        self._admitted = (rows, self._row_seq)  # each row's sequence, for min_by / max_by ties
        self._row_seq += len(rows)
        self.counts["rows"] += len(rows)
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

    def _late_rows(self, out, cols, rows, key_of_row, times, mark, span_row, starts, ends, late_span) -> None:
        late = np.flatnonzero(late_span)
        self.counts["late"] += len(late)
        for s in late.tolist():
            r = span_row[s]
            i = int(rows[r])
            key = self._keys[key_of_row[r]]
            out.late.append(LateRow(key, int(times[r]), tuple(cols.row_values(i)), int(mark[r] - times[r]),
                                    int(starts[s]), int(ends[s])))

    @staticmethod
    def _empty_acc(spec: AggregateSpec, dtype) -> list[np.ndarray]:
        if spec.func == "count":
            return [np.empty(0, np.int64)]
        if spec.func in BY_AGGREGATES:
            return [np.empty(0, dtype), np.empty(0, bool), np.empty(0, dtype), np.empty(0, np.int64),
                    np.empty(0, np.int64)]  # value, value NULL, ordering, its row's time and sequence
        return [np.empty(0, dtype), np.empty(0, np.int64)]  # value, non-NULL count

    @staticmethod
    def _initial(spec: AggregateSpec, dtype) -> t.Any:
        if spec.func == "min":
            return np.nan if dtype == np.float64 else np.iinfo(np.int64).max
        if spec.func == "max":
            return -np.inf if dtype == np.float64 else np.iinfo(np.int64).min
        return 0

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
        accs = self._accumulate(count, old_group, new_group, cols, rows[span_row])
        self._wk, self._ws, self._we = sk[first], ss[first], se[first]  # group g is the g-th first
        self._acc = accs
        return old_group, new_group

    def _accumulate(self, count: int, old_group: np.ndarray, new_group: np.ndarray, cols: Columns,
                    source_rows: np.ndarray) -> list[list[np.ndarray]]:
        """The accumulators of `count` windows: the old windows' states merged into their new window
        (`old_group`; several old sessions may merge into one), then the new rows' values added in
        arrival order (`new_group`, `source_rows`)."""
        old = len(old_group)
        accs = []
        for a, spec in enumerate(self.aggregate_specs):
            state = self._acc[a]
            if spec.func == "count":
                acc = np.zeros(count, np.int64)
                np.add.at(acc, old_group, state[0])
                if spec.arg is None:  # count(*)
                    np.add.at(acc, new_group, 1)
                else:
                    np.add.at(acc, new_group[~cols.args[spec.arg][1][source_rows]], 1)
                accs.append([acc])
                continue
            if spec.func in BY_AGGREGATES:
                accs.append(self._accumulate_by(spec, state, count, old_group, new_group, cols, source_rows))
                continue
            values, null = cols.args[spec.arg]
            values, valid = values[source_rows], ~null[source_rows]
            integral = values.dtype == np.int64 and (not old or state[0].dtype == np.int64)
            dtype = np.int64 if integral else np.float64
            seen = np.zeros(count, np.int64)
            np.add.at(seen, old_group, state[1])
            value = np.full(count, self._initial(spec, dtype), dtype)
            old_values = state[0].astype(dtype, copy=False)
            if old and dtype != state[0].dtype:  # an integer state widened to float: empty ones anew
                old_values = np.where(state[1] > 0, old_values, self._initial(spec, dtype))
            group_valid, values_valid = new_group[valid], values[valid].astype(dtype, copy=False)
            for groups, vals in ((old_group, old_values), (group_valid, values_valid)):
                if spec.func in ("sum", "avg"):
                    np.add.at(value, groups, vals)
                elif spec.func == "min":
                    (np.fmin if dtype == np.float64 else np.minimum).at(value, groups, vals)
                else:
                    with np.errstate(invalid="ignore"):  # NaN is the largest: it wins
                        np.maximum.at(value, groups, vals)
            np.add.at(seen, group_valid, 1)
            accs.append([value, seen])
        return accs

    def _accumulate_by(self, spec: AggregateSpec, state: list[np.ndarray], count: int, old_group: np.ndarray,
                       new_group: np.ndarray, cols: Columns, source_rows: np.ndarray) -> list[np.ndarray]:
        """min_by / max_by (aggregates.MinBy): per window the value at the row with the smallest /
        largest ordering; ties go to the earliest row by event time (no time first), then arrival.
        Rows with a NULL ordering take no part; a window without a candidate has NULL.

        State: value, its NULL mask, the winner's ordering, event time (NONE: none) and sequence
        (-1: no candidate). The candidates are the old windows' winners and the new rows."""
        values, value_null = cols.args[spec.arg]
        order, order_null = cols.args[spec.arg2]
        take = source_rows[~order_null[source_rows]]
        admitted, base = self._admitted
        new_seq = base + 1 + np.searchsorted(admitted, take)
        new_time = np.where(cols.time_null[take], NONE, cols.time[take])
        had = state[4] >= 0 if len(old_group) else np.zeros(0, bool)
        value_dtype, order_dtype = values.dtype, order.dtype
        if had.any():  # an old state of numbers meets a new column of another number type
            value_dtype, order_dtype = np.result_type(state[0], values), np.result_type(state[2], order)
        group = np.concatenate([old_group[had], new_group[~order_null[source_rows]]])
        c_value = np.concatenate([state[0][had].astype(value_dtype, copy=False), values[take].astype(value_dtype, copy=False)])
        c_null = np.concatenate([state[1][had], value_null[take]])
        c_order = np.concatenate([state[2][had].astype(order_dtype, copy=False), order[take].astype(order_dtype, copy=False)])
        c_time = np.concatenate([state[3][had], new_time])
        c_seq = np.concatenate([state[4][had], new_seq])
        rank = np.unique(c_order, return_inverse=True)[1].reshape(-1)  # comparable for every dtype
        if spec.func == "max_by":
            rank = -rank
        ranked = np.lexsort((c_seq, c_time, rank, group))
        winner = ranked[np.r_[True, group[ranked][1:] != group[ranked][:-1]]] if len(ranked) else ranked
        won = group[winner]
        value = np.zeros(count, value_dtype)
        null = np.ones(count, bool)
        best = np.zeros(count, order_dtype)
        time = np.full(count, NONE, np.int64)
        seq = np.full(count, -1, np.int64)
        value[won], null[won], best[won], time[won], seq[won] = (
            c_value[winner], c_null[winner], c_order[winner], c_time[winner], c_seq[winner])
        return [value, null, best, time, seq]

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
                             indexes, [self._results(a, spec, windows) for a, spec in enumerate(self.aggregate_specs)],
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

    def _results(self, a: int, spec: AggregateSpec, windows: np.ndarray) -> tuple:
        """Aggregate a's value in each window: (values, NULL mask or None)."""
        state = self._acc[a]
        if spec.func == "count":
            return state[0][windows], None
        if spec.func in BY_AGGREGATES:
            return state[0][windows], state[1][windows]
        value, seen = state[0][windows], state[1][windows]
        if spec.func == "avg":
            value = value / np.where(seen > 0, seen, 1)
        return value, seen == 0

    def _drop_windows(self, drop: np.ndarray) -> None:
        keep = ~drop
        self._wk, self._ws, self._we = self._wk[keep], self._ws[keep], self._we[keep]
        self._acc = [[array[keep] for array in state] for state in self._acc]


class CountFinalRuntime(FixedFinalRuntime):
    """COUNT_WINDOW with EMIT FINAL over columns: windows of `size` rows every `slide` rows per key,
    each fired when its last row arrives; its bounds are its first and last row's times.

    The windows are kept as positions ([k * slide, k * slide + size - 1] in the key's row count),
    with the first and last row's time beside them (`_first_time` / `_last_time`, NONE and a
    NULL flag when the row had none). Partial windows end with the input, without a firing.
    """

    _STATE = FixedFinalRuntime._STATE + ("_count", "_first_time", "_first_null", "_last_time", "_last_null")
    _KEY_FIELDS = FixedFinalRuntime._KEY_FIELDS + ("_count",)
    _WINDOW_FIELDS = FixedFinalRuntime._WINDOW_FIELDS + ("_first_time", "_first_null", "_last_time", "_last_null")

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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
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
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
        self._ended = True
        self._drop_windows(np.ones(len(self._wk), bool))  # partial count windows go without a firing
        return BatchResult()

    def open_windows(self, key: tuple = ()) -> list[tuple]:
        position = self._index.get(key)
        if position is None:
            return []
        mine = np.flatnonzero(self._wk == position)
        order = mine[np.lexsort((self._ws[mine], self._we[mine]))]
        starts, start_null, ends, end_null, _ = self._bounds(order)
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

    _STATE = FixedFinalRuntime._STATE + ("_tk", "_ts", "_te")
    _TOMB_FIELDS = ("_ts", "_te")

    def __init__(self, windower, watermark, emit, aggregates, processing_time: bool = False):
        super().__init__(windower, watermark, emit, aggregates, processing_time)
        self._tk = np.empty(0, np.int64)
        self._ts = np.empty(0, np.int64)
        self._te = np.empty(0, np.int64)

    def process_columns(self, cols: Columns, batch_time_us: int = 0,
                        stream_bounds: t.Mapping[int, tuple[int, int]] | None = None) -> BatchResult:
        if self._ended:
            raise RuntimeError("end_of_input() was already called: this stream has ended")
        out = BatchResult()
        admitted = self._admit(cols, lambda i: out.rejected) if cols.n else None
        if admitted is None:
            if self._take_stream_bounds(stream_bounds):
                self._close_due(out, None)
            return out
        rows, key_of_row, batch_keys = admitted
        spec, gap = self.watermark_spec, self.windower.gap
        times = cols.time[rows]
        raw = np.full(len(rows), self._stream_raw, np.int64) if self._stream else self._raw[key_of_row]
        known = raw != NONE
        mark = np.where(known, raw - spec.delay, 0)
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
        self._commit(key_of_row, times, ~late)
        self._take_stream_bounds(stream_bounds)
        self._close_due(out, None if self._stream else batch_keys)
        return out

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
        accs = self._accumulate(len(firsts), group[:old], group[old:], cols, rows)
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

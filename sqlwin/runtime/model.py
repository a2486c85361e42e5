"""The runtime's inputs and outputs: aggregate specs, emissions, late and rejected rows."""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from sqlwin.errors import SqlwinValidationError

# Firing kinds (Emission.firing).
EARLY = "early"  # before the window closed: EARLY EVERY n ROWS / interval
ON_TIME = "on_time"  # the watermark (or processing time, or a full count window) closed the window
LATE = "late"  # a closed window kept for ALLOWED LATENESS received late rows
CHANGES = "changes"  # EMIT CHANGES: after every input row
FINAL = "final"  # closed by a flush (end of input, idle timeout) rather than by time reaching its end

# Changelog operations (Emission.op), as Flink's RowKind.
INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = "+I", "-U", "+U", "-D"


class RuntimeConfigError(SqlwinValidationError, ValueError):
    """The runtime was asked for something it cannot compute (a bad windower, aggregate or mode)."""


@dataclass(frozen=True)
class AggregateSpec:
    """One aggregate of the window: `func` over `values[arg]` (and `values[arg2]` for min_by / max_by).

    func: count (arg None = count(*)), sum, min, max, avg, collect_list, first, last,
    min_by, max_by, count_distinct. `order` (collect_list only, `array_agg(v ORDER BY ...)`):
    (value index, descending, nulls_first) per ORDER BY key; ties keep event-time order.
    `filter`: the value index of a boolean, `agg(...) FILTER (WHERE c)`: only rows where it is true
    reach the aggregate. (The SQL layer writes FILTER of an aggregate that skips NULLs as its argument
    `CASE WHEN c THEN x END` instead, which the vectorised runtime computes too.)
    """

    func: str
    arg: int | None = None
    arg2: int | None = None
    order: tuple[tuple[int, bool, bool], ...] = ()
    join: "JoinSpec | None" = None  # func 'window_join' only (runtime/join.py)
    filter: int | None = None


JOIN_INSERT_MODES = ("product", "first", "last", "collect")
JOIN_KINDS = ("inner", "left", "right", "full")


@dataclass(frozen=True)
class JoinSpec:
    """A windowed join of several inputs per key and window (AP-12, Bytewax's join_window).

    `columns[s]`: the value indexes of side s's columns (a row's value 0 is its side). `insert`:
    what a side keeps of its rows, in event-time order (ties in arrival order): 'product' every
    row (SQL's join), 'first' / 'last' one row, 'collect' every row, gathered into one tuple of
    arrays (a cogroup). `steps[j]`: how side j + 1 joins the sides before it, (kind, the earlier
    side its ON condition names). `complete`: Bytewax's emit mode 'complete', emit as soon as
    every side has a row, then start again (arrival order). `grouped`: the join's ON holds more than
    keys and window bounds, so the runtime pairs nothing: each firing gives the rows every side kept
    (by `insert`), gathered as 'collect' gathers them, and the SQL around it pairs them under the
    whole ON and pads the outer joins' rows without a partner (spark/joins.py).
    """

    columns: tuple[tuple[int, ...], ...]
    insert: str = "product"
    steps: tuple[tuple[str, int], ...] = ()
    complete: bool = False
    grouped: bool = False


@dataclass(frozen=True)
class Emission:
    """One firing of one window of one key.

    window_start / window_end are microseconds: [start, end) for TUMBLE, HOP, CUMULATE and
    SESSION ([first row, last row + gap)); [ts - size, ts] for SLIDE; the first and last row's
    time for COUNT_WINDOW; None for GLOBAL_WINDOW.
    """

    key: tuple
    window_start: int | None
    window_end: int | None
    values: tuple
    op: str  # '+I' | '-U' | '+U' | '-D'
    firing: str  # 'early' | 'on_time' | 'late' | 'changes' | 'final'
    seq: int  # per runtime, strictly increasing across batches and restarts
    window_index: int | None = None  # COUNT_WINDOW: the window's number j (rows j*slide ..), from 0


@dataclass(frozen=True)
class LateRow:
    """A row that arrived after the window it belongs to could accept it.

    late_by_us = effective watermark - event_time at the row's arrival. window_start / end name
    the window it missed (one LateRow per missed window); None where no window can be named
    (a late SESSION row that would have started a session of its own).
    """

    key: tuple
    event_time: int
    values: tuple
    late_by_us: int
    window_start: int | None
    window_end: int | None


@dataclass(frozen=True)
class RejectedRow:
    """A row the runtime cannot place: reason 'null_key' or 'null_time'."""

    key: tuple | None
    event_time: int | None
    values: tuple
    reason: str


@dataclass
class BatchResult:
    """What one call (a micro-batch, a timer advance, end of input) produced, in output order.

    `blocks`: emissions as columns, from a vectorised runtime asked for them (`columnar`), in
    place of `emissions`.
    """

    emissions: list[Emission] = field(default_factory=list)
    late: list[LateRow] = field(default_factory=list)
    rejected: list[RejectedRow] = field(default_factory=list)
    blocks: list["EmissionBlock"] = field(default_factory=list)

    def extend(self, other: "BatchResult") -> "BatchResult":
        self.emissions.extend(other.emissions)
        self.late.extend(other.late)
        self.rejected.extend(other.rejected)
        self.blocks.extend(other.blocks)
        return self


@dataclass
class EmissionBlock:
    """Emissions as columns: one firing of each of n windows, all with one op and firing kind.

    Emission i is Emission(keys[i], starts[i], ends[i], (values[0][i], ...), op, firing, seq[i],
    indexes[i]), where a value, start or end is None where its NULL mask (when there is one) is
    set. `positions`: the keys' places in the runtime that fired them. `batch`: the arrival batch
    of each emission when one call covered a run of batches (a replay), else None.
    """

    keys: list[tuple]
    positions: t.Any  # int64 array
    starts: t.Any  # int64 array
    start_null: t.Any  # bool array or None
    ends: t.Any
    end_null: t.Any
    indexes: t.Any  # int64 array (COUNT_WINDOW) or None
    values: list[tuple[t.Any, t.Any]]  # per aggregate: (values array, NULL mask or None)
    op: str
    firing: str
    seq: t.Any  # int64 array
    batch: t.Any = None

    def __len__(self) -> int:
        return len(self.keys)

    def emissions(self) -> list[Emission]:
        n = len(self.keys)
        starts, ends = nullable(self.starts, self.start_null), nullable(self.ends, self.end_null)
        indexes = self.indexes.tolist() if self.indexes is not None else [None] * n
        columns = [nullable(v, null) for v, null in self.values]
        values = list(zip(*columns)) if columns else [()] * n
        op, firing = self.op, self.firing
        return [Emission(key, start, end, value, op, firing, seq, index) for key, start, end, value, seq, index
                in zip(self.keys, starts, ends, values, self.seq.tolist(), indexes)]


def nullable(values, null) -> list:
    """An array as Python values, None where `null` (a mask, or None for no NULLs) is set."""
    out = values.tolist()
    if null is None or not null.any():
        return out
    return [None if n else v for v, n in zip(out, null.tolist())]


Row = t.Tuple[t.Optional[tuple], t.Optional[int], tuple]  # (key, event_time_us, values)

"""A windowed join as an aggregate: the rows of several inputs per key and window (AP-12, BX-08).

The join's inputs arrive as one keyed stream, each row tagged with its side (value 0); the
runtime windows them as any other rows, with a clock per side and the earliest of them as the
watermark (clock.SideClocks). What a window holds is this aggregate's state: per side, the rows
its insert mode keeps. Its result, at each firing, is the window's join: a list of tuples, one
per output row, each `(present_0, *side_0_columns, present_1, *side_1_columns, ...)`, with the
columns of an absent side NULL (and `present` False), which the SQL around it explodes.

* insert mode (Bytewax's JoinInsertMode): 'product' keeps every row, and the join is SQL's, the
  sides' rows matched pairwise; 'first' / 'last' keep one row per side (the earliest / latest by
  event time, ties by arrival); 'collect' keeps every row and gives one tuple whose side columns
  are arrays of the side's values (a cogroup: Beam's CoGroupByKey, Apex's Cogroup).
* join kinds: side j + 1 joins the tuples of the sides before it by SQL's rules, matching a tuple
  whose `steps[j]` side is present: inner keeps matches, left keeps unmatched tuples with the new
  side absent, right keeps unmatched new rows with the earlier sides absent, full both.
* emit mode: the final firing (EMIT FINAL) and after every row (EMIT CHANGES, Bytewax's
  'running') give the join of everything the window holds; 'complete' (JoinSpec.complete) gives,
  after a row, what that row completed: once every side holds a row the join is emitted and the
  window starts gathering again, in arrival order, and nothing is left to emit at the close.
* grouped (a join whose ON holds more than keys and bounds): the result is one tuple shaped as
  'collect' gives it, of the rows each side kept (an absent side's arrays empty), and the SQL
  around it pairs them under the whole ON (spark/joins.py): Python does not evaluate SQL.
"""

from __future__ import annotations

import typing as t

from sqlwin.runtime.aggregates import Aggregate, order_key
from sqlwin.runtime.model import JOIN_INSERT_MODES, JOIN_KINDS, AggregateSpec, JoinSpec, RuntimeConfigError


class WindowJoin(Aggregate):
    name = "window_join"
    needs_arg = False

    def __init__(self, spec: AggregateSpec):
        super().__init__(spec)
        join = spec.join
        check_join(join)
        self.columns = join.columns
        self.insert = join.insert
        self.steps = join.steps
        self.complete = join.complete
        self.grouped = join.grouped
        self.widths = tuple(len(c) for c in join.columns)

    # State: [per side: list of (order, row values)] ('first' / 'last': at most one item each);
    # 'complete' adds the tuples the newest row completed: [sides, completed].

    def init(self) -> list:
        sides = [[] for _ in self.columns]
        return [sides, []] if self.complete else sides

    def add(self, state, time, seq, values):
        side = values[0]
        row = tuple(values[i] for i in self.columns[side])
        item = (order_key(time, seq), row)
        sides = state[0] if self.complete else state
        kept = sides[side]
        if self.insert == "first":
            if not kept or item[0] < kept[0][0]:
                kept[:] = [item]
        elif self.insert == "last":
            if not kept or item[0] >= kept[0][0]:
                kept[:] = [item]
        else:
            kept.append(item)
        if self.complete:
            if all(sides):
                state[1] = self._tuples(sides)
                state[0] = [[] for _ in self.columns]
            else:
                state[1] = []
        return state

    def merge(self, a, b):  # sessions never join (the planner refuses them); kept for completeness
        if self.complete:
            raise RuntimeConfigError("A windowed join with emit mode 'complete' cannot merge windows")
        merged = []
        for mine, theirs in zip(a, b):
            items = sorted(mine + theirs, key=lambda item: item[0])
            if self.insert == "first":
                items = items[:1]
            elif self.insert == "last":
                items = items[-1:]
            merged.append(items)
        return merged

    def result(self, state):
        if self.complete:
            return list(state[1])
        return self._tuples(state)

    # -- the join of what the sides hold ------------------------------------------------

    def _tuples(self, sides: list) -> list[tuple]:
        ordered = [[row for _, row in sorted(kept, key=lambda item: item[0])] for kept in sides]
        if self.grouped:  # the rows each side kept, paired by the caller (JoinSpec.grouped)
            return [tuple(part for rows, width in zip(ordered, self.widths)
                          for part in (bool(rows), *([row[c] for row in rows] for c in range(width))))]
        if self.insert == "collect":
            return self._cogroup(ordered)
        tuples: list[tuple] = [(row,) for row in ordered[0]]
        for j, (kind, reference) in enumerate(self.steps):
            tuples = _join_step(tuples, ordered[j + 1], kind, reference, j + 1)
        return [self._flat(parts) for parts in tuples]

    def _cogroup(self, ordered: list[list[tuple]]) -> list[tuple]:
        # One tuple: each side's columns as arrays of its rows' values. The join kinds decide,
        # as for rows, whether the window gives a tuple at all.
        present = [bool(rows) for rows in ordered]
        if not _kept(present, self.steps):
            return []
        out: list = []
        for rows, width, here in zip(ordered, self.widths, present):
            out.append(here)
            out.extend([[row[c] for row in rows] for c in range(width)] if here else [None] * width)
        return [tuple(out)]

    def _flat(self, parts: tuple) -> tuple:
        out: list = []
        for side, width in enumerate(self.widths):
            row = parts[side] if side < len(parts) else None
            out.append(row is not None)
            out.extend(row if row is not None else (None,) * width)
        return tuple(out)


def _join_step(tuples: list[tuple], rows: list[tuple], kind: str, reference: int, width: int) -> list[tuple]:
    """SQL's join of the tuples so far (each `width` sides long, None for an absent side) with the
    new side's rows; a tuple matches every row when its `reference` side is present."""
    out: list[tuple] = []
    matched_rows = False
    for parts in tuples:
        if parts[reference] is not None and rows:
            out.extend(parts + (row,) for row in rows)
            matched_rows = True
        elif kind in ("left", "full"):
            out.append(parts + (None,))
    if kind in ("right", "full") and not matched_rows:
        out.extend((None,) * width + (row,) for row in rows)
    return out


def _kept(present: list[bool], steps: tuple) -> bool:
    """Whether a cogroup tuple exists: the join kinds over one 'row' per present side."""
    tuples: list[tuple] = [(True,)] if present[0] else []
    for j, (kind, reference) in enumerate(steps):
        rows = [True] if present[j + 1] else []
        tuples = _join_step(tuples, rows, kind, reference, j + 1)
    return bool(tuples)


def check_join(join: JoinSpec | None) -> None:
    if not isinstance(join, JoinSpec):
        raise RuntimeConfigError(f"Aggregate window_join needs a JoinSpec, got {join!r}")
    if len(join.columns) < 2:
        raise RuntimeConfigError("A windowed join needs at least two sides")
    if join.insert not in JOIN_INSERT_MODES:
        raise RuntimeConfigError(f"Unknown join insert mode {join.insert!r}", hint=" | ".join(JOIN_INSERT_MODES))
    if len(join.steps) != len(join.columns) - 1:
        raise RuntimeConfigError("A windowed join needs one step per side after the first")
    for j, (kind, reference) in enumerate(join.steps):
        if kind not in JOIN_KINDS:
            raise RuntimeConfigError(f"Unknown join kind {kind!r}", hint=" | ".join(JOIN_KINDS))
        if not (isinstance(reference, int) and 0 <= reference <= j):
            raise RuntimeConfigError(f"Join step {j + 1} must name an earlier side, got {reference!r}")
    if join.grouped and join.insert == "collect":
        raise RuntimeConfigError("A grouped join gives each side's rows as 'collect' does: its insert mode is "
                                 "'product', 'first' or 'last'")


def join_tuples(spec: JoinSpec, rows: t.Iterable[tuple[int, tuple]]) -> list[tuple]:
    """The final join of a window's rows ((side, row) in event-time order), for tests and checks."""
    agg = WindowJoin(AggregateSpec("window_join", join=spec))
    state = agg.init()
    for seq, (side, row) in enumerate(rows):
        values = [side] + [None] * max(i for c in spec.columns for i in c)
        for index, value in zip(spec.columns[side], row):
            values[index] = value
        state = agg.add(state, 0, seq, tuple(values))
    return agg.result(state)

"""The windowed join in the runtime against a reference written from SQL's definition of a join.

Random streams of two or three sides, random micro-batches, random join kinds and insert modes:
with every row on time (an unbounded delay), the runtime's final firings must hold exactly the
rows the reference join gives per key and window -- computed here without the runtime, by
grouping each side's rows and joining the groups as SQL does. The watermark is the earliest of
the sides' (checked directly), and a snapshot taken mid-stream restores to the same output.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from sqlwin.ir import UNBOUNDED, EmitSpec, Hop, Tumble, WatermarkSpec
from sqlwin.runtime import WindowRuntime
from sqlwin.runtime.model import AggregateSpec, JoinSpec

MINUTE = 60_000_000


def _stream(rng: random.Random, sides: int) -> list[tuple[int, str, int, int]]:
    """(side, key, time, value) rows in arrival order; values unique, times unique per side."""
    rows = []
    for value in range(rng.randint(0, 30)):
        rows.append((rng.randrange(sides), rng.choice("abc"), rng.randrange(0, 5 * MINUTE, 1000) + value, value))
    return rows


def _windows(windower, time: int) -> list[tuple[int, int]]:
    """TUMBLE / HOP windows of a time by their definition: every [k * slide, k * slide + size) holding it."""
    size = windower.size
    slide = getattr(windower, "slide", size)
    return [(k * slide, k * slide + size) for k in range(time // slide - size // slide, time // slide + 1)
            if k * slide <= time < k * slide + size]


def _reference(rows, windower, sides: int, steps, insert: str) -> Counter:
    groups: dict[tuple, list[list[tuple]]] = {}
    for side, key, time, value in rows:
        for start, end in _windows(windower, time):
            groups.setdefault((key, start, end), [[] for _ in range(sides)])[side].append((time, value))
    out: Counter = Counter()
    for (key, start, end), per_side in groups.items():
        kept = []
        for items in per_side:
            items = sorted(items)
            if insert == "first":
                items = items[:1]
            elif insert == "last":
                items = items[-1:]
            kept.append([(v,) for _, v in items])
        if insert == "collect":
            present = [bool(k) for k in kept]
            tuples = [(True,)] if present[0] else []
            for j, (kind, ref) in enumerate(steps):
                nxt = [True] if present[j + 1] else []
                tuples = _sql_join(tuples, nxt, kind, ref, j + 1)
            if tuples:
                row = []
                for here, items in zip(present, kept):
                    row += [here, [v for (v,) in items] if here else None]
                out[(key, start, end, tuple(tuple(x) if isinstance(x, list) else x for x in row))] += 1
            continue
        tuples = [(r,) for r in kept[0]]
        for j, (kind, ref) in enumerate(steps):
            tuples = _sql_join(tuples, kept[j + 1], kind, ref, j + 1)
        for parts in tuples:
            flat = []
            for part in parts:
                flat += [part is not None, None if part is None else part[0]]
            out[(key, start, end, tuple(flat))] += 1
    return out


def _sql_join(left: list[tuple], right: list, kind: str, ref: int, width: int) -> list[tuple]:
    """SQL's join by its definition: pairs that match, then the unmatched of each side as the kind keeps them."""
    out = []
    matched_right = set()
    for parts in left:
        matches = [i for i in range(len(right)) if parts[ref] is not None]
        for i in matches:
            out.append(parts + (right[i],))
            matched_right.add(i)
        if not matches and kind in ("left", "full"):
            out.append(parts + (None,))
    if kind in ("right", "full"):
        out += [(None,) * width + (right[i],) for i in range(len(right)) if i not in matched_right]
    return out


def _run(rows, windower, sides, steps, insert, rng, restart: bool, grouped: bool = False) -> Counter:
    spec = JoinSpec(columns=tuple((s + 1,) for s in range(sides)), insert=insert, steps=steps, grouped=grouped)
    runtime = WindowRuntime(windower, WatermarkSpec(delay=UNBOUNDED, scope="key", sides=sides), EmitSpec(),
                            [AggregateSpec("window_join", arg=0, join=spec)])
    emissions = []
    position, now = 0, 0
    while position < len(rows):
        size = rng.randint(1, 5)
        batch = rows[position:position + size]
        position += size
        now += 1
        values = []
        for side, key, time, value in batch:
            row = [None] * (sides + 1)
            row[0], row[side + 1] = side, value
            values.append(((key,), time, tuple(row)))
        emissions += runtime.process_batch(values, now).emissions
        if restart and rng.random() < 0.3:
            runtime = WindowRuntime.restore(runtime.snapshot())
    emissions += runtime.end_of_input().emissions
    out: Counter = Counter()
    for e in emissions:
        for row in e.values[0]:
            out[(e.key[0], e.window_start, e.window_end,
                 tuple(tuple(x) if isinstance(x, list) else x for x in row))] += 1
    return out


@pytest.mark.parametrize("seed", range(4))
def test_the_runtime_join_is_sqls_join(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(150):
        sides = rng.choice((2, 2, 3))
        steps = tuple((rng.choice(("inner", "left", "right", "full")), rng.randrange(j + 1)) for j in range(sides - 1))
        insert = rng.choice(("product", "first", "last", "collect"))
        windower = rng.choice((Tumble(MINUTE), Hop(2 * MINUTE, slide=MINUTE)))
        rows = _stream(rng, sides)
        got = _run(rows, windower, sides, steps, insert, rng, restart=rng.random() < 0.5)
        assert got == _reference(rows, windower, sides, steps, insert), (sides, steps, insert, windower, rows)
        checked += 1
    assert checked == 150


def test_the_watermark_is_the_earliest_of_the_sides():
    spec = JoinSpec(columns=((1,), (2,)), steps=(("inner", 0),))
    runtime = WindowRuntime(Tumble(MINUTE), WatermarkSpec(delay=0, scope="stream", sides=2), EmitSpec(),
                            [AggregateSpec("window_join", arg=0, join=spec)])
    runtime.process_batch([(("k",), 3 * MINUTE, (0, 1, None))], 1)
    assert runtime.watermark(("k",)) is None  # the other side has seen nothing: minus infinity
    runtime.process_batch([(("k",), 30_000_000, (1, None, 2))], 2)
    assert runtime.watermark(("k",)) == 30_000_000  # min(3 min, 30 s)
    late = runtime.process_batch([(("k",), 10_000_000, (0, 5, None))], 3)
    assert not late.late  # 10 s is in [0, 1 min), still open under the earlier watermark
    closed = runtime.process_batch([(("k",), 2 * MINUTE, (1, None, 6))], 4)
    assert [sorted(e.values[0]) for e in closed.emissions] == [[(True, 5, True, 2)]]


def test_complete_emits_each_gathering_once_in_arrival_order():
    spec = JoinSpec(columns=((1,), (2,)), insert="last", steps=(("inner", 0),), complete=True)
    runtime = WindowRuntime(Tumble(MINUTE), WatermarkSpec(delay=0, sides=2), EmitSpec(final=False, changes=True),
                            [AggregateSpec("window_join", arg=0, join=spec)])
    rows = [(0, "a"), (0, "b"), (1, "x"), (1, "y"), (0, "c"), (1, "z")]
    fired = []
    for seq, (side, value) in enumerate(rows):
        row = (side, value, None) if side == 0 else (side, None, value)
        fired += [t for e in runtime.process_batch([(("k",), 1000 + seq, row)], seq).emissions for t in e.values[0]]
    # last: b replaces a; x completes (b, x); y waits; c completes (c, y); z waits, never emitted
    assert fired == [(True, "b", True, "x"), (True, "c", True, "y")]


def test_three_sides_chain_by_the_side_each_on_names():
    rows = [(0, "a", 1), (2, "c", 3)]  # side 1 absent
    spec = JoinSpec(columns=((1,), (2,), (3,)), steps=(("left", 0), ("left", 1)))
    from sqlwin.runtime.join import join_tuples
    got = join_tuples(spec, [(side, (value,)) for side, value, _ in rows])
    assert got == [(True, "a", False, None, False, None)]  # c matches side 1, which is absent
    spec = JoinSpec(columns=((1,), (2,), (3,)), steps=(("left", 0), ("left", 0)))
    assert join_tuples(spec, [(side, (value,)) for side, value, _ in rows]) == [(True, "a", False, None, True, "c")]


@pytest.mark.parametrize("seed", range(2))
def test_a_grouped_join_gives_each_sides_kept_rows(seed):
    # A join whose ON holds a condition (JoinSpec.grouped): per window, one tuple of every side's
    # kept rows in event-time order (an absent side: present False, no values), whatever the join
    # kinds -- the SQL around it pairs them (spark/joins.py) -- across snapshots and restores.
    rng = random.Random(seed)
    for _ in range(100):
        sides = rng.choice((2, 3))
        steps = tuple((rng.choice(("inner", "left", "right", "full")), rng.randrange(j + 1)) for j in range(sides - 1))
        insert = rng.choice(("product", "first", "last"))
        windower = rng.choice((Tumble(MINUTE), Hop(2 * MINUTE, slide=MINUTE)))
        rows = _stream(rng, sides)
        groups: dict[tuple, list[list[tuple[int, int]]]] = {}
        for side, key, time, value in rows:
            for start, end in _windows(windower, time):
                groups.setdefault((key, start, end), [[] for _ in range(sides)])[side].append((time, value))
        expected: Counter = Counter()
        for (key, start, end), per_side in groups.items():
            row: list = []
            for items in per_side:
                values = [v for _, v in sorted(items)]
                values = values[:1] if insert == "first" else values[-1:] if insert == "last" else values
                row += [bool(values), tuple(values)]
            expected[(key, start, end, tuple(row))] += 1
        got = _run(rows, windower, sides, steps, insert, rng, restart=rng.random() < 0.5, grouped=True)
        assert got == expected, (sides, steps, insert, windower, rows)


def test_a_grouped_cogroup_is_refused():
    from sqlwin.runtime.model import RuntimeConfigError
    from sqlwin.runtime.join import check_join
    with pytest.raises(RuntimeConfigError, match="grouped"):
        check_join(JoinSpec(columns=((1,), (2,)), insert="collect", steps=(("inner", 0),), grouped=True))

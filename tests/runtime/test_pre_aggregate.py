"""Partial aggregation per pane before the runtime (sqlwin.runtime.pre_aggregate): the runtime fed
rows of partial aggregates with their weights gives what it gives over the rows themselves --
the same windows and values, the same rows, late rows and rejected rows counted -- for TUMBLE, HOP
(overlapping and with gaps) and CUMULATE, with NULLs, ties of min_by / max_by and late rows."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlwin.ir import Cumulate, EmitSpec, Hop, Session, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec
from sqlwin.runtime.columns import Columns
from sqlwin.runtime.fixed_final import FixedFinalRuntime
from sqlwin.runtime.pre_aggregate import merge_specs, pre_aggregate, winner_spec

# q7's shape: count(*), count(a), sum(a), min(b), max(b), max_by(c, k) with max(k) beside it, as
# stateful.partial_aggregation lists a no-key aggregation's partials.
SPECS = (AggregateSpec("count"), AggregateSpec("count", 0), AggregateSpec("sum", 0), AggregateSpec("min", 1),
         AggregateSpec("max", 1), AggregateSpec("max_by", 2, 3), AggregateSpec("max", 3))
WINDOWERS = [Tumble(10), Tumble(10, 3), Hop(10, 4), Hop(4, 10, 1), Cumulate(5, 20)]
WATERMARK = WatermarkSpec(delay=5, scope="stream")


def columns(rows: list[tuple], floating: bool = False) -> Columns:
    """Rows (key, time, a, b, c, k) as Columns, NULL as None; `floating`: a and b as doubles."""
    n = len(rows)
    keys = sorted({r[0] for r in rows})
    code = {k: i for i, k in enumerate(keys)}
    time = np.array([r[1] or 0 for r in rows], np.int64)
    time_null = np.array([r[1] is None for r in rows], bool)
    args = []
    for a in range(4):
        values = [r[2 + a] for r in rows]
        dtype = np.float64 if floating and a < 2 else np.int64
        args.append((np.array([v or 0 for v in values], dtype), np.array([v is None for v in values], bool)))
    return Columns(np.array([code[r[0]] for r in rows], np.int64), [(k,) for k in keys], np.zeros(n, bool),
                   time, time_null, args, lambda i: rows[i][2:])


def pane_rows(cols: Columns, windower) -> Columns:
    """`cols` as rows of partial aggregates, as the stream's pre-aggregation hands them on."""
    partials = pre_aggregate(cols, windower.pane, SPECS, winner_spec(SPECS))
    r = partials.rows
    return Columns(cols.key_codes[r], cols.keys, cols.key_null[r], cols.time[r], cols.time_null[r],
                   partials.values, lambda i: (), partials.weights)


def run(windower, batches, pre: bool, floating: bool = False):
    runtime = FixedFinalRuntime(windower, WATERMARK, EmitSpec(), merge_specs(SPECS) if pre else SPECS)
    fired, late = [], []
    for rows in batches:
        cols = columns(rows, floating)
        times = [r[1] for r in rows if r[1] is not None]
        bounds = {0: (min(times), max(times))} if times else None  # the clock rows: the raw batch's extremes
        out = runtime.process_columns(pane_rows(cols, windower) if pre and rows else cols, 0, bounds)
        fired.append(sorted((e.key, e.window_start, e.window_end, e.values) for e in out.emissions))
        late.append(sorted((r.window_start, r.window_end) for r in out.late))
    end = runtime.end_of_input()
    fired.append(sorted((e.key, e.window_start, e.window_end, e.values) for e in end.emissions))
    return fired, late, runtime.counts


def test_hand_worked_tumble():
    """TUMBLE 10, delay 5: two panes of three and two rows, a tie at the top k, a late row."""
    batches = [
        # key 0: [0, 10) gets a=1, 2, NULL; the top k (9) is tied by rows at 4 and 2: the earlier
        # time (2) wins, c = 30. [10, 20) gets two rows.
        [(0, 4, 1, 5, 20, 9), (0, 2, 2, 7, 30, 9), (0, 8, None, 6, 40, 1), (0, 12, 4, 1, 50, 3),
         (0, 15, 5, None, 60, None)],
        # clock 15 - 5 = 10: [0, 10) closed at the batch before; a row at 3 is late
        [(0, 3, 9, 9, 9, 99), (0, 26, 1, 1, 1, 1)],
    ]
    fired, late, counts = run(Tumble(10), batches, pre=True)
    assert fired[0] == [((0,), 0, 10, (3, 2, 3, 5, 7, 30, 9))]
    assert fired[1] == [((0,), 10, 20, (2, 2, 9, 1, 1, 50, 3))]
    assert late == [[], [(0, 10)]]
    assert counts["rows"] == 7 and counts["late"] == 1
    assert (fired, late, counts) == run(Tumble(10), batches, pre=False)


def test_a_tie_across_batches_goes_to_the_earlier_time():
    """A pane's row stands at its winner's time: a tie at the top k between batches goes to the
    earlier event time (t=3 of the second batch), as it does over the rows."""
    batches = [[(0, 1, 0, 0, 0, 0), (0, 6, 0, 0, 10, 2)], [(0, 7, 0, 0, 0, 0), (0, 3, 0, 0, 20, 2)]]
    fired, _, _ = run(Tumble(10), batches, pre=True)
    assert fired[-1] == [((0,), 0, 10, (4, 4, 0, 0, 0, 20, 2))]


def test_rows_without_time_are_rejected_one_by_one():
    batches = [[(0, None, 1, 1, 1, 1), (0, None, 2, 2, 2, 2), (0, 4, 3, 3, 3, 3)]]
    fired, _, counts = run(Tumble(10), batches, pre=True)
    assert counts["rejected"] == 2 and counts["rows"] == 1
    assert fired[-1] == [((0,), 0, 10, (1, 1, 3, 3, 3, 3, 3))]


def test_a_pane_holds_rows_of_the_same_windows():
    """Rows of a pane share their windows; rows either side of a pane's bound do not."""
    assert Hop(10, 4).pane == (2, 0) and Hop(4, 10, 1).pane == (2, 1) and Cumulate(5, 20, 7).pane == (5, 2)
    assert Session(5).pane is None


def test_merge_and_winner_rules():
    assert merge_specs(SPECS)[0] == AggregateSpec("sum", 0)
    assert merge_specs(SPECS)[5] == AggregateSpec("max_by", 5, 6)
    assert merge_specs([AggregateSpec("avg", 0)]) is None  # an avg is a sum and a count by then
    assert merge_specs([AggregateSpec("max_by", 0, 1)]) is None  # its ordering's max must follow
    assert winner_spec(SPECS) == 5
    two = [AggregateSpec("max_by", 0, 1), AggregateSpec("max", 1), AggregateSpec("min_by", 0, 1), AggregateSpec("min", 1)]
    assert winner_spec(two) is False  # two winners: a pane's one row cannot stand for both


value = st.one_of(st.none(), st.integers(-3, 3))
row = st.tuples(st.integers(0, 1), st.one_of(st.none(), st.integers(0, 60)), value, value, value,
                st.one_of(st.none(), st.integers(0, 2)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(WINDOWERS), st.lists(st.lists(row, max_size=12), min_size=1, max_size=5), st.booleans())
def test_panes_give_what_rows_give(windower, batches, floating):
    assert run(windower, batches, True, floating) == run(windower, batches, False, floating)

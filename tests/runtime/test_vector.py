"""The vectorised runtime gives exactly what the general runtime gives, on random streams.

Both runtimes get the same batches; emissions (with their seq), late rows, rejected rows, counts,
watermarks and open windows must be equal after every batch, across a snapshot / restore in the
middle, and at end of input.
"""

import math
import os

import numpy as np
import pytest
from runtime_helpers import batches
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlwin.ir import UNBOUNDED, CountWindow, Cumulate, EmitSpec, GlobalWindow, Hop, Session, Slide, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, RuntimeConfigError, WindowRuntime
from sqlwin.runtime.vector import (
    Columns,
    CountFinalRuntime,
    FixedFinalRuntime,
    SessionFinalRuntime,
    supports,
    vector_class,
)

SETTINGS = settings(max_examples=int(os.environ.get("SQLWIN_EXAMPLES", 300)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

AGGREGATES = (AggregateSpec("count"), AggregateSpec("count", 0), AggregateSpec("sum", 0), AggregateSpec("avg", 0),
              AggregateSpec("min", 1), AggregateSpec("max", 1), AggregateSpec("sum", 1), AggregateSpec("avg", 1),
              AggregateSpec("max_by", 1, 0), AggregateSpec("min_by", 0, 1), AggregateSpec("max_by", 0, 0),
              AggregateSpec("min_by", 1, 0))

windowers = st.one_of(
    st.builds(Tumble, st.integers(1, 20), st.integers(0, 19)).filter(lambda w: w.offset < w.size),
    st.builds(Hop, st.integers(1, 20), st.integers(1, 25), st.integers(0, 5)).filter(lambda w: w.offset < w.slide),
    st.builds(lambda step, n, off: Cumulate(step, step * n, off % (step * n)),
              st.integers(1, 6), st.integers(1, 4), st.integers(0, 30)),
)
watermarks = st.builds(
    WatermarkSpec, column=st.just("ts"), delay=st.sampled_from([0, 1, 3, 10, UNBOUNDED]),
    strategy=st.sampled_from(["max_event_time", "min_event_time"]), scope=st.sampled_from(["key", "stream"]),
    lateness_rule=st.sampled_from(["window_closed", "before_watermark"]))

ints = st.one_of(st.none(), st.integers(-5, 9))
floats = st.one_of(st.none(), st.sampled_from([0.5, -1.25, 3.0, 7.75, 1e10, math.nan]))


@st.composite
def streams(draw):
    n = draw(st.integers(0, 50))
    keys = draw(st.lists(st.sampled_from([("a",), ("b",), ("c",), (None,), ("d",)]), min_size=n, max_size=n))
    times = draw(st.lists(st.one_of(st.integers(-60, 60), st.none()).filter(lambda _: True),
                          min_size=n, max_size=n))
    firsts = draw(st.lists(ints, min_size=n, max_size=n))
    seconds = draw(st.lists(floats, min_size=n, max_size=n))
    rows = [(key, time, (a, b, f"row{i}")) for i, (key, time, a, b) in enumerate(zip(keys, times, firsts, seconds))]
    cuts = draw(st.lists(st.integers(1, 8), min_size=1, max_size=n + 1))
    return rows, cuts


def same(a, b):
    """Equal, with NaN equal to NaN (tuples of emissions / late rows compared field by field)."""
    return repr(a) == repr(b)


@SETTINGS
@given(windowers, watermarks, streams(), st.integers(0, 6))
def test_vectorised_runtime_equals_the_general_one(windower, watermark, stream, restore_at):
    rows, cuts = stream
    emit = EmitSpec()
    general = WindowRuntime(windower, watermark, emit, AGGREGATES)
    vector = FixedFinalRuntime(windower, watermark, emit, AGGREGATES)
    for number, batch in enumerate(batches(rows, cuts)):
        if number == restore_at:
            vector = FixedFinalRuntime.restore(vector.snapshot(), windower, watermark, emit, AGGREGATES)
        expected = general.process_batch(batch, 1000 + number)
        got = vector.process_batch(batch, 1000 + number)
        assert same(got.emissions, expected.emissions), f"batch {number}: {batch}"
        assert same(got.late, expected.late)
        assert same(got.rejected, expected.rejected)
        assert got.rejected == expected.rejected or same(got.rejected, expected.rejected)
        for key in [("a",), ("b",), ("c",), ("d",)]:
            assert vector.watermark(key) == general.watermark(key)
            assert vector.open_windows(key) == general.open_windows(key)
    assert same(vector.end_of_input().emissions, general.end_of_input().emissions)
    assert vector.counts == general.counts


def test_it_covers_fixed_windows_with_emit_final_only():
    wm = WatermarkSpec(column="ts", delay=5)
    assert supports(Tumble(10), wm, EmitSpec(), AGGREGATES, False)
    assert supports(Session(10), wm, EmitSpec(), AGGREGATES, False)
    assert vector_class(Session(10), wm, EmitSpec(), AGGREGATES, False, many_batches=True) is None  # replay
    assert not supports(Slide(10), wm, EmitSpec(), AGGREGATES, False)
    assert not supports(Tumble(10), wm, EmitSpec(changes=True), AGGREGATES, False)
    assert not supports(Tumble(10), wm, EmitSpec(allowed_lateness=5), AGGREGATES, False)
    assert not supports(Tumble(10), wm, EmitSpec(), [AggregateSpec("collect_list", 0)], False)
    assert not supports(Tumble(10), wm, EmitSpec(), AGGREGATES, True)
    with pytest.raises(RuntimeConfigError):
        FixedFinalRuntime(Slide(10), wm, EmitSpec(), AGGREGATES)


@SETTINGS
@given(windowers, watermarks, streams(), st.integers(0, 3))
def test_many_batches_at_once_equal_batch_by_batch(windower, watermark, stream, chunks):
    """process_batches (a replay's chunk of many micro-batches) == the general runtime per batch."""
    rows, cuts = stream
    emit = EmitSpec()
    general = WindowRuntime(windower, watermark, emit, AGGREGATES)
    vector = FixedFinalRuntime(windower, watermark, emit, AGGREGATES)
    numbered = [(number, row) for number, batch in enumerate(batches(rows, cuts)) for row in batch]
    expected = []
    for number, batch in enumerate(batches(rows, cuts)):
        result = general.process_batch(batch, 0)
        expected.append((number, repr(result.emissions), repr(result.late), repr(result.rejected)))
    got = {}
    # the stream cut into `chunks + 1` runs of whole batches, each run handed over at once
    ids = sorted({n for n, _ in numbered})
    edges = sorted(set(ids[:: max(1, len(ids) // (chunks + 1))][1:]))
    runs, current = [], []
    for n, row in numbered:
        if current and n in edges and current[-1][0] != n:
            runs.append(current)
            current = []
        current.append((n, row))
    if current:
        runs.append(current)
    for run in runs:
        cols = Columns.from_rows([row for _, row in run], 2)
        for number, result in vector.process_batches(cols, np.array([n for n, _ in run], np.int64)):
            got[number] = (number, repr(result.emissions), repr(result.late), repr(result.rejected))
    empty = (repr([]), repr([]), repr([]))
    assert [got.get(n, (n, *empty)) for n, *_ in expected] == expected
    assert repr(vector.end_of_input().emissions) == repr(general.end_of_input().emissions)
    assert vector.counts == general.counts


count_windows = st.builds(lambda size, slide, timed: CountWindow(size, slide, timed),
                          st.integers(1, 6), st.integers(1, 8), st.booleans())


@SETTINGS
@given(count_windows, watermarks, streams(), st.integers(0, 6), st.integers(0, 3))
def test_vectorised_count_windows_equal_the_general_ones(windower, watermark, stream, restore_at, chunks):
    """CountFinalRuntime batch by batch (with a restore) and many batches at once == WindowRuntime."""
    rows, cuts = stream
    emit = EmitSpec()
    general = WindowRuntime(windower, watermark, emit, AGGREGATES)
    vector = CountFinalRuntime(windower, watermark, emit, AGGREGATES)
    run = CountFinalRuntime(windower, watermark, emit, AGGREGATES)
    numbered = []
    for number, batch in enumerate(batches(rows, cuts)):
        if number == restore_at:
            vector = CountFinalRuntime.restore(vector.snapshot(), windower, watermark, emit, AGGREGATES)
        expected = general.process_batch(batch, 1000 + number)
        got = vector.process_batch(batch, 1000 + number)
        assert same(got.emissions, expected.emissions), f"batch {number}: {batch}"
        assert same(got.rejected, expected.rejected)
        assert not got.late
        for key in [("a",), ("b",), ("c",), ("d",)]:
            assert vector.watermark(key) == general.watermark(key)
            assert vector.open_windows(key) == general.open_windows(key)
        numbered += [(number, row, repr(expected.emissions), repr(expected.rejected)) for row in batch]
    # the same stream handed over as `chunks + 1` runs of whole batches
    got = {}
    last = max([n for n, *_ in numbered], default=0)
    for part in range(chunks + 1):
        low, high = part * (last + 1) // (chunks + 1), (part + 1) * (last + 1) // (chunks + 1)
        piece = [item for item in numbered if low <= item[0] < high]
        cols = Columns.from_rows([row for _, row, _, _ in piece], 2)
        for number, result in run.process_batches(cols, np.array([n for n, *_ in piece], np.int64)):
            got[number] = (repr(result.emissions), repr(result.rejected))
    for number, _, emissions, rejected in numbered:
        assert got.get(number, (repr([]), repr([]))) == (emissions, rejected)
    assert same(vector.end_of_input().emissions, general.end_of_input().emissions)
    assert vector.counts == general.counts
    run.end_of_input()
    assert run.counts == general.counts


def close_enough(a, b) -> bool:
    """Equal, except that floats may differ in the last bits (a merged session adds its values in
    another order than the general runtime); NaN equals NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return (a != a and b != b) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(close_enough(x, y) for x, y in zip(a, b))
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(close_enough(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    return a == b


sessions = st.builds(Session, st.integers(1, 15))


@SETTINGS
@given(sessions, watermarks, streams(), st.integers(0, 6))
def test_vectorised_sessions_equal_the_general_ones(windower, watermark, stream, restore_at):
    """SessionFinalRuntime batch by batch (with a restore, and in runs) == WindowRuntime."""
    rows, cuts = stream
    emit = EmitSpec()
    general = WindowRuntime(windower, watermark, emit, AGGREGATES)
    vector = SessionFinalRuntime(windower, watermark, emit, AGGREGATES)
    for number, batch in enumerate(batches(rows, cuts)):
        if number == restore_at:
            vector = SessionFinalRuntime.restore(vector.snapshot(), windower, watermark, emit, AGGREGATES)
        expected = general.process_batch(batch, 1000 + number)
        got = vector.process_batch(batch, 1000 + number)
        assert close_enough(got.emissions, expected.emissions), f"batch {number}: {batch}"
        assert close_enough(got.late, expected.late)
        assert same(got.rejected, expected.rejected)
        for key in [("a",), ("b",), ("c",), ("d",)]:
            assert vector.watermark(key) == general.watermark(key)
            assert vector.open_windows(key) == general.open_windows(key)
    assert close_enough(vector.end_of_input().emissions, general.end_of_input().emissions)
    assert vector.counts == general.counts


@pytest.mark.parametrize("windower", [CountWindow(2, 2, timed=True), GlobalWindow(timed=True)])
def test_a_named_time_column_rejects_rows_without_a_time(windower):
    """COUNT_WINDOW / GLOBAL_WINDOW with DESCRIPTOR(ts): a NULL-time row joins no window, as over
    a finished table (docs/semantics.md); without a time column every row counts."""
    rows = [(("a",), None, (1, 1.0, "r0")), (("a",), 1, (2, 2.0, "r1")), (("a",), 2, (3, 3.0, "r2"))]
    wm = WatermarkSpec(column="ts", delay=0)
    runtimes = [WindowRuntime(windower, wm, EmitSpec(), AGGREGATES)]
    if isinstance(windower, CountWindow):
        runtimes.append(CountFinalRuntime(windower, wm, EmitSpec(), AGGREGATES))
    for runtime in runtimes:
        out = runtime.process_batch(rows, 0)
        assert [(r.values[2], r.reason) for r in out.rejected] == [("r0", "null_time")]
        emitted = out.emissions + runtime.end_of_input().emissions
        assert [e.values[0] for e in emitted] == [2]  # count(*) of the rows with a time
    untimed = WindowRuntime(type(windower)(*([2, 2] if isinstance(windower, CountWindow) else [])), wm, EmitSpec(),
                            AGGREGATES)
    out = untimed.process_batch(rows, 0)
    assert not out.rejected

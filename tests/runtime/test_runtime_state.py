"""Snapshots, configuration errors, and behaviour the document tests do not reach."""

import pickle
import subprocess
import sys

import pytest

from runtime_helpers import HOUR, MIN, S, feed, rows, runtime, view
from sqlwin.sql.plan import (
    UNBOUNDED, CountWindow, Cumulate, EmitSpec, GlobalWindow, Hop, Session, Slide, Tumble, WatermarkSpec,
)
from sqlwin.runtime import AggregateSpec, RuntimeConfigError, WindowRuntime

COUNT, SUM = AggregateSpec("count"), AggregateSpec("sum", 0)

# -- BW-13 / AP-13: a restarted query continues exactly -------------------------------

CONFIGS = {
    "tumble final": (Tumble(10 * S), {}, EmitSpec()),
    "hop changes": (Hop(10 * S, 4 * S), {"delay": 3 * S}, EmitSpec(final=False, changes=True)),
    "session retracting": (Session(5 * S), {"delay": 8 * S},
                           EmitSpec(early_rows=1, accumulation="RETRACTING", allowed_lateness=10 * S)),
    "slide discarding": (Slide(6 * S), {"delay": 2 * S}, EmitSpec(early_rows=2, accumulation="DISCARDING")),
    "count": (CountWindow(3, 2), {}, EmitSpec()),
    "global early interval": (GlobalWindow(), {}, EmitSpec(early_interval=7 * S)),
    "bytewax idle": (Tumble(10 * S), {"strategy": "bytewax", "delay": 4 * S, "idle_timeout": 20 * S}, EmitSpec()),
    "cumulate stream": (Cumulate(5 * S, 20 * S), {"scope": "stream", "strategy": "min_event_time"}, EmitSpec()),
}


def script():
    """A mixed stream: two keys, out-of-order and late rows, a NULL key, timer advances."""
    ops = []
    for i in range(24):
        t = (i * 3 + (7 if i % 5 == 0 else 0) - (9 if i % 7 == 3 else 0)) * S
        key = ("a",) if i % 3 else ("b",)
        batch = [(key, t, (i,)), (("a",), t + S, (100 + i,))]
        if i == 11:
            batch.append((None, t, (-1,)))
        ops.append(("batch", batch, (i * 4) * S))
        if i % 6 == 5:
            ops.append(("advance", None, (i * 4 + 2) * S))
    ops.append(("advance", None, 500 * S))
    ops.append(("end", None, None))
    return ops


def apply(rt, op):
    kind, batch, when = op
    if kind == "batch":
        return rt.process_batch(batch, when)
    return rt.advance_processing_time(when) if kind == "advance" else rt.end_of_input()


@pytest.mark.parametrize("name", list(CONFIGS))
def test_restore_continues_exactly(name):
    windower, watermark, emit = CONFIGS[name]
    make = lambda: WindowRuntime(windower, WatermarkSpec(**watermark), emit, [COUNT, SUM])  # noqa: E731
    ops = script()
    uninterrupted = make()
    reference = [apply(uninterrupted, op) for op in ops]
    assert sum(len(r.emissions) for r in reference) > 0
    for cut in range(0, len(ops), 5):
        rt = make()
        before = [apply(rt, op) for op in ops[:cut]]
        restored = WindowRuntime.restore(rt.snapshot(), windower, WatermarkSpec(**watermark), emit, [COUNT, SUM])
        after = [apply(restored, op) for op in ops[cut:]]
        assert before + after == reference, f"cut at {cut}"  # nothing lost, nothing twice
        assert restored.counts == uninterrupted.counts


def test_snapshot_is_bytes_and_restore_needs_the_same_query():
    rt = runtime(Tumble(10 * S), [COUNT])
    rt.process_batch(rows(("a", 1 * S)), 0)
    blob = rt.snapshot()
    assert isinstance(blob, bytes) and pickle.loads(blob)["envelope"] == 1
    assert WindowRuntime.restore(blob).open_windows() == [(0, 10 * S)]
    with pytest.raises(RuntimeConfigError, match="windower changed"):
        WindowRuntime.restore(blob, windower=Tumble(20 * S))
    with pytest.raises(RuntimeConfigError, match="aggregates changed"):
        WindowRuntime.restore(blob, aggregates=[SUM])


def test_emission_seq_increases_across_a_restore():
    rt = runtime(Tumble(S), [COUNT])
    first = rt.process_batch(rows(("a", 0), ("b", 2 * S)), 0).emissions
    rt2 = WindowRuntime.restore(rt.snapshot())
    second = rt2.process_batch(rows(("c", 5 * S)), 1).emissions
    seqs = [e.seq for e in first + second]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs) == 2


# -- configuration errors -----------------------------------------------------------


@pytest.mark.parametrize("make, message", [
    (lambda: runtime(Tumble(0)), "Tumble size must be a positive"),
    (lambda: runtime(Cumulate(3 * S, 10 * S)), "divide"),
    (lambda: runtime(CountWindow(0, 1)), "CountWindow size"),
    (lambda: runtime("TUMBLE"), "Unknown windower"),
    (lambda: runtime(Tumble(S), strategy="median"), "strategy"),
    (lambda: runtime(Tumble(S), delay=-1), "delay"),
    (lambda: runtime(Tumble(S), emit=EmitSpec(changes=True, early_rows=2)), "CHANGES"),
    (lambda: runtime(Tumble(S), emit=EmitSpec(final=False)), "never fires"),
    (lambda: runtime(Tumble(S), emit=EmitSpec(accumulation="ACCUMULATING_AND_DISCARDING")), "accumulation"),
])
def test_configuration_errors(make, message):
    with pytest.raises(RuntimeConfigError, match=message):
        make()


def test_pure_python_no_spark():
    code = "import sys, sqlwin.runtime; assert not [m for m in sys.modules if m.startswith('pyspark')]"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- windowers and firings -------------------------------------------------------------


def test_cumulate_windows_grow_by_step():
    rt = runtime(Cumulate(5 * S, 15 * S), [COUNT])
    out = rt.process_batch(rows(("a", 1 * S), ("b", 7 * S), ("c", 12 * S)), 0)
    assert [(e.window_start // S, e.window_end // S, e.values[0]) for e in out.emissions] == [(0, 5, 1), (0, 10, 2)]
    assert [(e.window_end // S, e.values[0]) for e in rt.end_of_input().emissions] == [(15, 3)]


def test_changes_fire_every_touched_window_in_end_order():
    rt = runtime(Hop(10 * S, 5 * S), [COUNT], emit=EmitSpec(final=False, changes=True))
    out = rt.process_batch(rows(("a", 7 * S)), 0)
    assert [(e.window_start // S, e.window_end // S, e.firing) for e in out.emissions] == [
        (0, 10, "changes"), (5, 15, "changes")]


def test_changes_mode_late_rows_fire_as_late():
    rt = runtime(Tumble(10 * S), [COUNT], emit=EmitSpec(final=False, changes=True, allowed_lateness=MIN))
    feed(rt, [(0, rows(("a", 1 * S))), (1, rows(("b", 12 * S)))])
    out = rt.process_batch(rows(("c", 2 * S)), 2)
    assert view(out.emissions) == [(0, 10 * S, (2,), "+U", "late")]


def test_late_every_n_rows_and_pending_late_rows_fire_at_purge():
    rt = runtime(Tumble(10 * S), [COUNT], emit=EmitSpec(allowed_lateness=MIN, late_rows=2))
    feed(rt, [(0, rows(("a", 1 * S))), (1, rows(("b", 12 * S)))])
    assert rt.process_batch(rows(("c", 2 * S)), 2).emissions == []
    out = rt.process_batch(rows(("d", 3 * S), ("e", 4 * S)), 3)
    assert [e.values[0] for e in out.emissions] == [3]  # fired after d, the 2nd late row; e waits
    purge = rt.process_batch(rows(("g", 75 * S)), 4).emissions  # [0, 10) passes 10 s + 1 min
    assert [(e.window_start // S, e.values[0], e.firing) for e in purge] == [(0, 4, "late"), (10, 1, "on_time")]


def test_late_interval_fires_kept_windows_on_ticks():
    rt = runtime(Tumble(10 * S), [COUNT], emit=EmitSpec(allowed_lateness=MIN, late_interval=30 * S))
    feed(rt, [(1 * S, rows(("a", 1 * S))), (2 * S, rows(("b", 12 * S))), (3 * S, rows(("c", 2 * S)))])
    assert rt.advance_processing_time(29 * S).emissions == []
    assert view(rt.advance_processing_time(30 * S).emissions) == [(0, 10 * S, (2,), "+U", "late")]


def test_processing_time_sessions_close_on_a_timer():
    rt = runtime(Session(5 * S), [COUNT], processing_time=True)
    feed(rt, [(1 * S, rows(("a", None))), (3 * S, rows(("b", None)))])
    assert rt.advance_processing_time(7 * S).emissions == []
    assert view(rt.advance_processing_time(8 * S).emissions) == [(1 * S, 8 * S, (2,), "+I", "on_time")]


def test_processing_time_idle_flush_then_new_window():
    rt = runtime(Tumble(HOUR), [COUNT], processing_time=True, idle_timeout=MIN)
    rt.process_batch(rows(("a", None)), 0)
    assert [e.firing for e in rt.advance_processing_time(MIN).emissions] == ["final"]
    out = rt.process_batch(rows(("b", None)), 2 * MIN)
    assert out.late == [] and rt.open_windows() == [(0, HOUR)]


def test_stream_scope_idle_flushes_every_key():
    rt = runtime(Tumble(HOUR), [COUNT], scope="stream", idle_timeout=MIN)
    rt.process_batch(rows(("a", 1 * S), key=("a",)) + rows(("b", 2 * S), key=("b",)), 0)
    out = rt.advance_processing_time(MIN)
    assert [(e.key, e.firing) for e in out.emissions] == [(("a",), "final"), (("b",), "final")]


def test_global_window_idle_flush_restarts_the_window():
    rt = runtime(GlobalWindow(), [COUNT], idle_timeout=MIN)
    rt.process_batch(rows(("a", None), ("b", None)), 0)
    assert view(rt.advance_processing_time(MIN).emissions) == [(None, None, (2,), "+I", "final")]
    rt.process_batch(rows(("c", None)), 2 * MIN)
    assert view(rt.end_of_input().emissions) == [(None, None, (1,), "+I", "final")]


def test_count_window_with_gaps_and_no_time():
    rt = runtime(CountWindow(2, 3), [AggregateSpec("collect_list", 0)])
    out = rt.process_batch(rows(*[(i, None) for i in range(8)]), 0)
    assert [(e.window_start, e.window_end, e.values[0]) for e in out.emissions] == [
        (None, None, [0, 1]), (None, None, [3, 4]), (None, None, [6, 7])]
    assert rt.counts["unassigned"] == 2


def test_hop_row_late_for_closed_windows_joins_open_ones():
    rt = runtime(Hop(10 * S, 5 * S), [COUNT])
    rt.process_batch(rows(("a", 11 * S)), 0)  # closes [0, 10)
    out = rt.process_batch(rows(("b", 7 * S)), 1)
    assert [(r.window_start // S, r.window_end // S) for r in out.late] == [(0, 10)]
    assert view(rt.end_of_input().emissions) == [(5 * S, 15 * S, (2,), "+I", "final"),
                                                 (10 * S, 20 * S, (1,), "+I", "final")]


def test_slide_window_closes_only_beyond_its_inclusive_end():
    rt = runtime(Slide(10 * S), [COUNT])
    rt.process_batch(rows(("a", 5 * S)), 0)
    assert rt.process_batch(rows(("b", 5 * S)), 1).emissions == []  # watermark 5 s = the end
    out = rt.process_batch(rows(("c", 5 * S + 1)), 2)
    assert view(out.emissions) == [(-5 * S, 5 * S, (2,), "+I", "on_time")]


def test_unbounded_delay_keeps_everything_for_end_of_input():
    rt = runtime(Tumble(S), [COUNT], delay=UNBOUNDED)
    rt.process_batch(rows(*[(i, (10 - i) * S) for i in range(10)]), 0)
    assert len(rt.open_windows()) == 10
    assert [e.window_start // S for e in rt.end_of_input().emissions] == list(range(1, 11))


def test_processing_time_idle_with_an_event_time_clock_is_processing_time():
    rt = runtime(Session(HOUR), [COUNT], processing_time=True, idle_timeout=MIN, idle_clock="event_time")
    rt.process_batch(rows(("a", None)), 0)
    assert [e.firing for e in rt.advance_processing_time(MIN).emissions] == ["final"]

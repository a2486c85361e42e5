"""VoltSP: time and watermarks (seed 003), its 5-scenario worked example with 10 s windows."""

import pytest

from runtime_helpers import MIN, S, late_view, rows, runtime, windows
from sqlwin.sql.plan import Session, Tumble
from sqlwin.runtime import RuntimeConfigError

TEN_S = Tumble(10 * S)

# The worked example's data: (event, event time s) per arrival batch.
SCENARIO_1 = [[("e1", 2), ("e2", 5)], [("e4", 12)], [("e3", 8)], [("e5", 25)]]
SCENARIO_3 = [[("e1", 2), ("e2", 5)], [("e4", 12), ("e6", 9)], [("e3", 8)], [("e5", 25)]]


def batches(data, first_batch_time=1):
    """One micro-batch per list, batch times 1 s apart; event times in seconds."""
    return [((first_batch_time + i) * S, rows(*[(n, t * S) for n, t in batch])) for i, batch in enumerate(data)]


def run_scenario(data, **watermark):
    rt = runtime(TEN_S, **watermark)
    outs, marks = [], []
    for batch_time, batch_rows in batches(data):
        outs.append(rt.process_batch(batch_rows, batch_time))
        marks.append(rt.watermark() // S)
    return rt, outs, marks


# -- VS-01 ----------------------------------------------------------------------------

E1_E4 = [("e1", 2, 3), ("e2", 4, 5), ("e4", 15, 9), ("e3", 8, 13)]  # (event, event time, arrival), arrival order


def test_vs01_processing_time_buckets_by_arrival():
    rt = runtime(TEN_S, processing_time=True)
    outs = [rt.process_batch(rows((name, None)), arrival * S) for name, _, arrival in E1_E4]
    outs.append(rt.advance_processing_time(20 * S))
    emitted = [e for out in outs for e in out.emissions]
    assert windows(emitted) == {(0, 10): ["e1", "e2", "e4"], (10, 20): ["e3"]}
    assert [e.firing for e in emitted] == ["on_time", "on_time"]
    assert windows(outs[3].emissions) == {(0, 10): ["e1", "e2", "e4"]}  # closed by the clock at 13 s


def test_vs01_event_time_figure_all_on_time():
    # The figure shows bucketing only: all four rows in one batch, nothing is late.
    rt = runtime(TEN_S)
    out = rt.process_batch(rows(*[(n, t * S) for n, t, _ in E1_E4]), 13 * S)
    assert windows(out.emissions) == {(0, 10): ["e1", "e2", "e3"]}
    assert windows(rt.end_of_input().emissions) == {(10, 20): ["e4"]}


def test_vs01_event_time_figure_with_a_delay_of_7s():
    rt = runtime(TEN_S, delay=7 * S)
    outs = [rt.process_batch(rows((n, t * S)), a * S) for n, t, a in E1_E4]
    assert not any(out.late for out in outs)
    emitted = [e for out in outs for e in out.emissions] + rt.end_of_input().emissions
    assert windows(emitted) == {(0, 10): ["e1", "e2", "e3"], (10, 20): ["e4"]}


def test_vs01_one_row_per_batch_makes_e3_late():
    rt = runtime(TEN_S)
    outs = [rt.process_batch(rows((n, t * S)), a * S) for n, t, a in E1_E4]
    assert windows(outs[2].emissions) == {(0, 10): ["e1", "e2"]}  # e4 (15 s) pushed the watermark
    assert late_view(outs[3].late) == [("e3", 8, 7, 0, 10)]


# -- VS-02 / VS-03: the watermark-strategy figures (rule: before the watermark is late) ---

STRATEGY_FIGURE = [[("e1", 2), ("e2", 4), ("e3", 9)], [("e4", 5), ("e5", 8), ("e6", 15)], [("e_late", 3)]]


def test_vs02_min_event_time():
    rt, outs, marks = run_scenario(STRATEGY_FIGURE, strategy="min_event_time", lateness_rule="before_watermark")
    assert marks[:2] == [2, 5]
    assert outs[1].late == []  # 5, 8 and 15 are all after 2 s
    assert late_view(outs[2].late) == [("e_late", 3, 2, 0, 10)]  # 3 s < 5 s


def test_vs03_max_event_time():
    rt, outs, marks = run_scenario(STRATEGY_FIGURE, strategy="max_event_time", lateness_rule="before_watermark")
    assert marks[:2] == [9, 15]
    assert late_view(outs[1].late) == [("e4", 5, 4, 0, 10), ("e5", 8, 1, 0, 10)]
    assert rt.open_windows() == [(10 * S, 20 * S)]  # e6 accepted; [0,10) closed at 15 s


def test_vs04_delay_compensates_the_batch_span():
    batch = [[("a", 10), ("b", 13)]]  # spans S = 3 s
    eff = lambda **wm: run_scenario(batch, **wm)[2][0]  # noqa: E731
    assert eff(strategy="max_event_time", delay=3 * S) == eff(strategy="min_event_time") == 10
    assert eff(strategy="min_event_time", delay=2 * S) == eff(strategy="max_event_time", delay=5 * S) == 8


# -- VS-05 .. VS-11: the worked example ----------------------------------------------


def test_vs05_scenario0_processing_time():
    rt = runtime(TEN_S, processing_time=True)
    arrivals = [(7, ["e1", "e2"]), (8, ["e4"]), (9, ["e3"]), (10, ["e5"])]
    outs = [rt.process_batch(rows(*[(n, None) for n in names]), t * S) for t, names in arrivals]
    assert [o.emissions for o in outs[:3]] == [[], [], []]
    assert windows(outs[3].emissions) == {(0, 10): ["e1", "e2", "e3", "e4"]}
    assert rt.watermark() == 10 * S
    assert rt.open_windows() == [(10 * S, 20 * S)]  # e5 opens the next window


@pytest.mark.parametrize("rule", ["window_closed", "before_watermark"])
def test_vs06_scenario1_event_time(rule):
    rt, outs, marks = run_scenario(SCENARIO_1, strategy="min_event_time", lateness_rule=rule)
    assert marks == [2, 12, 12, 25]
    assert [windows(o.emissions) for o in outs] == [{}, {(0, 10): ["e1", "e2"]}, {}, {(10, 20): ["e4"]}]
    assert late_view(outs[2].late) == [("e3", 8, 4, 0, 10)]
    assert rt.open_windows() == [(20 * S, 30 * S)]


@pytest.mark.parametrize("rule", ["window_closed", "before_watermark"])
def test_vs07_scenario2_delay_5s(rule):
    rt, outs, marks = run_scenario(SCENARIO_1, strategy="min_event_time", delay=5 * S, lateness_rule=rule)
    # The document shows the first effective watermark as 0 (clamped); sqlwin does not clamp
    # (negative times are real), and -3 s closes no window 0 s would not.
    assert marks == [-3, 7, 7, 20]
    assert not any(o.late for o in outs)
    assert [windows(o.emissions) for o in outs[:3]] == [{}, {}, {}]
    assert windows(outs[3].emissions) == {(0, 10): ["e1", "e2", "e3"], (10, 20): ["e4"]}
    assert [e.window_end for e in outs[3].emissions] == [10 * S, 20 * S]  # window_end order


def test_vs08_scenario3_max_event_time():
    rt, outs, marks = run_scenario(SCENARIO_3, strategy="max_event_time")
    assert marks == [5, 12, 12, 25]
    assert windows(outs[1].emissions) == {(0, 10): ["e1", "e2", "e6"]}
    assert late_view(outs[2].late) == [("e3", 8, 4, 0, 10)]
    assert windows(outs[3].emissions) == {(10, 20): ["e4"]}


def test_vs09_scenario3_min_event_time_window_closed_rule():
    # e3 (8 s) arrives at watermark 9 s and is accepted because [0,10) is still open.
    rt, outs, marks = run_scenario(SCENARIO_3, strategy="min_event_time", lateness_rule="window_closed")
    assert marks == [2, 9, 9, 25]
    assert not any(o.late for o in outs)
    assert [o.emissions for o in outs[:3]] == [[], [], []]
    assert windows(outs[3].emissions) == {(0, 10): ["e1", "e2", "e3", "e6"], (10, 20): ["e4"]}


def test_vs09_under_the_before_watermark_rule_e3_would_be_late():
    rt, outs, marks = run_scenario(SCENARIO_3, strategy="min_event_time", lateness_rule="before_watermark")
    assert late_view(outs[2].late) == [("e3", 8, 1, 0, 10)]


def test_vs10_scenario3_max_event_time_delay_3s():
    rt, outs, marks = run_scenario(SCENARIO_3, strategy="max_event_time", delay=3 * S)
    assert marks == [2, 9, 9, 22]
    assert not any(o.late for o in outs)
    assert windows(outs[3].emissions) == {(0, 10): ["e1", "e2", "e3", "e6"], (10, 20): ["e4"]}


def test_vs11_scenario4_idle_timeout_processing_clock():
    rt, outs, marks = run_scenario(SCENARIO_3[:3], strategy="max_event_time", delay=3 * S, idle_timeout=5 * MIN)
    assert not any(o.emissions for o in outs)
    last_row_at = 3 * S  # batch times are 1, 2, 3 s
    assert rt.advance_processing_time(last_row_at + 5 * MIN - 1).emissions == []
    flushed = rt.advance_processing_time(last_row_at + 5 * MIN).emissions
    assert windows(flushed) == {(0, 10): ["e1", "e2", "e3", "e6"], (10, 20): ["e4"]}
    assert [e.firing for e in flushed] == ["final", "final"]
    assert rt.advance_processing_time(last_row_at + 20 * MIN).emissions == []  # nothing twice


def test_vs11_a_late_row_after_the_idle_flush_is_late():
    rt, outs, marks = run_scenario(SCENARIO_3[:3], strategy="max_event_time", delay=3 * S, idle_timeout=5 * MIN)
    rt.advance_processing_time(3 * S + 5 * MIN)
    out = rt.process_batch(rows(("e7", 11 * S)), 3 * S + 6 * MIN)
    assert late_view(out.late) == [("e7", 11, 9, 10, 20)]  # the flushed [10,20) is closed


def test_vs12_idle_timeout_on_event_time():
    # Key a goes quiet; key b's event time moves on 5 minutes: a's window is flushed.
    rt = runtime(TEN_S, idle_timeout=5 * MIN, idle_clock="event_time")
    rt.process_batch(rows(("a1", 2 * S), key=("a",)) + rows(("b1", 3 * S), key=("b",)), 1 * S)
    out = rt.process_batch(rows(("b2", 2 * S + 5 * MIN - 1), key=("b",)), 2 * S)
    assert [e.key for e in out.emissions] == [("b",)]  # b's own watermark closed b's [0,10)
    out = rt.process_batch(rows(("b3", 2 * S + 5 * MIN), key=("b",)), 3 * S)
    assert [(e.key, e.values, e.firing) for e in out.emissions] == [(("a",), (["a1"],), "final")]


def test_vs12_event_time_idleness_needs_keys():
    with pytest.raises(RuntimeConfigError, match="idle"):
        runtime(TEN_S, idle_timeout=MIN, idle_clock="event_time", scope="stream")


def test_vs13_future_outlier_holds_its_own_window():
    rt = runtime(TEN_S, strategy="min_event_time")
    rt.process_batch(rows(("a", 2 * S), ("future", 1000 * S), ("b", 4 * S)), 1 * S)
    out = rt.process_batch(rows(("c", 12 * S)), 2 * S)
    assert windows(out.emissions) == {(0, 10): ["a", "b"]}
    assert rt.open_windows() == [(10 * S, 20 * S), (1000 * S, 1010 * S)]
    out = rt.process_batch(rows(("d", 1010 * S)), 3 * S)
    assert windows(out.emissions) == {(10, 20): ["c"], (1000, 1010): ["future"]}


@pytest.mark.parametrize("scope, closes", [("key", False), ("stream", True)])
def test_vs14_watermark_per_key_or_per_stream(scope, closes):
    rt = runtime(TEN_S, scope=scope)
    rt.process_batch(rows(("a1", 2 * S), key=("a",)), 1 * S)
    out = rt.process_batch(rows(("b1", 25 * S), key=("b",)), 2 * S)
    assert bool(out.emissions) is closes
    assert rt.watermark(("a",)) == (25 * S if closes else 2 * S)


def test_vs15_late_rows_carry_key_time_values_and_window():
    rt = runtime(TEN_S)
    rt.process_batch(rows(("x", 30 * S), key=("k",)), 1 * S)
    out = rt.process_batch(rows(("old", 5 * S), key=("k",)), 2 * S)
    (late,) = out.late
    assert (late.key, late.event_time, late.values, late.late_by_us) == (("k",), 5 * S, ("old",), 25 * S)
    assert (late.window_start, late.window_end) == (0, 10 * S)
    assert rt.counts["late"] == 1


def test_vs16_no_rows_no_progress_and_rows_checked_against_previous_batch():
    rt = runtime(TEN_S)
    rt.process_batch(rows(("a", 2 * S)), 1 * S)
    assert rt.process_batch([], 50 * S).emissions == []
    assert rt.advance_processing_time(500 * S).emissions == []
    assert rt.watermark() == 2 * S
    out = rt.process_batch(rows(("b", 12 * S), ("c", 3 * S)), 501 * S)  # c is checked against 2 s
    assert out.late == []
    assert windows(out.emissions) == {(0, 10): ["a", "c"]}


@pytest.mark.parametrize("gap", [0, -5 * S])
def test_vs17_session_needs_a_positive_gap(gap):
    with pytest.raises(RuntimeConfigError, match="gap"):
        runtime(Session(gap))

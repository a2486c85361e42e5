"""Bytewax windowing concepts (seed 000) and windowing API (seed 001)."""

import datetime as dt

import pytest

from runtime_helpers import HOUR, MIN, S, feed, late_view, rows, runtime, view, windows
from sqlwin.sql.plan import UNBOUNDED, Hop, Session, Tumble
from sqlwin.runtime import AggregateSpec

MIDNIGHT = int(dt.datetime(2023, 12, 14, tzinfo=dt.timezone.utc).timestamp()) * S


def at(hh_mm: str) -> int:
    """2023-12-14 hh:mm in epoch microseconds."""
    hours, minutes = map(int, hh_mm.split(":"))
    return MIDNIGHT + hours * HOUR + minutes * MIN


def test_bw01_event_clock_table_wait_5_minutes():
    """The document's lost table, rebuilt: the watermark ages with system time and is
    fast-forwarded by timestamps that show time has progressed; items before it are late."""
    rt = runtime(Tumble(HOUR), strategy="bytewax", delay=5 * MIN, lateness_rule="before_watermark")
    # system time, incoming timestamp, current watermark, possible watermark, resulting watermark, late?
    table = [
        (0 * MIN, "10:00", None, "09:55", "09:55", False),
        (1 * MIN, "10:01", "09:56", "09:56", "09:56", False),
        (3 * MIN, "09:57", "09:58", "09:52", "09:58", True),
        (4 * MIN, "10:02", "09:59", "09:57", "09:59", False),
        (10 * MIN, "10:30", "10:05", "10:25", "10:25", False),
        (11 * MIN, "10:20", "10:26", "10:15", "10:26", True),
    ]
    for system_time, incoming, current, possible, resulting, late in table:
        rt.advance_processing_time(system_time)
        assert rt.watermark() == (None if current is None else at(current))
        assert at(incoming) - 5 * MIN == at(possible)
        out = rt.process_batch(rows(("x", at(incoming))), system_time)
        assert bool(out.late) is late
        assert rt.watermark() == at(resulting)


def test_bw01_watermark_never_goes_backwards_and_closes_on_system_time():
    rt = runtime(Tumble(10 * MIN), strategy="bytewax", delay=5 * MIN)
    rt.process_batch(rows(("a", at("10:01"))), 0)
    assert rt.advance_processing_time(13 * MIN).emissions == []  # watermark 10:09
    out = rt.advance_processing_time(14 * MIN)  # 10:01 - 5 min + 14 min = 10:10: [10:00, 10:10) closes
    assert windows(out.emissions, MIN) == {((at("10:00")) // MIN, at("10:10") // MIN): ["a"]}


def test_bw02_batch_replay_late_as_in_real_time():
    data = [("a", "10:00"), ("b", "10:10"), ("c", "10:04")]
    replay = runtime(Tumble(HOUR), strategy="bytewax", delay=5 * MIN, lateness_rule="before_watermark")
    replay_late = [o.late for o in feed(replay, [(0, rows((n, at(t)))) for n, t in data])]
    live = runtime(Tumble(HOUR), strategy="bytewax", delay=5 * MIN, lateness_rule="before_watermark")
    arrivals = [0, 10 * MIN, 10 * MIN]  # rows produced "physically": c arrives just after b
    live_late = [o.late for o in feed(live, [(s, rows((n, at(t)))) for s, (n, t) in zip(arrivals, data)])]
    assert [len(x) for x in replay_late] == [len(x) for x in live_late] == [0, 0, 1]


def test_bw03_unbounded_wait_nothing_late_everything_at_end():
    rt = runtime(Tumble(HOUR), [AggregateSpec("count")], strategy="bytewax", delay=UNBOUNDED)
    by_user = [("u1", "03:10"), ("u1", "00:05"), ("u2", "05:00"), ("u2", "00:10"), ("u3", "01:00")]
    outs = feed(rt, [(i * HOUR, rows((n, at(t)))) for i, (n, t) in enumerate(by_user)])
    assert not any(o.late or o.emissions for o in outs)
    final = rt.end_of_input().emissions
    assert [(e.window_start, e.values[0], e.firing) for e in final] == [
        (at("00:00"), 2, "final"), (at("01:00"), 1, "final"), (at("03:00"), 1, "final"), (at("05:00"), 1, "final")]


def test_bw04_sliding_windows_overlap():
    rt = runtime(Hop(HOUR, 30 * MIN, MIDNIGHT % (30 * MIN)))
    rt.process_batch(rows(("r", at("00:45"))), 0)
    assert rt.open_windows() == [(at("00:00"), at("01:00")), (at("00:30"), at("01:30"))]


def test_bw05_sliding_windows_with_gaps():
    rt = runtime(Hop(HOUR, 90 * MIN, MIDNIGHT % (90 * MIN)), delay=UNBOUNDED)
    out = rt.process_batch(rows(("gap", at("01:15")), ("a", at("00:10")), ("b", at("01:45")), ("c", at("03:05"))), 0)
    assert out.late == [] and rt.counts["unassigned"] == 1  # 01:15 falls between windows
    assert rt.open_windows() == [(at("00:00"), at("01:00")), (at("01:30"), at("02:30")), (at("03:00"), at("04:00"))]


def test_bw06_tumbling_windows_extend_before_the_alignment_instant():
    rt = runtime(Tumble(HOUR, 30 * MIN), delay=UNBOUNDED)
    rt.process_batch(rows(("before epoch", -10 * MIN), ("way before", -2 * HOUR), ("after", 50 * MIN)), 0)
    assert rt.open_windows() == [(-150 * MIN, -90 * MIN), (-30 * MIN, 30 * MIN), (30 * MIN, 90 * MIN)]


BW07 = [("1A", "00:00"), ("1B", "00:10"), ("1C", "00:15"), ("2A", "00:50"), ("2B", "01:00"), ("3A", "01:30")]


@pytest.mark.parametrize("batching", ["one batch", "row by row"])
def test_bw07_sessions_exactly_one_gap_apart_are_separate(batching):
    rt = runtime(Session(30 * MIN), [AggregateSpec("collect_list", 0), AggregateSpec("min", 1),
                                     AggregateSpec("max", 1)])
    data = [((), at(t), (n, at(t))) for n, t in BW07]
    batches = [(0, data)] if batching == "one batch" else [(i, [r]) for i, r in enumerate(data)]
    emitted = [e for o in feed(rt, batches) for e in o.emissions] + rt.end_of_input().emissions
    assert [(e.window_start, e.window_end, e.values) for e in emitted] == [
        (at("00:00"), at("00:45"), (["1A", "1B", "1C"], at("00:00"), at("00:15"))),  # bars: first..last row
        (at("00:50"), at("01:30"), (["2A", "2B"], at("00:50"), at("01:00"))),
        (at("01:30"), at("02:00"), (["3A"], at("01:30"), at("01:30"))),
    ]


def test_bw08_out_of_order_row_bridges_two_sessions():
    # Bytewax: "Out of order data will be placed in their own sessions rather than merging
    # adjacent sessions." sqlwin merges, while the watermark allows (as Apex and Spark do).
    rt = runtime(Session(30 * MIN), delay=HOUR)
    rt.process_batch(rows(("a", at("00:00")), ("b", at("00:50"))), 0)
    assert rt.open_windows() == [(at("00:00"), at("00:30")), (at("00:50"), at("01:20"))]
    rt.process_batch(rows(("bridge", at("00:25"))), 1)
    assert rt.open_windows() == [(at("00:00"), at("01:20"))]
    assert view(rt.end_of_input().emissions) == [(at("00:00"), at("01:20"), (["a", "bridge", "b"],), "+I", "final")]


def test_bw09_each_key_its_own_clock():
    rt = runtime(Tumble(HOUR), strategy="bytewax", delay=5 * MIN)
    rt.process_batch(rows(("a", at("00:10")), key=("a",)) + rows(("b", at("05:00")), key=("b",)), 0)
    out = rt.process_batch(rows(("a2", at("00:20")), key=("a",)), S)
    assert out.late == [] and out.emissions == []
    assert rt.watermark(("a",)) < rt.watermark(("b",))


def test_bw10_only_after_the_window_closes():
    rt = runtime(Tumble(HOUR))
    outs = feed(rt, [(0, rows(("a", at("00:10")))), (1, rows(("b", at("00:50"))))])
    assert not any(o.emissions for o in outs)


def test_bw11_system_time_nothing_is_late():
    rt = runtime(Tumble(10 * S), processing_time=True)
    outs = feed(rt, [(5 * S, rows(("a", 1000 * S))), (6 * S, rows(("b", 0))), (25 * S, rows(("c", -5)))])
    assert not any(o.late for o in outs)
    assert windows(outs[2].emissions) == {(0, 10): ["a", "b"]}
    assert rt.open_windows() == [(20 * S, 30 * S)]


def test_bw12_end_of_input_closes_every_window():
    rt = runtime(Tumble(HOUR), delay=10 * HOUR)
    rt.process_batch(rows(("a", at("00:10")), ("b", at("03:00"))), 0)
    out = rt.end_of_input()
    assert [(e.window_start, e.firing) for e in out.emissions] == [(at("00:00"), "final"), (at("03:00"), "final")]
    assert rt.watermark() == float("inf") and rt.open_windows() == []
    with pytest.raises(RuntimeError):
        rt.process_batch(rows(("c", 0)), 1)


def test_bx01_collect_in_timestamp_order():
    rt = runtime(Tumble(HOUR), delay=HOUR)
    rt.process_batch(rows(("third", at("00:30")), ("first", at("00:10")), ("tie-1", at("00:20"))), 0)
    rt.process_batch(rows(("tie-2", at("00:20"))), 1)
    assert rt.end_of_input().emissions[0].values == (["first", "tie-1", "tie-2", "third"],)


def test_bx05_max_by_and_min_by():
    aggs = [AggregateSpec("max_by", 0, 1), AggregateSpec("min_by", 0, 1)]
    rt = runtime(Tumble(HOUR), aggs)
    data = [((), at("00:01"), ("cold", 3)), ((), at("00:02"), ("hot", 40)), ((), at("00:03"), ("x", None))]
    rt.process_batch(data, 0)
    assert rt.end_of_input().emissions[0].values == ("hot", "cold")


def test_bx07_late_session_rows_name_no_window():
    rt = runtime(Session(30 * MIN))
    rt.process_batch(rows(("a", at("02:00"))), 0)
    rt.process_batch(rows(("b", at("02:40"))), 1)  # closes [02:00, 02:30)
    out = rt.process_batch(rows(("lost", at("01:00")), ("overlaps emitted", at("02:20"))), 2)
    # 01:00's own session [01:00, 01:30) is long closed: no window can be named. 02:20 would
    # open [02:20, 02:50), still open, but it would merge into the emitted [02:00, 02:30).
    assert late_view(out.late, MIN) == [
        ("lost", at("01:00") // MIN, 100, None, None),
        ("overlaps emitted", at("02:20") // MIN, 20, at("02:00") // MIN, at("02:30") // MIN),
    ]


def test_bx07_before_watermark_rule_for_sessions():
    rt = runtime(Session(30 * MIN), lateness_rule="before_watermark", delay=10 * MIN)
    rt.process_batch(rows(("a", at("02:00"))), 0)
    out = rt.process_batch(rows(("ok", at("01:55")), ("late", at("01:45"))), 1)
    assert late_view(out.late, MIN) == [("late", at("01:45") // MIN, 5, None, None)]
    assert rt.open_windows() == [(at("01:55"), at("02:30"))]

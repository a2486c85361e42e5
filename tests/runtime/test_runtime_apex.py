"""Apex Malhar WindowedOperator (seed 004): sessions, lateness, triggers, accumulation modes."""

import pytest

from runtime_helpers import HOUR, MIN, S, feed, late_view, rows, runtime, view
from sqlwin.sql.plan import UNBOUNDED, EmitSpec, GlobalWindow, Hop, Session, Tumble
from sqlwin.runtime import AggregateSpec

COUNT = AggregateSpec("count")
SUM = AggregateSpec("sum", 0)


def emitted(outs):
    return [e for out in outs for e in out.emissions]


def test_ap02_global_window_fires_by_trigger_and_at_end_of_input():
    rt = runtime(GlobalWindow(), [SUM], emit=EmitSpec(early_rows=2))
    outs = feed(rt, [(i, rows((i, None))) for i in range(1, 6)])  # no time column needed
    assert view(emitted(outs)) == [(None, None, (3,), "+I", "early"), (None, None, (10,), "+U", "early")]
    assert view(rt.end_of_input().emissions) == [(None, None, (15,), "+U", "final")]


def test_ap04_sliding_windows_every_row_in_size_over_slide_windows():
    rt = runtime(Hop(10 * MIN, 2 * MIN), [COUNT], delay=UNBOUNDED)
    rt.process_batch(rows(("a", 7 * MIN + 13 * S)), 0)
    assert rt.open_windows() == [(s * MIN, (s + 10) * MIN) for s in (-2, 0, 2, 4, 6)]


def test_ap05_session_cases_with_retractions():
    """The four cases, each row fired at once (EARLY EVERY 1 ROWS) under RETRACTING."""
    rt = runtime(Session(HOUR), [COUNT], delay=UNBOUNDED,
                 emit=EmitSpec(early_rows=1, accumulation="RETRACTING"))
    m = MIN
    steps = [
        # case 4: overlaps no session -> a new proto-session [0:00, 1:00)
        (0, [(0, 60 * m, (1,), "+I", "early")]),
        # case 3: overlaps one -> extended to [0:00, 1:40); the old window is retracted
        (40 * m, [(0, 60 * m, (1,), "-D", "early"), (0, 100 * m, (2,), "+I", "early")]),
        # case 1: fits the existing session unchanged
        (20 * m, [(0, 100 * m, (2,), "-U", "early"), (0, 100 * m, (3,), "+U", "early")]),
        # case 4 again: [2:30, 3:30)
        (150 * m, [(150 * m, 210 * m, (1,), "+I", "early")]),
        # case 2: [1:35, 2:35) bridges both -> merged, both old windows retracted
        (95 * m, [(0, 100 * m, (3,), "-D", "early"), (150 * m, 210 * m, (1,), "-D", "early"),
                  (0, 210 * m, (5,), "+I", "early")]),
        # case 3 with an earlier begin: [-0:30, 0:30) overlaps -> [-0:30, 3:30)
        (-30 * m, [(0, 210 * m, (5,), "-D", "early"), (-30 * m, 210 * m, (6,), "+I", "early")]),
    ]
    for i, (time, expected) in enumerate(steps):
        assert view(rt.process_batch(rows(("x", time)), i).emissions) == expected
    assert rt.end_of_input().emissions == []  # unchanged since the last firing: nothing to retract


def test_ap05_accumulating_sessions_are_not_retracted():
    rt = runtime(Session(HOUR), [COUNT], delay=UNBOUNDED, emit=EmitSpec(early_rows=1))
    outs = feed(rt, [(0, rows(("a", 0))), (1, rows(("b", 110 * MIN))), (2, rows(("bridge", 55 * MIN)))])
    assert [(e.window_start, e.window_end, e.op) for e in emitted(outs)] == [
        (0, 60 * MIN, "+I"), (110 * MIN, 170 * MIN, "+I"), (0, 170 * MIN, "+I")]
    assert view(rt.end_of_input().emissions) == [(0, 170 * MIN, (3,), "+U", "final")]


def test_ap05_discarding_session_merge_keeps_unfired_rows():
    rt = runtime(Session(HOUR), [COUNT], delay=UNBOUNDED, emit=EmitSpec(early_rows=2, accumulation="DISCARDING"))
    outs = feed(rt, [(0, rows(("a", 0), ("b", 10 * MIN))), (1, rows(("c", 120 * MIN))), (2, rows(("d", 65 * MIN)))])
    # [0, 70) fired a and b; the merged [0, 180) fires only c and d, never fired before.
    assert view(emitted(outs)) == [(0, 70 * MIN, (2,), "+I", "early"), (0, 180 * MIN, (2,), "+I", "early")]
    assert rt.end_of_input().emissions == []  # nothing new since


def test_ap07_allowed_lateness_one_hour():
    rt = runtime(Tumble(10 * MIN), [COUNT], emit=EmitSpec(allowed_lateness=HOUR))
    steps = [(5, []), (15, [(0, 10, 1, "+I", "on_time")]), (7, [(0, 10, 2, "+U", "late")]),
             (70, [(10, 20, 1, "+I", "on_time")]),  # [0, 10) leaves the state: watermark 70 >= 10 + 60
             (8, []), (12, [(10, 20, 2, "+U", "late")])]
    for i, (minute, expected) in enumerate(steps):
        out = rt.process_batch(rows(("r", minute * MIN)), i)
        assert [(e.window_start // MIN, e.window_end // MIN, e.values[0], e.op, e.firing)
                for e in out.emissions] == expected
        if minute == 8:
            assert late_view(out.late, MIN) == [("r", 8, 62, 0, 10)]
    assert rt.open_windows() == [(10 * MIN, 20 * MIN), (70 * MIN, 80 * MIN)]


@pytest.mark.parametrize("rule, late", [("window_closed", ["gone"]), ("before_watermark", ["gone", "62"])])
def test_ap07_lateness_horizon_under_both_rules(rule, late):
    rt = runtime(Tumble(10 * MIN), [COUNT], emit=EmitSpec(allowed_lateness=HOUR), lateness_rule=rule)
    rt.process_batch(rows(("r", 125 * MIN)), 0)  # horizon: 125 - 60 = 65 min
    out = rt.process_batch(rows(("gone", 59 * MIN), ("62", 62 * MIN), ("66", 66 * MIN)), 1)
    # window_closed: [60, 70) is kept until the watermark reaches 70 + 60, so 62 still lands.
    # before_watermark: a row before the horizon (62 < 65) is late, whatever its window.
    assert [r.values[0] for r in out.late] == late
    count = 3 - len(late)
    assert [(e.window_start // MIN, e.values[0], e.firing) for e in out.emissions] == \
        [(60, n, "late") for n in range(1, count + 1)]


def test_ap08_early_every_10s_late_every_row():
    emit = EmitSpec(early_interval=10 * S, allowed_lateness=10 * MIN, late_rows=1)
    rt = runtime(Tumble(MIN), [COUNT], emit=emit)
    timeline = [
        ("batch", 1, [5, 10], []),
        ("tick", 10, None, [(2, "+I", "early")]),  # the first tick after the rows
        ("batch", 12, [20], []),
        ("tick", 19, None, []),
        ("tick", 20, None, [(3, "+U", "early")]),
        ("tick", 30, None, []),  # nothing new: no early firing
        ("batch", 31, [65], [(3, "+U", "on_time")]),
        ("batch", 32, [30], [(4, "+U", "late")]),
    ]
    for what, second, times, expected in timeline:
        if what == "batch":
            out = rt.process_batch(rows(*[("r", t * S) for t in times]), second * S)
        else:
            out = rt.advance_processing_time(second * S)
        got = [(e.values[0], e.op, e.firing) for e in out.emissions if e.window_start == 0]
        assert got == expected, (what, second)


def test_ap09_fire_only_updated_panes():
    rt = runtime(Tumble(MIN), [AggregateSpec("max", 0)], emit=EmitSpec(early_rows=1, only_updated=True))
    outs = feed(rt, [(0, rows((5, 1 * S))), (1, rows((3, 2 * S))), (2, rows((7, 3 * S))), (3, rows((0, 70 * S)))])
    assert [(e.values[0], e.op, e.firing) for e in emitted(outs) if e.window_start == 0] == [
        (5, "+I", "early"), (7, "+U", "early")]  # 3 leaves the max at 5; the close changes nothing


@pytest.mark.parametrize("mode, expected", [
    ("ACCUMULATING", [(3, "+I", "early"), (6, "+U", "on_time"), (10, "+U", "late")]),
    ("DISCARDING", [(3, "+I", "early"), (3, "+I", "on_time"), (4, "+I", "late")]),
    ("RETRACTING", [(3, "+I", "early"), (3, "-U", "on_time"), (6, "+U", "on_time"),
                    (6, "-U", "late"), (10, "+U", "late")]),
])
def test_ap10_accumulation_modes(mode, expected):
    emit = EmitSpec(early_rows=2, allowed_lateness=MIN, accumulation=mode)
    rt = runtime(Tumble(10 * S), [SUM], emit=emit)
    outs = feed(rt, [(0, rows((1, 1 * S), (2, 2 * S))), (1, rows((3, 5 * S))), (2, rows((100, 10 * S))),
                     (3, rows((4, 7 * S)))])
    assert [(e.values[0], e.op, e.firing) for e in emitted(outs) if e.window_start == 0] == expected


def test_ap06_a_watermark_a_fixed_10_s_behind_ingestion_time():
    """The watermark is the ingestion (processing) time minus 10 s, whatever the rows' times:
    processing time reaching 12:01:10 closes [12:00, 12:01) although no row after 12:01:05 came,
    and a row of 12:00:50 ingested at 12:01:20 is then late by 20 s. Under max_event_time with
    the same delay the window would still be open (12:01:05 - 10 s < 12:01) and take the row."""
    t0 = 12 * HOUR
    batches = [(t0 + 5 * S, rows(("e1", t0 + 2 * S))),
               (t0 + 75 * S, rows(("e2", t0 + 65 * S))),
               (t0 + 80 * S, rows(("e3", t0 + 50 * S)))]
    rt = runtime(Tumble(MIN), [COUNT], delay=10 * S, strategy="ingestion_time", scope="stream")
    outs = feed(rt, batches)
    assert [view(o.emissions) for o in outs] == [[], [(t0, t0 + MIN, (1,), "+I", "on_time")], []]
    assert [(r.event_time, r.late_by_us) for r in outs[2].late] == [(t0 + 50 * S, 20 * S)]
    assert view(rt.end_of_input().emissions) == [(t0 + MIN, t0 + 2 * MIN, (1,), "+I", "final")]
    by_event_time = runtime(Tumble(MIN), [COUNT], delay=10 * S, scope="stream")
    assert not any(o.late for o in feed(by_event_time, batches))
    assert view(by_event_time.end_of_input().emissions)[0] == (t0, t0 + MIN, (2,), "+I", "final")

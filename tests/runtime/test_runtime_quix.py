"""Quix Streams windowed aggregations (seed 002): times in milliseconds, multiplied to micros."""

import pytest

from runtime_helpers import HOUR, MS, S, feed, rows, runtime, view
from sqlwin.sql.plan import CountWindow, EmitSpec, Hop, Slide, Tumble
from sqlwin.runtime import AggregateSpec

CHANGES = EmitSpec(final=False, changes=True)
AVG, SUM, MIN_, COLLECT = (AggregateSpec(f, 0) for f in ("avg", "sum", "min", "collect_list"))


def one_row_batches(items, key=()):
    """Quix processes message by message: one row per micro-batch, batch time = arrival index."""
    return [(i * S, rows((value, ts * MS), key=key)) for i, (value, ts) in enumerate(items)]


def emitted(outs):
    return [e for out in outs for e in out.emissions]


def ms_view(emissions):
    return [(e.window_start // MS, e.window_end // MS, e.values[0]) for e in emissions]


def test_qx03_tumbling_min_on_every_row():
    rt = runtime(Tumble(10 * S), [MIN_], emit=CHANGES)
    out = rt.process_batch(rows((9999, 10001 * MS)), 0)
    assert ms_view(out.emissions) == [(10000, 20000, 9999)]


def test_qx04_tumbling_mean_on_every_row():
    rt = runtime(Tumble(HOUR), [AVG], emit=CHANGES)
    outs = feed(rt, one_row_batches([(30, 100), (29, 200), (28, 300)]))
    assert ms_view(emitted(outs)) == [(0, 3600000, 30), (0, 3600000, 29.5), (0, 3600000, 29)]
    assert [e.op for e in emitted(outs)] == ["+I", "+U", "+U"]


def test_qx05_count_tumbling_collect_final():
    rt = runtime(CountWindow(3, 3), [COLLECT])
    outs = feed(rt, one_row_batches([(100, 121), (50, 165), (200, 583)]))
    assert ms_view(emitted(outs)) == [(121, 583, [100, 50, 200])]
    assert emitted(outs)[0].firing == "on_time"


@pytest.mark.parametrize("slide_ms, expected", [
    # The documented 1 h / 10 min: only [0, 3600000) once windows starting before 0 are filtered.
    (600_000, [(0, 3600000, 30), (0, 3600000, 29.5), (0, 3600000, 29)]),
    # The closest fit, 1 h / 1 min: the second and third rows also open [60000, 3660000).
    (60_000, [(0, 3600000, 30), (0, 3600000, 29.5), (60000, 3660000, 29), (0, 3600000, 29),
              (60000, 3660000, 28.5)]),
])
def test_qx06_hopping_mean_on_every_row(slide_ms, expected):
    rt = runtime(Hop(HOUR, slide_ms * MS), [AVG], emit=CHANGES)
    outs = feed(rt, one_row_batches([(30, 50000), (29, 60000), (28, 62000)]))
    assert [v for v in ms_view(emitted(outs)) if v[0] >= 0] == expected


def test_qx07_count_hopping_6_step_2():
    rt = runtime(CountWindow(6, 2), [COLLECT])
    outs = feed(rt, one_row_batches([(i, 1000 + i) for i in range(12)]))
    assert [e.values[0] for e in emitted(outs)] == [[0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 6, 7],
                                                    [4, 5, 6, 7, 8, 9], [6, 7, 8, 9, 10, 11]]
    assert [e.window_index for e in emitted(outs)] == [0, 1, 2, 3]
    assert rt.end_of_input().emissions == []  # [8, 13] is partial: never emitted


def test_qx08_time_sliding_mean_on_every_row():
    rt = runtime(Slide(HOUR), [AVG], emit=CHANGES)
    data = [(30, 3600000), (29, 4800000), (28, 4800001), (27, 7200000), (26, 7200001)]
    outs = feed(rt, one_row_batches(data))
    assert ms_view(emitted(outs)) == [(0, 3600000, 30), (1200000, 4800000, 29.5), (1200001, 4800001, 29),
                                      (3600000, 7200000, 28.5), (3600001, 7200001, 27.5)]


def test_qx08_sliding_window_also_takes_rows_arriving_later():
    rt = runtime(Slide(HOUR), [COLLECT], emit=CHANGES, delay=HOUR)
    outs = feed(rt, one_row_batches([("a", 4800000), ("b", 4000000)]))
    # b (earlier, arriving later) joins a's still-open window, then gets its own.
    assert ms_view(emitted(outs)) == [(1200000, 4800000, ["a"]), (400000, 4000000, ["b"]),
                                      (1200000, 4800000, ["b", "a"])]


@pytest.mark.parametrize("cuts", [[1, 1, 1, 1, 1, 1], [2, 4], [6], [3, 3], [1, 5]])
def test_qx09_count_sliding_mean_final_across_batches(cuts):
    data = [(100, 121), (60, 165), (200, 583), (40, 723), (120, 1009), (80, 1242)]
    rt = runtime(CountWindow(3, 1), [AVG])
    out, i = [], 0
    for n in cuts:
        out += rt.process_batch(rows(*[(v, ts * MS) for v, ts in data[i:i + n]]), i * S).emissions
        i += n
    assert ms_view(out) == [(121, 583, 120), (165, 723, 100), (583, 1009, 120), (723, 1242, 80)]


def test_qx15_grace_period_per_key_newest_timestamp():
    rt = runtime(Tumble(HOUR), [COLLECT], delay=10 * S)
    outs = feed(rt, one_row_batches([("a", 1000), ("b", 3605000), ("c", 100000)]))
    assert not any(o.late for o in outs) and emitted(outs) == []  # c still lands in [0, 3600000)
    out = rt.process_batch(rows(("d", 3610000 * MS)), 9 * S)  # newest reaches end + 10 s
    assert ms_view(out.emissions) == [(0, 3600000, ["a", "c"])]
    late = rt.process_batch(rows(("e", 5000 * MS)), 10 * S).late
    assert [(r.values, r.late_by_us // MS, r.window_start, r.window_end // MS) for r in late] == \
        [(("e",), 3600000 - 5000, 0, 3600000)]


def test_qx16_late_row_report():
    rt = runtime(Tumble(HOUR), [COLLECT])
    rt.process_batch(rows(("on time", 7300000 * MS), key=("sensor-1",)), 0)
    (late,) = rt.process_batch(rows(("late", 1000 * MS), key=("sensor-1",)), S).late
    assert (late.key, late.values, late.event_time // MS, late.late_by_us // MS,
            late.window_start // MS, late.window_end // MS) == \
        (("sensor-1",), ("late",), 1000, 7300000 - 1000, 0, 3600000)


def test_qx17_sum_on_every_row():
    rt = runtime(Tumble(10 * S), [SUM], emit=CHANGES)
    outs = feed(rt, one_row_batches([(1, 100), (1, 101), (1, 102)]))
    assert ms_view(emitted(outs)) == [(0, 10000, 1), (0, 10000, 2), (0, 10000, 3)]
    assert {e.firing for e in emitted(outs)} == {"changes"}
    assert rt.process_batch(rows((1, 10001 * MS)), 9 * S).emissions[0].window_start == 10000 * MS
    assert rt.end_of_input().emissions == []  # no extra firing at close


def test_qx18_sum_final():
    rt = runtime(Tumble(10 * S), [SUM])
    outs = feed(rt, one_row_batches([(1, 100), (1, 101)]))
    assert emitted(outs) == []
    out = rt.process_batch(rows((1, 10001 * MS)), 5 * S)
    assert ms_view(out.emissions) == [(0, 10000, 2)]
    assert view(out.emissions)[0][3:] == ("+I", "on_time")


def test_qx19_a_quiet_key_keeps_its_window_open():
    rt = runtime(Tumble(10 * S), [SUM])
    rt.process_batch(rows((1, 100 * MS), key=("quiet",)), 0)
    out = rt.process_batch(rows((1, 50000 * MS), key=("busy",)) + rows((1, 90000 * MS), key=("busy",)), S)
    assert [e.key for e in out.emissions] == [("busy",)]  # busy's own [50000, 60000) closed
    assert rt.open_windows(("quiet",)) == [(0, 10 * S)]


def test_qx20_null_keys_are_rejected_counted_and_returned():
    rt = runtime(Tumble(10 * S), [SUM])
    out = rt.process_batch([(None, 100 * MS, (1,)), (("k",), 100 * MS, (2,)), ((None,), 5, (3,)),
                            (("k",), None, (4,))], 0)
    assert [(r.values, r.reason) for r in out.rejected] == [((1,), "null_key"), ((3,), "null_key"),
                                                            ((4,), "null_time")]
    assert rt.counts["rejected"] == 3 and rt.counts["rows"] == 1


def test_qx24_count_tumbling_of_4():
    rt = runtime(CountWindow(4, 4), [COLLECT])
    outs = feed(rt, one_row_batches([(i, i) for i in range(16)]))
    assert [e.values[0] for e in emitted(outs)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]


def test_qx25_count_sliding_of_4_is_hopping_with_step_1():
    rt = runtime(CountWindow(4, 1), [COLLECT])  # a count sliding window is CountWindow(size, 1)
    outs = feed(rt, one_row_batches([(i, i) for i in range(7)]))
    assert [e.values[0] for e in emitted(outs)] == [[0, 1, 2, 3], [1, 2, 3, 4], [2, 3, 4, 5], [3, 4, 5, 6]]

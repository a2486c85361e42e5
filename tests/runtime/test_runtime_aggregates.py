"""Aggregates: results, NULL handling, order, merges, and clear errors."""

import pytest

from runtime_helpers import HOUR, S, runtime
from sqlwin.errors import SqlwinError
from sqlwin.sql.plan import EmitSpec, Session, Tumble
from sqlwin.runtime import AggregateSpec, RuntimeConfigError

ALL = [AggregateSpec("count"), AggregateSpec("count", 0), AggregateSpec("sum", 0), AggregateSpec("min", 0),
       AggregateSpec("max", 0), AggregateSpec("avg", 0), AggregateSpec("collect_list", 0),
       AggregateSpec("first", 0), AggregateSpec("last", 0), AggregateSpec("min_by", 1, 0),
       AggregateSpec("max_by", 1, 0), AggregateSpec("count_distinct", 0)]

# (event time s, value, label), in arrival order: out of order, with a NULL and ties.
DATA = [(5, 3, "c"), (1, None, "n"), (2, 7, "g"), (5, 3, "c2"), (3, 1, "a"), (9, 7, "g2")]


def result(windower, data, aggregates=ALL, **watermark):
    rt = runtime(windower, aggregates, delay=HOUR, **watermark)
    rt.process_batch([((), t * S, (v, label)) for t, v, label in data], 0)
    (emission,) = rt.end_of_input().emissions
    return emission.values


def test_every_aggregate():
    assert result(Tumble(HOUR), DATA) == (
        6, 5, 21, 1, 7, 21 / 5,
        [7, 1, 3, 3, 7],  # event-time order; the two rows at 5 s in arrival order; NULL dropped
        None,  # first by event time is the 1 s row, whose value is NULL
        7,  # last by event time
        "a",  # min_by(label, value)
        "g",  # max_by: the tie 7 / 7 goes to the earliest row (2 s)
        3,
    )


def test_session_merges_give_the_same_results_as_one_session():
    # Rows 6 s apart with a 5 s gap make separate sessions until the last row bridges them all.
    spread = [(0, 1, "a"), (6, 2, "b"), (12, None, "n"), (18, 2, "d"), (3, 9, "bridge1"),
              (9, 0, "bridge2"), (15, 4, "bridge3")]
    in_order = sorted(spread)
    assert result(Session(5 * S), spread) == result(Session(5 * S), in_order)


def test_empty_inputs_give_sql_nulls():
    values = result(Tumble(HOUR), [(1, None, None)])
    assert values == (1, 0, None, None, None, None, [], None, None, None, None, 0)


def test_count_distinct_of_arrays_and_aliases():
    rt = runtime(Tumble(HOUR), [AggregateSpec("count_distinct", 0), AggregateSpec("mean", 1),
                                AggregateSpec("collect", 1)])
    rt.process_batch([((), 1, ([1, 2], 1)), ((), 2, ([1, 2], 2)), ((), 3, ([2], 3))], 0)
    assert rt.end_of_input().emissions[0].values == (2, 2.0, [1, 2, 3])


@pytest.mark.parametrize("spec, message", [
    (AggregateSpec("median", 0), "median"),
    (AggregateSpec("sum"), "sum needs an argument"),
    (AggregateSpec("max_by", 0), "max_by needs two arguments"),
    (AggregateSpec("sum", 0, 1), "sum takes one argument"),
    (AggregateSpec("avg", -1), "avg"),
])
def test_aggregate_errors_name_the_aggregate(spec, message):
    with pytest.raises(RuntimeConfigError, match=message) as err:
        runtime(Tumble(S), [spec])
    assert isinstance(err.value, ValueError) and isinstance(err.value, SqlwinError)


def test_discarding_panes_add_up_to_the_whole_window():
    rt = runtime(Tumble(HOUR), [AggregateSpec("sum", 0), AggregateSpec("collect_list", 0)],
                 emit=EmitSpec(early_rows=2, accumulation="DISCARDING"))
    panes = rt.process_batch([((), i * S, (i,)) for i in range(1, 6)], 0).emissions + rt.end_of_input().emissions
    assert [p.values for p in panes] == [(3, [1, 2]), (7, [3, 4]), (5, [5])]


def ordered(*order):
    """collect_list of the label (value 1) ordered by (value index, descending, nulls_first) keys."""
    return AggregateSpec("collect_list", 1, order=tuple(order))


def test_collect_list_in_arrival_order():
    # array_agg(label ORDER BY arrival): value 2 is the arrival number (Bytewax's ordered=False).
    data = [(5, "c", 1), (1, "a", 2), (3, "b", 3)]
    rt = runtime(Tumble(HOUR), [AggregateSpec("collect_list", 1), ordered((2, False, True))], delay=HOUR)
    rt.process_batch([((), t * S, (None, label, arrival)) for t, label, arrival in data], 0)
    assert rt.end_of_input().emissions[0].values == (["a", "b", "c"], ["c", "a", "b"])


def test_collect_list_order_by_keys_desc_and_nulls():
    # (time s, label, k1, k2): sort by k1 DESC NULLS LAST, then k2 ASC NULLS FIRST; full ties in time order.
    data = [(4, "d", 1, None), (1, "a", None, 2), (2, "b", 2, 5), (3, "c", 1, 0), (0, "e", 1, None),
            (5, "f", None, 1)]
    specs = [ordered((2, True, False), (3, False, True)),  # DESC NULLS LAST, ASC NULLS FIRST
             ordered((2, False, False)),  # k1 ASC NULLS LAST
             ordered((2, True, True))]  # k1 DESC NULLS FIRST
    rt = runtime(Tumble(HOUR), specs, delay=HOUR)
    rt.process_batch([((), t * S, (None, label, k1, k2)) for t, label, k1, k2 in data], 0)
    assert rt.end_of_input().emissions[0].values == (
        ["b", "e", "d", "c", "f", "a"],
        ["e", "c", "d", "b", "a", "f"],
        ["a", "f", "b", "e", "c", "d"],
    )


def test_ordered_collect_list_across_session_merges_and_snapshots():
    spec = ordered((2, False, True))
    rt = runtime(Session(5 * S), [spec], delay=HOUR)
    rt.process_batch([((), 0, (None, "x", 3)), ((), 6 * S, (None, "y", 1))], 0)
    rt = type(rt).restore(rt.snapshot(), aggregates=[spec])
    rt.process_batch([((), 3 * S, (None, "bridge", 2))], 0)
    assert rt.end_of_input().emissions[0].values == (["y", "bridge", "x"],)


def test_order_by_is_only_for_collect_list():
    with pytest.raises(RuntimeConfigError, match="sum takes no ORDER BY"):
        runtime(Tumble(S), [AggregateSpec("sum", 0, order=((1, False, True),))])
    with pytest.raises(RuntimeConfigError, match="ORDER BY key"):
        runtime(Tumble(S), [AggregateSpec("collect_list", 0, order=((-1, False, True),))])

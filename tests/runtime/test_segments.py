"""The segmented state (sqlwin.runtime.segments) gives exactly what one whole runtime gives.

Segments and index parts are made tiny here (a few keys each) so that every stream exercises
new segments, index splits, hash lookups across parts, restarts from the store and end of input.
"""

import os

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runtime_helpers import batches

from sqlwin.ir import UNBOUNDED, CountWindow, EmitSpec, Hop, Session, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec
from sqlwin.runtime.segments import INDEX, SEGMENT, MemoryStore, SegmentedState, key_hashes
from sqlwin.runtime.snapshots import unseal
from sqlwin.runtime.vector import Columns, CountFinalRuntime, FixedFinalRuntime, SessionFinalRuntime

SETTINGS = settings(max_examples=int(os.environ.get("SQLWIN_EXAMPLES", 200)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])

AGGREGATES = (AggregateSpec("count"), AggregateSpec("sum", 0), AggregateSpec("avg", 1), AggregateSpec("min", 1),
              AggregateSpec("max", 0))
KEYS = [("a",), ("b",), ("c",), (None,), ("d",), ("e",), ("f",), ("g",), ("h",), ("i",), ("j",), ("k",)]

kinds = st.one_of(
    st.tuples(st.just(FixedFinalRuntime), st.builds(Tumble, st.integers(1, 20))),
    st.tuples(st.just(FixedFinalRuntime), st.builds(Hop, st.integers(2, 20), st.integers(1, 7))),
    st.tuples(st.just(CountFinalRuntime), st.builds(CountWindow, st.integers(1, 5), st.integers(1, 5), st.booleans())),
    st.tuples(st.just(SessionFinalRuntime), st.builds(Session, st.integers(1, 15))),
)
watermarks = st.builds(
    WatermarkSpec, column=st.just("ts"), delay=st.sampled_from([0, 2, 10, UNBOUNDED]),
    strategy=st.sampled_from(["max_event_time", "min_event_time"]), scope=st.sampled_from(["key", "stream"]),
    lateness_rule=st.sampled_from(["window_closed", "before_watermark"]))


@st.composite
def streams(draw):
    n = draw(st.integers(0, 80))
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=n, max_size=n))
    times = draw(st.lists(st.one_of(st.integers(-60, 90), st.none()), min_size=n, max_size=n))
    a = draw(st.lists(st.one_of(st.none(), st.integers(-5, 9)), min_size=n, max_size=n))
    b = draw(st.lists(st.one_of(st.none(), st.sampled_from([0.5, -1.25, 3.0, 1e10])), min_size=n, max_size=n))
    rows = [(key, time, (x, y, f"row{i}")) for i, (key, time, x, y) in enumerate(zip(keys, times, a, b))]
    cuts = draw(st.lists(st.integers(1, 12), min_size=1, max_size=n + 1))
    return rows, cuts


@SETTINGS
@given(kinds, watermarks, streams(), st.integers(1, 3), st.integers(1, 3), st.integers(0, 6))
def test_segmented_state_equals_one_whole_runtime(kind, watermark, stream, segment_keys, part_keys, restart_at):
    runtime_class, windower = kind
    rows, cuts = stream
    config = (windower, watermark, EmitSpec(), AGGREGATES, False)
    whole = runtime_class(*config)
    store = MemoryStore()
    state = SegmentedState(runtime_class, config, store, segment_keys=segment_keys, index_part_keys=part_keys)
    for number, batch in enumerate(batches(rows, cuts)):
        if number == restart_at:  # a restart: everything comes back from the store
            state = SegmentedState(runtime_class, config, store, segment_keys=segment_keys,
                                   index_part_keys=part_keys)
        expected = whole.process_batch(batch, 0)
        got = state.process_batch(batch, 0)
        assert repr(got.emissions) == repr(expected.emissions), f"batch {number}: {batch}"
        assert repr(got.late) == repr(expected.late)
        assert repr(got.rejected) == repr(expected.rejected)
        assert state.counts == whole.counts
        assert state.open_window_count == whole.open_window_count
        assert state.key_count == whole.key_count
        assert state.key_watermarks() == whole.key_watermarks()
        sizes = [s["keys"] for s in state.dir["segments"].values()]
        assert all(size <= segment_keys for size in sizes)
        stored = [unseal(b, "IndexPart").state[0] for b in store.maps[INDEX].values()]
        assert sum(len(h) for h in stored) == whole.key_count  # one index entry per key
    assert repr(state.end_of_input().emissions) == repr(whole.end_of_input().emissions)
    assert not store.maps[SEGMENT] and not store.maps[INDEX]


def _columns(keys, times, values):
    n = len(keys)
    distinct = list(dict.fromkeys(keys))
    code = {k: i for i, k in enumerate(distinct)}
    v = np.array(values, np.float64)
    return Columns(np.array([code[k] for k in keys], np.int64), distinct, np.zeros(n, bool),
                   np.array(times, np.int64), np.zeros(n, bool), [(v, np.zeros(n, bool))], lambda i: (values[i],))


def test_a_batch_reads_only_the_segments_of_its_keys():
    """10,000 keys in segments of 1,000: a batch of keys that were new at the start reads one
    segment (theirs) and the open one; a batch of new keys reads only the open one."""
    config = (Tumble(60), WatermarkSpec("ts", 5), EmitSpec(), (AggregateSpec("count"), AggregateSpec("sum", 0)), False)
    store = MemoryStore()
    state = SegmentedState(FixedFinalRuntime, config, store, segment_keys=1000, index_part_keys=4000)
    for b in range(10):
        keys = [(f"k{b}_{i}",) for i in range(1000)]
        state.process_columns(_columns(keys, [b * 60 + 1] * 1000, [1.0] * 1000))
    assert len(store.maps[SEGMENT]) == 10 and len(store.maps[INDEX]) >= 3
    store.reads = {SEGMENT: 0, INDEX: 0}
    out = state.process_columns(_columns([("k0_1",), ("k0_2",)], [700, 700], [2.0, 3.0]))
    assert store.reads[SEGMENT] == 2  # the keys' own segment and the open one
    assert [(e.key, e.window_start, e.values) for e in out.emissions] == [(("k0_1",), 0, (1, 1.0)),
                                                                         (("k0_2",), 0, (1, 1.0))]
    store.reads = {SEGMENT: 0, INDEX: 0}
    state.process_columns(_columns([("new",)], [700], [1.0]))
    assert store.reads[SEGMENT] == 1
    assert store.reads[INDEX] == 1  # the one index part the new key's hash falls in


def test_key_hashes_do_not_depend_on_the_batch():
    one = key_hashes([("a", 1), ("b", 2)])
    two = key_hashes([("x", None), ("b", 2), ("a", 1)])
    assert one.tolist() == two[[2, 1]].tolist()
    assert len(set(key_hashes([(i,) for i in range(1000)]).tolist())) == 1000


def test_a_whole_runtime_moves_into_segments_and_goes_on():
    """A checkpoint of the one-value layout: its runtime split into segments gives what it would have."""
    config = (Session(10), WatermarkSpec("ts", 3), EmitSpec(), (AggregateSpec("count"), AggregateSpec("sum", 0)), False)
    whole = SessionFinalRuntime(*config)
    keys = [(f"k{i % 7}",) for i in range(40)]
    first = _columns(keys[:20], list(range(0, 40, 2)), [float(i) for i in range(20)])
    whole.process_columns(first)
    moved = SegmentedState.from_runtime(SessionFinalRuntime.restore(whole.snapshot()), MemoryStore(), segment_keys=2)
    second = _columns(keys[20:], list(range(45, 85, 2)), [float(i) for i in range(20)])
    assert repr(moved.process_columns(second).emissions) == repr(whole.process_columns(second).emissions)
    assert repr(moved.end_of_input().emissions) == repr(whole.end_of_input().emissions)

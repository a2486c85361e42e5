"""The general runtime's state in pieces of keys (issue 22, item 3): a batch reads and writes only
the keys it touches and the keys its clock makes due, and gives exactly what the runtime holding
every key in one value gives -- every emission (in the same order, with the same sequence
numbers), late row and rejected row, batch by batch.

Random streams (out of order, late rows, NULL keys and times) for every window kind, EMIT FINAL /
CHANGES / EARLY ... RETRACTING / DISCARDING / ONLY UPDATED / allowed lateness, a clock per key and
one for the stream (spread over buckets too), and a windowed join's two side clocks. The state
lives in a MemoryStore with tiny segments (3 keys) and index parts (4 entries), and is read back
from the store before every batch, as the streaming operator does.
"""

from __future__ import annotations

import random

import pytest

from sqlwin.ir import CountWindow, Cumulate, GlobalWindow, Hop, Session, Slide, Tumble
from sqlwin.runtime import AggregateSpec, WindowRuntime
from sqlwin.runtime.keyed import KeyedWindowRuntime, keyed_state_applies
from sqlwin.runtime.model import JoinSpec
from sqlwin.runtime.segments import SEGMENT, MemoryStore, SegmentedState
from sqlwin.runtime.snapshots import unseal
from sqlwin.sql.plan import EmitSpec, WatermarkSpec
from tests.runtime.test_stream_clock_buckets import _bounds, _stream

S = 1_000_000
WINDOWS = {"tumble": Tumble(10 * S), "hop": Hop(5 * S, 10 * S), "cumulate": Cumulate(5 * S, 15 * S),
           "session": Session(6 * S), "slide": Slide(8 * S), "count": CountWindow(3, 2, timed=True),
           "global": GlobalWindow(timed=True)}
EMITS = {"final": EmitSpec(), "changes": EmitSpec(final=False, changes=True),
         "early_retracting": EmitSpec(early_rows=2, accumulation="RETRACTING"),
         "early_discarding": EmitSpec(early_rows=3, accumulation="DISCARDING"),
         "only_updated": EmitSpec(final=False, changes=True, only_updated=True),
         "lateness": EmitSpec(allowed_lateness=15 * S, late_rows=1)}
AGGREGATES = [AggregateSpec("count"), AggregateSpec("collect_list", 0), AggregateSpec("max", 0)]


def _view(result) -> tuple:
    return (repr(result.emissions), repr(result.late), repr(result.rejected))


def _check(windower, watermark, emit, aggregates, stream, buckets: int = 1, sided: bool = False) -> None:
    """Each bucket's keys through a plain runtime and through pieces: the same results."""
    config = (windower, watermark, emit, aggregates, False)
    plain = [WindowRuntime(*config) for _ in range(buckets)]
    stores = [MemoryStore() for _ in range(buckets)]

    def keyed(b: int) -> SegmentedState:  # read back from the store, as each micro-batch does
        return SegmentedState(KeyedWindowRuntime, config, stores[b], segment_keys=3, index_part_keys=4)

    for batch_time, rows in stream:
        bounds = _bounds(rows, sided) if buckets > 1 else None
        for b in range(buckets):
            mine = [r for r in rows if hash(r[0]) % buckets == b]
            expected = plain[b].process_batch(mine, batch_time, bounds)
            state = keyed(b)
            assert _view(state.process_batch(mine, batch_time, bounds)) == _view(expected), (batch_time, b)
            assert state.counts == plain[b].counts
    for b in range(buckets):
        assert _view(keyed(b).end_of_input()) == _view(plain[b].end_of_input())


CASES = [(w, e) for w in WINDOWS for e in EMITS if not (w in ("count", "global") and e == "lateness")]


@pytest.mark.parametrize("window, emit", CASES)
@pytest.mark.parametrize("scope", ["key", "stream"])
def test_pieces_of_keys_give_what_one_value_gives(window, emit, scope):
    watermark = WatermarkSpec(delay=2 * S, scope=scope)
    for seed in range(4):
        stream = _stream(random.Random(hash((window, emit, scope, seed)) % 10_000), batches=16)
        _check(WINDOWS[window], watermark, EMITS[emit], AGGREGATES, stream, buckets=1 if seed % 2 else 3)


@pytest.mark.parametrize("strategy", ["min_event_time", "upstream"])
def test_other_event_time_clocks(strategy):
    for seed in range(4):
        stream = _stream(random.Random(seed + 50), batches=16)
        _check(Tumble(10 * S), WatermarkSpec(delay=2 * S, scope="key", strategy=strategy), EmitSpec(), AGGREGATES,
               stream)


@pytest.mark.parametrize("scope", ["key", "stream"])
def test_a_windowed_join_in_pieces(scope):
    spec = AggregateSpec("window_join", arg=0, join=JoinSpec(columns=((1,), (1,)), insert="product",
                                                               steps=(("full", 0),)))
    for seed in range(6):
        rng = random.Random(300 + seed)
        stream = [(t, [(k, time, (rng.randrange(2), v[0])) for k, time, v in rows]) for t, rows in _stream(rng)]
        _check(Tumble(10 * S), WatermarkSpec(delay=2 * S, scope=scope, sides=2), EmitSpec(), [spec], stream,
               buckets=1 if seed % 2 else 3, sided=True)


def test_a_batch_rewrites_the_segments_of_its_keys_not_the_whole_state():
    # Every batch brings 30 new keys (tiny segments of 3 keys: 10 new segments a batch), a clock per
    # key: batch n must write ~10 segments, not the 10n the state holds by then.
    rows_of = lambda b: [((f"k{b}_{i}",), b * 10 * S + i, (i,)) for i in range(30) for _ in range(2)]  # noqa: E731
    stream = [((b + 1) * S, rows_of(b)) for b in range(12)]
    config = (Tumble(10 * S), WatermarkSpec(delay=2 * S), EmitSpec(early_rows=2, accumulation="RETRACTING"),
              AGGREGATES, False)
    store = MemoryStore()
    writes = []
    put = store.put
    for batch_time, rows in stream:
        written = []
        store.put = lambda kind, ident, blob: (written.append(kind == SEGMENT), put(kind, ident, blob))
        SegmentedState(KeyedWindowRuntime, config, store, segment_keys=3).process_batch(rows, batch_time)
        writes.append(sum(written))
    assert max(writes) <= 11, writes  # the open segment and the new keys' ten
    directory = unseal(store.get_directory(), "SegmentDirectory").state
    assert sum(s["keys"] for s in directory["segments"].values()) == 360


def test_which_queries_keep_keyed_state():
    final = EmitSpec()
    assert keyed_state_applies(WatermarkSpec(), final, False, False, None)
    assert keyed_state_applies(WatermarkSpec(scope="stream"), final, False, False, ())
    assert not keyed_state_applies(WatermarkSpec(), final, False, True, None)  # timers
    assert not keyed_state_applies(WatermarkSpec(strategy="bytewax"), final, False, False, None)
    assert not keyed_state_applies(WatermarkSpec(idle_timeout=S), final, False, False, None)
    assert not keyed_state_applies(WatermarkSpec(), final, False, False, (0,))  # a clock per PARTITION BY subset

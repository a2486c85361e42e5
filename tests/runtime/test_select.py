"""One selector picks the runtime of a query (sqlwin.runtime.select.choose): by the query's shape,
the kinds of its aggregate arguments and what a stream's checkpoint holds back."""

from sqlwin.ir import UNBOUNDED, EmitSpec, Session, Slide, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, WindowRuntime
from sqlwin.runtime.keyed import KeyedWindowRuntime
from sqlwin.runtime.select import FLOAT, INTEGER, OTHER, TIMESTAMP, choose
from sqlwin.runtime.vector import FixedFinalRuntime, SessionFinalRuntime

S = 1_000_000
WM = WatermarkSpec(delay=5 * S)
FINAL = EmitSpec()
COUNT, SUM = AggregateSpec("count"), AggregateSpec("sum", 0)
TOP = AggregateSpec("max_by", 1, 0)  # max_by(values[1], values[0])


def pick(windower=Tumble(10 * S), watermark=WM, emit=FINAL, aggregates=(COUNT, SUM), kinds=(INTEGER,),
         processing_time=False, timers=False, clock_positions=None, **options):
    return choose(windower, watermark, emit, aggregates, processing_time, timers, clock_positions, kinds, **options)


def test_the_vectorised_runtime_for_event_time_emit_final_over_numbers():
    choice = pick()
    assert choice.runtime is FixedFinalRuntime and choice.vectorised is FixedFinalRuntime and choice.segmented
    assert "vectorised runtime (FixedFinalRuntime)" in choice.description
    assert pick(windower=Session(10 * S)).runtime is SessionFinalRuntime
    assert pick(kinds=(FLOAT,)).runtime is FixedFinalRuntime


def test_min_by_and_max_by_take_timestamps_the_other_aggregates_numbers_only():
    assert pick(aggregates=(TOP,), kinds=(FLOAT, TIMESTAMP)).runtime is FixedFinalRuntime
    assert pick(aggregates=(TOP,), kinds=(TIMESTAMP, INTEGER)).runtime is FixedFinalRuntime
    assert pick(aggregates=(TOP,), kinds=(OTHER, INTEGER)).vectorised is None  # ordered by a string
    assert pick(aggregates=(SUM,), kinds=(TIMESTAMP,)).vectorised is None
    assert pick(aggregates=(SUM,), kinds=(OTHER,)).vectorised is None  # a boolean, a decimal, a string
    # a checkpoint that held min_by / max_by in the general runtime keeps them there
    held = pick(aggregates=(TOP,), kinds=(FLOAT, TIMESTAMP), by_aggregates=False)
    assert held.runtime is KeyedWindowRuntime and held.vectorised is None


def test_the_general_runtime_in_segments_of_keys_where_batches_touch_their_own_keys_only():
    changes = pick(emit=EmitSpec(changes=True))
    assert changes.runtime is KeyedWindowRuntime and changes.segmented and changes.vectorised is None
    assert pick(windower=Slide(10 * S)).runtime is KeyedWindowRuntime
    assert pick(clock_positions=()).runtime is FixedFinalRuntime  # one clock for the stream


def test_one_value_per_bucket_where_time_visits_every_key_or_the_checkpoint_says_so():
    for shape in (dict(timers=True, emit=EmitSpec(changes=True)), dict(processing_time=True, timers=True),
                  dict(watermark=WatermarkSpec(delay=5 * S, idle_timeout=60 * S)),
                  dict(clock_positions=(0,))):  # a clock per PARTITION BY subset of the keys
        choice = pick(**shape)
        assert choice.runtime is WindowRuntime and not choice.segmented, shape
    held = pick(emit=EmitSpec(changes=True), segmented_general=False)
    assert held.runtime is WindowRuntime and not held.segmented and "earlier version" in held.storage


def test_a_replay_runs_sessions_on_the_general_runtime():
    replay = pick(windower=Session(10 * S), many_batches=True)
    assert replay.vectorised is None and "no SESSION in replay" in replay.description
    assert pick(many_batches=True, watermark=WatermarkSpec(delay=UNBOUNDED)).runtime is FixedFinalRuntime

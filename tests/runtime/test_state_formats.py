"""Every state format sqlwin has written restores and continues exactly.

A checkpoint of a running query holds blobs written by the sqlwin that ran it, so every shape
ever written must keep restoring (or be refused with a clear message). The directories below
hold, per case, the blobs taken part-way through a scripted stream (a runtime's snapshot, a
BucketState's one value, or every blob of a segmented Store: `directory.bin`, `segment.<id>.bin`,
`index.<id>.bin`) and, in expected.json.gz, what that code emitted from there on (emissions,
late and rejected rows, counts, keys, windows, watermarks), step by step:

* data/snapshots_v2/ -- written by commit 0f31265 (its writers those of 421f9be), before the envelope: the vectorised runtimes'
  {"version": 1, "kind", "config", "state"}, the segment directory {"version": 2, "kind",
  "config", "globals", ...} with its pieces and index parts pickled bare, BucketState's
  {"now", "runtimes", "ended_counts"}, and the general runtime's format 2
  ({"version": 1, "format": 2, ...}, its cases those of test_runtime_snapshot_compat.py).
* data/snapshots_envelope_1/ -- written by commit 2bfdb96, which introduced the envelope
  (sqlwin/runtime/snapshots.py: {"envelope": 1, "kind", "format", "config", "state"}).
* data/snapshots_v1/ (test_runtime_snapshot_compat.py): the general runtime's format 1.

`python tests/runtime/test_state_formats.py --write DIR` writes them with the code at hand;
never regenerate a directory (it would then hold the current format, not the old one): when a
format changes, write a new directory and add it to DIRECTORIES.
"""

from __future__ import annotations

import gzip
import json
import pickle
import pathlib
import sys

import pandas as pd
import pytest

from sqlwin.ir import CountWindow, EmitSpec, Hop, Session, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, WindowRuntime
from sqlwin.runtime.keyed import KeyedWindowRuntime
from sqlwin.runtime.model import JoinSpec
from sqlwin.runtime.model import RuntimeConfigError
from sqlwin.runtime.segments import INDEX, SEGMENT, MemoryStore, SegmentedState
from sqlwin.runtime.snapshots import ENVELOPE, FORMATS, OtherSnapshotKind, unseal
from sqlwin.runtime.vector import CountFinalRuntime, FixedFinalRuntime, SessionFinalRuntime
from sqlwin.spark.buckets import BucketState, SegmentedBucket
from sqlwin.spark.operator import OperatorConfig

import test_runtime_snapshot_compat as compat
from runtime_helpers import plain_data

DATA = pathlib.Path(__file__).parent / "data"
DIRECTORIES = ("snapshots_v2", "snapshots_envelope_1")
S = 1_000_000

A = AggregateSpec
VECTOR = (A("count"), A("count", 0), A("sum", 0), A("min", 1), A("max", 0), A("avg", 1), A("min_by", 0, 1),
          A("max_by", 1, 0))
GENERAL = (A("count"), A("sum", 0), A("collect_list", 1), A("first", 1), A("max_by", 0, 1))
JOIN = A("window_join", arg=0, join=JoinSpec(columns=((1,), (2,)), steps=(("left", 0),)))
# (windower, watermark, emit, aggregates): the runtimes' configurations
FIXED_HOP = (Hop(10 * S, 4 * S), WatermarkSpec(delay=2 * S), EmitSpec(), VECTOR)
FIXED_STREAM = (Tumble(8 * S), WatermarkSpec(delay=S, scope="stream", strategy="min_event_time",
                                             lateness_rule="before_watermark"), EmitSpec(), VECTOR)
COUNT = (CountWindow(3, 2), WatermarkSpec(delay=S), EmitSpec(), VECTOR)
SESSION = (Session(5 * S), WatermarkSpec(delay=3 * S), EmitSpec(), VECTOR)
SESSION_STREAM = (Session(4 * S), WatermarkSpec(delay=2 * S, scope="stream"), EmitSpec(), VECTOR)
KEYED_HOP = (Hop(10 * S, 5 * S), WatermarkSpec(delay=3 * S),
             EmitSpec(final=False, changes=True, allowed_lateness=4 * S), GENERAL)
KEYED_SESSION = (Session(5 * S), WatermarkSpec(delay=2 * S, scope="stream"),
                 EmitSpec(early_rows=2, accumulation="RETRACTING", allowed_lateness=6 * S), GENERAL)
TUMBLE_GENERAL = (Tumble(10 * S), WatermarkSpec(delay=2 * S), EmitSpec(), VECTOR)  # a vectorised shape
IDLE_CLOCKS = (Tumble(10 * S), WatermarkSpec(delay=2 * S, scope="stream", idle_timeout=20 * S),
               EmitSpec(early_rows=2, accumulation="RETRACTING", allowed_lateness=5 * S), GENERAL)
JOINED = (Tumble(10 * S), WatermarkSpec(delay=2 * S, sides=2), EmitSpec(), (JOIN,))

# name: (holder, runtime class, configuration, key width, extra): holder "runtime" (its snapshot),
# "segments" (a SegmentedState over a MemoryStore, tiny segments and index parts), "bucket" (a
# BucketState's one value: extra its clock positions, None for one runtime).
CASES = {
    "fixed_hop": ("runtime", FixedFinalRuntime, FIXED_HOP, 1, None),
    "fixed_stream_min": ("runtime", FixedFinalRuntime, FIXED_STREAM, 1, None),
    "count": ("runtime", CountFinalRuntime, COUNT, 1, None),
    "session": ("runtime", SessionFinalRuntime, SESSION, 1, None),
    "window_join": ("runtime", WindowRuntime, JOINED, 1, None),
    "segments_fixed": ("segments", FixedFinalRuntime, FIXED_HOP, 1, None),
    "segments_session_stream": ("segments", SessionFinalRuntime, SESSION_STREAM, 1, None),
    "segments_count": ("segments", CountFinalRuntime, COUNT, 1, None),
    "segments_keyed_hop": ("segments", KeyedWindowRuntime, KEYED_HOP, 1, None),
    "segments_keyed_session_stream": ("segments", KeyedWindowRuntime, KEYED_SESSION, 1, None),
    "bucket_fixed": ("bucket", FixedFinalRuntime, FIXED_HOP, 1, None),
    "bucket_general_tumble": ("bucket", WindowRuntime, TUMBLE_GENERAL, 1, None),
    "bucket_general_clocks": ("bucket", WindowRuntime, IDLE_CLOCKS, 2, (0,)),
}
CUTS = (9, 22)
SEGMENT_KEYS, INDEX_PART_KEYS = 2, 2
KEYS = ["a", "b", "c", "d", "e", "f", "g", "h", "i"]


def script(width: int, sided: bool) -> list:
    """A stream over nine keys: out of order, late rows, NULL keys, times and values, idle gaps, the end."""
    ops = []
    for i in range(30):
        batch = []
        for j in range(1 + i % 3):
            n = i * 3 + j
            name = KEYS[(n * 4) % len(KEYS) if i < 12 else (n * 7) % 5]
            key = (name,) if width == 1 else (name, n % 2)
            t = (i * 2 + j - (9 if n % 7 == 3 else 0) - (20 if n % 11 == 6 else 0)) * S
            values = (None if n % 5 == 2 else n % 9 - 3, None if n % 6 == 1 else n * 0.25)
            batch.append((key, t, ((n % 2,) if sided else ()) + values))
        if i == 11:
            batch.append(((None,) * width, i * S, ((0,) if sided else ()) + (1, 1.0)))
        if i == 13:
            batch.append((("c",) * width if width == 1 else ("c", 0), None, ((1,) if sided else ()) + (2, 2.0)))
        ops.append(("batch", batch, i * S))
        if i % 7 == 6:
            ops.append(("advance", None, i * S + 25 * S))
    ops.append(("end", None, None))
    return ops


def operator_config(name) -> OperatorConfig:
    _, _, (windower, watermark, emit, aggregates), width, clocks = CASES[name]
    return OperatorConfig(windower, watermark, emit, tuple(aggregates), False, width, clocks, 2, 0, False,
                          timers=watermark.idle_timeout is not None)


INTEGRAL = {1: (False, True, False), 2: (False, True, True, False)}  # __k*, __a0 (int), __a1 (float)


def frame(rows, width: int) -> pd.DataFrame:
    """A bucket's micro-batch as the streaming processor hands it over (object columns, NULL as None)."""
    columns = {f"__k{i}": pd.Series([None if k is None else k[i] for k, _, _ in rows], dtype=object)
               for i in range(width)}
    columns["__time"] = pd.Series([t for _, t, _ in rows], dtype=object)
    columns["__a0"] = pd.Series([v[0] for _, _, v in rows], dtype=object)
    columns["__a1"] = pd.Series([v[1] for _, _, v in rows], dtype="float64")
    return pd.DataFrame(columns)


class Holder:
    """A case's state holder: made fresh, saved as named blobs, restored from them, driven, observed."""

    def __init__(self, name: str):
        self.name = name
        self.holder, self.cls, config, self.width, _ = CASES[name]
        self.config = config + (False,)

    def make(self):
        if self.holder == "runtime":
            return self.cls(*self.config)
        if self.holder == "segments":
            return SegmentedState(self.cls, self.config, MemoryStore(), SEGMENT_KEYS, INDEX_PART_KEYS)
        return BucketState(operator_config(self.name), INTEGRAL[self.width], self._vectorised(self.cls))

    @staticmethod
    def _vectorised(cls):
        return None if cls is WindowRuntime else cls

    def save(self, target) -> dict[str, bytes]:
        if self.holder != "segments":
            return {"state.bin": target.snapshot()}
        store = target.store
        files = {"directory.bin": store.directory}
        for kind in (SEGMENT, INDEX):
            files.update({f"{kind}.{ident}.bin": blob for ident, blob in store.maps[kind].items()})
        return files

    def restore(self, files: dict[str, bytes], route: str = "same"):
        """From the saved blobs. `route`: "same" as written; "vectorised" a general BucketState
        restored where the vectorised class is now chosen; "segments" a BucketState moved into
        segments (SegmentedBucket's `legacy`)."""
        if self.holder == "runtime":
            return self.cls.restore(files["state.bin"], *self.config)
        if self.holder == "segments":
            store = MemoryStore()
            store.directory = files["directory.bin"]
            for file, blob in files.items():
                kind, _, ident = file[:-len(".bin")].partition(".")
                if kind in (SEGMENT, INDEX):
                    store.maps[kind][int(ident)] = blob
            return SegmentedState(self.cls, self.config, store, SEGMENT_KEYS, INDEX_PART_KEYS)
        config, integral = operator_config(self.name), INTEGRAL[self.width]
        if route == "vectorised":
            return BucketState.restore(files["state.bin"], config, integral, FixedFinalRuntime)
        if route in ("segments", "segments, now vectorised"):
            target = KeyedWindowRuntime if self.cls is WindowRuntime and route == "segments" else self.cls
            if route == "segments, now vectorised":
                target = FixedFinalRuntime  # the general runtime's state carries on, never dropped
            moved = SegmentedBucket(config, integral, target, MemoryStore(), legacy=files["state.bin"])
            moved.state.segment_keys = SEGMENT_KEYS
            return moved.state
        return BucketState.restore(files["state.bin"], config, integral, self._vectorised(self.cls))

    def step(self, target, op) -> list:
        kind, rows, when = op
        if isinstance(target, BucketState):
            if kind == "batch":
                return target.process(frame(rows, self.width), when)
            return target.advance(when) if kind == "advance" else target.end_of_input()
        if kind == "batch":
            return [target.process_batch(rows, when)]
        return [target.advance_processing_time(when) if kind == "advance" else target.end_of_input()]

    def script(self) -> list:
        return script(self.width, self.config[1].sides > 1)


def figures(target) -> dict:
    """Counts, keys, windows held and watermark range of a runtime, SegmentedState or BucketState."""
    if isinstance(target, BucketState):
        runtimes = list(target.runtimes.values())
        return {"counts": target.counts(), "keys": sum(r.key_count for r in runtimes),
                "windows": sum(r.open_window_count for r in runtimes),
                "marks": sorted(m for r in runtimes for m in r.key_watermarks())}
    return {"counts": dict(target.counts), "keys": target.key_count, "windows": target.open_window_count,
            "marks": list(target.key_watermarks())}


def observe(target, results: list) -> dict:
    """What one step produced and the state it left, as JSON values."""
    return json.loads(json.dumps({
        "emissions": [[_key(e.key), e.window_start, e.window_end, e.values, e.op, e.firing, e.seq, e.window_index]
                      for r in results for e in r.emissions],
        "late": [[_key(r.key), r.event_time, r.values, r.late_by_us, r.window_start, r.window_end]
                 for res in results for r in res.late],
        "rejected": [[_key(r.key), r.event_time, r.values, r.reason] for res in results for r in res.rejected],
        **figures(target),
    }, default=_plain))


def _key(key):
    """A NULL key part as None (a pandas key column of a BucketState shows it as NaN)."""
    return None if key is None else [None if part is None or part != part else part for part in key]


def _plain(value):
    if hasattr(value, "item"):  # a NumPy scalar
        return value.item()
    raise TypeError(repr(value))


def compat_name(case: str) -> str:
    return f"general_format_2/{case}"


COMPAT_CUT = 19


def write(directory: pathlib.Path) -> None:
    """Run with the code whose formats are to be kept (see the module docstring)."""
    expected = {}
    for name in CASES:
        holder = Holder(name)
        ops = holder.script()
        for cut in CUTS:
            target = holder.make()
            for op in ops[:cut]:
                holder.step(target, op)
            place = directory / f"{name}@{cut}"
            place.mkdir(parents=True, exist_ok=True)
            for file, blob in holder.save(target).items():
                (place / file).write_bytes(blob)
            expected[f"{name}@{cut}"] = [observe(target, holder.step(target, op)) for op in ops[cut:]]
    for case in compat.CASES:  # the general runtime's cases (test_runtime_snapshot_compat.py)
        ops = compat.script(compat.CASES[case][5])
        rt = compat.make(case)
        for op in ops[:COMPAT_CUT]:
            compat.apply(rt, op)
        place = directory / compat_name(case)
        place.mkdir(parents=True, exist_ok=True)
        (place / "state.bin").write_bytes(rt.snapshot())
        expected[compat_name(case)] = [compat.observe(rt, compat.apply(rt, op)) for op in ops[COMPAT_CUT:]]
    text = json.dumps(expected, sort_keys=True, separators=(",", ":")) + "\n"
    (directory / "expected.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


# --------------------------------------------------------------------------- the tests


@pytest.fixture(scope="module", params=DIRECTORIES)
def stored(request):
    """(the directory, its expected continuations)."""
    directory = DATA / request.param
    return directory, json.loads(gzip.decompress((directory / "expected.json.gz").read_bytes()))


def files_of(place: pathlib.Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(place.iterdir())}


# Other ways a stored BucketState is read: a general runtime's where the vectorised class is now
# chosen (it carries on with the general runtime), and one-value checkpoints moved into segments.
ROUTES = [(name, "same") for name in CASES] + [("bucket_general_tumble", "vectorised"),
                                               ("bucket_general_tumble", "segments"), ("bucket_fixed", "segments"),
                                               ("bucket_general_tumble", "segments, now vectorised")]


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name, route", ROUTES)
def test_a_stored_state_restores_and_continues_exactly(stored, name, route, cut):
    directory, expected = stored
    holder = Holder(name)
    target = holder.restore(files_of(directory / f"{name}@{cut}"), route)
    want = expected[f"{name}@{cut}"]
    got = [observe(target, holder.step(target, op)) for op in holder.script()[cut:]]
    assert got == want


@pytest.mark.parametrize("case", list(compat.CASES))
def test_a_stored_general_runtime_restores_and_continues_exactly(stored, case):
    directory, expected = stored
    rt = WindowRuntime.restore((directory / compat_name(case) / "state.bin").read_bytes())
    ops = compat.script(compat.CASES[case][5])[COMPAT_CUT:]
    assert [compat.observe(rt, compat.apply(rt, op)) for op in ops] == expected[compat_name(case)]


@pytest.mark.parametrize("name", list(CASES))
def test_the_current_format_round_trips_at_every_step(stored, name):
    """Restored from a stored state, then saved and restored again before every step."""
    directory, expected = stored
    holder = Holder(name)
    cut = CUTS[0]
    files = files_of(directory / f"{name}@{cut}")
    for i, op in enumerate(holder.script()[cut:]):
        target = holder.restore(files)
        assert observe(target, holder.step(target, op)) == expected[f"{name}@{cut}"][i], f"step {i}"
        files = holder.save(target)


def test_every_case_reaches_what_it_is_there_for(stored):
    """Not vacuous: each case emits after its cuts; late and rejected rows occur; the stores hold
    several segments and index parts; a bucket holds several runtimes."""
    directory, expected = stored
    for name in CASES:
        for cut in CUTS:
            steps = expected[f"{name}@{cut}"]
            assert any(step["emissions"] for step in steps), (name, cut)
            assert any(step["late"] for step in steps) or isinstance(CASES[name][2][0], CountWindow), (name, cut)
        rejected = [step["rejected"] for step in expected[f"{name}@{CUTS[0]}"]]
        assert any(rejected), name
        if CASES[name][0] == "segments":
            names = [p.name for p in (directory / f"{name}@{CUTS[1]}").iterdir()]
            assert sum(n.startswith(SEGMENT) for n in names) >= 3, name
            assert sum(n.startswith(INDEX) for n in names) >= 3, name
    target = Holder("bucket_general_clocks").restore(files_of(directory / f"bucket_general_clocks@{CUTS[0]}"))
    assert len(target.runtimes) >= 2


@pytest.mark.parametrize("name", list(CASES))
def test_every_writer_seals_plain_data_in_the_envelope(name):
    holder = Holder(name)
    target = holder.make()
    for op in holder.script()[:CUTS[1]]:
        holder.step(target, op)
    blobs = list(holder.save(target).items())
    kinds = set()
    while blobs:
        file, blob = blobs.pop()
        data = plain_data(blob)
        assert set(data) == {"envelope", "kind", "format", "config", "state"}, file
        assert data["envelope"] == ENVELOPE and data["format"] == FORMATS[data["kind"]], file
        kinds.add(data["kind"])
        if data["kind"] == "BucketState":
            blobs += [(f"runtime {k}", b) for k, b in data["state"]["runtimes"].items()]
    general = "WindowRuntime" if holder.cls in (WindowRuntime, KeyedWindowRuntime) else holder.cls.__name__
    want = {"segments": {"SegmentDirectory", "SegmentPiece", "IndexPart"}, "runtime": {general},
            "bucket": {"BucketState", general}}[holder.holder]
    assert kinds == want


def _sealed(kind="FixedFinalRuntime", **changes) -> bytes:
    data = pickle.loads(Holder("fixed_hop").make().snapshot())
    data.update(changes, kind=kind)
    return pickle.dumps(data)


def test_a_state_sqlwin_cannot_read_is_refused_with_a_clear_message():
    with pytest.raises(RuntimeConfigError, match="Unknown snapshot envelope 2"):
        FixedFinalRuntime.restore(_sealed(envelope=2))
    with pytest.raises(RuntimeConfigError, match="FixedFinalRuntime snapshot of format 2: this sqlwin reads formats 1 to 1"):
        FixedFinalRuntime.restore(_sealed(format=2))
    with pytest.raises(RuntimeConfigError, match="Unknown snapshot kind 'Elsewhere'"):
        unseal(_sealed("Elsewhere"))
    with pytest.raises(OtherSnapshotKind, match="A FixedFinalRuntime snapshot, not a WindowRuntime one"):
        WindowRuntime.restore(_sealed())
    with pytest.raises(OtherSnapshotKind, match="not a SessionFinalRuntime one"):
        SessionFinalRuntime.restore(_sealed())
    store = MemoryStore()
    store.directory = _sealed()
    with pytest.raises(OtherSnapshotKind, match="not a SegmentDirectory one"):
        SegmentedState(FixedFinalRuntime, FIXED_HOP + (False,), store)
    legacy = pickle.loads((DATA / "snapshots_v2" / "segments_fixed@9" / "directory.bin").read_bytes())
    store.directory = pickle.dumps(dict(legacy, version=3))
    with pytest.raises(RuntimeConfigError, match="Unknown segmented state version 3"):
        SegmentedState(FixedFinalRuntime, FIXED_HOP + (False,), store)
    with pytest.raises(RuntimeConfigError, match="Not a sqlwin snapshot"):
        unseal(pickle.dumps([1, 2, 3]))


if __name__ == "__main__" and len(sys.argv) == 3 and sys.argv[1] == "--write":
    write(pathlib.Path(sys.argv[2]))


def test_general_state_in_segments_carries_on_where_the_query_is_now_vectorised(stored):
    """A bucket whose segments hold the general runtime's state, opened where the vectorised class
    is now chosen, continues with the general runtime (its state read, not started afresh)."""
    directory, _ = stored
    holder = Holder("bucket_general_tumble")
    config, integral = operator_config(holder.name), INTEGRAL[holder.width]
    store = MemoryStore()
    moved = SegmentedBucket(config, integral, FixedFinalRuntime, store,
                            legacy=files_of(directory / f"bucket_general_tumble@{CUTS[0]}")["state.bin"])
    assert moved.general and moved.state.key_count > 0
    reopened = SegmentedBucket(config, integral, FixedFinalRuntime, store)
    assert reopened.general and reopened.state.runtime_class is KeyedWindowRuntime
    assert reopened.state.key_count == moved.state.key_count

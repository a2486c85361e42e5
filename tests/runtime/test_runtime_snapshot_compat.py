"""Checkpoints written by earlier code restore and continue exactly.

tests/runtime/data/snapshots_v1/ holds snapshots written by the general runtime as it was at
commit e4dc70f (one class, state pickled as `_KeyState` / `_Window` / `Clock` objects whose
slots were zipped by position), taken part-way through the scripted streams below, and what
that code emitted and showed from there on (expected.json.gz, gzipped JSON). A checkpoint of a
running query holds such blobs, so the runtime must read them for as long as such checkpoints
may exist.

The files were written by `python tests/runtime/test_runtime_snapshot_compat.py --write` with
that code; running it now would write the current format instead, so do not regenerate them:
add a directory for a new format instead.
"""

from __future__ import annotations

import gzip
import json
import pathlib
import sys

import pytest

from sqlwin.ir import (
    UNBOUNDED, CountWindow, Cumulate, EmitSpec, GlobalWindow, Hop, Session, Slide, Tumble, WatermarkSpec,
)
from sqlwin.runtime import AggregateSpec, WindowRuntime

DATA = pathlib.Path(__file__).parent / "data" / "snapshots_v1"
S = 1_000_000
MIN = 60 * S

COUNT, SUM = AggregateSpec("count"), AggregateSpec("sum", 0)
ALL = (AggregateSpec("count"), AggregateSpec("count", 1), AggregateSpec("sum", 0), AggregateSpec("min", 0),
       AggregateSpec("max", 0), AggregateSpec("avg", 2), AggregateSpec("collect_list", 0),
       AggregateSpec("collect_list", 1, order=((0, True, False),)), AggregateSpec("first", 1),
       AggregateSpec("last", 1), AggregateSpec("min_by", 1, 0), AggregateSpec("max_by", 1, 0),
       AggregateSpec("count_distinct", 1))

# name: (windower, watermark, emit, aggregates, processing_time, times): every field of the old
# state is reached by some case (tombstones, SLIDE's rows, DISCARDING's delta, fired values,
# closed windows kept for lateness, count positions, Bytewax clocks, idle bookkeeping).
CASES = {
    "tumble_final_all_aggregates": (Tumble(10 * S), {"delay": 2 * S}, EmitSpec(), ALL, False, True),
    "hop_changes_lateness": (Hop(10 * S, 4 * S), {"delay": 3 * S},
                             EmitSpec(final=False, changes=True, allowed_lateness=6 * S), (COUNT, SUM), False, True),
    "session_retracting": (Session(5 * S), {"delay": 8 * S},
                           EmitSpec(early_rows=1, accumulation="RETRACTING", allowed_lateness=10 * S),
                           (COUNT, SUM, AggregateSpec("collect_list", 0)), False, True),
    "session_discarding_interval": (Session(4 * S), {"delay": S, "lateness_rule": "before_watermark"},
                                    EmitSpec(early_interval=5 * S, accumulation="DISCARDING",
                                             allowed_lateness=4 * S, late_interval=3 * S), ALL, False, True),
    "slide_discarding": (Slide(6 * S), {"delay": 2 * S}, EmitSpec(early_rows=2, accumulation="DISCARDING"),
                         (COUNT, SUM, AggregateSpec("collect_list", 0)), False, True),
    "count_changes": (CountWindow(3, 2), {}, EmitSpec(final=False, changes=True, only_updated=True),
                      (COUNT, SUM, AggregateSpec("collect_list", 0)), False, False),
    "count_gaps_final": (CountWindow(2, 3), {}, EmitSpec(), (COUNT, AggregateSpec("first", 0)), False, True),
    "global_early_interval": (GlobalWindow(), {"idle_timeout": 30 * S}, EmitSpec(early_interval=7 * S),
                              (COUNT, SUM), False, False),
    "bytewax_idle": (Tumble(10 * S), {"strategy": "bytewax", "delay": 15 * S, "idle_timeout": 10 * S},
                     EmitSpec(late_rows=2, allowed_lateness=5 * S), (COUNT, SUM), False, True),
    "cumulate_stream_min": (Cumulate(5 * S, 20 * S), {"scope": "stream", "strategy": "min_event_time"},
                            EmitSpec(early_rows=3, only_updated=True), (COUNT, SUM), False, True),
    "event_time_idle": (Tumble(8 * S), {"idle_timeout": 15 * S, "idle_clock": "event_time"},
                        EmitSpec(accumulation="RETRACTING", early_rows=2), (COUNT, SUM), False, True),
    "processing_time_session": (Session(6 * S), {"idle_timeout": 25 * S}, EmitSpec(early_rows=2),
                                (COUNT, SUM), True, False),
    "unbounded_stream_hop": (Hop(6 * S, 9 * S), {"delay": UNBOUNDED, "scope": "stream"}, EmitSpec(),
                             (COUNT, AggregateSpec("collect_list", 0)), False, True),
}
CUTS = (7, 19, 31)


def script(times: bool):
    """A mixed stream: three keys, out-of-order and late rows, NULLs, timer advances, the end."""
    ops = []
    for i in range(36):
        t = (i * 3 + (7 if i % 5 == 0 else 0) - (9 if i % 7 == 3 else 0) - (25 if i % 11 == 6 else 0)) * S
        key = ("a", 1) if i % 3 else ("b", 2)
        values = (i, None if i % 4 == 1 else f"v{i % 6}", i * 0.5)
        batch = [(key, t if times else None, values), (("a", 1), (t + S) if times else None, (100 + i, "w", None))]
        if i % 4 == 2:
            batch.append((("c", 3), (t - 4 * S) if times else None, (-i, f"v{i % 3}", 1.25)))
        if i == 11:
            batch.append((None, t, (-1, None, None)))
        if i == 13 and times:
            batch.append((("c", 3), None, (-2, None, None)))
        ops.append(("batch", batch, (i * 3) * S))
        if i % 6 == 5:
            ops.append(("advance", None, (i * 3 + 2) * S))
    ops.append(("advance", None, 500 * S))
    ops.append(("end", None, None))
    return ops


def make(name) -> WindowRuntime:
    windower, watermark, emit, aggregates, processing_time, _ = CASES[name]
    return WindowRuntime(windower, WatermarkSpec(**watermark), emit, list(aggregates), processing_time)


def apply(rt, op):
    kind, batch, when = op
    if kind == "batch":
        return rt.process_batch(batch, when)
    return rt.advance_processing_time(when) if kind == "advance" else rt.end_of_input()


def observe(rt, result) -> list:
    """What one step produced and the state it left, as JSON values."""
    keys = [(), ("a", 1), ("b", 2), ("c", 3)]
    return json.loads(json.dumps({
        "emissions": [[e.key, e.window_start, e.window_end, e.values, e.op, e.firing, e.seq, e.window_index]
                      for e in result.emissions],
        "late": [[r.key, r.event_time, r.values, r.late_by_us, r.window_start, r.window_end] for r in result.late],
        "rejected": [[r.key, r.event_time, r.values, r.reason] for r in result.rejected],
        "watermarks": [rt.watermark(k) for k in keys],
        "open": [rt.open_windows(k) for k in keys],
        "open_window_count": rt.open_window_count,
        "key_count": rt.key_count,
        "key_watermarks": rt.key_watermarks(),
        "counts": rt.counts,
    }))


def blob_path(name, cut) -> pathlib.Path:
    return DATA / f"{name}@{cut}.bin"


def write() -> None:
    """Run with the code whose snapshot format is to be kept (see the module docstring)."""
    DATA.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name in CASES:
        ops = script(CASES[name][5])
        for cut in CUTS:
            rt = make(name)
            for op in ops[:cut]:
                apply(rt, op)
            blob_path(name, cut).write_bytes(rt.snapshot())
            expected[f"{name}@{cut}"] = [observe(rt, apply(rt, op)) for op in ops[cut:]]
    text = json.dumps(expected, sort_keys=True, separators=(",", ":")) + "\n"
    (DATA / "expected.json.gz").write_bytes(gzip.compress(text.encode(), mtime=0))


@pytest.fixture(scope="module")
def expected():
    return json.loads(gzip.decompress((DATA / "expected.json.gz").read_bytes()))


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", list(CASES))
def test_an_old_snapshot_restores_and_continues_exactly(name, cut, expected):
    windower, watermark, emit, aggregates, processing_time, times = CASES[name]
    blob = blob_path(name, cut).read_bytes()
    rt = WindowRuntime.restore(blob, windower, WatermarkSpec(**watermark), emit, list(aggregates), processing_time)
    ops = script(times)[cut:]
    want = expected[f"{name}@{cut}"]
    assert [observe(rt, apply(rt, op)) for op in ops] == want
    # Once restored, its own snapshots (the current format) carry on just as well, at every step.
    rt = WindowRuntime.restore(blob)
    for i, op in enumerate(ops):
        rt = WindowRuntime.restore(rt.snapshot())
        assert observe(rt, apply(rt, op)) == want[i], f"step {i}"


def test_every_case_reaches_what_it_is_there_for(expected):
    """The cases are not vacuous: each emits after its cut, and late and rejected rows occur."""
    for name in CASES:
        for cut in CUTS:
            steps = expected[f"{name}@{cut}"]
            assert any(step["emissions"] for step in steps), (name, cut)
    assert any(step["late"] for steps in expected.values() for step in steps)
    assert any(step["rejected"] for steps in expected.values() for step in steps)
    assert any(e[4] == "-D" for steps in expected.values() for step in steps for e in step["emissions"])


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    write()

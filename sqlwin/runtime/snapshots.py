"""Every state sqlwin checkpoints, in one envelope: bytes a restarted query continues from.

Every writer seals its state with `seal(kind, state, config)`: a pickled dict

    {"envelope": 1, "kind": what it is, "format": the kind's format, "config": ..., "state": ...}

whose state is plain data (dicts, lists, tuples, NumPy arrays, the IR's frozen dataclasses): no
class of the runtime is pickled, so moving or reshaping a class does not break a checkpoint, and
a field a newer writer adds takes its default when an older state lacks it. Every reader opens
blobs with `unseal(blob, *kinds)`, which also reads each shape written before the envelope (kept
as fixtures in tests/runtime/data/, tests/runtime/test_state_formats.py) into the same
(kind, format, config, state), the state upgraded to the kind's current format. A blob of another
kind is refused with OtherSnapshotKind, an unknown envelope or a newer format with
RuntimeConfigError (both sqlwin's own RuntimeConfigError).

Kinds, their current format, and what their state holds:

    WindowRuntime        2  the general runtime (engine.py; also a window join, whose rows its
                            window_join aggregate keeps, and KeyedWindowRuntime's whole state).
                            config (windower, watermark, emit, aggregates, processing_time); state:
                            keys [(key, its KeyState fields, windows a list of Window fields)],
                            clocks {"keys": [(key, Clock fields)], "stream": Clock fields}, now,
                            last_activity, max_event, row_seq, emit_seq, ended, counts.
                            Format 1 (e4dc70f and earlier) pickled the runtime's `_KeyState`,
                            `_Window` and `Clock` objects: read by their slot orders of that time
                            (frozen below). Format 2 before the envelope: {"version": 1,
                            "format": 2, "config", "state"}.
    FixedFinalRuntime    1  a vectorised runtime (vector.py), config as above; state: the
    CountFinalRuntime    1  arrays and values its _STATE names (keys, first-seen numbers, clocks,
    SessionFinalRuntime  1  windows and accumulators as columns, tombstones, sequences, counts).
                            Before the envelope: {"version": 1, "kind": class, "config", "state"}.
    SegmentDirectory     2  a bucket's segmented state (segments.py), config the runtime's;
                            state: runtime (class name), globals (the runtime's globals_state),
                            segments {id: summary}, open, next_segment, and the index's extendible
                            hashing (depth, parts_of, parts, next_part). Before the envelope:
                            {"version": 2, "kind": class, "config", "globals", ...}.
    SegmentPiece         1  the state of a segment's keys (the runtime's key_piece). Before the
                            envelope: the piece dict, bare.
    IndexPart            1  (sorted key hashes, their segments), two arrays. Before: the tuple, bare.
    BucketState          1  a bucket's one value (spark/operator.py): now, runtimes {clock key: a
                            sealed runtime}, ended_counts. Before: that dict, bare.
    DriverState          1  a stream's state held on the driver after one micro-batch
                            (spark/driver_state.py): batch, buckets {bucket id: {"value", "directory":
                            sealed blobs, "segment" / "index": {id: sealed blob}}}. No earlier shape.
"""

from __future__ import annotations

import io
import pickle
import typing as t
from dataclasses import dataclass, replace

from sqlwin.runtime.model import RuntimeConfigError

ENVELOPE = 1
FORMATS = {"WindowRuntime": 2, "FixedFinalRuntime": 1, "CountFinalRuntime": 1, "SessionFinalRuntime": 1,
           "SegmentDirectory": 2, "SegmentPiece": 1, "IndexPart": 1, "BucketState": 1, "DriverState": 1}
CONFIG_NAMES = ("windower", "watermark", "emit", "aggregates", "processing_time")
_NEWER = "a state written by a newer sqlwin: run that version, or restart from a fresh checkpoint location"


class OtherSnapshotKind(RuntimeConfigError):
    """A blob of another kind than the reader's (a caller may restore it with that kind's class)."""


@dataclass(frozen=True)
class Sealed:
    """An opened blob: what it is, the format it was written in, and its state in the current one."""

    kind: str
    format: int
    config: t.Any
    state: t.Any


def seal(kind: str, state, config=None) -> bytes:
    """A state of `kind` (a key of FORMATS, in its current format) as bytes."""
    return pickle.dumps({"envelope": ENVELOPE, "kind": kind, "format": FORMATS[kind], "config": config,
                         "state": state}, protocol=pickle.HIGHEST_PROTOCOL)


def unseal(blob: bytes, *kinds: str) -> Sealed:
    """A blob written by `seal` or by a writer before the envelope, as the kind's current format.
    `kinds`: what the caller reads; another kind raises OtherSnapshotKind."""
    data = _LegacyUnpickler(io.BytesIO(blob)).load()
    if isinstance(data, dict) and "envelope" in data:
        if data["envelope"] != ENVELOPE:
            raise RuntimeConfigError(f"Unknown snapshot envelope {data['envelope']!r}", hint=_NEWER)
        opened = Sealed(data["kind"], data["format"], data["config"], data["state"])
    else:
        opened = _legacy(data)
    if kinds and opened.kind not in kinds:
        raise OtherSnapshotKind(f"A {opened.kind} snapshot, not a {' or '.join(kinds)} one")
    current = FORMATS.get(opened.kind)
    if current is None:
        raise RuntimeConfigError(f"Unknown snapshot kind {opened.kind!r}", hint=_NEWER)
    if not isinstance(opened.format, int) or not 1 <= opened.format <= current:
        raise RuntimeConfigError(f"A {opened.kind} snapshot of format {opened.format!r}: this sqlwin reads "
                                 f"formats 1 to {current}", hint=_NEWER)
    if opened.kind == "WindowRuntime" and opened.format == 1:
        return replace(opened, state=_from_format_1(opened.state))
    return opened


def _legacy(data) -> Sealed:
    """The shapes written before the envelope (see the module docstring), by their fields."""
    if isinstance(data, tuple) and len(data) == 2:
        return Sealed("IndexPart", 1, None, data)
    if not isinstance(data, dict):
        raise RuntimeConfigError(f"Not a sqlwin snapshot: a {type(data).__name__}")
    if "runtimes" in data and "now" in data:
        return Sealed("BucketState", 1, None, data)
    if "globals" in data and "segments" in data:
        if data.get("version") != 2:
            raise RuntimeConfigError(f"Unknown segmented state version {data.get('version')!r}", hint=_NEWER)
        state = {name: value for name, value in data.items() if name not in ("version", "kind", "config")}
        return Sealed("SegmentDirectory", 2, data["config"], dict(state, runtime=data["kind"]))
    if "keys" in data and "version" not in data:
        return Sealed("SegmentPiece", 1, None, data)
    if data.get("version") != 1:
        raise RuntimeConfigError(f"Unknown runtime snapshot version {data.get('version')!r}", hint=_NEWER)
    if "kind" in data:
        return Sealed(data["kind"], 1, data["config"], data["state"])
    return Sealed("WindowRuntime", data.get("format", 1), data["config"], data["state"])


def check_restored_config(stored: tuple, given: tuple) -> None:
    """A snapshot's (windower, watermark, emit, aggregates, processing_time) against the query's
    now (None: not given); any difference is an error naming what changed."""
    for name, mine, theirs in zip(CONFIG_NAMES, given, stored):
        if name == "aggregates" and mine is not None:
            mine = tuple(mine)
        if mine is not None and mine != theirs:
            raise RuntimeConfigError(
                f"The query's {name} changed since the checkpoint: {theirs!r} then, {mine!r} now",
                hint="restart from a fresh checkpoint location when the window definition changes")


# --------------------------------------------------------------------------- format 1

# The slots of format 1's objects, in the order their tuples hold them. Frozen: this is what
# checkpoints written then contain.
_WINDOW_SLOTS_1 = ("start", "end", "last", "acc", "delta", "pending", "early_count", "late_count",
                   "fired", "fired_values", "closed", "first_time", "last_time", "full")
_KEY_SLOTS_1 = ("windows", "rows", "tombstones", "count", "last_activity", "last_event")
_CLOCK_SLOTS_1 = ("raw", "ref_time", "ref_system")


class _Named:
    """An object of format 1, read as the dict of its named slots."""

    slots: tuple[str, ...] = ()

    def __setstate__(self, state: tuple) -> None:
        self.fields = dict(zip(self.slots, state))


class _Window1(_Named):
    slots = _WINDOW_SLOTS_1


class _KeyState1(_Named):
    slots = _KEY_SLOTS_1


class _Clock1(_Named):
    slots = _CLOCK_SLOTS_1


_FORMAT_1_CLASSES = {
    ("sqlwin.runtime.engine", "_Window"): _Window1,
    ("sqlwin.runtime.engine", "_KeyState"): _KeyState1,
    ("sqlwin.runtime.clock", "Clock"): _Clock1,
}


class _LegacyUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str):
        legacy = _FORMAT_1_CLASSES.get((module, name))
        return legacy if legacy is not None else super().find_class(module, name)


def _from_format_1(old: dict) -> dict:
    keys = []
    for key, ks in old["_keys"].items():
        fields = dict(ks.fields)
        # A window's id was its dict key; for COUNT_WINDOW that is its number.
        fields["windows"] = [dict(w.fields, number=wid) for wid, w in fields["windows"].items()]
        keys.append((key, fields))
    return {
        "keys": keys,
        "clocks": {"keys": [(key, clock.fields) for key, clock in old["_clocks"].items()],
                   "stream": old["_stream_clock"].fields},
        "now": old["_now"],
        "last_activity": old["_last_activity"],
        "max_event": old["_max_event"],
        "row_seq": old["_row_seq"],
        "emit_seq": old["_emit_seq"],
        "ended": old["_ended"],
        "counts": old["counts"],
    }

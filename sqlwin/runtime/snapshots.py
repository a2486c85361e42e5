"""The general runtime's snapshots: bytes a restarted query continues from.

A snapshot is a pickled dict {"version": 1, "format": 2, "config": (windower, watermark, emit,
aggregates, processing_time), "state": ...} whose state is plain data with named fields: no class
of the runtime is pickled, so moving or reshaping a class does not break a checkpoint, and a
field a newer runtime adds takes its default when an older snapshot lacks it. The state:

    keys          [(key, the key's state: its KeyState fields, windows a list of Window fields)]
    clocks        {"keys": [(key, Clock fields)], "stream": Clock fields}
    now, last_activity, max_event, row_seq, emit_seq, ended, counts

Snapshots written before (no "format"; e4dc70f and earlier) pickled the runtime's `_KeyState`,
`_Window` and `Clock` objects, each as a tuple of its slots in their order then. They are read
here, their tuples named by the slot orders of that time (frozen below), into the same state.
"""

from __future__ import annotations

import io
import pickle

from sqlwin.runtime.model import RuntimeConfigError

SNAPSHOT_VERSION = 1  # the envelope: {"version", "config", "state"}
FORMAT = 2  # the state: named fields (1, implicit: the runtime's objects, slots by position)
CONFIG_NAMES = ("windower", "watermark", "emit", "aggregates", "processing_time")


def dump(config: tuple, state: dict) -> bytes:
    return pickle.dumps({"version": SNAPSHOT_VERSION, "format": FORMAT, "config": config, "state": state},
                        protocol=pickle.HIGHEST_PROTOCOL)


def load(blob: bytes) -> tuple[tuple, dict]:
    """(config, state with named fields) of a snapshot of either format."""
    data = _LegacyUnpickler(io.BytesIO(blob)).load()
    if data.get("version") != SNAPSHOT_VERSION:
        raise RuntimeConfigError(f"Unknown runtime snapshot version {data.get('version')!r}")
    form = data.get("format", 1)
    if form == FORMAT:
        return data["config"], data["state"]
    if form == 1:
        return data["config"], _from_format_1(data["state"])
    raise RuntimeConfigError(f"Unknown runtime snapshot format {form!r}",
                             hint="a snapshot written by a newer sqlwin")


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

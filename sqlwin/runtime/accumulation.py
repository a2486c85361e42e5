"""Accumulation: how a window's rows become what its firings show (Beam's AccumulationMode).

ACCUMULATING: every firing is the whole window; the first is '+I', later ones '+U'.
DISCARDING: every firing holds only the rows since the window's last firing, always '+I'; a pane
without new rows is not emitted. RETRACTING: accumulating, and a changed firing is '-U' (the
previous values) then '+U'; an unchanged firing emits nothing; a session replaced by a merge is
retracted with '-D'. ONLY UPDATED (AP-09): skip a firing whose values equal the previous one's.

The aggregates' states of a window live in `Window.acc` (and `Window.delta` when discarding);
aggregates.py has the aggregates themselves. When a window fires is the trigger's (triggers.py).
"""

from __future__ import annotations

import typing as t

from sqlwin.ir import Accumulation, EmitSpec
from sqlwin.runtime.aggregates import Aggregate
from sqlwin.runtime.model import CHANGES, DELETE, EARLY, INSERT, LATE, UPDATE_AFTER, UPDATE_BEFORE

MODES = t.get_args(Accumulation)


def _none() -> None:
    return None


class Accumulation:
    """The aggregates of a query (aggregates.py) and its accumulation mode. `write(out, key, start,
    end, values, op, firing, index)` writes one emission (the runtime numbers them)."""

    def __init__(self, aggregates: t.Sequence[Aggregate], emit: EmitSpec, write: t.Callable):
        self.aggregates = tuple(aggregates)
        self.discarding = emit.accumulation == "DISCARDING"
        self.retracting = emit.accumulation == "RETRACTING"
        self.only_updated = emit.only_updated
        self.changes = emit.changes
        self._write = write
        self._adds = tuple(agg.add for agg in self.aggregates)
        self._inits = tuple(agg.init for agg in self.aggregates)
        self._results = tuple(agg.result for agg in self.aggregates)
        # A window's pane of rows since its last firing: only DISCARDING keeps one.
        self.delta = self.init if self.discarding else _none

    def init(self) -> list:
        """Fresh states of every aggregate."""
        return [init() for init in self._inits]

    def add(self, window, time, seq, values) -> None:
        """One row into a window (and into its pane, when DISCARDING); counts it for the trigger
        (since the last firing, open or closed)."""
        adds = self._adds
        window.acc = [add(s, time, seq, values) for add, s in zip(adds, window.acc)]
        if self.discarding:
            window.delta = [add(s, time, seq, values) for add, s in zip(adds, window.delta)]
        window.pending += 1
        if window.closed:
            window.late_count += 1
        else:
            window.early_count += 1

    def absorb(self, window, old) -> None:
        """A session merge: `old`'s rows and unfired counts join `window`."""
        aggs = self.aggregates
        window.acc = [agg.merge(a, b) for agg, a, b in zip(aggs, window.acc, old.acc)]
        if self.discarding:
            window.delta = [agg.merge(a, b) for agg, a, b in zip(aggs, window.delta, old.delta)]
        window.pending += old.pending
        window.early_count += old.early_count
        window.late_count += old.late_count

    def replaced(self, out, key, old, merged) -> None:
        """A session a merge replaced: under RETRACTING, if it had fired, its last values go with
        '-D' (firing 'changes' under EMIT CHANGES, else 'late' if the merged session is already
        closed, else 'early')."""
        if self.retracting and old.fired:
            firing = CHANGES if self.changes else LATE if merged.closed else EARLY
            self._write(out, key, old.start, old.end, old.fired_values, DELETE, firing, None)

    def fire(self, out, key, window, firing: str, wanted: bool = True) -> None:
        """One trigger firing of a window, shaped by the accumulation mode and ONLY UPDATED.
        A firing starts a new pane: the trigger's row counts start again (even when unwanted)."""
        new_rows = window.pending
        window.pending = window.early_count = window.late_count = 0
        discarding = self.discarding
        if not wanted or (discarding and not new_rows):
            return  # a DISCARDING pane without new rows is empty
        values = tuple([result(s) for result, s in zip(self._results, window.delta if discarding else window.acc)])
        if discarding:
            window.delta = self.init()
        start, end = window.bounds()
        index = window.number
        fired = window.fired
        if fired and (self.only_updated or self.retracting) and values == window.fired_values:
            return  # AP-09; a changelog has nothing to say about an unchanged result
        if discarding or not fired:
            self._write(out, key, start, end, values, INSERT, firing, index)
        else:
            if self.retracting:
                self._write(out, key, start, end, window.fired_values, UPDATE_BEFORE, firing, index)
            self._write(out, key, start, end, values, UPDATE_AFTER, firing, index)
        window.fired, window.fired_values = True, values


RETRACTIONS = ("-U", "-D")


def apply_changelog(changes: t.Iterable[tuple[t.Hashable, str, t.Any]]) -> dict:
    """The table a changelog leaves, for a changelog of (row identity, op, values) in emission
    order: per identity the last change, unless that change retracts the row ('-U' not followed
    by its '+U', or '-D'). A RETRACTING changelog and an ACCUMULATING one (read as upserts) both
    fold this way; `sw.apply_changelog` is the same rule in Spark (sqlwin/spark/changelog.py)."""
    table: dict = {}
    for identity, op, values in changes:
        if op in RETRACTIONS:
            table.pop(identity, None)
        else:
            table[identity] = values
    return table

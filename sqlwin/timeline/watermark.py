"""The watermark a timeline draws, per lane and arrival batch, and the check that it explains
every on-time firing.

The watermark is not part of the engine's output (a replay's records hold its emissions and late
rows, not its clocks), so it is recomputed here from the rows with the rule of docs/semantics.md
and sqlwin/runtime/clock.py: per clock (the PARTITION BY key, or the stream), at each arrival
batch that brings it rows, the watermark becomes the newest (`max_event_time`) or oldest
(`min_event_time`) event time of the batch's rows that were not late for every window they
belong to, if that is beyond it, minus the `DELAY OF`; the batch's own rows were checked against
the value before it. With processing time the clock is each batch's recorded arrival time minus
the delay. Not drawn: the `bytewax` strategy's watermark, which ages with system time, an idle
timeout's jump and `DELAY OF UNBOUNDED` (a note under the title says so). Every on-time firing
is checked against the recomputed watermark; a disagreement is named in a note rather than drawn
silently.
"""

from __future__ import annotations

import typing as t

from sqlwin.ir import UNBOUNDED

if t.TYPE_CHECKING:
    from sqlwin.timeline.model import Timeline


def effective_watermarks(spec, processing_time: bool, lanes: list[tuple], positions: list[int],
                         rows_by_owner: dict, batch_times: dict, notes: list[str]) -> dict:
    """The effective watermark per lane after each batch that moved it, [(batch, watermark)].
    `spec`: the replay's WatermarkSpec; `rows_by_owner`: per clock owner (the lane keys at
    `positions`), its rows as (batch, time, fully late); what is not drawn is said in `notes`."""
    if spec.delay >= UNBOUNDED:
        notes.append("DELAY OF UNBOUNDED: no window closes before the end of input; no watermark drawn")
        return {}
    if processing_time:
        steps = [(b, time - spec.delay) for b, time in sorted(batch_times.items()) if time is not None]
        return {lane: steps for lane in lanes}
    if spec.strategy == "bytewax":
        notes.append("the bytewax strategy's watermark ages with system time: not drawn")
        return {}
    if spec.idle_timeout is not None:
        notes.append("an idle timeout moves the watermark without rows: the drawn watermark leaves those "
                     "jumps out")
    pick = min if spec.strategy == "min_event_time" else max
    by_owner = {}
    for owner, rows in rows_by_owner.items():
        raw, steps, batches = None, [], {}
        for batch, time, fully_late in rows:
            if time is not None and not fully_late:
                batches.setdefault(batch, []).append(time)
        for batch in sorted(batches):
            candidate = pick(batches[batch])
            if raw is None or candidate > raw:
                raw = candidate
                steps.append((batch, raw - spec.delay))
        by_owner[owner] = steps
    return {lane: by_owner.get(tuple(lane[i] for i in positions), []) for lane in lanes}


def check_watermarks(timeline: "Timeline", emit) -> None:
    """Every on-time firing must be where the recomputed watermark reached its window (`emit`: the
    query's EmitSpec); a firing it does not explain is named in the timeline's notes."""
    if not timeline.watermarks:
        return
    for f in timeline.firings:
        if f.firing != "on_time" or f.batch is None or f.window.end is None or emit.changes:
            continue
        after = timeline.watermark_before(f.lane, f.batch + 1)
        before = timeline.watermark_before(f.lane, f.batch)

        def reached(mark):
            return mark is not None and (mark > f.window.end if f.window.inclusive_end else mark >= f.window.end)

        if not reached(after) or (reached(before) and not emit.allowed_lateness):
            timeline.notes.append(f"the drawn watermark does not explain {timeline.window_text(f.window)} "
                                  f"firing after batch {f.batch} (recomputed, not the engine's own)")

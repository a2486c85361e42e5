"""sqlwin's window state machine: what a live stream processor emits, micro-batch by micro-batch.

Pure Python (no Spark). The replay over a recorded stream and the Structured Streaming
operator both drive it; everything is in integer MICROSECONDS (an epoch-ms time column is
multiplied by 1000 by the caller, and results divided back).

API
---
    from sqlwin.runtime import WindowRuntime, AggregateSpec, Emission, LateRow
    rt = WindowRuntime(windower, watermark: WatermarkSpec, emit: EmitSpec,
                       aggregates: Sequence[AggregateSpec], processing_time: bool = False)
    out = rt.process_batch(rows, batch_time_us)   # rows: iterable of (key: tuple, event_time_us | None, values: tuple)
    out = rt.advance_processing_time(now_us)      # timers only: idle timeouts, processing-time windows, intervals
    out = rt.end_of_input()                       # closes every window; the runtime then refuses input
    rt.watermark(key=()) -> int | None | inf      # the effective watermark governing `key`
    rt.open_windows(key=()) -> [(start, end)]     # windows held (open, or kept for allowed lateness)
    rt.counts                                     # rows, late, rejected, unassigned, emissions
    blob = rt.snapshot(); rt2 = WindowRuntime.restore(blob[, windower, watermark, emit, aggregates, processing_time])

`out` is a `BatchResult`: `.emissions` (list[Emission]), `.late` (list[LateRow]), `.rejected`
(list[RejectedRow]: NULL key, or NULL time where the windower needs one). An `Emission` carries
key, window_start, window_end, values (one per AggregateSpec), op ('+I', '-U', '+U', '-D'),
firing ('early', 'on_time', 'late', 'changes', 'final'), seq (strictly increasing over the
runtime's life, snapshots included) and window_index (COUNT_WINDOW's window number j, from 0, as
the batch lowering's window_index column; None for other windowers). Windowers, `WatermarkSpec`
and `EmitSpec` are sqlwin.sql.plan's. Configuration the runtime cannot compute raises
`RuntimeConfigError` (a ValueError and a SqlwinValidationError).

Code
----
engine.py: `WindowRuntime`, the loop over batches, rows, keys and timers; windows.py: a logic
class per window kind (which windows a row joins, lateness, closing, session merges) with its
per-key state; triggers.py: when windows fire; accumulation.py: what a firing holds;
aggregates.py; clock.py: event-time clocks; snapshots.py: the one envelope every state is sealed
in (and the shapes written before it); model.py: inputs and outputs. vector.py runs the common
shapes over columns in NumPy, segments.py keeps its state in pieces of keys.

Time and watermarks
-------------------
* Clocks. Scope 'key': every key has its own clock (Bytewax, Quix, VoltSP with a key); a row
  never closes another key's window (BW-09, QX-19). Scope 'stream': one clock for all keys (Spark,
  VoltSP without a key).
* Strategies (WatermarkSpec.strategy), applied when a batch COMMITS, to the rows of the batch
  that were not late for every window they belong to:
  'max_event_time': watermark = max(previous, newest time of the batch);
  'min_event_time': watermark = max(previous, oldest time of the batch) (VoltSP's default);
  'bytewax': watermark = newest pushing timestamp + system time elapsed since it was seen
  (Bytewax's EventClock: a timestamp becomes the reference only when it pushes the watermark,
  so it never goes backwards); the batch time is the system time;
  'ingestion_time': watermark = the processing (ingestion) time, aged before each batch's rows
  are checked, as 'bytewax' is (Apex's watermark a fixed delay behind ingestion time, AP-06).
  Effective watermark = watermark - delay (no clamping at 0: negative times are real times; the
  VoltSP table's "0 (clamped)" is -3 s here, which closes nothing the table's 0 would).
  Bytewax's wait is the delay, so its effective watermark is max_ts - wait + elapsed.
* Rows of a micro-batch are all checked against the watermark as it stood before the batch
  (VS-16). The watermark moves only when a batch with rows commits; without rows it does not
  move, except that 'bytewax' ages with processing time and processing time is its own clock.
  For 'bytewax' the clock is aged to the batch time before the batch's rows are checked.
* Processing time (processing_time=True): every row's time is the batch time; the clock is the
  processing time itself (minus the delay); nothing is ever late; windows close on timers, when
  `process_batch` or `advance_processing_time` brings the time to their end (VS-05, BW-11).
  Not deterministic across restarts (BW-13).

Closing, lateness, allowed lateness
-----------------------------------
* A window closes when the effective watermark is AT OR BEYOND its end (SLIDE, whose end is
  inclusive: beyond it). Windows closing at one commit are emitted per key, in window_end order,
  then window_start; keys come in the order of their first row in the batch (scope 'key') or of
  their first row ever (scope 'stream', timers, end of input).
* lateness_rule 'window_closed' (Quix, Apex, VoltSP's worked example): a row is late only for
  windows already closed and purged; with HOP a row can join its open windows and be late for
  the others (one LateRow per missed window). 'before_watermark' (Bytewax, VoltSP's strategy
  figures): a row whose time is before the effective watermark is late (equal is on time), for
  every window it belongs to. late_by_us = effective watermark - event time.
* Allowed lateness L (EmitSpec.allowed_lateness): a closed window is kept until the effective
  watermark reaches end + L (the "horizon" is watermark - L; with 'before_watermark' a row is
  late when before the horizon). Rows for a kept window update it and fire it with firing 'late'
  every `late_rows` late rows (default 1 when L > 0 and no late_interval), or at `late_interval`
  ticks; when purged, late rows not yet fired are fired ('late') first. Beyond the horizon rows
  are LateRows (AP-07).
* SESSION lateness: a row is late if the session it would open, [t, t + gap), is already past the
  horizon (no window named), or under 'window_closed' if it overlaps a session already emitted
  and purged (that session is named). SLIDE: a row is late when its own window [t - size, t] is
  past the horizon, under both rules.
* Idle timeout (WatermarkSpec.idle_timeout): with idle_clock 'processing_time' (default), a key
  (scope 'stream': the stream) silent for that long -- measured from the batch time of its last
  row to the time given to process_batch / advance_processing_time -- has every open window
  closed and emitted with firing 'final' (VS-11). Event time: the key's clock jumps past its
  windows, so later rows for them are late, exactly as after a watermark close. Processing time
  and GLOBAL_WINDOW: the windows are emitted and dropped; later rows start new ones.
  idle_clock 'event_time' (scope 'key' only): a key is idle when the stream's newest event time is
  idle_timeout past the key's newest, checked at each commit (VS-12: the clock is a choice; the
  default here is processing time, VoltSP's scenario-4 wording). With processing_time=True both
  clocks are the processing time. COUNT_WINDOWs never idle out.
* End of input: every window closes (firing 'final'), including GLOBAL_WINDOW; partial
  COUNT_WINDOWs are dropped without a firing (as Quix and Flink). A future outlier holds its own
  window until the watermark reaches it or the input ends (VS-13).

Firings and accumulation
------------------------
* EmitSpec.final: one firing when the window closes ('on_time'; 'final' when the close came from
  end of input or an idle timeout rather than from time reaching its end).
* EmitSpec.changes (Quix current()): after every input row, each window the row touched fires
  ('changes'; 'late' for a window kept by allowed lateness), in window_end order; no firing at
  close. changes=True overrides final.
* early_rows n: a window fires 'early' once n rows arrived since its last firing. early_interval /
  late_interval: ticks at multiples of the interval in processing time, observed when
  process_batch / advance_processing_time is called (as Apex, at micro-batch boundaries); a tick
  fires the windows that received rows since their last firing; several missed ticks fire once.
  Timers due by a batch's time fire before the batch's rows are applied.
* Accumulation: ACCUMULATING -- every firing is the whole window; the first is '+I', later
  ones '+U' (upsert by key and window). DISCARDING -- every firing holds only the rows since the
  window's last firing, always '+I'; a pane without new rows is not emitted. RETRACTING --
  accumulating, and a changed firing is '-U' (the previous values) then '+U'; an unchanged firing
  emits nothing. only_updated (AP-09): skip a firing whose values equal the previous firing's.
* SESSION merges (AP-05): a row whose proto-session [t, t + gap) overlaps sessions merges them
  (and extends them); half-open windows that only touch do not merge, so rows exactly one gap
  apart are in different sessions (BW-07). The merged session is a new window; under RETRACTING
  each replaced session that had fired gets '-D' with its last values (firing 'changes' under
  EMIT CHANGES, else 'late' if the merged session is already closed, else 'early').

Windowers
---------
TUMBLE / HOP / CUMULATE are aligned to offset + n * slide for every integer n (negative times
included); HOP with slide > size leaves gaps whose rows join no window (counted 'unassigned').
SESSION is [first row, last row + gap). SLIDE: one window per distinct row time ts, [ts - size,
ts] both inclusive, holding every row of the key with a time in it, including rows that arrive
later. COUNT_WINDOW: per key, in arrival order, windows of `size` rows every `slide` rows;
positions carry across batches; a window fires 'on_time' when full; its start / end are its first
and last row's time (None without a time column). GLOBAL_WINDOW: one window per key with start
and end None, closed at end of input. COUNT_WINDOW and GLOBAL_WINDOW accept rows without a time.

Aggregates (AggregateSpec(func, arg, arg2, order)): count (count(*) when arg is None, else non-null
count), sum, min, max, avg (NULLs ignored; None when no value), collect_list (non-null values in
event-time order, arrival order on ties; with `order`, (value index, descending, nulls_first)
keys, sorted by those values instead, ties as before: `array_agg(v ORDER BY arrival)` is arrival
order, BX-01), first / last (by event time, arrival order on ties; NULL is a value), min_by /
max_by (values[arg] at the row with the smallest / largest values[arg2]; rows with a NULL
ordering are skipped; ties go to the earliest row), count_distinct.

Rows with a NULL key (None, or a key tuple holding None) are rejected with reason 'null_key',
counted and returned (QX-20).
"""

from sqlwin.runtime.engine import WindowRuntime
from sqlwin.runtime.model import (
    AggregateSpec,
    BatchResult,
    Emission,
    LateRow,
    RejectedRow,
    RuntimeConfigError,
)

__all__ = [
    "AggregateSpec",
    "BatchResult",
    "Emission",
    "LateRow",
    "RejectedRow",
    "RuntimeConfigError",
    "WindowRuntime",
]

"""The handle of a running stream (StreamingWindowQuery): Spark's StreamingQuery, where its
results go, and its figures as the sink writer recorded them in the checkpoint; waiting for it,
ending its input, stopping it, its failures in sqlwin's words.
"""

from __future__ import annotations

import json
import os
import typing as t
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlwin.spark import supervision
from sqlwin.spark.checkpoint import CONTROL, load_batches, load_progress
from sqlwin.spark.operator import END_OF_INPUT
from sqlwin.spark.stateful_query import StatefulQuery
from sqlwin.spark.stream_sources import rows_read

if t.TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

    from sqlwin.sql.around import Around

SOURCES = -1  # bucket_stats' entry for what the sources rejected before any bucket (malformed rows)
STAGE_COLUMN = "__stage"  # stages side by side: the number of the stage a record comes from


def branch_column(stage: int, name: str) -> str:
    """Stage `stage`'s (2 or more) record column `name` in the union of the branches' records."""
    return f"__s{stage}{name}"


def row_stages(stages: list[tuple[int, StatefulQuery]]) -> tuple[int, ...]:
    """The stages (numbers) whose rows count as the stream's: of the stages that read the sources
    ((number, query): each branch's first, a chain's first stage), each the first to read its sources."""
    seen: set[str] = set()
    numbers = []
    for number, query in stages:
        sources = {w.source.lower() for w in query.plan.windows}
        if not sources <= seen:
            numbers.append(number)
        seen |= sources
    return tuple(numbers)


@dataclass
class StreamingWindowQuery:
    """A running sqlwin stream: Spark's StreamingQuery plus where its results go."""

    query: "StreamingQuery"
    sink: str
    late_sink: str | None
    checkpoint: str
    buckets: int
    stateful: StatefulQuery
    clock: str = "none"  # 'none' | 'arrival' (recorded arrival_time) | 'processing' (wall clock)
    batches: list[dict] = field(default_factory=list)  # per micro-batch: rows out, late rows
    bucket_stats: dict = field(default_factory=dict)  # bucket -> its figures (operator.stats_record)
    result_schema: t.Any = None  # StructType of the sink's rows, known after the first batch
    late_schema: t.Any = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # this start of the stream
    _records: dict = field(default_factory=dict, repr=False)  # batch record files read so far, by name
    control_buckets: tuple = ()  # the bucket ids every stage of the stream has (end of input reaches each)
    read_twice: tuple = ()  # directories read by two branches, good and malformed rows (read_directory)
    inners: tuple = ()  # a chain's earlier stages, first to last (their records reach the sink carried)
    restart: t.Any = field(default=None, repr=False)  # starts the query again (supervision: a failed worker start)
    supervisor: t.Any = field(default=None, repr=False)  # supervision.Supervisor: the checkpoint's lock, restarts
    around: "Around | None" = None  # SQL around the window functions, run per micro-batch (spark/around.py)
    branches: tuple = ()  # several stages side by side: a Branch each, the first stage's first
    row_stages: tuple = (1,)  # the stages whose rows are the stream's rows (row_stages)

    def refresh(self) -> None:
        """What the sink writer recorded, read back from the checkpoint. The writer runs where
        Spark runs foreachBatch -- this process, or a Spark Connect server's -- so the figures
        travel through the checkpoint either way: one path for both."""
        self.bucket_stats = load_progress(self.checkpoint)
        batches = load_batches(self.checkpoint, self.run_id, self._records)
        if batches:
            self.batches = [{k: v for k, v in b.items() if not k.endswith("_schema")} for b in batches]
            from pyspark.sql.types import StructType

            for name in ("result_schema", "late_schema"):
                known = [b[name] for b in batches if b.get(name)]
                if known:
                    setattr(self, name, StructType.fromJson(json.loads(known[-1])))

    def batch_progress(self, after: int = -1) -> list[dict]:
        """This run's micro-batches after batch `after`, oldest first, each with its own figures as
        the sink writer recorded them when it had written the batch: `rows_in` (rows the batch took
        in), `results`, `late_rows`, `rejected_rows` (NULL key or time, malformed), `late` (rows
        written to the late sink), and the stream after it: `watermark` (the lowest .. highest
        watermark over the keys, in the time column's unit), `keys`, `open_windows`."""
        self.refresh()
        return [b for b in self.batches if b["batch"] > after]

    def batch_figures(self, rows_before: int, kinds: dict[str, int]) -> dict:
        """A micro-batch's own figures (see batch_progress), in the sink writer once the batch's stats
        are kept: `rows_before` is the stream's rows before it (`total("rows")`)."""
        return {"rows_in": self.total("rows") - rows_before, "late_rows": kinds["late"],
                "rejected_rows": kinds["rejected"],
                "watermark": _watermark_range(self.bucket_stats.values(), self.stateful),
                "keys": self.total("keys"), "open_windows": self.total("open_windows")}

    def process_all_available(self, timeout_s: float = 600.0) -> None:
        """Block until every row available now is processed. A stream that failed raises its
        failure (in sqlwin's words when it has them: a directory that cannot be written, a Python
        worker that did not connect back after every attempt to start again)."""
        while True:
            try:
                return self._process_available(timeout_s)
            except Exception as err:  # noqa: BLE001 - said again in sqlwin's words, or raised as it is
                self._recover_or_raise(err)

    def await_termination(self, timeout_s: float | None = None) -> bool | None:
        """Spark's awaitTermination, with the failure raised as `process_all_available` raises it."""
        while True:
            try:
                return self.query.awaitTermination() if timeout_s is None else self.query.awaitTermination(timeout_s)
            except Exception as err:  # noqa: BLE001
                self._recover_or_raise(err)

    def _recover_or_raise(self, err: Exception) -> None:
        """Return when the supervisor started the query again (Spark's Python worker did not connect
        back); else raise the failure, in sqlwin's words when it has them."""
        if self.supervisor is not None and self.supervisor.keep_running():
            return
        failure = supervision.stream_failure(err, self.supervisor.attempts if self.supervisor else None)
        if failure is None:
            raise err
        raise failure from err

    def _process_available(self, timeout_s: float) -> None:
        """With wall-clock timers Spark keeps running timer batches, so `processAllAvailable`
        never returns: wait instead until the source has no data left and no trigger runs -- or, when
        timer batches follow each other with no pause (a chain of stages each with its timers), until a
        micro-batch that began after this call read no rows: Spark runs a batch without rows only when
        its sources have none left, and that batch listed everything written before the call."""
        if self.clock != "processing":
            self.query.processAllAvailable()
            self.refresh()
            return
        import datetime as dt
        import time

        began = dt.datetime.now(dt.timezone.utc)
        deadline = time.monotonic() + timeout_s
        quiet = 0
        while time.monotonic() < deadline:
            status = self.query.status
            if not self.query.isActive:
                self.query.awaitTermination()  # raises the query's failure
                return
            quiet = quiet + 1 if not status["isDataAvailable"] and not status["isTriggerActive"] else 0
            if quiet >= 3 or _drained_since(self.query.lastProgress, began):
                self.refresh()
                return
            time.sleep(0.2)

    def end_input(self) -> None:
        """The stream has ended: close every window (BW-12), as a replay does at the end of its table."""
        control = Path(self.checkpoint) / CONTROL
        rows = [{"__bucket": b, "__control": END_OF_INPUT} for b in self.control_buckets or self.stateful.bucket_ids]
        path = control / f"end-{uuid.uuid4().hex}.json"
        tmp = control / f".{path.name}.tmp"
        tmp.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
        os.replace(tmp, path)
        self.process_all_available()

    def stop(self) -> None:
        """Stop the stream and release its checkpoint (restart later from the same checkpoint)."""
        try:
            self.query.stop()
        finally:
            if self.supervisor is not None:
                self.supervisor.stop()

    @property
    def is_active(self) -> bool:
        if self.supervisor is not None:
            self.supervisor.keep_running()  # a start whose Python worker did not connect back: again
        return self.query.isActive

    def status(self, progress: dict | None = None) -> dict:
        """Figures for a progress line: rows/s, watermark, open state, late rows. `progress`: one
        of Spark's progress reports (`query.recentProgress`) for that batch's own figures (rows
        in, rows/s, watermark, state); the stream's figures are as of now. Default: the last."""
        self.refresh()
        progress = progress if progress is not None else (self.query.lastProgress or {})
        state = (progress.get("stateOperators") or [{}])[0]
        rows_in = rows_read(progress, self.read_twice)
        seconds = ((progress.get("durationMs") or {}).get("triggerExecution") or 0) / 1000
        return {
            "batch": progress.get("batchId"),
            "input_rows": rows_in,
            "rows_per_second": rows_in / seconds if seconds else 0.0,
            "watermark": (progress.get("eventTime") or {}).get("watermark"),
            "state_rows": state.get("numRowsTotal"),
            "state_bytes": state.get("memoryUsedBytes"),
            "results": sum(b["results"] for b in self.batches),
            "keys": self.total("keys"),
            "open_windows": self.total("open_windows"),
            "key_watermarks": _watermark_range(self.bucket_stats.values(), self.stateful),
            "late_rows": self.total("late"),
            "rejected_rows": self.total("rejected"),  # NULL key or time, malformed: routed with LATE ROWS INTO
            "rows": self.total("rows"),  # rows in = rows in windows + late rows + rejected rows
            "stages": self.stage_figures(),
        }

    def total(self, figure: str, stage: int | None = None) -> int:
        """A figure summed over the buckets (of one `stage` of a chain): the stream's whole life,
        restarts included. A chain's rows are its first stage's (the second's are its results)."""
        entries = [s for b, s in self.bucket_stats.items() if stage is None or s.get("stage", 1) == stage]
        if figure != "rows":
            return sum(s.get(figure) or 0 for s in entries)
        # Every row taken in: a bucket's rows (those it accepted) and those it rejected (NULL key or
        # time); the sources' entry counts its malformed rows once, as rows and as rejected.
        return sum((s.get("rows") or 0) + (0 if b == SOURCES else s.get("rejected") or 0)
                   for b, s in self.bucket_stats.items() if s.get("stage", 1) in self.row_stages)

    def stage_figures(self) -> dict[int, dict[str, int]] | None:
        """A chain's late and rejected rows per stage (1: its source's rows, 2: the first stage's
        results, ...), or those of stages side by side (each its own source's rows); None for one
        stage. Rows of a source that did not convert are stage 1's."""
        count = sum(len(branch.inners) + 1 for branch in self.branches) or len(self.inners) + 1
        if count == 1:
            return None
        return {stage: {"late": self.total("late", stage), "rejected": self.total("rejected", stage)}
                for stage in range(1, count + 1)}


@dataclass
class Branch:
    """A stage of several side by side, as the sink writer sees it: its query, and its record columns'
    names in the union of every branch's records ({its own name: the name there})."""

    query: StatefulQuery  # its (last) stage's
    columns: dict
    inners: tuple = ()  # a chain's earlier stages (Stage), first to last
    first: int = 1  # the number of its first stage (a chain's k stages take k numbers: stage_numbers)


@dataclass
class Stage:
    """A chain's stage before the last, as its sink writer sees it: its records come carried (JSON)
    in the next stage's records, in this schema (and, from a stage further back, carried again)."""

    query: StatefulQuery
    carried_schema: t.Any


def _watermark_range(stats, stateful: StatefulQuery) -> str | None:
    """The lowest and highest watermark over the keys, in the time column's own unit."""
    lows = [s["watermark_low"] for s in stats if s.get("watermark_low") is not None]
    highs = [s["watermark_high"] for s in stats if s.get("watermark_high") is not None]
    if not lows:
        return None
    import datetime as dt

    def show(micros: int) -> str:
        if stateful.epoch_ms:
            return str(micros // 1000)
        try:
            return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=micros)).isoformat(sep=" ")
        except OverflowError:  # an unbounded delay: a watermark before year 1 (or past 9999)
            return "before 0001-01-01" if micros < 0 else "after 9999-12-31"

    return f"{show(min(lows))} .. {show(max(highs))}"


def _drained_since(progress: dict | None, began) -> bool:
    """Whether `progress` (StreamingQuery.lastProgress) is of a micro-batch that began after `began`
    (an aware datetime) and read no rows."""
    import datetime as dt

    if not progress or progress.get("numInputRows", 1) != 0:
        return False
    started = dt.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00"))
    return started > began

"""Differential test: the window runtime alone, its replay on Spark and a real stream agree.

Random recorded streams -- out of order, duplicate timestamps, NULLs, late rows, random
micro-batch cuts -- run through three engines:

* the runtime alone (`WindowRuntime`, built here from windowers written out by hand, one
  runtime per stream, fed batch by batch): the expected emissions and late rows;
* a replay on Spark (`run_replay` of the query with `arrival_order` / `arrival_batch`);
* a Structured Streaming query (`feed_stream`, one micro-batch per arrival batch).

Per key they must emit the same rows in the same order (emit_seq order within a key) after
the same arrival batch, and name the same late rows. Then native Spark over the finished
table (`sw.sql` of the query without arrival options, i.e. EMIT FINAL over complete input)
checks the windows' contents: over the rows the runtime did not call late, complete input
must give exactly what EMIT FINAL emitted (every row on time: the whole table), and the
last EMIT CHANGES firing of every window.

Cost: a streaming query costs about a second per micro-batch, so each window configuration
runs ONE Spark replay, ONE stream and one complete-input query over many random streams at
once. With the default per-key watermark scope keys are independent: stream i gets keys of
its own ("s<i>-<k>"), and combined batch j holds batch j of every stream. That the merge
changes nothing is itself checked, on the runtime alone, by the hypothesis test below.

Shapes beside that (docs/semantics.md, "Which rows form a window"): SESSION, COUNT_WINDOW and
SLIDE draw where their keys come from -- `PARTITION BY k` (a clock per key), `PARTITION BY s ...
GROUP BY s, k` (GROUP BY keys beside PARTITION BY: one clock per stream, windows per key) or
`GROUP BY k` alone (instead of PARTITION BY: one clock for the whole table, windows per key);
the runtime alone then runs one runtime per stream, or one for the whole table, with one clock.
The EMIT CHANGES configurations read a TIMESTAMP_NTZ time column (the same milliseconds, around
the hour Los Angeles skips on 2024-03-10) in the session time zone America/Los_Angeles: windows
and late rows must be TIMESTAMP_NTZ, on the wall clock, in every mode. Every configuration has
aggregates with FILTER (WHERE ...), which the runtime alone computes with its own filter.

Randomness: streams are drawn by `gen_stream` from a draw source -- hypothesis for the
runtime-only properties, `random.Random(seed)` for the Spark runs. The seed is new on every
run and printed with any failure; SQLWIN_DIFF_SEED=<seed> reproduces it,
SQLWIN_DIFF_STREAMS=<n> changes how many streams each configuration runs (default 32, thirteen
configurations: 416 streams). Four of them (`-fast`) use only the aggregates the vectorised
runtime computes, so their stream (and, but for SESSION, their replay) runs it and is compared
with the general runtime.
"""

from __future__ import annotations

import os
import random
import typing as t
from collections import Counter
from dataclasses import dataclass, field

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import datetime as dt

from sqlwin.sql.plan import UNBOUNDED, CountWindow, EmitSpec, Hop, Session, Slide, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, WindowRuntime

SEED = int(os.environ.get("SQLWIN_DIFF_SEED") or random.SystemRandom().randrange(2**32))
STREAMS_PER_RUN = int(os.environ.get("SQLWIN_DIFF_STREAMS", 32))
MAX_BATCHES = 3  # combined micro-batches per Spark run: a streaming batch costs ~1 s
END = "end"  # the batch label of what end of input emitted

# (the SQL, the runtime's own spec of it, its result column), in the SELECT list's order. A row's
# values for the runtime alone are (v, arrival, ts, batch, stream, v > 3, arrival % 3 <> 0): FILTER
# is the runtime's own filter over the last two (the SQL layer writes most FILTERs as CASE WHEN
# arguments instead, which this compares with).
AGGREGATE_COLUMNS = [
    ("count(*)", AggregateSpec("count"), "n"),
    ("count(v)", AggregateSpec("count", 0), "nv"),
    ("sum(v)", AggregateSpec("sum", 0), "sm"),
    ("min(v)", AggregateSpec("min", 0), "lo"),
    ("max(v)", AggregateSpec("max", 0), "hi"),
    ("count(*) FILTER (WHERE v > 3)", AggregateSpec("count", filter=5), "nf"),
    ("sum(v) FILTER (WHERE arrival % 3 <> 0)", AggregateSpec("sum", 0, filter=6), "sf"),
    ("collect_list(v)", AggregateSpec("collect_list", 0), "vs"),
    ("collect_list(v) FILTER (WHERE v > 3)", AggregateSpec("collect_list", 0, filter=5), "vf"),
]
FAST_COUNT = 7  # the first ones: what the vectorised runtime computes (the fast path runs)
LIST_COLUMNS = ("vs", "vf")
SCHEMA = "s INT, k STRING, ts {time}, v INT, arrival INT, batch INT"
# A TIMESTAMP_NTZ configuration's times: the stream's milliseconds after BASE_MS (a wall-clock
# 2024-03-10 01:59:00, a minute before Los Angeles skips to 03:00), read in ZONE.
EPOCH = dt.datetime(1970, 1, 1)
BASE_MS = (dt.datetime(2024, 3, 10, 1, 59) - EPOCH) // dt.timedelta(milliseconds=1)
ZONE = "America/Los_Angeles"
SHAPES = {  # where a data-dependent window's keys come from: (PARTITION BY, GROUP BY keys)
    "partition": ("k", "k"),
    "beside": ("s", "s, k"),  # GROUP BY keys beside PARTITION BY: one clock per stream
    "instead": ("", "k"),  # GROUP BY keys instead of PARTITION BY: one clock for the table
}


# --------------------------------------------------------------------------- random streams


class Draw(t.Protocol):
    def integer(self, lo: int, hi: int) -> int: ...
    def choice(self, options: t.Sequence): ...
    def chance(self, percent: int) -> bool: ...


class RandomDraw:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, lo, hi):
        return self.rng.randint(lo, hi)

    def choice(self, options):
        return self.rng.choice(list(options))

    def chance(self, percent):
        return self.rng.randrange(100) < percent


class HypothesisDraw:
    """Draws through hypothesis (a composite's `draw`), which shrinks towards the first option
    and the lower bound."""

    def __init__(self, draw):
        self.draw = draw

    def integer(self, lo, hi):
        return self.draw(st.integers(lo, hi))

    def choice(self, options):
        return self.draw(st.sampled_from(list(options)))

    def chance(self, percent):
        return self.draw(st.integers(0, 99)) < percent


@dataclass
class Stream:
    """One recorded stream: rows (key, ts ms, v) in arrival order and the batch of each row."""

    rows: list[tuple[int | None, int | None, int | None]]
    batches: list[int]  # non-decreasing, from 0; a stream may skip a batch (no rows in it)

    def __str__(self) -> str:
        return "\n".join(f"    batch {b}: key={k} ts={ts} v={v}" for (k, ts, v), b in zip(self.rows, self.batches))


def gen_stream(draw: Draw, max_rows: int = 14, max_batches: int = MAX_BATCHES) -> Stream:
    """Mostly advancing event time with a chosen amount of disorder; duplicates, NULLs, and
    times on a 500 ms grid (so rows land exactly on window bounds and exactly a gap apart)."""
    n = draw.integer(1, max_rows)
    keys = draw.choice([1, 2, 1, 3])
    disorder = draw.choice([0, 12000, 1000, 3000, 6000, 12000])  # how far back a row may jump, ms
    jumpy = draw.choice([50, 20, 80])  # how often it does, percent
    t = draw.integer(-8, 8) * 1000
    rows = []
    for _ in range(n):
        t += draw.choice([0, 500, 1000, 2000, 5000, 1, 499, 11000])
        ts = t
        if disorder and draw.chance(jumpy):
            ts -= draw.integer(0, disorder // 500) * 500
        key = draw.integer(0, keys - 1)
        value = draw.integer(0, 9) if not draw.chance(10) else None
        if draw.chance(3):
            key = None
        if draw.chance(3):
            ts = None
        rows.append((key, ts, value))
    batches, batch = [], 0
    for i in range(n):
        if i and batch < max_batches - 1 and draw.chance(45):
            batch += 1
            if batch < max_batches - 1 and draw.chance(15):
                batch += 1  # this stream has nothing in a batch others may have rows in
        batches.append(batch)
    return Stream(rows, batches)


# --------------------------------------------------------------------------- configurations


@dataclass
class Config:
    """One window query, as SQL for Spark and as a windower for the runtime alone."""

    name: str
    function: str  # TUMBLE | HOP | SESSION | COUNT_WINDOW
    windower: t.Any  # sqlwin.sql.plan windower in microseconds, written here, not parsed
    arguments: str  # the SQL arguments after the table (and DESCRIPTOR)
    changes: bool
    delay_ms: int | None = 0  # None: UNBOUNDED
    strategy: str = "max_event_time"
    lateness_rule: str = "window_closed"
    descriptor: bool = True  # COUNT_WINDOW may run without a time column
    fast: bool = False  # only aggregates the vectorised runtime computes (no collect_list)
    shape: str = "partition"  # SHAPES
    ntz: bool = False  # a TIMESTAMP_NTZ time column, in the session time zone ZONE

    @property
    def columns(self) -> list:
        return AGGREGATE_COLUMNS[:FAST_COUNT] if self.fast else AGGREGATE_COLUMNS

    @property
    def aggregates(self) -> list:
        return [spec for _, spec, _ in self.columns]

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(name for _, _, name in self.columns)

    @property
    def schema(self) -> str:
        return SCHEMA.format(time="TIMESTAMP_NTZ" if self.ntz else "BIGINT")

    @property
    def one_clock_per_runtime(self) -> bool:
        """The keys of one runtime share a clock (PARTITION BY is not the GROUP BY keys)."""
        return self.shape != "partition"

    @property
    def is_count(self) -> bool:
        return self.function == "COUNT_WINDOW"

    def watermark(self) -> WatermarkSpec:
        scope = "stream" if self.one_clock_per_runtime else "key"
        if self.is_count:
            return WatermarkSpec(column="ts" if self.descriptor else None, scope=scope)
        delay = UNBOUNDED if self.delay_ms is None else self.delay_ms * 1000
        return WatermarkSpec(column="ts", delay=delay, strategy=self.strategy, lateness_rule=self.lateness_rule,
                             scope=scope)

    def emit(self) -> EmitSpec:
        return EmitSpec(final=False, changes=True) if self.changes else EmitSpec()

    def query(self, table: str, late_into: str | None) -> str:
        """The streaming / replay query (arrival options, EMIT, LATE ROWS INTO)."""
        options = "WITH (arrival_order = arrival, arrival_batch = batch"
        partition, group = SHAPES[self.shape]
        partition = f" PARTITION BY {partition}" if partition else ""
        if self.is_count:
            source = f"TABLE {table}{partition} {options})"
        else:
            delay = "UNBOUNDED" if self.delay_ms is None else f"INTERVAL {self.delay_ms} MILLISECONDS"
            source = (f"TABLE {table}{partition} WATERMARK ts DELAY OF {delay} {options}, "
                      f"watermark_strategy = '{self.strategy}', lateness_rule = '{self.lateness_rule}')")
        emit = "EMIT CHANGES" if self.changes else "EMIT FINAL"
        late = f"\nLATE ROWS INTO {late_into}" if late_into else ""
        return f"{self._select()} FROM {self.function}({source}, {self._arguments()})\n" \
               f"GROUP BY {group}, window_start, window_end\n{emit}{late}"

    def complete_query(self, table: str, late_into: str | None = None) -> str:
        """The same windows over a finished table: native Spark, EMIT FINAL."""
        order = " ORDER BY arrival" if self.is_count else ""
        late = f"\nLATE ROWS INTO {late_into}" if late_into else ""
        partition, group = SHAPES[self.shape]
        partition = f" PARTITION BY {partition}" if partition else ""
        return f"{self._select()} FROM {self.function}(TABLE {table}{partition}{order}, {self._arguments()})\n" \
               f"GROUP BY {group}, window_start, window_end{late}"

    def _select(self) -> str:
        index = ", window_index" if self.is_count else ""
        aggregates = ", ".join(f"{sql} AS {name}" for sql, _, name in self.columns)
        return f"SELECT {SHAPES[self.shape][1]}, window_start, window_end{index}, {aggregates}\n"

    def _arguments(self) -> str:
        arguments = self.arguments
        if self.ntz and self.function in ("TUMBLE", "HOP", "SLIDE"):  # bare milliseconds are for LONG times
            arguments = ", ".join(f"INTERVAL {ms} MILLISECONDS" for ms in arguments.split(", "))
        return ("DESCRIPTOR(ts), " if self.descriptor else "") + arguments

    def __str__(self) -> str:
        return self.query("events", "late_events")


def gen_config(rng: random.Random, function: str, changes: bool, fast: bool = False,
               shape: str | None = None) -> Config:
    """A random window of `function`: sizes, offsets, delay, watermark strategy and lateness rule,
    and for SESSION / COUNT_WINDOW / SLIDE where the keys come from (`shape`, drawn when None).
    `fast`: aggregates the vectorised runtime computes, so replay and streaming run it. EMIT CHANGES
    configurations read a TIMESTAMP_NTZ time column."""
    emit = ("changes" if changes else "final") + ("-fast" if fast else "")
    if shape is None:
        # A clock per stream (beside) keys the runtime by two columns, which the vectorised one does not take.
        shapes = ["partition", "instead"] if fast else list(SHAPES)
        shape = rng.choice(shapes) if function in ("SESSION", "COUNT_WINDOW", "SLIDE") else "partition"
    common = dict(changes=changes, fast=fast, delay_ms=rng.choice([0, 1000, 3000, None]),
                  strategy=rng.choice(["max_event_time", "min_event_time"]),
                  lateness_rule=rng.choice(["window_closed", "before_watermark"]), shape=shape, ntz=changes)
    if function == "TUMBLE":
        size = rng.choice([2000, 5000, 10000])
        offset = rng.choice([0, 500, 1000]) % size
        return Config(f"tumble-{emit}", function, Tumble(size * 1000, offset * 1000),
                      f"{size}, {offset}", **common)
    if function == "HOP":
        slide, size = rng.choice([(2000, 6000), (5000, 10000), (3000, 5000), (4000, 3000)])
        return Config(f"hop-{emit}", function, Hop(size * 1000, slide * 1000), f"{slide}, {size}", **common)
    if function == "SESSION":
        gap = rng.choice([1000, 2000, 5000])
        return Config(f"session-{emit}", function, Session(gap * 1000), f"INTERVAL {gap // 1000} SECONDS", **common)
    if function == "SLIDE":
        size = rng.choice([1000, 2000, 5000])
        return Config(f"slide-{emit}", function, Slide(size * 1000), f"{size}", **common)
    size, slide = rng.choice([(3, 3), (3, 1), (2, 3), (4, 2)])
    descriptor = rng.choice([True, False])  # with DESCRIPTOR(ts), a row whose time is NULL joins no window
    return Config(f"count-{emit}", function, CountWindow(size, slide, timed=descriptor), f"{size}, {slide}",
                  changes=changes, descriptor=descriptor, fast=fast, shape=shape, ntz=changes)


KINDS = [(f, c, False) for f in ("TUMBLE", "HOP", "SESSION", "COUNT_WINDOW") for c in (False, True)] \
    + [("SLIDE", False, False)]
# The vectorised runtime's shapes: EMIT FINAL over TUMBLE / HOP / COUNT_WINDOW / SESSION, its
# aggregates only (SESSION's replay, small batches at a time, stays on the general runtime).
FAST_KINDS = [(f, False, True) for f in ("TUMBLE", "HOP", "COUNT_WINDOW", "SESSION")]


# --------------------------------------------------------------------------- the runtime alone


@dataclass
class Outcome:
    """What an engine emitted, normalised for comparison."""

    emitted: dict[str, list[tuple]] = field(default_factory=dict)  # key -> (batch, window, values, op, firing)
    late: dict[int, list[tuple]] = field(default_factory=dict)  # stream -> sorted late / rejected rows
    time_types: set[str] = field(default_factory=set)  # Spark's types of the window bounds and late rows' times

    def add_emission(self, key: str, row: tuple) -> None:
        self.emitted.setdefault(key, []).append(row)

    def sorted_late(self) -> "Outcome":
        self.late = {s: sorted(rows, key=repr) for s, rows in self.late.items()}
        return self


def key_name(stream: int, key: int | None) -> str | None:
    return None if key is None else f"s{stream}-{key}"


def combined_rows(streams: list[Stream]) -> list[tuple]:
    """The table of all streams: combined batch j is batch j of every stream; arrival is global."""
    rows = []
    for batch in range(MAX_BATCHES):
        for i, stream in enumerate(streams):
            for (key, ts, v), b in zip(stream.rows, stream.batches):
                if b == batch:
                    rows.append((i, key_name(i, key), ts, v, len(rows), batch))
    return rows


def run_runtime(config: Config, streams: list[Stream], table: list[tuple]) -> Outcome:
    """The expected outcome: one runtime per stream, fed its own batches in arrival order (one for
    the whole table when it has one clock: GROUP BY keys instead of PARTITION BY)."""
    outcome = Outcome()
    if config.shape == "instead":
        drive(config, table, outcome)
        return outcome.sorted_late()
    for i, _ in enumerate(streams):
        drive(config, [r for r in table if r[0] == i], outcome)
    return outcome.sorted_late()


def drive(config: Config, table: list[tuple], outcome: Outcome, restore_after: int | None = None) -> None:
    """Feed one runtime `table`'s rows batch by batch, then end the input. `restore_after`: carry
    on from a snapshot taken after that batch, in a new runtime (a restart)."""
    runtime = WindowRuntime(config.windower, config.watermark(), config.emit(), config.aggregates)
    for batch in sorted({r[5] for r in table}):
        # An untimed count window's bounds are its rows' arrival positions (the replay's order column).
        rows = [((None if k is None else (k,)),
                 (arrival * 1000 if not config.descriptor else None if ts is None else ts * 1000),
                 (v, arrival, ts, b, s, v is not None and v > 3, arrival % 3 != 0))
                for s, k, ts, v, arrival, b in table if b == batch]
        _collect(config, outcome, runtime.process_batch(rows, batch), batch)
        if batch == restore_after:
            runtime = WindowRuntime.restore(runtime.snapshot(), config.windower, config.watermark(),
                                            config.emit(), config.aggregates)
    _collect(config, outcome, runtime.end_of_input(), END)


def _collect(config: Config, outcome: Outcome, result, batch) -> None:
    for e in result.emissions:
        window = (_ms(e.window_start), _ms(e.window_end), e.window_index if config.is_count else None)
        outcome.add_emission(e.key[0], (batch, *window, *e.values, e.op, e.firing))
    for r in result.late:
        v, arrival, ts, b, s = r.values[:5]
        outcome.late.setdefault(s, []).append(
            (r.key[0], ts, v, arrival, b, _ms(r.late_by_us), _ms(r.window_start), _ms(r.window_end), "late"))
    for r in result.rejected:
        v, arrival, ts, b, s = r.values[:5]
        key = r.key[0] if r.key else None
        outcome.late.setdefault(s, []).append((key, ts, v, arrival, b, None, None, None, r.reason))


def _ms(micros: int | None) -> int | None:
    return None if micros is None else micros // 1000


# --------------------------------------------------------------------------- Spark outcomes


def ms(value):
    """A TIMESTAMP_NTZ configuration's time (wall clock) or duration back in the stream's milliseconds;
    anything else as it is."""
    if isinstance(value, dt.datetime):
        return (value - EPOCH) // dt.timedelta(milliseconds=1) - BASE_MS
    if isinstance(value, dt.timedelta):
        return value // dt.timedelta(milliseconds=1)
    return value


def ntz_rows(config: Config, rows: list[tuple]) -> list[tuple]:
    """The combined table's rows with the time as the configuration's column holds it."""
    if not config.ntz:
        return rows
    return [(s, k, None if ts is None else EPOCH + dt.timedelta(milliseconds=BASE_MS + ts), v, arrival, b)
            for s, k, ts, v, arrival, b in rows]


def normalise_emission(config: Config, row, batch) -> tuple:
    window = (ms(row["window_start"]), ms(row["window_end"]), row["window_index"] if config.is_count else None)
    values = tuple(list(row[c]) if c in LIST_COLUMNS else row[c] for c in config.value_columns)
    return (batch, *window, *values, row["op"], row["firing"])


def spark_outcome(config: Config, emissions: list[tuple[t.Any, t.Any]], late_rows: list) -> Outcome:
    """emissions: (Row, batch label); per key in emit_seq order (a key's seq only grows)."""
    outcome = Outcome()
    by_key: dict[str, list] = {}
    for row, batch in emissions:
        by_key.setdefault(row["k"], []).append((row["emit_seq"], normalise_emission(config, row, batch)))
    for key, items in by_key.items():
        seqs = [s for s, _ in items]
        assert len(set(seqs)) == len(seqs), f"key {key}: emit_seq repeats: {seqs}"
        outcome.emitted[key] = [e for _, e in sorted(items, key=lambda item: item[0])]
    late: dict[int, list] = {}
    for r in late_rows:
        late.setdefault(r["s"], []).append((r["k"], ms(r["ts"]), r["v"], r["arrival"], r["batch"], ms(r["late_by"]),
                                            ms(r["window_start"]), ms(r["window_end"]), r["reason"]))
    outcome.late = late
    return outcome.sorted_late()


def time_types(*schemas) -> set[str]:
    """The Spark types of the time columns of results and late rows (window bounds, the row's ts)."""
    return {f.dataType.simpleString() for schema in schemas if schema is not None for f in schema.fields
            if f.name in ("window_start", "window_end", "ts")}


def uses_vectorised_runtime(sw, config: Config, view: str) -> bool:
    """Whether the stream runs this query on the vectorised runtime (as the lowering decides it;
    replay decides alike, except for SESSION, which it replays on the general runtime)."""
    from sqlwin.spark.operator import choose_runtime
    from sqlwin.spark.stateful import prepare_stateful

    query = prepare_stateful(sw.plan(config.query(view, None)), "streaming", 2)
    return choose_runtime(query.config, sw.spark.sql(query.input_sql(arrival=True)).schema).vectorised is not None


def run_replay_outcome(sw, config: Config, view: str, late_view: str) -> Outcome:
    from sqlwin.spark.operator import END_BATCH
    from sqlwin.spark.replay import run_replay

    replay = run_replay(sw.runner, sw.plan(config.query(view, late_view)))
    rows = replay.batched.collect()
    emissions = [(r, END if r["__batch"] == END_BATCH else r["__batch"]) for r in rows]
    late = sw.spark.table(late_view)
    outcome = spark_outcome(config, emissions, late.collect())
    outcome.time_types = time_types(replay.batched.schema, late.schema)
    return outcome


def run_stream_outcome(sw, config: Config, view: str, table, workdir: str) -> Outcome:
    from sqlwin.testing import feed_stream

    fed = feed_stream(sw, config.query(view, "unused_late"), table, view, "batch", "arrival",
                      workdir=workdir, late=True)
    names = [f.name for f in fed.schema.fields]
    labelled, position = [], 0
    batch_values = sorted({r["batch"] for r in table.select("batch").collect()})
    for batch, rows in zip(batch_values, fed.per_batch):
        assert fed.rows[position:position + len(rows)] == rows, "the sink disagrees with the batches' own output"
        labelled += [(dict(zip(names, r)), batch) for r in rows]
        position += len(rows)
    labelled += [(dict(zip(names, r)), END) for r in fed.rows[position:]]
    late_names = [f.name for f in fed.late_schema.fields] if fed.late_schema else []
    outcome = spark_outcome(config, labelled, [dict(zip(late_names, r)) for r in fed.late_rows])
    outcome.time_types = time_types(fed.schema, fed.late_schema)
    return outcome


# --------------------------------------------------------------------------- comparing


def compare_engines(config: Config, streams: list[Stream], expected: Outcome, actual: Outcome,
                    engine: str) -> list[str]:
    """Per stream: per key the same emissions (as a multiset, then in order), the same late rows."""
    problems = []
    for i, stream in enumerate(streams):
        keys = sorted({key_name(i, k) for k, _, _ in stream.rows if k is not None})
        for key in keys:
            want, got = expected.emitted.get(key, []), actual.emitted.get(key, [])
            if Counter(map(repr, want)) != Counter(map(repr, got)):
                problems.append(_report(config, i, stream, f"{engine}: key {key} emitted different rows",
                                        want, got))
            elif want != got:
                problems.append(_report(config, i, stream, f"{engine}: key {key} emitted in another order",
                                        want, got))
        if expected.late.get(i, []) != actual.late.get(i, []):
            problems.append(_report(config, i, stream, f"{engine}: different late rows",
                                    expected.late.get(i, []), actual.late.get(i, [])))
    stray = set(actual.emitted) - {key_name(i, k) for i, s in enumerate(streams) for k, _, _ in s.rows}
    if stray:
        problems.append(f"{engine} emitted keys no stream has: {sorted(stray, key=repr)}")
    return problems


def _report(config: Config, index: int, stream: Stream, what: str, want, got,
            labels: tuple[str, str] = ("expected (runtime alone)", "actual")) -> str:
    show = lambda rows: "\n".join(f"      {r}" for r in rows) or "      (none)"  # noqa: E731
    return (f"[{config.name}] stream {index}: {what}\n  stream:\n{stream}\n"
            f"  {labels[0]}:\n{show(want)}\n  {labels[1]}:\n{show(got)}")


COMPLETE_LABELS = ("complete input over the rows not late", "emitted (every engine alike)")


def window_identity(config: Config, window: tuple) -> tuple:
    """window: (start, end, index, *values). A count window is its index."""
    return (window[2],) if config.is_count else (window[0], window[1])


def complete_view(row: tuple) -> tuple:
    """A window's (start, end, index, *values) with collect_list as a sorted tuple (complete
    input's collect_list order is Spark's, not defined)."""
    return tuple(tuple(sorted(value)) if isinstance(value, list) else value for value in row)


def compare_complete(config: Config, streams: list[Stream], expected: Outcome, complete: dict[str, Counter],
                     eligible: set[int]) -> list[str]:
    """EMIT FINAL: complete input over the on-time rows is exactly what was emitted. EMIT CHANGES:
    each complete window is its window's last firing; any other window fired is one complete
    input has not: a session later merged into a larger one, or a partial count window."""
    problems = []
    for i in sorted(eligible):
        keys = sorted({key_name(i, k) for k, _, _ in streams[i].rows if k is not None})
        for key in keys:
            windows = [complete_view(e[1:-2]) for e in expected.emitted.get(key, [])]
            want = complete.get(key, Counter())
            if not config.changes:
                if Counter(windows) != want:
                    problems.append(_report(config, i, streams[i], f"complete input disagrees for key {key}",
                                            sorted(want.elements(), key=repr), sorted(windows, key=repr),
                                            COMPLETE_LABELS))
                continue
            last = {window_identity(config, w): w for w in windows}
            complete_windows = {window_identity(config, w): w for w in want}
            wrong = [w for ident, w in complete_windows.items() if last.get(ident) != w]
            extra = [w for ident, w in last.items() if ident not in complete_windows]
            if config.function == "SESSION":  # a session fired, then merged into a larger one
                extra = [w for w in extra if not any(c[0] <= w[0] and w[1] <= c[1] for c in want)]
            elif config.is_count:  # a partial count window, never full
                extra = [w for w in extra if w[3] >= config.windower.size]
            if wrong or extra or len(complete_windows) != sum(want.values()):
                problems.append(_report(config, i, streams[i],
                                        f"EMIT CHANGES' last firings disagree with complete input for key {key}",
                                        sorted(want.elements(), key=repr), sorted(last.values(), key=repr),
                                        COMPLETE_LABELS))
    return problems


def hop_windows(hop: Hop, ts_ms: int) -> int:
    """How many windows of `hop` hold a row at ts_ms (a reference of its own, in ms)."""
    slide, size = hop.slide // 1000, hop.size // 1000
    return sum(1 for n in range(ts_ms // slide - size // slide - 2, ts_ms // slide + 2)
               if n * slide <= ts_ms < n * slide + size)


def eligible_streams(config: Config, streams: list[Stream], expected: Outcome) -> set[int]:
    """Streams whose late rows missed every window they belong to: their windows are complete
    input over the rest. (A HOP row can be late for one window and on time for another.)"""
    eligible = set()
    for i, _ in enumerate(streams):
        late = [r for r in expected.late.get(i, []) if r[-1] == "late"]
        if isinstance(config.windower, Slide) and late:
            continue  # a row may be late for some of its windows only; which ones depends on the others
        if isinstance(config.windower, Hop):
            missed = Counter(r[3] for r in late)
            ts_of = {r[3]: r[1] for r in late}
            if any(n != hop_windows(config.windower, ts_of[arrival]) for arrival, n in missed.items()):
                continue
        eligible.add(i)
    return eligible


# --------------------------------------------------------------------------- the Spark test


@pytest.mark.parametrize("function,changes,fast", KINDS + FAST_KINDS,
                         ids=[f"{f.lower()}-{'changes' if c else 'final'}{'-fast' if fast else ''}"
                              for f, c, fast in KINDS + FAST_KINDS])
def test_runtime_replay_stream_and_complete_input_agree(sw, spark, tmp_path, function, changes, fast):
    rng = random.Random(f"{SEED}-{function}-{changes}-{fast}")
    config = gen_config(rng, function, changes, fast)
    if not config.ntz:
        return _agree(sw, spark, tmp_path, function, changes, fast, rng, config)
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        _agree(sw, spark, tmp_path, function, changes, fast, rng, config)
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


def _agree(sw, spark, tmp_path, function, changes, fast, rng, config):
    streams = [gen_stream(RandomDraw(rng)) for _ in range(STREAMS_PER_RUN)]
    table_rows = combined_rows(streams)
    print(f"SQLWIN_DIFF_SEED={SEED}\n{config}")  # shown with any failure, exceptions included
    expected = run_runtime(config, streams, table_rows)

    name = f"diff_{function.lower()}_{'changes' if changes else 'final'}{'_fast' if fast else ''}"
    table = spark.createDataFrame(ntz_rows(config, table_rows), config.schema)
    table.createOrReplaceTempView(name)
    assert uses_vectorised_runtime(sw, config, name) == fast, "the configuration does not take the path it names"
    replayed = run_replay_outcome(sw, config, name, f"{name}_late")
    problems = compare_engines(config, streams, expected, replayed, "replay")
    # Window bounds and late rows' times in the time column's own type (a LONG time column's are LONG;
    # an untimed count window's bounds are arrival positions, not checked).
    want_types = {"timestamp_ntz" if config.ntz else "bigint"}

    # Complete input over the rows the runtime did not call late (all of them where nothing was
    # late). Rows with a NULL key or a NULL time stay in: complete input must reject them itself,
    # exactly as the runtime did, and list them in its LATE ROWS INTO table (one rule, every mode).
    dropped = {r[3] for rows in expected.late.values() for r in rows if r[-1] == "late"}
    on_time = spark.createDataFrame(ntz_rows(config, [r for r in table_rows if r[4] not in dropped]), config.schema)
    on_time.createOrReplaceTempView(f"{name}_on_time")
    complete: dict[str, Counter] = {}
    complete_frame = sw.sql(config.complete_query(f"{name}_on_time", late_into=f"{name}_rejected"))
    complete_rows = complete_frame.collect()
    rejected_frame = spark.table(f"{name}_rejected")
    rejected = sorted((r["arrival"], r["reason"]) for r in rejected_frame.collect())
    want_rejected = sorted((r[3], r[-1]) for rows in expected.late.values() for r in rows if r[-1] != "late")
    if rejected != want_rejected:
        problems.append(f"complete input rejected other rows than the runtime (arrival, reason): "
                        f"{rejected} != {want_rejected}")
    for row in complete_rows:
        if row["k"] is None:
            problems.append(f"complete input made a window of NULL-key rows: {row}")
        window = (ms(row["window_start"]), ms(row["window_end"]), row["window_index"] if config.is_count else None)
        complete.setdefault(row["k"], Counter())[complete_view((*window, *(row[c] for c in config.value_columns)))] += 1
    eligible = eligible_streams(config, streams, expected)
    problems += compare_complete(config, streams, expected, complete, eligible)

    streamed = run_stream_outcome(sw, config, name, table, str(tmp_path / "stream"))
    problems += compare_engines(config, streams, expected, streamed, "streaming")
    for engine, types in (("replay", replayed.time_types), ("streaming", streamed.time_types),
                          ("complete input", time_types(complete_frame.schema, rejected_frame.schema))):
        if config.descriptor and types != want_types:
            problems.append(f"{engine}: time columns of types {sorted(types)}, not {sorted(want_types)}")

    late_streams = sum(1 for rows in expected.late.values() if any(r[-1] == "late" for r in rows))
    print(f"{len(streams)} streams, {len(table_rows)} rows, {late_streams} with late rows, "
          f"{len(eligible)} checked against complete input")
    # Not vacuous: the runtime emitted windows, and complete input had some to compare.
    assert sum(map(len, expected.emitted.values())) and sum(sum(c.values()) for c in complete.values())
    assert not problems, (f"SQLWIN_DIFF_SEED={SEED} reproduces this; {len(problems)} problem(s), the first:\n"
                          + "\n\n".join(problems[:3]) + f"\n\nquery:\n{config}")


# --------------------------------------------------------------------------- the runtime alone, hypothesis

RUNTIME_SETTINGS = settings(max_examples=int(os.environ.get("SQLWIN_EXAMPLES", 150)), deadline=None,
                            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@st.composite
def runtime_cases(draw):
    """A random configuration and a few random streams, all drawn through hypothesis."""
    function, changes, fast = draw(st.sampled_from(KINDS + FAST_KINDS))
    # A clock per key: what lets streams merge (other shapes are checked with Spark, above).
    config = gen_config(draw(st.randoms(use_true_random=False)), function, changes, fast, shape="partition")
    source = HypothesisDraw(draw)
    streams = [gen_stream(source) for _ in range(draw(st.integers(1, 4)))]
    return config, streams


@RUNTIME_SETTINGS
@given(runtime_cases())
def test_merged_streams_run_as_if_alone(case):
    """What makes one Spark run hold many streams: in ONE runtime (per-key clocks), with batch j
    of every stream merged into one batch, each key emits what it emits in a runtime of its own."""
    config, streams = case
    table = combined_rows(streams)
    alone = run_runtime(config, streams, table)
    merged = Outcome()
    drive(config, table, merged)
    problems = compare_engines(config, streams, alone, merged.sorted_late(), "merged runtime")
    assert not problems, "\n\n".join(problems[:3])


@RUNTIME_SETTINGS
@given(runtime_cases(), st.integers(0, MAX_BATCHES - 1))
def test_restored_runtime_continues_exactly(case, restart_after):
    """A runtime restored from a snapshot taken between two batches emits what an uninterrupted one
    does (BW-13 on the runtime alone; tests/test_restart.py does it with Spark's checkpoints)."""
    config, streams = case
    table = combined_rows(streams)
    uninterrupted, restarted = Outcome(), Outcome()
    drive(config, table, uninterrupted)
    drive(config, table, restarted, restore_after=restart_after)
    problems = compare_engines(config, streams, uninterrupted.sorted_late(), restarted.sorted_late(), "restored")
    assert not problems, "\n\n".join(problems[:3])


def test_count_window_bounds_are_its_first_and_last_rows_times_even_null():
    """Found by the differential test: a count window whose first row has no time started at its
    second row's time in the runtime, at NULL over complete input (min_by(ts, position))."""
    config = Config("count", "COUNT_WINDOW", CountWindow(2, 2), "2, 2", changes=False)
    stream = Stream([(0, None, 1), (0, 1000, 2), (0, 2000, 3), (0, None, 4)], [0, 0, 1, 1])
    outcome = run_runtime(config, [stream], combined_rows([stream]))
    assert [e[1:4] for e in outcome.emitted["s0-0"]] == [(None, 1000, 0), (2000, None, 1)]

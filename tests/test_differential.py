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

Randomness: streams are drawn by `gen_stream` from a draw source -- hypothesis for the
runtime-only properties, `random.Random(seed)` for the Spark runs. The seed is new on every
run and printed with any failure; SQLWIN_DIFF_SEED=<seed> reproduces it,
SQLWIN_DIFF_STREAMS=<n> changes how many streams each configuration runs (default 32, twelve
configurations: 384 streams). Four of them (`-fast`) use only the aggregates the vectorised
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

from sqlwin.sql.plan import UNBOUNDED, CountWindow, EmitSpec, Hop, Session, Tumble, WatermarkSpec
from sqlwin.runtime import AggregateSpec, WindowRuntime

SEED = int(os.environ.get("SQLWIN_DIFF_SEED") or random.SystemRandom().randrange(2**32))
STREAMS_PER_RUN = int(os.environ.get("SQLWIN_DIFF_STREAMS", 32))
MAX_BATCHES = 3  # combined micro-batches per Spark run: a streaming batch costs ~1 s
END = "end"  # the batch label of what end of input emitted

# count(*), count(v), sum(v), min(v), max(v), collect_list(v): as the SQL below, in order.
AGGREGATES = [AggregateSpec("count"), AggregateSpec("count", 0), AggregateSpec("sum", 0),
              AggregateSpec("min", 0), AggregateSpec("max", 0), AggregateSpec("collect_list", 0)]
SELECT_AGGREGATES = "count(*) AS n, count(v) AS nv, sum(v) AS s, min(v) AS lo, max(v) AS hi, collect_list(v) AS vs"
VALUE_COLUMNS = ("n", "nv", "s", "lo", "hi", "vs")
FAST_AGGREGATES = AGGREGATES[:5]  # what the vectorised runtime computes: the fast path runs
SCHEMA = "s INT, k STRING, ts BIGINT, v INT, arrival INT, batch INT"


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

    @property
    def aggregates(self) -> list:
        return FAST_AGGREGATES if self.fast else AGGREGATES

    @property
    def value_columns(self) -> tuple[str, ...]:
        return VALUE_COLUMNS[:len(self.aggregates)]

    @property
    def is_count(self) -> bool:
        return self.function == "COUNT_WINDOW"

    def watermark(self) -> WatermarkSpec:
        if self.is_count:
            return WatermarkSpec(column="ts" if self.descriptor else None)
        delay = UNBOUNDED if self.delay_ms is None else self.delay_ms * 1000
        return WatermarkSpec(column="ts", delay=delay, strategy=self.strategy, lateness_rule=self.lateness_rule)

    def emit(self) -> EmitSpec:
        return EmitSpec(final=False, changes=True) if self.changes else EmitSpec()

    def query(self, table: str, late_into: str | None) -> str:
        """The streaming / replay query (arrival options, EMIT, LATE ROWS INTO)."""
        options = "WITH (arrival_order = arrival, arrival_batch = batch"
        if self.is_count:
            source = f"TABLE {table} PARTITION BY k {options})"
        else:
            delay = "UNBOUNDED" if self.delay_ms is None else f"INTERVAL {self.delay_ms} MILLISECONDS"
            source = (f"TABLE {table} PARTITION BY k WATERMARK ts DELAY OF {delay} {options}, "
                      f"watermark_strategy = '{self.strategy}', lateness_rule = '{self.lateness_rule}')")
        emit = "EMIT CHANGES" if self.changes else "EMIT FINAL"
        late = f"\nLATE ROWS INTO {late_into}" if late_into else ""
        return f"{self._select()} FROM {self.function}({source}, {self._arguments()})\n" \
               f"GROUP BY k, window_start, window_end\n{emit}{late}"

    def complete_query(self, table: str, late_into: str | None = None) -> str:
        """The same windows over a finished table: native Spark, EMIT FINAL."""
        order = " ORDER BY arrival" if self.is_count else ""
        late = f"\nLATE ROWS INTO {late_into}" if late_into else ""
        return f"{self._select()} FROM {self.function}(TABLE {table} PARTITION BY k{order}, {self._arguments()})\n" \
               f"GROUP BY k, window_start, window_end{late}"

    def _select(self) -> str:
        index = ", window_index" if self.is_count else ""
        aggregates = SELECT_AGGREGATES.rsplit(",", 1)[0] if self.fast else SELECT_AGGREGATES
        return f"SELECT k, window_start, window_end{index}, {aggregates}\n"

    def _arguments(self) -> str:
        return ("DESCRIPTOR(ts), " if self.descriptor else "") + self.arguments

    def __str__(self) -> str:
        return self.query("events", "late_events")


def gen_config(rng: random.Random, function: str, changes: bool, fast: bool = False) -> Config:
    """A random window of `function`: sizes, offsets, delay, watermark strategy and lateness rule.
    `fast`: aggregates the vectorised runtime computes, so replay and streaming run it."""
    emit = ("changes" if changes else "final") + ("-fast" if fast else "")
    common = dict(changes=changes, fast=fast, delay_ms=rng.choice([0, 1000, 3000, None]),
                  strategy=rng.choice(["max_event_time", "min_event_time"]),
                  lateness_rule=rng.choice(["window_closed", "before_watermark"]))
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
    size, slide = rng.choice([(3, 3), (3, 1), (2, 3), (4, 2)])
    descriptor = rng.choice([True, False])  # with DESCRIPTOR(ts), a row whose time is NULL joins no window
    return Config(f"count-{emit}", function, CountWindow(size, slide, timed=descriptor), f"{size}, {slide}",
                  changes=changes, descriptor=descriptor, fast=fast)


KINDS = [(f, c, False) for f in ("TUMBLE", "HOP", "SESSION", "COUNT_WINDOW") for c in (False, True)]
# The vectorised runtime's shapes: EMIT FINAL over TUMBLE / HOP / COUNT_WINDOW / SESSION, its
# aggregates only (SESSION's replay, small batches at a time, stays on the general runtime).
FAST_KINDS = [(f, False, True) for f in ("TUMBLE", "HOP", "COUNT_WINDOW", "SESSION")]


# --------------------------------------------------------------------------- the runtime alone


@dataclass
class Outcome:
    """What an engine emitted, normalised for comparison."""

    emitted: dict[str, list[tuple]] = field(default_factory=dict)  # key -> (batch, window, values, op, firing)
    late: dict[int, list[tuple]] = field(default_factory=dict)  # stream -> sorted late / rejected rows

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
    """The expected outcome: one runtime per stream, fed its own batches in arrival order."""
    outcome = Outcome()
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
                 (v, arrival, ts, b, s))
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
        v, arrival, ts, b, s = r.values
        outcome.late.setdefault(s, []).append(
            (r.key[0], ts, v, arrival, b, _ms(r.late_by_us), _ms(r.window_start), _ms(r.window_end), "late"))
    for r in result.rejected:
        v, arrival, ts, b, s = r.values
        key = r.key[0] if r.key else None
        outcome.late.setdefault(s, []).append((key, ts, v, arrival, b, None, None, None, r.reason))


def _ms(micros: int | None) -> int | None:
    return None if micros is None else micros // 1000


# --------------------------------------------------------------------------- Spark outcomes


def normalise_emission(config: Config, row, batch) -> tuple:
    window = (row["window_start"], row["window_end"], row["window_index"] if config.is_count else None)
    values = tuple(list(row[c]) if c == "vs" else row[c] for c in config.value_columns)
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
        late.setdefault(r["s"], []).append((r["k"], r["ts"], r["v"], r["arrival"], r["batch"], r["late_by"],
                                            r["window_start"], r["window_end"], r["reason"]))
    outcome.late = late
    return outcome.sorted_late()


def uses_vectorised_runtime(sw, config: Config, view: str) -> bool:
    """Whether the stream runs this query on the vectorised runtime (as the lowering decides it;
    replay decides alike, except for SESSION, which it replays on the general runtime)."""
    from sqlwin.spark.operator import vectorisable
    from sqlwin.spark.stateful import prepare_stateful

    query = prepare_stateful(sw.plan(config.query(view, None)), "streaming", 2)
    return vectorisable(query.config, sw.spark.sql(query.input_sql(arrival=True)).schema) is not None


def run_replay_outcome(sw, config: Config, view: str, late_view: str) -> Outcome:
    from sqlwin.spark.operator import END_BATCH
    from sqlwin.spark.replay import run_replay

    replay = run_replay(sw.runner, sw.plan(config.query(view, late_view)))
    rows = replay.batched.collect()
    emissions = [(r, END if r["__batch"] == END_BATCH else r["__batch"]) for r in rows]
    return spark_outcome(config, emissions, sw.spark.table(late_view).collect())


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
    return spark_outcome(config, labelled, [dict(zip(late_names, r)) for r in fed.late_rows])


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
    streams = [gen_stream(RandomDraw(rng)) for _ in range(STREAMS_PER_RUN)]
    table_rows = combined_rows(streams)
    print(f"SQLWIN_DIFF_SEED={SEED}\n{config}")  # shown with any failure, exceptions included
    expected = run_runtime(config, streams, table_rows)

    name = f"diff_{function.lower()}_{'changes' if changes else 'final'}{'_fast' if fast else ''}"
    table = spark.createDataFrame(table_rows, SCHEMA)
    table.createOrReplaceTempView(name)
    assert uses_vectorised_runtime(sw, config, name) == fast, "the configuration does not take the path it names"
    problems = compare_engines(config, streams, expected,
                               run_replay_outcome(sw, config, name, f"{name}_late"), "replay")

    # Complete input over the rows the runtime did not call late (all of them where nothing was
    # late). Rows with a NULL key or a NULL time stay in: complete input must reject them itself,
    # exactly as the runtime did, and list them in its LATE ROWS INTO table (one rule, every mode).
    dropped = {r[3] for rows in expected.late.values() for r in rows if r[-1] == "late"}
    on_time = spark.createDataFrame([r for r in table_rows if r[4] not in dropped], SCHEMA)
    on_time.createOrReplaceTempView(f"{name}_on_time")
    complete: dict[str, Counter] = {}
    complete_rows = sw.sql(config.complete_query(f"{name}_on_time", late_into=f"{name}_rejected")).collect()
    rejected = sorted((r["arrival"], r["reason"]) for r in spark.table(f"{name}_rejected").collect())
    want_rejected = sorted((r[3], r[-1]) for rows in expected.late.values() for r in rows if r[-1] != "late")
    if rejected != want_rejected:
        problems.append(f"complete input rejected other rows than the runtime (arrival, reason): "
                        f"{rejected} != {want_rejected}")
    for row in complete_rows:
        if row["k"] is None:
            problems.append(f"complete input made a window of NULL-key rows: {row}")
        window = (row["window_start"], row["window_end"], row["window_index"] if config.is_count else None)
        complete.setdefault(row["k"], Counter())[complete_view((*window, *(row[c] for c in config.value_columns)))] += 1
    eligible = eligible_streams(config, streams, expected)
    problems += compare_complete(config, streams, expected, complete, eligible)

    problems += compare_engines(config, streams, expected,
                                run_stream_outcome(sw, config, name, table, str(tmp_path / "stream")), "streaming")

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
    config = gen_config(draw(st.randoms(use_true_random=False)), function, changes, fast)
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

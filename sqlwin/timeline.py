"""A picture of the windows: `sw.timeline(query)` in a notebook, `write_timeline(sw, query, path)` to a file.

The picture has one horizontal lane per key (the query's GROUP BY keys beside the window
columns; without GROUP BY its PARTITION BY columns; without either, one lane for the stream).
Event time runs left to right. In each lane, from the top:

* the windows, as bars from `window_start` to `window_end` (overlapping windows on separate
  tracks), with a dot for each row counted in them;
* arrival, top to bottom (a replay): one band per recorded arrival batch with the rows that
  arrived in it at their event time; a late row is a red cross, followed by the window it missed
  (a dashed red outline) and why; the key's effective watermark is a blue step line -- the value
  the batch's rows were checked against, moving when the batch commits -- with the time behind it
  shaded; each firing after the batch is a bar over its window, labelled with its firing (EARLY,
  ON_TIME, LATE, FINAL, CHANGES), its op and its values, retractions (-U, -D) hatched;
* the end of input, with the firings it caused.

A query over a finished table without recorded arrival (complete input) has no arrival and no
watermark: its lane shows the windows, the rows and the results.

Where the facts come from
-------------------------
The query runs as `sw.sql` would run it, through sqlwin's own engine, with a few columns added
to its SELECT list (the lane keys and the window bounds as epoch microseconds) and, for a replay
without one, a LATE ROWS INTO table of its own:

* windows and firings: the query's results -- in a replay the emissions of the window runtime
  with their `op`, `firing`, `emit_seq` and the arrival batch after which each was emitted;
* rows and their arrival batch: the input rows exactly as the replay feeds them to the runtime
  (`StatefulQuery.input_sql`), or the finished table (complete input);
* late rows: the LATE ROWS INTO rows (`late_by`, the `window_start` / `window_end` missed).

Which window a row was counted in is read from the windows' bounds (exact for every time window;
a COUNT_WINDOW's dots show the rows inside its first and last row's time).

The watermark is not part of the engine's output, so it is recomputed here from the rows with
the rule of docs/semantics.md and sqlwin/runtime/clock.py: per clock (the PARTITION BY key, or
the stream), at each arrival batch that brings it rows, the watermark becomes the newest
(`max_event_time`) or oldest (`min_event_time`) event time of the batch's rows that were not
late for every window they belong to, if that is beyond it, minus the `DELAY OF`; the batch's own
rows were checked against the value before it. With processing time the clock is each batch's
recorded arrival time minus the delay. Not drawn: the `bytewax` strategy's watermark, which ages
with system time, an idle timeout's jump and `DELAY OF UNBOUNDED` (a note under the title says
so). Every on-time firing is checked against the recomputed watermark; a disagreement is named
in a note rather than drawn silently.

matplotlib is an optional extra (`pip install 'sqlwin[timeline]'`); importing sqlwin never needs
it. Files are written with the Agg canvas, whatever pyplot's backend is.
"""

from __future__ import annotations

import datetime as dt
import io
import typing as t
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from sqlwin.errors import SqlwinUnsupportedError, SqlwinUsageError
from sqlwin.spark import layout

if t.TYPE_CHECKING:
    from matplotlib.figure import Figure

    from sqlwin.api import Sqlwin

INSTALL_HINT = "pip install 'sqlwin[timeline]'"
MAX_ROWS = 20_000  # rows (and results) a picture collects to the driver
RETRACTIONS = ("-U", "-D")
CLOSING_FIRINGS = ("on_time", "final")
FIRING_COLOURS = {"early": "#1f77b4", "on_time": "#2ca02c", "late": "#d62728", "final": "#555555",
                  "changes": "#9467bd"}
WINDOW_COLOURS = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#edc948", "#76b7b2", "#ff9da7",
                  "#9c755f", "#e15759", "#bab0ac")
WATERMARK_COLOUR = "#1f5fbf"
LATE_COLOUR = "#d62728"


# --------------------------------------------------------------------------- the facts


@dataclass(frozen=True)
class Window:
    """One window of one lane: [start, end) in epoch microseconds ([start, end] when inclusive_end).
    start and end are None for GLOBAL_WINDOW."""

    lane: tuple
    start: int | None
    end: int | None
    inclusive_end: bool = False

    def contains(self, time: int | None) -> bool:
        if self.start is None or self.end is None:
            return True  # the global window holds every row of its key
        if time is None:
            return False
        return self.start <= time <= self.end if self.inclusive_end else self.start <= time < self.end


@dataclass(frozen=True)
class Point:
    """One input row: its event time (µs; with processing time, its batch's time), the arrival batch
    it came in (None: complete input), and what happened to it."""

    lane: tuple
    time: int | None
    batch: int | None
    order: int | None
    label: str
    windows: tuple[Window, ...] = ()  # the windows it was counted in
    missed: tuple[Window | None, ...] = ()  # the windows it was late for (None: none can be named)
    late_by: int | None = None  # µs: effective watermark - time
    fully_late: bool = False  # late for every window it belongs to: it did not move the clock

    @property
    def late(self) -> bool:
        return bool(self.missed)


@dataclass(frozen=True)
class Firing:
    """One emission: its window, op, firing, emit_seq and the arrival batch after which it came
    (None: at the end of input, or a complete-input result)."""

    lane: tuple
    window: Window
    op: str
    firing: str
    seq: int | None
    batch: int | None
    values: str


@dataclass
class Timeline:
    """Everything a timeline picture shows, in epoch microseconds; `figure()` draws it."""

    query: str
    mode: str  # 'replay' or 'complete input'
    time_kind: str  # 'timestamp' or 'epoch_ms' (how times are shown)
    time_zone: str
    time_name: str
    function: str  # the window function: TUMBLE, HOP, CUMULATE, SESSION, SLIDE, COUNT_WINDOW, GLOBAL_WINDOW
    description: str
    lane_names: tuple[str, ...]
    lanes: list[tuple]
    windows: list[Window]
    points: list[Point]
    firings: list[Firing]
    # lane -> [(batch, effective watermark after it commits)], the batches that moved the lane's clock
    watermarks: dict[tuple, list[tuple[int, int | None]]] = field(default_factory=dict)
    lateness_rule: str = "window_closed"
    processing_time: bool = False  # the clock drawn is the recorded arrival time, not a watermark
    hidden_lanes: int = 0
    notes: list[str] = field(default_factory=list)

    def windows_of(self, lane: tuple) -> list[Window]:
        return [w for w in self.windows if w.lane == lane]

    def points_of(self, lane: tuple) -> list[Point]:
        return [p for p in self.points if p.lane == lane]

    def firings_of(self, lane: tuple) -> list[Firing]:
        return [f for f in self.firings if f.lane == lane]

    def watermark_before(self, lane: tuple, batch: int) -> int | None:
        """The effective watermark the rows of `batch` were checked against (None: no row yet)."""
        mark = None
        for b, value in self.watermarks.get(lane, []):
            if b < batch:
                mark = value
        return mark

    def batches_of(self, lane: tuple) -> list[int]:
        """The arrival batches that brought the lane rows or firings, in order."""
        return sorted({p.batch for p in self.points_of(lane) if p.batch is not None}
                      | {f.batch for f in self.firings_of(lane) if f.batch is not None})

    def replaced(self, window: Window) -> bool:
        """A session replaced by a merge: retracted with '-D' (RETRACTING)."""
        return any(f.window == window and f.op == "-D" for f in self.firings)

    @property
    def clock_name(self) -> str:
        return "processing time" if self.processing_time else "watermark"

    def closed_after(self, window: Window) -> int | None:
        """The batch after which `window` fired on time (None: at the end of input, or never)."""
        batches = [f.batch for f in self.firings if f.window == window and f.firing in CLOSING_FIRINGS]
        known = [b for b in batches if b is not None]
        return min(known) if known else None

    def figure(self, width: float = 12.0) -> "Figure":
        return draw_timeline(self, width=width)

    # -- text ---------------------------------------------------------------------------

    def time_text(self, micros: int | None) -> str:
        return _time_text(micros, self.time_kind, self.time_zone)

    def window_text(self, window: Window | None) -> str:
        if window is None or window.start is None:
            return "the global window" if window is not None else "no window"
        close = "]" if window.inclusive_end else ")"
        return f"[{self.time_text(window.start)}, {self.time_text(window.end)}{close}"


# --------------------------------------------------------------------------- entry points


def timeline_figure(sw: "Sqlwin", query: str, keys: t.Sequence | None = None, max_keys: int = 8,
                    label: str | None = None, width: float = 12.0) -> "Figure":
    """`sw.timeline(query)`: the picture as a matplotlib Figure (Jupyter shows it)."""
    require_matplotlib()
    return draw_timeline(build_timeline(sw, query, keys=keys, max_keys=max_keys, label=label), width=width)


def write_timeline(sw: "Sqlwin", query_text: str, path: str | Path, keys: t.Sequence | None = None,
                   max_keys: int = 8, label: str | None = None, dpi: int = 110) -> Path:
    """Draw `query_text`'s timeline into `path` (PNG, or any format matplotlib's Agg canvas writes:
    .svg, .pdf by the suffix) and return the path. What `sqlwin explain ... --timeline out.png` calls."""
    require_matplotlib()
    path = Path(path)
    figure = timeline_figure(sw, query_text, keys=keys, max_keys=max_keys, label=label)
    if path.parent and not path.parent.exists():
        raise SqlwinUsageError(f"Cannot write the timeline to {path}: no directory {path.parent}",
                               hint="a path in an existing directory, e.g. timeline.png")
    figure.savefig(path, dpi=dpi, bbox_inches="tight")
    return path


def require_matplotlib() -> None:
    try:
        import matplotlib
        del matplotlib  # only whether it imports
    except ImportError as err:
        raise SqlwinUsageError(
            "A timeline is drawn with matplotlib, which is not installed (an optional extra of sqlwin)",
            hint=INSTALL_HINT) from err


# --------------------------------------------------------------------------- building the facts


def build_timeline(sw: "Sqlwin", query: str, keys: t.Sequence | None = None, max_keys: int = 8,
                   label: str | None = None) -> Timeline:
    """Run `query` through sqlwin (a replay when its table records arrival, else complete input) and
    gather what the picture shows. `keys`: the lanes to draw (key values, a tuple per lane when
    there are several key columns); else the first `max_keys` keys to arrive."""
    from sqlwin.api import REPLAY, choose_mode

    plan = sw.plan(query)  # the user's errors, with their positions in the user's text
    if not plan.windows:
        raise SqlwinUsageError("A timeline draws the windows of a query: this query has no window function",
                               hint="a query over TUMBLE, HOP, CUMULATE, SESSION, SLIDE, COUNT_WINDOW or "
                                    "GLOBAL_WINDOW", query=query)
    if len(plan.windows) != 1:
        raise SqlwinUnsupportedError("A timeline draws a query with one window function",
                                     plan.windows[1].position, "one window function per query", query=query)
    if plan.windows[0].time is None:
        raise SqlwinUnsupportedError(
            f"A timeline draws windows over time: this {plan.windows[0].function.upper()} has no time column",
            plan.windows[0].position, "DESCRIPTOR(ts) naming the rows' time", query=query)
    if max_keys < 1:
        raise SqlwinUsageError(f"max_keys must be at least 1, got {max_keys}")
    replay = choose_mode(plan) == REPLAY
    builder = _Builder(sw, plan, replay, label)
    return builder.build(keys, max_keys)


class _Builder:
    def __init__(self, sw: "Sqlwin", plan, replay: bool, label: str | None):
        self.sw, self.plan, self.replay = sw, plan, replay
        self.rel = plan.windows[0]
        self.spark = sw.spark
        agg = plan.aggregation
        self.shape = "aggregation" if agg is not None else self._row_shape()
        self.lane_sql = list(agg.group_keys) if agg is not None else list(self.rel.partition_by)
        self.label_column = self._label_column(label)
        self.notes: list[str] = []

    def _row_shape(self) -> str:
        """'rows': the query returns the window function's rows (its windows are in its result);
        'probe': another shape (GROUP BY without the window, the window function in a CTE or a
        subquery), whose windows are read from the window function alone."""
        ast = self.plan.ast
        parts = [ast.args.get("from_"), *(ast.args.get("joins") or [])]
        top = any(node is self.rel.node for part in parts if part is not None for node in part.walk())
        return "rows" if top and ast.args.get("group") is None else "probe"

    # -- the query, run by sqlwin ---------------------------------------------------------

    def _rewritten(self) -> tuple[str, str | None]:
        """The query with the lane keys and window bounds added to its SELECT list (and, for a replay
        without one, a LATE ROWS INTO of its own)."""
        import sqlglot
        from sqlglot import exp

        from sqlwin.sql.dialect import LateRowsInto, SqlwinDialect

        if self.shape == "probe":
            with_ = self.plan.ast.args.get("with_")
            self.notes.append("the query's own result is not per window: the windows drawn are its window "
                              "function's")
            probe = exp.Select(expressions=[exp.Star()])
            probe.set("from_", exp.From(this=self.rel.node.copy()))
            if with_ is not None:
                probe.set("with_", with_.copy())
            ast = probe
        else:
            ast = self.plan.ast.copy()
        extra = [exp.alias_(sqlglot.parse_one(sql, read="spark"), f"__tl_k{i}")
                 for i, sql in enumerate(self.lane_sql)]
        extra += [exp.alias_(exp.column("window_start"), "__tl_ws"), exp.alias_(exp.column("window_end"), "__tl_we")]
        ast.select(*extra, append=True, copy=False)
        own_late = None
        if self.replay and not self.plan.late_into:
            own_late = f"__sqlwin_timeline_late_{uuid.uuid4().hex[:12]}"
            ast.set("late_into", LateRowsInto(this=exp.to_table(own_late)))
        return ast.sql(dialect=SqlwinDialect), own_late

    def build(self, keys: t.Sequence | None, max_keys: int) -> Timeline:
        from pyspark.sql import functions as F

        text, own_late = self._rewritten()
        plan = self.sw.plan(text)
        cached: list[str] = []
        try:
            if self.replay:
                from sqlwin.spark.replay import run_replay

                views = self._temporary_views()
                replayed = run_replay(self.sw.runner, plan)
                # The results and the late rows are two queries over the runtime's records: cache
                # the records so that the replay runs once (the view replay.py registers for them).
                cached = [v for v in self._temporary_views() - views if v.startswith("__sqlwin_records_")]
                for view in cached:
                    self.spark.catalog.cacheTable(view)
                results, stateful = replayed.batched, replayed.query
                rows = self.sw.runner.sql(stateful.input_sql(arrival=True), text)
                config = stateful.config
                late = self.spark.table(plan.late_into) if plan.late_into else None
            else:
                results = self.sw.sql(text)
                rows, config, late = self.sw.runner.sql(self._complete_rows_sql(), text), None, None
            key_columns = layout.keys(len(self.lane_sql))
            positions = self._clock_positions(config)
            if self.replay and key_columns:  # a NULL key is rejected (null_key): no lane of its own
                rows = rows.where(" AND ".join(f"{c} IS NOT NULL" for c in key_columns))
            everything = rows.limit(MAX_ROWS + 1).collect()
            if len(everything) <= MAX_ROWS:  # a small input: lanes chosen here, no other job
                lanes, total = self._choose_lanes(everything, key_columns, keys, max_keys)
                owners = {tuple(lane[i] for i in positions) for lane in lanes}
                collected = [r for r in everything if tuple(r[key_columns[i]] for i in positions) in owners]
            else:  # the lanes by Spark, then only their clocks' rows
                lanes, total = self._choose_lanes(rows, key_columns, keys, max_keys)
                owners = sorted({tuple(lane[i] for i in positions) for lane in lanes}, key=repr)
                owner_columns = [key_columns[i] for i in positions]
                collected = _collect(rows.where(_lane_filter(F, owner_columns, owners)), "input rows")
            batch_times = {}
            if self.replay and self._processing_time:
                batch_times = {r[0]: r[1] for r in rows.groupBy("__batch").agg(F.max("__ptime")).collect()}
            lane_results = results.where(_lane_filter(F, [f"__tl_k{i}" for i in range(len(lanes[0]))], lanes))
            result_rows = _collect(_with_micros(F, lane_results, ("__tl_ws", "__tl_we")), "results")
            late_rows = self._late_records(F, late, plan) if late is not None else []
        finally:
            for view in cached:
                self.spark.catalog.uncacheTable(view)
            if own_late:
                self.spark.catalog.dropTempView(own_late)
        return self._assemble(plan, config, lanes, total, positions, collected, batch_times,
                              result_rows, results.columns, late_rows)

    def _complete_rows_sql(self) -> str:
        """The finished table's rows, as complete input sees them: lane keys, time (µs), the row."""
        from sqlwin.spark.stateful import _source_sql, _time_micros
        from sqlwin.sql.dialect import WindowTVF
        from sqlwin.sql.text import quote_identifier

        with_ = self.plan.ast.args.get("with_")
        with_sql = ""
        if with_ is not None:  # the CTEs the input can read: those without a window function of their own
            with_ = with_.copy()
            with_.set("expressions", [c for c in with_.expressions if not any(c.find_all(WindowTVF))])
            with_sql = f"{with_.sql(dialect='spark')} " if with_.expressions else ""
        columns = [f"{sql} AS {layout.key(i)}" for i, sql in enumerate(self.lane_sql)]
        columns += [f"{_time_micros(self.rel)} AS __time", "CAST(NULL AS BIGINT) AS __ptime",
                    "CAST(NULL AS BIGINT) AS __order", "CAST(NULL AS BIGINT) AS __batch"]
        columns += [f"{quote_identifier(name)} AS {layout.carried(i)}" for i, name in enumerate(self.rel.columns)]
        # A row with a NULL PARTITION BY key joins no window (docs/semantics.md): not drawn.
        keyed = " AND ".join(f"({sql}) IS NOT NULL" for sql in self.rel.partition_by)
        where = f" WHERE {keyed}" if keyed else ""
        return f"{with_sql}SELECT {', '.join(columns)} FROM {_source_sql(self.rel)}{where}"

    def _temporary_views(self) -> set[str]:
        return {table.name for table in self.spark.catalog.listTables() if table.isTemporary}

    def _choose_lanes(self, rows, key_columns: list[str], keys, max_keys: int) -> tuple[list[tuple], int]:
        """The lanes: `keys` as given, else the first `max_keys` keys to arrive (complete input: in
        time order). `rows`: the input rows, collected (a list) or as a DataFrame."""
        from pyspark.sql import functions as F

        if not key_columns:
            return [()], 1
        if keys is not None:
            lanes = [k if isinstance(k, tuple) else (k,) for k in keys]
            for lane in lanes:
                if len(lane) != len(key_columns):
                    raise SqlwinUsageError(f"A lane is {len(key_columns)} key values, got {lane!r}",
                                           hint=f"keys=[({', '.join(self.lane_sql)}), ...]")
            return lanes, len(lanes)
        first = ["__batch", "__order"] if self.replay else ["__time"]
        if isinstance(rows, list):
            firsts: dict[tuple, tuple] = {}
            for r in rows:
                lane = tuple(r[c] for c in key_columns)
                when = tuple(_sort_time(r[c], end=True) for c in first)
                if lane not in firsts or when < firsts[lane]:
                    firsts[lane] = when
            ordered_lanes = sorted(firsts, key=firsts.__getitem__)
            if not ordered_lanes:
                raise SqlwinUsageError("The query's input has no rows: there is nothing to draw")
            return ordered_lanes[:max_keys], len(ordered_lanes)
        ordered = rows.groupBy(*key_columns).agg(F.min(F.struct(*first)).alias("__first")).orderBy("__first")
        lanes = [tuple(r[c] for c in key_columns) for r in ordered.limit(max_keys).collect()]
        total = ordered.count() if len(lanes) == max_keys else len(lanes)
        if not lanes:
            raise SqlwinUsageError("The query's input has no rows: there is nothing to draw")
        return lanes, total

    def _clock_positions(self, config) -> list[int]:
        """Which lane keys carry the clock: all (a clock per key), none (one for the stream) or some."""
        if config is None:
            return list(range(len(self.lane_sql)))
        if config.clock_positions is None:
            return list(range(config.key_count))
        return list(config.clock_positions)

    def _late_records(self, F, late, plan) -> list:
        """Late and rejected rows: (the row's values, late_by µs, window start µs, window end µs, reason)."""
        from pyspark.sql.types import NumericType

        columns = list(self.rel.columns)
        frame = _with_micros(F, late, ("window_start", "window_end"))
        if isinstance(late.schema["late_by"].dataType, NumericType):  # epoch milliseconds
            late_by = F.col("late_by").cast("long") * 1000
        else:  # an interval
            late_by = F.expr("unix_micros(TIMESTAMP '1970-01-01 00:00:00 UTC' + late_by)")
        frame = frame.select(*[F.col(f"`{c}`") for c in columns], late_by.alias("__late_by"),
                             "window_start", "window_end", "reason")
        return _collect(frame, "late rows")

    @property
    def _processing_time(self) -> bool:
        return self.rel.time is not None and self.rel.time.kind == "processing_time"

    # -- assembling ------------------------------------------------------------------------

    def _assemble(self, plan, config, lanes, total, positions, collected, batch_times, result_rows,
                  result_columns, late_rows) -> Timeline:
        from sqlwin.ir import CountWindow, Slide
        from sqlwin.spark.operator import END_BATCH

        rel = self.rel
        inclusive = isinstance(rel.windower, (Slide, CountWindow))  # both ends inside the window
        nkeys = len(self.lane_sql)
        lane_set = set(lanes)
        # Late records by the row they came from (the row's own columns, as the replay carried them).
        late_by_row: dict[tuple, list] = {}
        rejected = 0
        for record in late_rows:
            values, (late_by, start, end, reason) = tuple(record[:-4]), tuple(record[-4:])
            if reason != "late":
                rejected += 1
                continue
            missed = None if start is None and end is None else (start, end)
            late_by_row.setdefault(values, []).append((missed, late_by))
        if rejected:
            self.notes.append(f"{rejected} row(s) rejected (NULL key or time): in the LATE ROWS INTO table, not drawn")

        # Firings and windows.
        outputs = [c for c in result_columns if not c.startswith("__tl_") and c not in
                   ("op", "firing", "emit_seq", "__batch", "__seq")]
        shown = [c for c in outputs if c.lower() not in
                 ("window_start", "window_end", "window_time", "window_index", *map(str.lower, self._key_names()))]
        firings: list[Firing] = []
        windows: dict[Window, None] = {}
        index = {c: i for i, c in enumerate(result_columns)}
        for r in result_rows:
            lane = tuple(r[index[f"__tl_k{i}"]] for i in range(nkeys))
            window = Window(lane, r[index["__tl_ws"]], r[index["__tl_we"]], inclusive)
            windows.setdefault(window, None)
            if plan.aggregation is None:
                continue  # a row-level query: its results are the rows' windows
            values = _values_text([(c, r[index[c]]) for c in shown], self.rel.time)
            if self.replay:
                batch = r[index["__batch"]]
                firings.append(Firing(lane, window, r[index["op"]], r[index["firing"]], r[index["emit_seq"]],
                                      None if batch == END_BATCH else batch, values))
            else:
                firings.append(Firing(lane, window, "+I", "on_time", None, None, values))

        # Rows.
        windower = rel.windower
        label_at = list(rel.columns).index(self.label_column) if self.label_column else None
        rows_by_owner: dict[tuple, list] = {}
        points: list[Point] = []
        for r in collected:
            key = tuple(r["__k%d" % i] for i in range(nkeys))
            values = tuple(r[name] for name in layout.carried_columns(len(rel.columns)))
            batch = r["__batch"]
            time = batch_times.get(batch) if self._processing_time else r["__time"]
            late = late_by_row.get(values, [])
            missed = tuple(None if m is None else Window(key, m[0], m[1], inclusive) for m, _ in late)
            fully = bool(late) and (len(late) >= len(_fixed_spans(windower, time)) if _is_fixed(windower) else True)
            owner = tuple(key[i] for i in positions)
            rows_by_owner.setdefault(owner, []).append((batch, time, fully))
            if key not in lane_set:
                continue
            label = _short(values[label_at]) if label_at is not None else ""
            points.append(Point(key, time, batch, r["__order"], label, missed=missed,
                                late_by=late[0][1] if late else None, fully_late=fully))
        for p in points:
            for w in p.missed:
                if w is not None:
                    windows.setdefault(w, None)
        window_list = sorted(windows, key=lambda w: (lanes.index(w.lane) if w.lane in lane_set else len(lanes),
                                                     _sort_time(w.start), _sort_time(w.end)))
        window_list = [w for w in window_list if w.lane in lane_set]
        by_lane: dict[tuple, list[Window]] = {}
        for w in window_list:
            by_lane.setdefault(w.lane, []).append(w)
        retracted = {f.window: f.batch for f in firings if f.op == "-D"}
        points = [_joined(p, by_lane.get(p.lane, []), retracted) for p in points]
        points.sort(key=lambda p: (lanes.index(p.lane), _sort_time(p.batch), _sort_time(p.order), _sort_time(p.time)))
        firings = [f for f in firings if f.lane in lane_set]
        firings.sort(key=lambda f: (lanes.index(f.lane), _sort_time(f.batch, end=True), _sort_time(f.seq),
                                    _sort_time(f.window.end)))

        watermarks = self._watermarks(config, lanes, positions, rows_by_owner, batch_times)
        timeline = Timeline(
            query=self.plan.sql, mode="replay" if self.replay else "complete input",
            time_kind=self._time_kind(), time_zone=plan.time_zone or "UTC", time_name=self._time_name(),
            function=rel.function.upper(), description=self._describe(config), lane_names=tuple(self._key_names()),
            lanes=lanes, windows=window_list, points=points, firings=firings, watermarks=watermarks,
            lateness_rule=rel.watermark.lateness_rule, processing_time=self._processing_time,
            hidden_lanes=max(0, total - len(lanes)), notes=self.notes)
        self._check_watermarks(timeline)
        return timeline

    def _watermarks(self, config, lanes, positions, rows_by_owner, batch_times) -> dict:
        """The effective watermark per lane after each batch that moved it (see the module docstring)."""
        from sqlwin.ir import UNBOUNDED

        if not self.replay:
            return {}
        spec = config.watermark
        if spec.delay >= UNBOUNDED:
            self.notes.append("DELAY OF UNBOUNDED: no window closes before the end of input; no watermark drawn")
            return {}
        if self._processing_time:
            steps = [(b, time - spec.delay) for b, time in sorted(batch_times.items()) if time is not None]
            return {lane: steps for lane in lanes}
        if spec.strategy == "bytewax":
            self.notes.append("the bytewax strategy's watermark ages with system time: not drawn")
            return {}
        if spec.idle_timeout is not None:
            self.notes.append("an idle timeout moves the watermark without rows: the drawn watermark leaves those "
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

    def _check_watermarks(self, timeline: Timeline) -> None:
        """Every on-time firing must be where the recomputed watermark reached its window."""
        if not timeline.watermarks:
            return
        for f in timeline.firings:
            if f.firing != "on_time" or f.batch is None or f.window.end is None or self.plan.emit.changes:
                continue
            after = timeline.watermark_before(f.lane, f.batch + 1)
            before = timeline.watermark_before(f.lane, f.batch)

            def reached(mark):
                return mark is not None and (mark > f.window.end if f.window.inclusive_end else mark >= f.window.end)

            if not reached(after) or (reached(before) and not self.plan.emit.allowed_lateness):
                timeline.notes.append(f"the drawn watermark does not explain {timeline.window_text(f.window)} "
                                      f"firing after batch {f.batch} (recomputed, not the engine's own)")

    # -- names and words -------------------------------------------------------------------

    def _key_names(self) -> list[str]:
        from sqlwin.sql.text import identifier_name

        return [identifier_name(sql) or sql for sql in self.lane_sql]

    def _label_column(self, label: str | None) -> str | None:
        columns = list(self.rel.columns)
        if label is not None:
            if label not in columns:
                raise SqlwinUsageError(f"label={label!r} is not a column of {self.rel.source}",
                                       hint=", ".join(columns))
            return label
        from sqlwin.sql.text import identifier_name

        keys = [*self.rel.partition_by, *(self.plan.aggregation.group_keys if self.plan.aggregation else ())]
        skip = {(identifier_name(k) or k).lower() for k in keys}
        skip |= {str(v).lower() for k, v in self.rel.options.items() if k.startswith("arrival")}
        if self.rel.time is not None and self.rel.time.name:
            skip.add(self.rel.time.name.lower())
        candidates = [c for c in columns if c.lower() not in skip and self.rel.columns[c] == "string"]
        for name in ("id", "event", "name", "label"):
            for c in candidates:
                if c.lower() == name:
                    return c
        return candidates[0] if candidates else None

    def _time_kind(self) -> str:
        rel = self.rel
        if rel.time is not None and rel.time.kind == "processing_time":
            arrival = rel.options.get("arrival_time")
            return "timestamp" if rel.columns.get(arrival, "").startswith("timestamp") else "epoch_ms"
        return "epoch_ms" if rel.time is not None and rel.time.kind == "epoch_ms" else "timestamp"

    def _time_name(self) -> str:
        rel = self.rel
        if rel.time is None:
            return "time"
        if rel.time.kind == "processing_time":
            return f"processing time ({rel.options.get('arrival_time')})"
        return rel.time.name

    def _describe(self, config) -> str:
        rel = self.rel
        text = _windower_text(rel.function, rel.windower)
        if self.replay:
            spec = config.watermark
            if self._processing_time:
                text += " · processing time"
            else:
                scope = "per key" if config.clock_positions != () else "one for the stream"
                delay = "UNBOUNDED" if spec.delay >= 2**62 else _duration_text(spec.delay)
                text += f" · watermark {spec.strategy} − {delay}, {scope} · lateness: {spec.lateness_rule}"
            text += f" · EMIT {_emit_text(self.plan.emit)} · replay of the recorded arrival"
        else:
            text += " · complete input: every row on time, every window closes at the end"
        return text


# --------------------------------------------------------------------------- small helpers


def _collect(frame, what: str) -> list:
    rows = frame.limit(MAX_ROWS + 1).collect()
    if len(rows) > MAX_ROWS:
        raise SqlwinUsageError(
            f"A timeline draws at most {MAX_ROWS} {what}; this one has more",
            hint="a smaller table (a view of one time range), or keys=[...] / max_keys for fewer lanes")
    return rows


def _lane_filter(F, columns: list[str], lanes: list[tuple]):
    if not columns:
        return F.lit(True)
    condition = F.lit(False)
    for lane in lanes:
        match = F.lit(True)
        for column, value in zip(columns, lane):
            match = match & F.col(column).eqNullSafe(F.lit(value))
        condition = condition | match
    return condition


def _with_micros(F, frame, names: t.Iterable[str]):
    """Window bound columns as epoch microseconds: TIMESTAMP -> unix_micros, LONG epoch ms -> x 1000."""
    from pyspark.sql.types import NumericType, TimestampNTZType, TimestampType

    for name in names:
        kind = frame.schema[name].dataType
        if isinstance(kind, (TimestampType, TimestampNTZType)):
            value = F.expr(f"unix_micros(CAST(`{name}` AS TIMESTAMP))")
        elif isinstance(kind, NumericType):
            value = F.col(name).cast("long") * 1000
        else:
            value = F.lit(None).cast("long")
        frame = frame.withColumn(name, value)
    return frame


def _is_fixed(windower) -> bool:
    from sqlwin.ir import Cumulate, Hop, Tumble

    return isinstance(windower, (Tumble, Hop, Cumulate))


def _fixed_spans(windower, time):
    from sqlwin.runtime.assign import fixed_windows

    return fixed_windows(windower, time) if time is not None else []


def _joined(point: Point, windows: list[Window], retracted: dict) -> Point:
    """The windows the row was counted in: those holding its time, less the ones it was late for
    and the sessions a merge had replaced before it arrived."""
    if point.fully_late:
        return point
    missed = set(point.missed)

    def before_retraction(w: Window) -> bool:
        if w not in retracted:
            return True
        gone = retracted[w]
        return gone is None or (point.batch is not None and point.batch < gone)

    joined = tuple(w for w in windows if w.contains(point.time) and w not in missed and before_retraction(w))
    return Point(point.lane, point.time, point.batch, point.order, point.label, joined, point.missed,
                 point.late_by, point.fully_late)


def _sort_time(value, end: bool = False):
    """A sort key for an optional number: None first, or last with `end` (a batch: end of input)."""
    if value is None:
        return (1, 0) if end else (-1, 0)
    return (0, value)


def _short(value, width: int = 10) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _values_text(pairs: list[tuple[str, t.Any]], time_column) -> str:
    def show(value) -> str:
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(show(v) for v in value) + "]"
        if isinstance(value, float):
            return f"{value:.4g}"
        if isinstance(value, dt.datetime):
            return value.strftime("%H:%M:%S") if value.second else value.strftime("%H:%M")
        return "NULL" if value is None else str(value)

    text = ", ".join(f"{name}={show(value)}" for name, value in pairs)
    return text if len(text) <= 64 else text[:63] + "…"


EPOCH_MS_AS_DATE = 10**14  # µs (10**11 ms, March 1973): epoch milliseconds from then on are shown as dates
UNITS = ((3_600_000_000, "h"), (60_000_000, "min"), (1_000_000, "s"), (1_000, "ms"), (1, "µs"))


def _duration_text(micros: int | None) -> str:
    """`10 s`, `1 h`, `56 min 40 s`: at most two units, the smaller one rounded."""
    if micros is None:
        return "?"
    if micros == 0:
        return "0 s"
    sign, micros = ("-" if micros < 0 else ""), abs(micros)
    for i, (size, unit) in enumerate(UNITS):
        if micros >= size:
            whole, rest = divmod(micros, size)
            text = f"{whole} {unit}"
            if rest and i + 1 < len(UNITS):
                smaller, name = UNITS[i + 1]
                text += f" {rest / smaller:.3g} {name}"
            return sign + text
    return f"{sign}{micros} µs"


def _time_text(micros: int | None, kind: str, zone: str, with_date: bool = False) -> str:
    if micros is None:
        return "—"
    if kind == "epoch_ms" and abs(micros) < EPOCH_MS_AS_DATE:
        if micros % 1_000_000 == 0:
            return f"{micros // 1_000_000} s"
        return f"{micros / 1_000_000:.6f}".rstrip("0") + " s"  # 3600.001 s
    from zoneinfo import ZoneInfo

    try:
        tz = ZoneInfo(zone)
    except Exception:  # an offset Spark reads and zoneinfo does not: show UTC
        tz = dt.timezone.utc
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)
    when = when.astimezone(tz)
    text = when.strftime("%H:%M:%S" if when.second or when.microsecond else "%H:%M")
    if when.microsecond:
        text += f".{when.microsecond:06d}".rstrip("0")
    return f"{when:%Y-%m-%d} {text}" if with_date else text


def _windower_text(function: str, w) -> str:
    names = {"Tumble": ("size", "offset"), "Hop": ("slide", "size", "offset"),
             "Cumulate": ("step", "max_size", "offset"), "Session": ("gap",), "Slide": ("size",),
             "CountWindow": ("size", "slide"), "GlobalWindow": ()}
    args = []
    for attr in names.get(type(w).__name__, ()):
        value = getattr(w, attr)
        if attr == "offset" and not value:
            continue
        word = attr.replace("_", " ")
        args.append(f"{word} {value} rows" if type(w).__name__ == "CountWindow" else f"{word} {_duration_text(value)}")
    return f"{function.upper()}({', '.join(args)})"


def _emit_text(emit) -> str:
    parts = []
    if emit.changes:
        parts.append("CHANGES")
    else:
        if emit.early_rows:
            parts.append(f"EARLY EVERY {emit.early_rows} ROWS")
        if emit.early_interval:
            parts.append(f"EARLY EVERY {_duration_text(emit.early_interval)}")
        parts.append("FINAL")
    if emit.allowed_lateness:
        parts.append(f"ALLOWED LATENESS {_duration_text(emit.allowed_lateness)}")
    if emit.accumulation != "ACCUMULATING":
        parts.append(emit.accumulation)
    return " ".join(parts)


# --------------------------------------------------------------------------- drawing


_FIGURE_CLASS = None


def _figure_class():
    """matplotlib's Figure, with a PNG for Jupyter even when pyplot's inline backend is not loaded."""
    global _FIGURE_CLASS
    if _FIGURE_CLASS is None:
        from matplotlib.figure import Figure

        class TimelineFigure(Figure):
            def _repr_png_(self):
                buffer = io.BytesIO()
                self.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
                return buffer.getvalue()

        _FIGURE_CLASS = TimelineFigure
    return _FIGURE_CLASS


@dataclass
class _Slot:
    kind: str  # windows | rows | late | firing | end
    top: float
    height: float
    batch: int | None = None
    item: t.Any = None

    @property
    def middle(self) -> float:
        return self.top + self.height / 2

    @property
    def bottom(self) -> float:
        return self.top + self.height


def _tracks(windows: list[Window]) -> list[int]:
    """A track per window so that overlapping windows never share one (first fit, by start)."""
    ends: list[float] = []
    tracks = []
    for w in windows:
        start = -float("inf") if w.start is None else w.start
        for i, end in enumerate(ends):
            if end <= start:
                ends[i] = float("inf") if w.end is None else w.end + (1 if w.inclusive_end else 0)
                tracks.append(i)
                break
        else:
            ends.append(float("inf") if w.end is None else w.end + (1 if w.inclusive_end else 0))
            tracks.append(len(ends) - 1)
    return tracks


def _layout(timeline: Timeline, lane: tuple) -> tuple[list[_Slot], list[int]]:
    windows = timeline.windows_of(lane)
    tracks = _tracks(windows)
    slots = [_Slot("windows", 1.4 * i, 1.4, item=[w for w, k in zip(windows, tracks) if k == i])
             for i in range(max(tracks) + 1 if tracks else 1)]
    y = slots[-1].bottom + 0.5
    points, firings = timeline.points_of(lane), timeline.firings_of(lane)
    replay = timeline.mode == "replay"
    bands = timeline.batches_of(lane) if replay else [None]
    for batch in bands:
        slots.append(_Slot("rows", y, 1.2, batch, [p for p in points if p.batch == batch]))
        y += 1.2
        for p in points:
            if p.batch == batch and p.late:
                slots.append(_Slot("late", y, 0.9, batch, p))
                y += 0.9
        if replay:
            for f in firings:
                if f.batch == batch:
                    slots.append(_Slot("firing", y, 0.9, batch, f))
                    y += 0.9
        y += 0.3
    slots.append(_Slot("end", y, 0.9, None))
    y += 0.9
    for f in firings:
        if f.batch is None:
            slots.append(_Slot("firing", y, 0.9, None, f))
            y += 0.9
    return slots, tracks


def _window_colours(timeline: Timeline) -> dict[Window, str]:
    colours = {}
    for lane in timeline.lanes:
        for i, w in enumerate(timeline.windows_of(lane)):
            colours[w] = WINDOW_COLOURS[i % len(WINDOW_COLOURS)]
    return colours


def _x_range(timeline: Timeline) -> tuple[float, float]:
    values = [v for w in timeline.windows for v in (w.start, w.end) if v is not None]
    values += [p.time for p in timeline.points if p.time is not None]
    values += [m for steps in timeline.watermarks.values() for _, m in steps if m is not None]
    if not values:
        return 0.0, 1.0
    low, high = min(values), max(values)
    span = (high - low) or 1
    return low - 0.04 * span, high + 0.04 * span


def draw_timeline(timeline: Timeline, width: float = 12.0) -> "Figure":
    """Draw the facts: one lane (an Axes) per key, sharing the event-time axis."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    layouts = [_layout(timeline, lane) for lane in timeline.lanes]
    heights = [slots[-1].bottom + 0.2 for slots, _ in layouts]
    total = sum(heights)
    figure = _figure_class()(figsize=(width, min(60.0, 1.9 + 0.3 * total + 0.35 * len(layouts))),
                             layout="constrained")
    FigureCanvasAgg(figure)  # Agg whatever pyplot's backend: savefig and Jupyter's PNG need no display
    axes = figure.subplots(len(layouts), 1, sharex=True, squeeze=False,
                           gridspec_kw={"height_ratios": heights})[:, 0]
    colours = _window_colours(timeline)
    x_low, x_high = _x_range(timeline)
    for ax, lane, (slots, tracks), height in zip(axes, timeline.lanes, layouts, heights):
        _draw_lane(ax, timeline, lane, slots, colours, (x_low, x_high), height)
    _time_axis(axes[-1], timeline, x_low, x_high)
    title = "sqlwin timeline — " + timeline.description
    notes = list(timeline.notes)
    if timeline.hidden_lanes:
        notes.append(f"{timeline.hidden_lanes} more key(s) not drawn (keys=[...] / max_keys choose)")
    figure.suptitle(title + ("\n" + "; ".join(notes) if notes else ""), fontsize=10, x=0.01, ha="left")
    _legend(figure, timeline)
    return figure


def _lane_name(timeline: Timeline, lane: tuple) -> str:
    if not lane:
        return "all rows" if timeline.mode != "replay" else "the stream"
    return ", ".join(f"{n} = {v}" for n, v in zip(timeline.lane_names, lane))


TEXT_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.0}


def _draw_lane(ax, timeline: Timeline, lane: tuple, slots: list[_Slot], colours, x_range, height) -> None:
    from matplotlib.patches import Rectangle

    x_low, x_high = x_range
    span = x_high - x_low
    ax.set_xlim(x_low, x_high)
    ax.set_ylim(height, 0)
    ax.set_title(_lane_name(timeline, lane), loc="left", fontsize=10, fontweight="bold")
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    ticks, labels = [], []

    def bar(window: Window, slot: _Slot, half: float = 0.28, start=None, end=None, **style):
        start = (x_low if window.start is None else window.start) if start is None else start
        end = (x_high if window.end is None else window.end) if end is None else end
        ax.add_patch(Rectangle((start, slot.middle - half), end - start, 2 * half, **style))
        return start, end

    # Windows, with a dot for every row counted in them (a session: solid up to its last row,
    # then its gap, lighter).
    points = timeline.points_of(lane)
    window_slots = [s for s in slots if s.kind == "windows"]
    ticks.append((window_slots[0].top + window_slots[-1].bottom) / 2)
    labels.append("windows")
    for slot in window_slots:
        for w in slot.item:
            colour = colours[w]
            members = sorted(p.time for p in points if w in p.windows and p.time is not None)
            if timeline.replaced(w):
                start, end = bar(w, slot, 0.42, facecolor="white", edgecolor=colour, linewidth=1.2,
                                 linestyle="--", hatch="////", alpha=0.6)
            elif timeline.function == "SESSION" and members and w.end is not None:
                bar(w, slot, 0.42, end=members[-1], facecolor=colour, alpha=0.45, edgecolor="none")
                bar(w, slot, 0.42, start=members[-1], facecolor=colour, alpha=0.15, edgecolor="none")
                start, end = bar(w, slot, 0.42, facecolor="none", edgecolor=colour, linewidth=1.5)
            else:
                start, end = bar(w, slot, 0.42, facecolor=colour, alpha=0.35, edgecolor=colour, linewidth=1.5)
            if (end - start) > 0.12 * span:
                words = timeline.window_text(w) + (" replaced by a merge" if timeline.replaced(w) else "")
                ax.text(start + 0.006 * span, slot.middle - 0.16, words, ha="left", va="center", fontsize=7.5,
                        color="#222222", clip_on=True, bbox={**TEXT_BOX, "alpha": 0.6, "pad": 0.5})
            ax.plot(members, [slot.middle + 0.2] * len(members), "o", color="#222222", markersize=3.5, zorder=4)
    ax.axhline(window_slots[-1].bottom + 0.25, color="#cccccc", linewidth=0.8)

    # The watermark: a step line down the arrival bands, the time behind it shaded.
    if timeline.watermarks.get(lane):
        _draw_watermark(ax, timeline, lane, slots, x_low, x_high)

    label_rows = len(points) <= 40
    for slot in slots:
        if slot.kind == "rows":
            ticks.append(slot.middle)
            labels.append("rows" if slot.batch is None else f"batch {slot.batch}")
            for p in slot.item:
                if p.time is None:
                    continue
                if p.fully_late:
                    ax.plot(p.time, slot.middle, "X", color=LATE_COLOUR, markersize=11, zorder=6,
                            markeredgecolor="white", markeredgewidth=0.8)
                else:
                    live = [w for w in p.windows if not timeline.replaced(w)] or list(p.windows)
                    colour = colours.get(live[0], "#999999") if live else "#999999"
                    ax.plot(p.time, slot.middle, "o", color=colour, markersize=8, zorder=6,
                            markeredgecolor=LATE_COLOUR if p.late else "#222222",
                            markeredgewidth=2 if p.late else 0.8)
            if label_rows:  # rows at the same time share one label
                by_time: dict[int, list[Point]] = {}
                for p in slot.item:
                    if p.label and p.time is not None:
                        by_time.setdefault(p.time, []).append(p)
                for time, same in by_time.items():
                    ax.text(time, slot.middle - 0.3, ", ".join(p.label for p in same), ha="center", va="bottom",
                            fontsize=8, zorder=7, color=LATE_COLOUR if any(p.late for p in same) else "#222222")
        elif slot.kind == "late":
            _draw_late(ax, timeline, slot, bar)
        elif slot.kind == "firing":
            f: Firing = slot.item
            colour = colours.get(f.window, "#999999")
            retraction = f.op in RETRACTIONS
            edge = FIRING_COLOURS.get(f.firing, "#333333")
            start, end = bar(f.window, slot, facecolor="white" if retraction else colour, alpha=0.9,
                             edgecolor=edge, linewidth=1.8, hatch="////" if retraction else None,
                             linestyle="--" if retraction else "-")
            words = f"{f.firing.upper()} {f.op}  {f.values}" if timeline.mode == "replay" else f.values
            ax.text(end + 0.008 * span, slot.middle, words.strip(), ha="left", va="center", fontsize=8.5,
                    color=edge, fontweight="bold", clip_on=False, zorder=9, bbox=TEXT_BOX)
        elif slot.kind == "end":
            ticks.append(slot.middle)
            labels.append("end of input" if timeline.mode == "replay" else "results (end of input)")
            ax.axhline(slot.top, color="#cccccc", linewidth=0.8)
    ax.set_yticks(ticks, labels, fontsize=8.5)
    ax.tick_params(axis="y", length=0)
    ax.grid(axis="x", color="#e3e3e3", linewidth=0.8, zorder=0)
    ax.set_axisbelow(True)


def _draw_late(ax, timeline: Timeline, slot: _Slot, bar) -> None:
    """A late row's own line: the window(s) it missed, dashed red, and why."""
    p: Point = slot.item
    span = ax.get_xlim()[1] - ax.get_xlim()[0]
    mark = timeline.watermark_before(p.lane, p.batch) if p.batch is not None else None
    reasons, missed = [], []
    right = p.time
    for w in p.missed:
        if w is None:
            continue
        start, end = bar(w, slot, 0.3, facecolor="none", edgecolor=LATE_COLOUR, linewidth=1.6, linestyle="--")
        right = max(right, end)
        closed = timeline.closed_after(w)
        if timeline.lateness_rule == "before_watermark":
            missed.append(timeline.window_text(w))
        elif closed is not None:
            reasons.append(f"{timeline.window_text(w)} closed after batch {closed}")
            if mark is not None:
                reasons[-1] += f" (watermark {timeline.time_text(mark)})"
        else:
            reasons.append(f"{timeline.window_text(w)} had closed")
    if timeline.lateness_rule == "before_watermark":
        behind = "behind the watermark" + (f" {timeline.time_text(mark)}" if mark is not None else "")
        reasons = [behind] + ([f"missed {', '.join(missed)}"] if missed else [])
    elif not reasons:
        reasons.append("the session it would open had already closed")
    ax.plot(p.time, slot.middle, "x", color=LATE_COLOUR, markersize=7, zorder=6, alpha=0.7)
    who = f"{p.label}: " if p.label else ""
    text = f"{who}late by {_duration_text(p.late_by)}: " + "; ".join(reasons)
    if not p.fully_late:
        text += " (counted in its open windows)"
    ax.text(right + 0.008 * span, slot.middle, text, ha="left", va="center", fontsize=8.5, color=LATE_COLOUR,
            clip_on=False, zorder=9, bbox=TEXT_BOX)


def _draw_watermark(ax, timeline: Timeline, lane: tuple, slots: list[_Slot], x_low, x_high) -> None:
    """In batch b's band the line stands where the rows of b were checked (the watermark after the
    batches before it), steps when b commits, and stays there through b's firings."""
    steps = dict(timeline.watermarks.get(lane, []))
    bands: list[list] = []  # batch, top, commit, bottom
    current = None
    for slot in slots:
        if slot.kind == "rows":
            current = [slot.batch, slot.top, slot.bottom, slot.bottom]
            bands.append(current)
        elif slot.kind == "late" and current is not None:
            current[2] = current[3] = slot.bottom
        elif slot.kind == "firing" and current is not None and slot.batch == current[0]:
            current[3] = slot.bottom
    end = next(s for s in slots if s.kind == "end")
    xs, ys = [], []
    for i, (batch, top, commit, bottom) in enumerate(bands):
        before = timeline.watermark_before(lane, batch)
        after = timeline.watermark_before(lane, batch + 1)
        next_top = bands[i + 1][1] if i + 1 < len(bands) else end.top
        for x, y in ((before, top), (before, commit), (after, commit), (after, next_top)):
            xs.append(x)
            ys.append(y)
        if batch in steps and after is not None and after != before:
            words = f"{timeline.clock_name} {timeline.time_text(after)}"
            ax.text(after + 0.004 * (x_high - x_low), commit - 0.03, words, ha="left", va="bottom", fontsize=7.5,
                    color=WATERMARK_COLOUR, zorder=8, clip_on=False)
    segments, run = [], []
    for x, y in zip(xs, ys):
        if x is None:
            if run:
                segments.append(run)
            run = []
        else:
            run.append((min(max(x, x_low), x_high), y))
    if run:
        segments.append(run)
    for run in segments:
        x, y = [p[0] for p in run], [p[1] for p in run]
        ax.plot(x, y, color=WATERMARK_COLOUR, linewidth=2, zorder=10, solid_joinstyle="miter", alpha=0.9)
        ax.fill_betweenx(y, x_low, x, color=WATERMARK_COLOUR, alpha=0.08, linewidth=0, zorder=1)
    if xs and xs[-1] is not None:  # the end of input closes everything: the watermark goes to +inf
        last = min(max(xs[-1], x_low), x_high)
        ax.annotate("", xy=(x_high, end.top), xytext=(last, end.top),
                    arrowprops={"arrowstyle": "->", "color": WATERMARK_COLOUR, "linewidth": 1.8}, zorder=5)
        ax.text(x_high, end.top + 0.06, "end of input: every window closes", ha="right", va="top", fontsize=7.5,
                color=WATERMARK_COLOUR)


def _time_axis(ax, timeline: Timeline, x_low: float, x_high: float) -> None:
    from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator

    bounds = sorted({v for w in timeline.windows for v in (w.start, w.end) if v is not None})
    kept: list[int] = []
    for value in bounds:  # window bounds as ticks, but never two labels on top of each other
        if not kept or value - kept[-1] >= 0.06 * (x_high - x_low):
            kept.append(value)
    if 2 <= len(kept) <= 16:
        ax.xaxis.set_major_locator(FixedLocator(kept))
    else:
        ax.xaxis.set_major_locator(MaxNLocator(10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: timeline.time_text(int(round(v)))))
    ax.tick_params(axis="x", labelsize=8.5)
    if timeline.time_kind == "timestamp" or abs(x_high) >= EPOCH_MS_AS_DATE:
        day = _time_text(int((x_low + x_high) / 2), "timestamp", timeline.time_zone, with_date=True)[:10]
        unit = "epoch milliseconds, " if timeline.time_kind == "epoch_ms" else ""
        ax.set_xlabel(f"{timeline.time_name} ({unit}{day}, {timeline.time_zone})", fontsize=9)
    else:
        ax.set_xlabel(f"{timeline.time_name} (epoch milliseconds)", fontsize=9)


def _legend(figure, timeline: Timeline) -> None:
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=WINDOW_COLOURS[0], alpha=0.35, edgecolor=WINDOW_COLOURS[0],
                     label="window (dots: its rows)"),
               Line2D([], [], marker="o", linestyle="", color=WINDOW_COLOURS[0], markeredgecolor="#222222",
                      label="row (colour: its window)")]
    if timeline.function == "SESSION":
        handles.append(Patch(facecolor=WINDOW_COLOURS[0], alpha=0.15, edgecolor=WINDOW_COLOURS[0],
                             label="session: the gap after its last row"))
    if any(p.late for p in timeline.points):
        handles += [Line2D([], [], marker="X", linestyle="", color=LATE_COLOUR, markersize=9, label="late row"),
                    Patch(facecolor="none", edgecolor=LATE_COLOUR, linestyle="--", label="window it missed")]
    if timeline.watermarks:
        word = "processing time" if timeline.processing_time else "watermark (effective)"
        handles += [Line2D([], [], color=WATERMARK_COLOUR, linewidth=2, label=f"{word}, per arrival batch"),
                    Patch(facecolor=WATERMARK_COLOUR, alpha=0.12, label=f"behind the {word.split(' (')[0]}")]
    firings = {f.firing for f in timeline.firings}
    for firing in ("early", "on_time", "late", "changes", "final"):
        if firing in firings:
            word = f"firing {firing.upper()}" if timeline.mode == "replay" else "result (at the end of input)"
            handles.append(Patch(facecolor="white", edgecolor=FIRING_COLOURS[firing], linewidth=2, label=word))
    if any(f.op in RETRACTIONS for f in timeline.firings):
        handles.append(Patch(facecolor="white", edgecolor="#333333", hatch="////", linestyle="--",
                             label="retraction (−U / −D)"))
    figure.legend(handles=handles, loc="outside lower center", ncol=min(4, len(handles)), fontsize=8.5,
                  frameon=False)

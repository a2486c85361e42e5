"""Building a Timeline from a query: the query runs as `sw.sql` would run it, through sqlwin's
own engine (a replay when its table records arrival, else complete input), with a few columns
added to its SELECT list (the lane keys and the window bounds as epoch microseconds) and, for a
replay without one, a LATE ROWS INTO table of its own:

* windows and firings: the query's results -- in a replay the emissions of the window runtime
  with their `op`, `firing`, `emit_seq` and the arrival batch after which each was emitted;
* rows and their arrival batch: the input rows exactly as the replay feeds them to the runtime
  (`StatefulQuery.input_sql`), or the finished table (complete input);
* late rows: the LATE ROWS INTO rows (`late_by`, the `window_start` / `window_end` missed).

Which window a row was counted in is read from the windows' bounds (exact for every time window;
a COUNT_WINDOW's dots show the rows inside its first and last row's time). The watermark drawn
is recomputed from the rows (sqlwin/timeline/watermark.py).
"""

from __future__ import annotations

import typing as t
import uuid

import sqlglot
from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError, SqlwinUsageError
from sqlwin.runtime.assign import fixed_windows
from sqlwin.spark import layout
from sqlwin.spark.operator import END_BATCH
from sqlwin.spark.replay import is_replay, run_replay
from sqlwin.spark.stateful import source_sql, time_micros
from sqlwin.sql.dialect import LateRowsInto, SqlwinDialect, WindowTVF
from sqlwin.sql.plan import require_final_only
from sqlwin.sql.text import identifier_name, quote_identifier
from sqlwin.timeline.model import Firing, Point, Timeline, Window
from sqlwin.timeline.text import duration_text, emit_text, short, values_text, windower_text
from sqlwin.timeline.watermark import check_watermarks, effective_watermarks

Sqlwin = t.Any  # sqlwin.api.Sqlwin, as the annotations name it: the API imports this package (sw.timeline)

MAX_ROWS = 20_000  # rows (and results) a picture collects to the driver


def build_timeline(sw: "Sqlwin", query: str, keys: t.Sequence | None = None, max_keys: int = 8,
                   label: str | None = None) -> Timeline:
    """Run `query` through sqlwin (a replay when its table records arrival, else complete input) and
    gather what the picture shows. `keys`: the lanes to draw (key values, a tuple per lane when
    there are several key columns); else the first `max_keys` keys to arrive."""
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
    replay = is_replay(plan)  # else complete input, which must be EMIT FINAL (as sw.sql chooses)
    if not replay:
        require_final_only(plan, "complete-input")
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
        with_ = self.plan.ast.args.get("with_")
        with_sql = ""
        if with_ is not None:  # the CTEs the input can read: those without a window function of their own
            with_ = with_.copy()
            with_.set("expressions", [c for c in with_.expressions if not any(c.find_all(WindowTVF))])
            with_sql = f"{with_.sql(dialect='spark')} " if with_.expressions else ""
        columns = [f"{sql} AS {layout.key(i)}" for i, sql in enumerate(self.lane_sql)]
        columns += [f"{time_micros(self.rel)} AS __time", "CAST(NULL AS BIGINT) AS __ptime",
                    "CAST(NULL AS BIGINT) AS __order", "CAST(NULL AS BIGINT) AS __batch"]
        columns += [f"{quote_identifier(name)} AS {layout.carried(i)}" for i, name in enumerate(self.rel.columns)]
        # A row with a NULL PARTITION BY key joins no window (docs/semantics.md): not drawn.
        keyed = " AND ".join(f"({sql}) IS NOT NULL" for sql in self.rel.partition_by)
        where = f" WHERE {keyed}" if keyed else ""
        return f"{with_sql}SELECT {', '.join(columns)} FROM {source_sql(self.rel)}{where}"

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
        return self.rel.processing_time

    # -- assembling ------------------------------------------------------------------------

    def _assemble(self, plan, config, lanes, total, positions, collected, batch_times, result_rows,
                  result_columns, late_rows) -> Timeline:
        rel = self.rel
        inclusive = rel.windower.inclusive_end  # both ends inside the window
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
            values = values_text([(c, r[index[c]]) for c in shown], self.rel.time)
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
            label = short(values[label_at]) if label_at is not None else ""
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

        watermarks = {} if not self.replay else effective_watermarks(
            config.watermark, self._processing_time, lanes, positions, rows_by_owner, batch_times, self.notes)
        timeline = Timeline(
            query=self.plan.sql, mode="replay" if self.replay else "complete input",
            time_kind=self._time_kind(), time_zone=plan.time_zone or "UTC", time_name=self._time_name(),
            function=rel.function.upper(), description=self._describe(config), lane_names=tuple(self._key_names()),
            lanes=lanes, windows=window_list, points=points, firings=firings, watermarks=watermarks,
            lateness_rule=rel.watermark.lateness_rule, processing_time=self._processing_time,
            hidden_lanes=max(0, total - len(lanes)), notes=self.notes)
        check_watermarks(timeline, self.plan.emit)
        return timeline

    # -- names and words -------------------------------------------------------------------

    def _key_names(self) -> list[str]:
        return [identifier_name(sql) or sql for sql in self.lane_sql]

    def _label_column(self, label: str | None) -> str | None:
        columns = list(self.rel.columns)
        if label is not None:
            if label not in columns:
                raise SqlwinUsageError(f"label={label!r} is not a column of {self.rel.source}",
                                       hint=", ".join(columns))
            return label
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
        if rel.processing_time:
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
        text = windower_text(rel.function, rel.windower)
        if self.replay:
            spec = config.watermark
            if self._processing_time:
                text += " · processing time"
            else:
                scope = "per key" if config.clock_positions != () else "one for the stream"
                delay = "UNBOUNDED" if spec.delay >= 2**62 else duration_text(spec.delay)
                text += f" · watermark {spec.strategy} − {delay}, {scope} · lateness: {spec.lateness_rule}"
            text += f" · EMIT {emit_text(self.plan.emit)} · replay of the recorded arrival"
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
    return windower.aligned


def _fixed_spans(windower, time):
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

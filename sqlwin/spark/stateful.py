"""The stateful lowering shared by replay and streaming: the query around the window runtime.

A stateful query is the windowed-aggregation shape

    SELECT <exprs over keys, window columns, aggregates> FROM <window fn>(TABLE src ...)
    [WHERE <row filter>] GROUP BY <keys>, window_start, window_end [HAVING ...] EMIT ...

and runs in three steps, each a plain Spark plan except the middle one:

1. `input_sql`: one row per input row, with the key columns, the time in epoch microseconds,
   the aggregates' arguments and the arrival columns (`__bucket` says which operator call
   handles the row: keys are hashed into buckets so that one Python call serves many keys).
2. The window runtime (`sqlwin.runtime`) on Python workers, bucket by bucket: replay
   (`applyInPandas`) or Structured Streaming (`transformWithStateInPandas`). It writes
   *records*: emissions, late rows and rejected rows, in one schema (`record_schema`).
3. `result_sql` / `late_sql`: the user's SELECT over the emission records (aggregates
   replaced by the runtime's values), and the late / rejected rows as their own table.
"""

from __future__ import annotations

import dataclasses
import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.sql.dialect import SqlwinDialect
from sqlwin.errors import SqlwinUnsupportedError, SqlwinValidationError
from sqlwin.sql.plan import (
    WINDOW_COLUMNS,
    CountWindow,
    GlobalWindow,
    QueryPlan,
    Session,
    Slide,
    WindowAggregation,
    WindowRelation,
    node_position,
)
from sqlwin.spark import layout
from sqlwin.spark.operator import CARRY, OperatorConfig
from sqlwin.spark.time_sql import epoch_ms_sql, micros_timestamp_sql, time_micros_sql, timestamp_micros_sql
from sqlwin.runtime import AggregateSpec
from sqlwin.sql.text import identifier_name, json_options_sql, named_struct, quote_identifier

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

SYSTEM_COLUMNS = ("op", "firing", "emit_seq")  # appended to every stateful result
RESULT_ORDER = ("__batch", "__seq")  # hidden columns of the result: arrival batch, emission sequence

# A chain's first stage passes its late, rejected and stats records on through the second stage
# (one streaming query has one output): each as JSON in the CARRY column of the second stage's
# input, which the second stage's operator hands on as a 'carried' record. Timestamps keep their
# microseconds (JSON's default format keeps milliseconds).
CARRIED_FIELDS = ("__kind", "__wstart", "__wend", "__etime", "__late_by", "__reason", "__stats")
# The columns a chain's second stage reads besides the first stage's results (the carried records;
# a replay's arrival order and batch): never part of a late row.
STAGE_COLUMNS = (CARRY, "__arrival", "__batch")
STAGE_VIEW = "__sqlwin_stage_"  # the prefix of the view of a chain's first-stage results
UPSTREAM_ROW = "upstream_row"  # a chain's late sink: the first stage's result row a second stage found late


@dataclass
class StatefulQuery:
    """A windowed aggregation prepared for the runtime: the SQL around it and the worker's config."""

    plan: QueryPlan
    relation: WindowRelation
    config: OperatorConfig
    key_names: list[str]  # output names of the keys (the column's own name, or __k<i>)
    argument_sql: list[str]
    aggregate_sql: list[str]  # the aggregate expressions as written, for types and messages
    row_columns: list[str]  # input columns carried into late rows
    source_sql: str  # FROM ... [WHERE ...] of the input, with the query's CTEs
    with_sql: str
    key_sql: list[str]
    bucket_count: int
    bucket_ids: tuple[int, ...] = ()  # the id of each bucket (default 0 .. bucket_count-1)
    carry: bool = False  # a chain's second stage: its input carries the first stage's records (CARRY)
    where_guard: int | None = None  # the aggregate counting a window's rows WHERE keeps (prepare_stateful)
    # One clock for the stream, spread over the buckets by the GROUP BY keys: each bucket is told the
    # stream's batch extremes (operator.clock_packer). Else such a stream runs in one bucket.
    spread: bool = False
    # A windowed aggregation with no key and one clock for the stream, spread over the buckets by a
    # hash of its rows (`partial_aggregation`): each bucket fires its partial aggregates of a window
    # (every bucket closes it in the same micro-batch: one clock), and typed_emissions_sql merges
    # them -- the merged SQL of each aggregate over the partial columns __agg<j>.
    partial_merge: tuple[str, ...] | None = None
    where_sql: str | None = None  # the query's WHERE over the input (part of source_sql)

    # -- step 1 ------------------------------------------------------------------------

    def input_sql(self, arrival: bool) -> str:
        """One row per input row. `arrival`: a replay, which also reads the recorded batches."""
        return f"{self.with_sql}SELECT {', '.join(self.input_columns(arrival))} {self.source_sql}"

    def input_columns(self, arrival: bool) -> list[str]:
        """`input_sql`'s columns, as Spark SQL expressions over the window function's input."""
        rel, options = self.relation, self.relation.options
        columns = [f"{self._bucket_sql()} AS __bucket"]
        columns += [f"{sql} AS {layout.key(i)}" for i, sql in enumerate(self.key_sql)]
        bound = _count_bound_column(rel)
        columns.append(f"{_ordinal_of(bound, rel.columns) if bound else _time_micros(rel)} AS __time")
        columns += [f"{sql} AS {layout.argument(i)}" for i, sql in enumerate(self.argument_sql)]
        columns += [f"{quote_identifier(name)} AS {layout.carried(i)}" for i, name in enumerate(self.row_columns)]
        ptime = options.get("arrival_time")
        columns.append(f"{_micros_of(ptime, rel.columns)} AS __ptime" if ptime else "CAST(NULL AS BIGINT) AS __ptime")
        columns.append(f"{_in_batch_order(rel)} AS __order")
        if self.carry:
            columns.append(CARRY)
        if arrival:  # replay: micro-batch boundaries as recorded (each row its own batch without them)
            batch = options.get("arrival_batch") or options["arrival_order"]
            columns.append(f"{_ordinal_of(batch, rel.columns)} AS __batch")
        return columns

    def _bucket_sql(self) -> str:
        positions = self.config.clock_positions
        clock_keys = self.key_sql if positions is None or self.spread else [self.key_sql[i] for i in positions]
        if not clock_keys or self.bucket_count == 1:
            return str(self.bucket_ids[0]) if self.bucket_ids else "0"
        index = f"pmod(hash({', '.join(clock_keys)}), {self.bucket_count})"
        if self.partial_merge is not None:  # the hidden key is the bucket's index already
            index = self.key_sql[0]
        if not self.bucket_ids or self.bucket_ids == tuple(range(self.bucket_count)):
            return index
        return f"element_at(array({', '.join(map(str, self.bucket_ids))}), {index} + 1)"

    # -- step 3 ------------------------------------------------------------------------

    def typed_emissions_sql(self, records: str, carry: bool = False) -> str:
        """Emission records with the window columns in the time column's own type, keys by name.

        `carry`: a chain's first stage, whose other records (late, rejected, stats) go on to the
        second stage as JSON in a CARRY column (one projection: a second reader of the records
        would run the first stage's operator twice)."""
        columns = self.typed_emission_columns()
        keys = columns[:len(self.key_names)]
        if self.partial_merge is not None and not carry:
            # The buckets' partial aggregates of a window (all fired in one batch) merged into one row;
            # its sequence: the first bucket's (each bucket numbers its own emissions).
            window = ["window_start", "window_end", "window_time", "window_index", "__op", "__firing", "__batch"]
            partials = columns[len(keys):]  # without the hidden key
            merged = [f"{sql} AS {layout.aggregate(i)}" for i, sql in enumerate(self.partial_merge)]
            return (f"SELECT {', '.join(window[:4])}, {', '.join(merged)}, __op, __firing, min(__seq) AS __seq, "
                    f"__batch FROM (SELECT {', '.join(partials)} FROM {records} WHERE __kind = 'emit') "
                    f"GROUP BY {', '.join(window)}")
        if not carry:
            return f"SELECT {', '.join(columns)} FROM {records} WHERE __kind = 'emit'"
        record = named_struct((name, name) for name in (*CARRIED_FIELDS, *layout.carried_columns(self.config.late_width)))
        columns.append(f"CASE WHEN __kind <> 'emit' THEN to_json({record}, {json_options_sql()}) END AS {CARRY}")
        return f"SELECT {', '.join(columns)} FROM {records}"

    def typed_emission_columns(self) -> list[str]:
        """The columns of `typed_emissions_sql` (one stage, no partial aggregates), as Spark SQL
        expressions over the records."""
        keys = [f"{layout.key(i)} AS {quote_identifier(name)}" for i, name in enumerate(self.key_names)]
        aggregates = layout.aggregates(len(self.config.aggregates))
        return [*keys, *self._window_columns(), "__windex AS window_index", *aggregates,
                "__op", "__firing", "__seq", "__batch"]

    def result_sql(self, typed: str, carry: bool = False) -> str:
        """The user's SELECT (and HAVING) over the typed emissions. `carry`: over
        `typed_emissions_sql(..., carry=True)`, whose carried records pass HAVING untouched."""
        outputs, condition = self.result_parts(carry)
        where = f" WHERE {condition}" if condition else ""
        return f"SELECT {', '.join(outputs)} FROM {typed}{where}"

    def result_parts(self, carry: bool = False) -> tuple[list[str], str | None]:
        """`result_sql`'s columns and condition, as Spark SQL expressions over the typed emissions."""
        select: exp.Select = self.plan.ast
        outputs = [self._rewrite(e.copy()).sql(dialect="spark") for e in select.expressions]
        system = ["__op AS op", "__firing AS firing", "__seq AS emit_seq", "__batch", "__seq"]
        having = select.args.get("having")
        condition = self._rewrite(_with_aliases_expanded(having.this.copy(), select, self.plan)).sql(dialect="spark") \
            if having else None
        if self.where_guard is not None:  # a window none of whose rows WHERE keeps gives no row
            guard = f"{layout.aggregate(self.where_guard)} > 0"
            condition = f"({condition}) AND {guard}" if condition else guard
        if carry:
            system.append(CARRY)
            condition = f"{CARRY} IS NOT NULL OR ({condition})" if condition else None
        return outputs + system, condition

    def carried_schema(self, record_schema):
        """The Spark schema of this stage's records as it carries them on (CARRIED_FIELDS, __r*)."""
        from pyspark.sql.types import StructType

        names = {*CARRIED_FIELDS, *layout.carried_columns(self.config.late_width)}
        return StructType([f for f in record_schema.fields if f.name in names])

    def late_sql(self, records: str, row_struct: str | None = None) -> str:
        """Late and rejected rows: the row as it came, how late, the window it missed, why.
        `row_struct`: the row's columns as one struct column of that name (a chain's second stage,
        whose rows are the first stage's results)."""
        row = self._late_row_columns(row_struct)
        start, end = (self._to_time("__wstart"), self._to_time("__wend"))
        if self._epoch_ms:
            late_by = "div(__late_by, 1000)"
        else:
            late_by = "make_dt_interval(0, 0, 0, __late_by / 1000000)"
        columns = [*row, f"{late_by} AS late_by", f"{start} AS window_start", f"{end} AS window_end",
                   "__reason AS reason", "__batch"]
        return f"SELECT {', '.join(columns)} FROM {records} WHERE __kind IN ('late', 'rejected')"

    def _late_row_columns(self, row_struct: str | None) -> list[str]:
        """The late / rejected row's own columns (see late_sql)."""
        pairs = [(name, layout.carried(i)) for i, name in enumerate(self.row_columns)]
        if row_struct is None:
            return [f"{value} AS {quote_identifier(name)}" for name, value in pairs]
        return [f"{named_struct(pairs)} AS {quote_identifier(row_struct)}"] if pairs else []

    def late_row_sql(self, source: str, columns: dict[str, str]) -> dict[str, str]:
        """How a row of the table `source` (its `columns`, lower-case name -> name) fills the
        record columns a late or rejected row carries: {__r<i>: SQL over the row}. Empty where the
        window function does not read that table (a chain's second stage, another query's table)."""
        if (identifier_name(self.relation.source) or "").lower() != source.lower():
            return {}
        return {layout.carried(i): quote_identifier(columns[name.lower()])
                for i, name in enumerate(self.row_columns) if name.lower() in columns}

    def _window_columns(self) -> list[str]:
        windower = self.relation.windower
        bound = _count_bound_column(self.relation)
        if bound:  # an untimed count window shows its first and last rows' ORDER BY values
            kind = self.relation.columns.get(bound, "bigint")
            start, end = (micros_timestamp_sql(c, kind == "timestamp_ntz") if kind.startswith("timestamp")
                          else f"CAST({c} AS {kind})" for c in ("__wstart", "__wend"))
            return [f"{start} AS window_start", f"{end} AS window_end", f"{end} AS window_time"]
        start, end = self._to_time("__wstart"), self._to_time("__wend")
        if isinstance(windower, (Slide, CountWindow, GlobalWindow)):
            last = end  # both ends inside the window
        elif self._epoch_ms:
            last = f"{end} - 1"
        else:
            last = f"{end} - INTERVAL 1 MICROSECOND"
        return [f"{start} AS window_start", f"{end} AS window_end", f"{last} AS window_time"]

    @property
    def _epoch_ms(self) -> bool:
        """Window columns in epoch milliseconds: an epoch-ms time column, or processing time
        read from a LONG epoch-ms arrival_time column (a TIMESTAMP one gives timestamps)."""
        time, rel = self.relation.time, self.relation
        if time is not None and time.kind == "processing_time":
            arrival = rel.options.get("arrival_time")
            return bool(arrival) and not rel.columns.get(arrival, "").startswith("timestamp")
        return time is not None and time.kind == "epoch_ms"

    @property
    def _ntz(self) -> bool:
        """Window columns in TIMESTAMP_NTZ: a TIMESTAMP_NTZ time column, or processing time read from a
        TIMESTAMP_NTZ arrival_time column. Their microseconds are the wall clock read as UTC, in no
        session time zone."""
        time, rel = self.relation.time, self.relation
        if time is not None and time.kind == "processing_time":
            return rel.columns.get(rel.options.get("arrival_time") or "", "") == "timestamp_ntz"
        return time is not None and time.ntz

    def _to_time(self, micros: str) -> str:
        return f"div({micros}, 1000)" if self._epoch_ms else micros_timestamp_sql(micros, self._ntz)

    def _rewrite(self, node: exp.Expr) -> exp.Expr:
        """Aggregates become the runtime's columns, key expressions their key columns."""
        aggregates = {sql: i for i, sql in enumerate(self.aggregate_sql)}
        keys = {sql: i for i, sql in enumerate(self.key_sql)}

        def replace(n: exp.Expr) -> exp.Expr:
            if isinstance(n, (exp.AggFunc, exp.Filter)) or _is_anonymous_aggregate(n):
                return exp.column(layout.aggregate(aggregates[_aggregate_identity(n)]))
            if not isinstance(n, exp.Column) and n.sql(dialect="spark") in keys:
                return exp.column(self.key_names[keys[n.sql(dialect="spark")]], quoted=True)
            if isinstance(n, exp.Column) and n.table:
                return exp.column(n.name, quoted=True)
            return n

        return node.transform(replace)


# --------------------------------------------------------------------------- preparing


def prepare_stateful(plan: QueryPlan, mode: str, bucket_count: int,
                     bucket_ids: tuple[int, ...] = (), carry: bool = False, spread: bool = False,
                     partial: bool = False) -> StatefulQuery:
    """Check that the query has the windowed-aggregation shape and derive everything around the runtime.

    `carry`: the second stage of a chain, whose input has the first stage's records in a CARRY
    column: they bypass the query's WHERE and are never row columns."""
    if plan.join is not None:  # window functions joined per key and window (spark/joins.py)
        from sqlwin.spark.joins import prepare_join

        return prepare_join(plan, mode, bucket_count, bucket_ids, spread)
    agg = _require_aggregation(plan, mode)
    rel = agg.relation
    if rel.time is not None and rel.time.kind == "processing_time" and mode == "replay" \
            and not rel.options.get("arrival_time"):
        raise SqlwinValidationError(
            "Processing time in a replay needs the recorded arrival times", rel.position,
            "WITH (arrival_order = offset_col, arrival_time = arrival_ts_col)", query=plan.sql)
    _check_count_order(plan, rel, mode)
    keys = list(agg.group_keys)
    clock_positions = _clock_positions(plan, rel, keys)
    aggregate_nodes = _aggregate_nodes(plan, agg)
    where = plan.ast.args.get("where")
    # A data-dependent window (SESSION, COUNT_WINDOW, SLIDE) is formed from every row of its table, as
    # SQL's window function reads them; WHERE then keeps rows of the windows (as over a finished
    # table): it filters every aggregate, and a window none of whose rows it keeps gives no row
    # (`where_guard`: a count of the rows it keeps). Other windows do not depend on their rows:
    # WHERE filters the rows before they reach the runtime.
    inside = where is not None and isinstance(rel.windower, (Session, CountWindow, Slide))
    computed = aggregate_nodes
    if inside:
        guard = exp.Filter(this=exp.Count(this=exp.Star()), expression=exp.Where(this=where.this.copy()))
        computed = [_filtered(node, where.this) for node in aggregate_nodes] + [guard]
    specs, arguments = _aggregate_specs(plan, computed)
    watermark = rel.watermark
    if clock_positions == () or (clock_positions is not None and clock_positions != tuple(range(len(keys)))):
        watermark = dataclasses.replace(watermark, scope="stream")  # one clock per runtime
        clock_positions = clock_positions or ()
    else:
        watermark = dataclasses.replace(watermark, scope="key")
        clock_positions = None  # the runtime's own keys are the clocks
    processing_time = rel.time is not None and rel.time.kind == "processing_time"
    if (watermark.idle_timeout is not None and watermark.idle_clock == "event_time" and watermark.scope == "stream"
            and not processing_time):
        raise SqlwinValidationError(
            "An event-time idle timeout judges a key against the stream's newest event time: it needs a clock per "
            "key (the whole stream is never silent by its own event time)", rel.position,
            "PARTITION BY the GROUP BY keys, or idle_clock = 'processing_time'", query=plan.sql)
    emit = plan.emit
    timers = bool(processing_time or watermark.strategy in ("bytewax", "ingestion_time") or emit.early_interval
                  or emit.late_interval or (watermark.idle_timeout is not None
                                            and watermark.idle_clock == "processing_time"))
    if timers and mode == "replay" and not rel.options.get("arrival_time"):
        # EARLY / LATE EVERY an interval, an idle timeout on the processing clock, the Bytewax clock:
        # each follows processing time, which a replay only knows from the recorded arrival times.
        raise SqlwinValidationError(
            "This query follows processing time, which a replay reads from the recorded arrival times",
            rel.position, "WITH (arrival_order = offset_col, arrival_time = arrival_ts_col), or EMIT EARLY / "
            "LATE EVERY n ROWS and idle_clock = 'event_time'", query=plan.sql)
    stage_columns = STAGE_COLUMNS if plan.propagation is None and _reads_stage(rel) else ()
    row_columns = [c for c in rel.columns if c not in stage_columns] if plan.late_into else []
    config = OperatorConfig(
        windower=rel.windower, watermark=watermark, emit=emit, aggregates=tuple(specs),
        processing_time=processing_time, key_count=len(keys), clock_positions=clock_positions,
        argument_count=len(arguments), row_count=len(row_columns), output_late=bool(plan.late_into),
        timers=timers,
    )
    with_ = plan.ast.args.get("with_")
    with_sql = f"{with_.sql(dialect='spark')} " if with_ else ""
    condition = where.this.sql(dialect="spark") if where is not None and not inside else None
    if carry:
        condition = f"{CARRY} IS NOT NULL OR ({condition})" if condition else None
    source_sql = f"FROM {_source_sql(rel)}" + (f" WHERE {condition}" if condition else "")
    if where is not None and any(c.name.lower() in ("window_start", "window_end", "window_time", "window_index")
                                 for c in where.find_all(exp.Column)):
        raise SqlwinUnsupportedError(
            f"In {mode} mode WHERE filters input rows, before they reach a window", node_position(where),
            "a condition on window columns in HAVING", query=plan.sql)
    key_names = [_key_name(sql, i) for i, sql in enumerate(keys)]
    clock_keys = keys if clock_positions is None else [keys[i] for i in clock_positions]
    if watermark.idle_timeout is not None and watermark.idle_clock == "event_time":
        # A key is idle against the newest event time of the whole stream: with a clock per key,
        # the buckets are told the stream's batch extremes (`spread`) and judge their own keys;
        # a clock per PARTITION BY subset (several runtimes a bucket) runs in one bucket.
        if spread and clock_positions is None:
            count = bucket_count
        else:
            spread, count = False, 1
    else:
        spread = spread and not clock_keys and bool(keys) and can_spread_clock(watermark)
        count = bucket_count if clock_keys or spread else 1
    merge = None
    if partial and not keys and clock_positions == () and bucket_count > 1 and not carry:
        split = partial_aggregation(rel, plan.emit, watermark, specs, arguments)
        if split is not None:  # no key: a hash of the rows spreads them, the buckets' partials merge
            specs, merge = split
            keys = [f"pmod(hash({', '.join([_time_micros(rel), *arguments])}), {bucket_count})"]
            key_names = [SPREAD_KEY]
            config = dataclasses.replace(config, aggregates=tuple(specs), key_count=1)
            spread, count = True, bucket_count
    return StatefulQuery(
        plan=plan, relation=rel, config=config, key_names=key_names, argument_sql=arguments,
        aggregate_sql=[_aggregate_identity(n) for n in aggregate_nodes], row_columns=row_columns,
        source_sql=source_sql, with_sql=with_sql, key_sql=keys, where_sql=condition,
        bucket_count=count, bucket_ids=tuple(bucket_ids)[:count], carry=carry,
        where_guard=len(aggregate_nodes) if inside else None, spread=spread and count > 1, partial_merge=merge,
    )


SPREAD_KEY = "__spread"  # the hidden key a windowed aggregation with no key is spread by


def partial_aggregation(rel: WindowRelation, emit, watermark, specs: list[AggregateSpec],
                        arguments: list[str]) -> tuple[list[AggregateSpec], tuple[str, ...]] | None:
    """A windowed aggregation with no key as partial aggregates per bucket and their merge, as
    Spark's partial / final aggregation: (the partial specs, the merged SQL of each aggregate over
    the partial columns __agg<j>), or None where it does not merge. It merges for windows fixed by
    time (TUMBLE, HOP, CUMULATE: a row's windows do not depend on the other rows, as a SESSION's
    or a COUNT_WINDOW's do), EMIT FINAL (each window fires once, in the batch the stream's clock
    closes it, in every bucket), one clock for the stream that combines, and aggregates with a
    partial form: count, sum, min, max over numbers, avg over numbers (a sum and a count),
    max_by / min_by (with the max / min of their ordering value beside them). Other queries run
    in one bucket."""
    from sqlwin.ir import Cumulate, Hop, Tumble

    if not isinstance(rel.windower, (Tumble, Hop, Cumulate)) or not emit.is_final_only or emit.allowed_lateness:
        return None
    if watermark.scope != "stream" or not can_spread_clock(watermark):
        return None
    partial: list[AggregateSpec] = []
    merge: list[str] = []
    for spec in specs:
        j = len(partial)
        this, after = layout.aggregate(j), layout.aggregate(j + 1)  # the partial columns
        if spec.func == "count":
            partial.append(spec)
            merge.append(f"CAST(sum({this}) AS BIGINT)")
        elif spec.func in ("min", "max"):
            partial.append(spec)
            merge.append(f"{spec.func}({this})")
        elif spec.func == "sum" and _numeric_argument(rel, arguments[spec.arg]):
            partial.append(spec)
            merge.append(f"sum({this})")
        elif spec.func == "avg" and _numeric_argument(rel, arguments[spec.arg]):
            # each bucket's sum and count; merged, their sums divided (NULL where no value was seen)
            partial += [AggregateSpec("sum", spec.arg), AggregateSpec("count", spec.arg)]
            merge.append(f"CAST(sum({this}) AS DOUBLE) / NULLIF(sum({after}), 0)")
        elif spec.func in ("max_by", "min_by"):
            # max_by(v, k): each bucket's max_by and max(k); merged, the max_by of those
            partial += [spec, AggregateSpec("max" if spec.func == "max_by" else "min", spec.arg2)]
            merge.append(f"{spec.func}({this}, {after})")
        else:
            return None
    return partial, tuple(merge)


def _numeric_argument(rel: WindowRelation, sql: str) -> bool:
    """A plain column of an integer or floating type (a sum's partials merge to the same type)."""
    kind = rel.columns.get(sql.strip("`").lower()) or rel.columns.get(sql.strip("`"), "")
    return kind in ("tinyint", "smallint", "int", "integer", "bigint", "long", "float", "double")


def can_spread_clock(watermark) -> bool:
    """A clock for the stream can be spread over buckets told the stream's batch extremes (see
    WindowRuntime.process_batch): not 'min_event_time' (a late row must not lower the oldest time,
    and only the runtime knows which rows are late), and not with an idle timeout (an idle stream's
    clock jumps past the last open window of every key: a bucket knows only its own keys')."""
    return watermark.strategy != "min_event_time" and watermark.idle_timeout is None


def _filtered(node: exp.Expr, condition: exp.Expr) -> exp.Expr:
    """`node` FILTER (WHERE condition), AND-ed with a FILTER of its own."""
    if isinstance(node, exp.Filter):
        both = exp.and_(node.expression.this.copy(), condition.copy())
        return exp.Filter(this=node.this.copy(), expression=exp.Where(this=both))
    return exp.Filter(this=node.copy(), expression=exp.Where(this=condition.copy()))


def _reads_stage(rel: WindowRelation) -> bool:
    """The window function reads a chain's first stage (a view `__sqlwin_stage_*`)."""
    return (identifier_name(rel.source) or "").startswith(STAGE_VIEW)


def _require_aggregation(plan: QueryPlan, mode: str) -> WindowAggregation:
    agg = plan.aggregation
    if plan.join_refusal is not None:
        raise plan.join_refusal.with_query(plan.sql)
    if agg is None and len(plan.windows) == 1 and plan.join is None:
        # TUMBLE / HOP / CUMULATE rows run as SQL around a stage (sql/around.py); the others' windows
        # are formed from the rows together and change as rows arrive
        raise SqlwinUnsupportedError(
            f"The {mode} mode gives a window function's rows for TUMBLE, HOP and CUMULATE, whose windows each "
            f"row decides alone: {plan.windows[0].function}'s are formed from its rows together",
            plan.windows[0].position,
            "an aggregation over its windows (SELECT keys, window_start, window_end, aggregates FROM ... GROUP BY "
            "keys, window_start, window_end), collect_list(...) for a window's rows; or the query over a finished "
            "table (without arrival_order)", query=plan.sql)
    if agg is None or len(plan.windows) != 1:
        where = plan.windows[0].position if plan.windows else None
        raise SqlwinUnsupportedError(
            f"The {mode} mode runs one windowed aggregation per query", where,
            "SELECT keys, window_start, window_end, aggregates FROM TUMBLE(...) GROUP BY keys, window_start, "
            "window_end EMIT ...; a windowed join (TUMBLE(...) l JOIN TUMBLE(...) r ON keys and window bounds); "
            "an aggregation over such a result's window_time; any SQL around one of these in a subquery or CTE "
            "(projections, filters, joins to tables, a window Top-N, an aggregation per window)",
            query=plan.sql)
    if agg.grouping_analytics is not None:
        raise SqlwinUnsupportedError(
            f"In {mode} mode GROUPING SETS, ROLLUP and CUBE are merged from the finest grouping of each window, "
            "which needs every aggregate in a partial form", node_position(agg.grouping_analytics),
            "count, sum, min, max and avg (FILTER too) beside GROUPING SETS; other aggregates (DISTINCT, "
            "percentiles, collect_list ...) with GROUP BY keys, window_start, window_end, or over a finished "
            "table (without arrival_order)", query=plan.sql)
    inputs = {c.lower() for c in agg.relation.columns}
    having = plan.ast.args.get("having")
    for root in [*plan.ast.expressions, *([having.this] if having is not None else [])]:
        for column in root.find_all(exp.Column):
            if column.name.lower() in SYSTEM_COLUMNS and column.name.lower() not in inputs:
                raise SqlwinValidationError(
                    f"{column.name} is not a column of the query's input: sqlwin adds {', '.join(SYSTEM_COLUMNS)} to "
                    f"every {mode} result, after the query", node_position(column, column.name),
                    f"{column.name} read from the result (e.g. sw.sql(query).where(\"firing = 'final'\"))",
                    query=plan.sql)
    _check_grouped_columns(plan, agg)
    if plan.ast.args.get("order") is not None or plan.ast.args.get("limit") is not None:
        raise SqlwinUnsupportedError(
            f"ORDER BY / LIMIT are not part of a {mode} query: results come in emission order",
            node_position(plan.ast.args.get("order") or plan.ast.args.get("limit")),
            "ordering the returned DataFrame (replay) or the sink's table (streaming)", query=plan.sql)
    return agg


def _loose_names(agg: WindowAggregation) -> set[str]:
    """Names a select item or HAVING may use outside an aggregate: the GROUP BY keys that are
    columns and the window columns."""
    return {(identifier_name(k) or "").lower() for k in agg.group_keys} | set(WINDOW_COLUMNS)


def _check_grouped_columns(plan: QueryPlan, agg: WindowAggregation) -> None:
    """A column outside every aggregate must be a GROUP BY key (or a window column), as Spark's
    MISSING_AGGREGATION says over a finished table; the runtime keeps nothing else per window, so
    unchecked such a column would surface as an unresolvable internal name."""
    keys = set(agg.group_keys)
    names = _loose_names(agg)
    aliases = {e.alias.lower() for e in plan.ast.expressions if isinstance(e, exp.Alias)}

    def visit(node: exp.Expr, allowed: set[str]) -> None:
        if isinstance(node, (exp.AggFunc, exp.Filter, exp.Lambda, exp.Subquery)) or _is_anonymous_aggregate(node):
            return
        if node.sql(dialect="spark") in keys:
            return
        if isinstance(node, exp.Column):
            if node.name.lower() in names | allowed:
                return
            raise SqlwinValidationError(
                f'[MISSING_AGGREGATION] The non-aggregating expression "{node.sql(dialect="spark")}" is based on '
                "columns which are not participating in the GROUP BY clause", node_position(node, node.name),
                f"group by it, or aggregate it (first({node.name}), collect_set({node.name}))", query=plan.sql)
        for child in node.iter_expressions():
            visit(child, allowed)

    for item in plan.ast.expressions:
        visit(item, set())
    having = plan.ast.args.get("having")
    if having is not None:
        visit(having.this, aliases)  # HAVING may name the SELECT's aliases, as in Spark


def _with_aliases_expanded(condition: exp.Expr, select: exp.Select, plan: QueryPlan) -> exp.Expr:
    """HAVING with each SELECT alias it names replaced by the aliased expression (`HAVING n > 1`
    for `count(*) AS n`): the stateful result is one projection over the runtime's records."""
    agg = plan.aggregation
    loose = _loose_names(agg) if agg is not None else set(WINDOW_COLUMNS)
    aliased = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliased \
                and node.name.lower() not in loose:
            return aliased[node.name.lower()].copy()
        return node

    return condition.transform(replace)


def _clock_positions(plan: QueryPlan, rel: WindowRelation, keys: list[str]) -> tuple[int, ...] | None:
    """Which GROUP BY keys carry the clock: the PARTITION BY columns (none: one clock for the stream)."""
    if rel.watermark.scope == "stream" or not rel.partition_by:
        return ()
    normal = [_normal(k) for k in keys]
    positions = []
    for column in rel.partition_by:
        if _normal(column) not in normal:
            raise SqlwinValidationError(
                f"PARTITION BY {column} must also be a GROUP BY key: each key has its own clock",
                rel.position, f"GROUP BY {', '.join([*rel.partition_by, 'window_start', 'window_end'])}",
                query=plan.sql)
        positions.append(normal.index(_normal(column)))
    return tuple(sorted(positions)) if len(positions) < len(keys) else None


def _normal(sql: str) -> str:
    """A column reference's name, lower case (`t.K` and `k` are the same key); other SQL as written."""
    name = identifier_name(sql)
    return (name if name is not None else sql).lower().strip()


def _key_name(sql: str, index: int) -> str:
    """A key column keeps its own name (whatever characters it holds); an expression is __k<i>."""
    name = identifier_name(sql)
    return name if name is not None else layout.key(index)


# --------------------------------------------------------------------------- aggregates

SUPPORTED_AGGREGATES = ("count(*)", "count(x)", "count(DISTINCT x)", "sum", "min", "max", "avg / mean",
                        "collect_list / array_agg [ORDER BY ...]", "first", "last", "min_by", "max_by")
_SIMPLE = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg", exp.ArrayAgg: "collect_list",
           exp.First: "first", exp.FirstValue: "first", exp.Last: "last", exp.LastValue: "last"}


def _aggregate_identity(node: exp.Expr) -> str:
    """An aggregate's text in sqlwin's dialect, which keeps `array_agg(v ORDER BY k)`'s ORDER BY
    (Spark's generator drops it, which would make it the same aggregate as collect_list(v))."""
    return node.sql(dialect=SqlwinDialect)


def _is_anonymous_aggregate(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "mean"


def _aggregate_nodes(plan: QueryPlan, agg: WindowAggregation) -> list[exp.Expr]:
    """The outermost aggregate calls of the SELECT list and HAVING, each once."""
    roots = list(agg.select.expressions)
    having = agg.select.args.get("having")
    if having is not None:
        roots.append(having.this)
    found: dict[str, exp.Expr] = {}
    for root in roots:
        for node in root.walk(bfs=False):
            if isinstance(node, (exp.AggFunc, exp.Filter)) or _is_anonymous_aggregate(node):
                if not any(isinstance(a, (exp.AggFunc, exp.Filter)) for a in _ancestors(node, root)):
                    found.setdefault(_aggregate_identity(node), node)
    return list(found.values())


def _ancestors(node: exp.Expr, root: exp.Expr) -> t.Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None and node is not root:
        yield parent
        if parent is root:
            return
        node, parent = parent, parent.parent


def _aggregate_specs(plan: QueryPlan, nodes: list[exp.Expr]) -> tuple[list[AggregateSpec], list[str]]:
    """AggregateSpecs over argument columns __a<i> (each distinct argument expression once)."""
    arguments: list[str] = []

    def argument(node: exp.Expr) -> int:
        sql = node.sql(dialect="spark")
        if sql not in arguments:
            arguments.append(sql)
        return arguments.index(sql)

    specs = []
    for node in nodes:
        where = None
        if isinstance(node, exp.Filter):  # agg(...) FILTER (WHERE c)
            node, where = node.this, node.expression.this

        def kept(value: exp.Expr) -> exp.Expr:
            """FILTER of an aggregate that skips NULLs: the value of a row FILTER keeps, else NULL."""
            if where is None:
                return value
            return exp.Case(ifs=[exp.If(this=where.copy(), true=value.copy())])

        if isinstance(node, exp.Count):
            inner = node.this
            if isinstance(inner, exp.Star) or inner is None:
                specs.append(AggregateSpec("count") if where is None
                             else AggregateSpec("count", argument(kept(exp.Literal.number(1)))))
            elif isinstance(inner, exp.Distinct):
                if len(inner.expressions) != 1:
                    _unsupported_aggregate(plan, node, "count(DISTINCT) of more than one column")
                specs.append(AggregateSpec("count_distinct", argument(kept(inner.expressions[0]))))
            else:
                specs.append(AggregateSpec("count", argument(kept(inner))))
        elif isinstance(node, exp.ArrayAgg) and isinstance(node.this, exp.Order):
            value = node.this.this
            if isinstance(value, exp.Distinct):
                _unsupported_aggregate(plan, node, "array_agg(DISTINCT ... ORDER BY ...)")
            order = tuple((argument(key.this), bool(key.args.get("desc")), _nulls_first(key))
                          for key in node.this.expressions)
            specs.append(AggregateSpec("collect_list", argument(kept(value)), order=order))
        elif type(node) in _SIMPLE and not isinstance(node.this, exp.Distinct):
            func = _SIMPLE[type(node)]
            if func in ("first", "last"):  # NULLs are values to these: FILTER drops the rows themselves
                specs.append(AggregateSpec(func, argument(node.this),
                                           filter=None if where is None else argument(where)))
            else:
                specs.append(AggregateSpec(func, argument(kept(node.this))))
        elif _is_anonymous_aggregate(node) and len(node.expressions) == 1:
            specs.append(AggregateSpec("avg", argument(kept(node.expressions[0]))))
        elif isinstance(node, (exp.ArgMin, exp.ArgMax)):  # a row whose ordering value is NULL is skipped
            func = "min_by" if isinstance(node, exp.ArgMin) else "max_by"
            specs.append(AggregateSpec(func, argument(node.this), argument(kept(node.expression))))
        else:
            _unsupported_aggregate(plan, node, node.sql(dialect="spark"))
    return specs, arguments


def runtime_computes(plan: QueryPlan) -> bool:
    """Whether the window runtime computes every aggregate of the query's windowed aggregation
    (else spark/around.py keeps the window's rows and Spark aggregates them)."""
    agg = plan.aggregation
    if agg is None:
        return True
    try:
        _aggregate_specs(plan, _aggregate_nodes(plan, agg))
    except SqlwinUnsupportedError:
        return False
    return True


def _nulls_first(key: exp.Ordered) -> bool:
    """Spark's default: NULLS FIRST ascending, NULLS LAST descending."""
    nulls_first = key.args.get("nulls_first")
    return (not key.args.get("desc")) if nulls_first is None else bool(nulls_first)


def _unsupported_aggregate(plan: QueryPlan, node: exp.Expr, what: str) -> t.NoReturn:
    raise SqlwinUnsupportedError(
        f"The window runtime cannot compute {what}", node_position(node, node.sql(dialect="spark")),
        ", ".join(SUPPORTED_AGGREGATES) + "; any Spark aggregate over TUMBLE, HOP or CUMULATE (the window's rows "
        "kept until it closes)", query=plan.sql)


# --------------------------------------------------------------------------- columns


def _source_sql(rel: WindowRelation) -> str:
    alias = rel.source_alias  # a plain name; rel.source is SQL text already
    return f"{rel.source} AS {quote_identifier(alias)}" if alias else rel.source


def _time_micros(rel: WindowRelation) -> str:
    time = rel.time
    if time is None or time.kind == "processing_time":
        return "CAST(NULL AS BIGINT)"
    if time.kind == "epoch_ms":  # a DOUBLE / DECIMAL one rounded to the closest millisecond (QX-20)
        return f"CAST({epoch_ms_sql(time)} AS BIGINT) * 1000"
    return time_micros_sql(time)


def _micros_of(column: str, columns: dict[str, str]) -> str:
    """An arrival-time column in microseconds: TIMESTAMP, or LONG epoch milliseconds."""
    kind = columns.get(column, "")
    if kind.startswith("timestamp"):
        return timestamp_micros_sql(quote_identifier(column), kind == "timestamp_ntz")
    return f"CAST({quote_identifier(column)} AS BIGINT) * 1000"


_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal")
_ARRIVAL_TYPES = {"arrival_order": ("tinyint", "smallint", "int", "bigint", "timestamp"),
                  "arrival_batch": ("tinyint", "smallint", "int", "bigint", "timestamp"),
                  "arrival_time": ("int", "bigint", "timestamp")}


def check_input_types(stateful: StatefulQuery, schema) -> None:
    """Refuse, before any row runs, input the runtime cannot take: a sum or average of a value that
    is not a number, an arrival column that is not a number or a TIMESTAMP. (Without this a replay
    failed inside a Python worker, and a string arrival column as a NumberFormatException.)"""
    rel, plan = stateful.relation, stateful.plan
    for option, accepted in _ARRIVAL_TYPES.items():
        column = rel.options.get(option)
        kind = rel.columns.get(column, "") if column else ""
        if kind and not kind.startswith(accepted):
            raise SqlwinValidationError(
                f"{option} = {column} is {kind.upper()}: it must be a number or a TIMESTAMP", rel.position,
                f"WITH ({option} = <an integer or TIMESTAMP column>), or CAST({column} AS BIGINT) in a subquery",
                query=plan.sql)
    types = {field.name: field.dataType.simpleString() for field in schema.fields}
    for spec, text in zip(stateful.config.aggregates, stateful.aggregate_sql):
        if spec.func not in ("sum", "avg") or spec.arg is None:
            continue
        kind = types.get(layout.argument(spec.arg), "")
        if kind and not kind.startswith(_NUMERIC):
            node = next((n for n in plan.ast.find_all(exp.AggFunc) if _aggregate_identity(n) == text), None)
            raise SqlwinValidationError(
                f"{text} needs a number; its argument is {kind.upper()}",
                node_position(node) if node is not None else rel.position,
                f"{spec.func}(CAST({stateful.argument_sql[spec.arg]} AS DOUBLE)), or a numeric column",
                query=plan.sql)


def _count_bound_column(rel: WindowRelation) -> str | None:
    """An untimed COUNT_WINDOW's order column (ORDER BY, else arrival_order): its values are the
    window's bounds, as over a finished table (QX-25: windows [0, 3], [1, 4], ... of message
    positions). None otherwise (a stream counting rows as they come: no bounds to show)."""
    if not isinstance(rel.windower, CountWindow) or rel.time is not None:
        return None
    if rel.order_by:
        return _single_order_column(rel)
    return rel.options.get("arrival_order") or None


def _in_batch_order(rel: WindowRelation) -> str:
    """The order of rows inside one micro-batch, as one BIGINT.

    The recorded arrival column when the query names one; else a COUNT_WINDOW's ORDER BY column;
    else the order the source delivered (partition, then position): one constant, which the
    operator's stable sort leaves as it came (Spark refuses monotonically_increasing_id() in a
    streaming query).
    """
    order = rel.options.get("arrival_order")
    if order:
        return _ordinal_of(order, rel.columns)
    if rel.order_by:
        return _ordinal_of(_single_order_column(rel), rel.columns)
    return "CAST(0 AS BIGINT)"


def _check_count_order(plan: QueryPlan, rel: WindowRelation, mode: str) -> None:
    """A stream counts rows as they arrive; ORDER BY may only say how, not contradict it."""
    if not rel.order_by:
        return
    column = _single_order_column(rel, plan)
    arrival = rel.options.get("arrival_order")
    if arrival and _normal(column) != _normal(arrival):
        raise SqlwinValidationError(
            f"In {mode} mode COUNT_WINDOW counts rows in arrival order ({arrival}), not by {column}",
            rel.position, f"ORDER BY {arrival}, or no ORDER BY", query=plan.sql)


def _single_order_column(rel: WindowRelation, plan: QueryPlan | None = None) -> str:
    order = rel.order_by
    name = (identifier_name(order[0]) or "") if len(order) == 1 else ""
    if name.lower() not in {c.lower() for c in rel.columns}:
        raise SqlwinUnsupportedError(
            "A stream orders the rows of a micro-batch by one input column (ascending)", rel.position,
            "COUNT_WINDOW(TABLE t PARTITION BY k ORDER BY offset_col, n), or WITH (arrival_order = offset_col)",
            query=plan.sql if plan else None)
    return next(c for c in rel.columns if c.lower() == name.lower())


def _ordinal_of(column: str, columns: dict[str, str]) -> str:
    kind = columns.get(column, "")
    if kind.startswith("timestamp"):
        return timestamp_micros_sql(quote_identifier(column), kind == "timestamp_ntz")
    return f"CAST({quote_identifier(column)} AS BIGINT)"


# --------------------------------------------------------------------------- chains


def chain_late(first: "DataFrame", second: "DataFrame") -> "DataFrame":
    """A chain's late and rejected rows in one table, in every mode: the first stage's (its source's
    rows as they came) and the second stage's (a first-stage result row, as one struct column
    UPSTREAM_ROW), each with late_by, the window it missed, the reason, and `stage` (1 or 2)."""
    from pyspark.sql import functions as F

    combined = first.withColumn("stage", F.lit(1)).unionByName(second.withColumn("stage", F.lit(2)),
                                                                allowMissingColumns=True)
    hidden = [c for c in ("__batch",) if c in combined.columns]
    leading = [c for c in first.columns if c not in hidden]
    order = [*leading, "stage", *(c for c in combined.columns if c not in leading and c not in hidden and c != "stage"),
             *hidden]
    return combined.select(*(F.col(quote_identifier(c)) for c in order))

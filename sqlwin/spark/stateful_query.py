"""StatefulQuery: the SQL around the window runtime in replay and streaming, once prepared.

Step 1, the input rows (`input_sql`: keys, time, arguments, the row's own columns, the bucket);
step 3, over the runtime's records: the results (`typed_emissions_sql`, then the user's SELECT
and HAVING in `result_sql`) and the late and rejected rows (`late_sql`, a chain's both stages in
`chain_late`). How a query becomes one: sqlwin.spark.stateful (`prepare_stateful`).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.spark import layout
from sqlwin.spark.aggregates import aggregate_identity, is_anonymous_aggregate, loose_names
from sqlwin.spark.input_rows import count_bound_column, in_batch_order, micros_of, ordinal_of, time_micros
from sqlwin.spark.operator import CARRY, OperatorConfig
from sqlwin.spark.time_sql import micros_timestamp_sql
from sqlwin.sql.plan import WINDOW_COLUMNS, QueryPlan, WindowRelation
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
    # A stream's partial aggregation may start per input partition, before the stateful stage
    # (streaming.pre_aggregation): the operator then merges rows of partial aggregates.
    pre_aggregate: bool = False
    where_sql: str | None = None  # the query's WHERE over the input (part of source_sql)
    # The stateful stage run on the driver, in the sink's foreachBatch (spark/driver_state.py):
    # its DriverOperator, set when the stream is built; None: transformWithStateInPandas.
    driver: t.Any = None

    # -- step 1 ------------------------------------------------------------------------

    def input_sql(self, arrival: bool) -> str:
        """One row per input row. `arrival`: a replay, which also reads the recorded batches."""
        return f"{self.with_sql}SELECT {', '.join(self.input_columns(arrival))} {self.source_sql}"

    def input_columns(self, arrival: bool) -> list[str]:
        """`input_sql`'s columns, as Spark SQL expressions over the window function's input."""
        rel, options = self.relation, self.relation.options
        columns = [f"{self._bucket_sql()} AS __bucket"]
        columns += [f"{sql} AS {layout.key(i)}" for i, sql in enumerate(self.key_sql)]
        bound = count_bound_column(rel)
        columns.append(f"{ordinal_of(bound, rel.columns) if bound else time_micros(rel)} AS __time")
        columns += [f"{sql} AS {layout.argument(i)}" for i, sql in enumerate(self.argument_sql)]
        columns += [f"{quote_identifier(name)} AS {layout.carried(i)}" for i, name in enumerate(self.row_columns)]
        ptime = options.get("arrival_time")
        columns.append(f"{micros_of(ptime, rel.columns)} AS __ptime" if ptime else "CAST(NULL AS BIGINT) AS __ptime")
        columns.append(f"{in_batch_order(rel)} AS __order")
        if self.carry:
            columns.append(CARRY)
        if arrival:  # replay: micro-batch boundaries as recorded (each row its own batch without them)
            batch = options.get("arrival_batch") or options["arrival_order"]
            columns.append(f"{ordinal_of(batch, rel.columns)} AS __batch")
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
        if self.epoch_ms:
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
        bound = count_bound_column(self.relation)
        if bound:  # an untimed count window shows its first and last rows' ORDER BY values
            kind = self.relation.columns.get(bound, "bigint")
            start, end = (micros_timestamp_sql(c, kind == "timestamp_ntz") if kind.startswith("timestamp")
                          else f"CAST({c} AS {kind})" for c in ("__wstart", "__wend"))
            return [f"{start} AS window_start", f"{end} AS window_end", f"{end} AS window_time"]
        start, end = self._to_time("__wstart"), self._to_time("__wend")
        if windower.inclusive_end:
            last = end  # both ends inside the window
        elif self.epoch_ms:
            last = f"{end} - 1"
        else:
            last = f"{end} - INTERVAL 1 MICROSECOND"
        return [f"{start} AS window_start", f"{end} AS window_end", f"{last} AS window_time"]

    @property
    def epoch_ms(self) -> bool:
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
        return f"div({micros}, 1000)" if self.epoch_ms else micros_timestamp_sql(micros, self._ntz)

    def _rewrite(self, node: exp.Expr) -> exp.Expr:
        """Aggregates become the runtime's columns, key expressions their key columns."""
        aggregates = {sql: i for i, sql in enumerate(self.aggregate_sql)}
        keys = {sql: i for i, sql in enumerate(self.key_sql)}

        def replace(n: exp.Expr) -> exp.Expr:
            if isinstance(n, (exp.AggFunc, exp.Filter)) or is_anonymous_aggregate(n):
                return exp.column(layout.aggregate(aggregates[aggregate_identity(n)]))
            if not isinstance(n, exp.Column) and n.sql(dialect="spark") in keys:
                return exp.column(self.key_names[keys[n.sql(dialect="spark")]], quoted=True)
            if isinstance(n, exp.Column) and n.table:
                return exp.column(n.name, quoted=True)
            return n

        return node.transform(replace)


def can_spread_clock(watermark) -> bool:
    """A clock for the stream can be spread over buckets told the stream's batch extremes (see
    WindowRuntime.process_batch): not 'min_event_time' (a late row must not lower the oldest time,
    and only the runtime knows which rows are late), and not with an idle timeout (an idle stream's
    clock jumps past the last open window of every key: a bucket knows only its own keys')."""
    return watermark.strategy != "min_event_time" and watermark.idle_timeout is None


def _with_aliases_expanded(condition: exp.Expr, select: exp.Select, plan: QueryPlan) -> exp.Expr:
    """HAVING with each SELECT alias it names replaced by the aliased expression (`HAVING n > 1`
    for `count(*) AS n`): the stateful result is one projection over the runtime's records."""
    agg = plan.aggregation
    loose = loose_names(agg) if agg is not None else set(WINDOW_COLUMNS)
    aliased = {e.alias.lower(): e.this for e in select.expressions if isinstance(e, exp.Alias)}

    def replace(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and not node.table and node.name.lower() in aliased \
                and node.name.lower() not in loose:
            return aliased[node.name.lower()].copy()
        return node

    return condition.transform(replace)


def chain_late(first: "DataFrame", second: "DataFrame", stage: int = 2) -> "DataFrame":
    """A chain's late and rejected rows in one table, in every mode: the first stage's (its source's
    rows as they came) and the second stage's (a first-stage result row, as one struct column
    UPSTREAM_ROW), each with late_by, the window it missed, the reason, and `stage` (1 or 2).

    A chain of more stages folds stage by stage: `first` is then the earlier stages' table (with its
    `stage`) and `second` stage number `stage`, whose late rows hold stage `stage - 1`'s result row
    as `upstream_row_<stage - 1>` (each stage's rows have their own columns)."""
    from pyspark.sql import functions as F

    if "stage" not in first.columns:
        first = first.withColumn("stage", F.lit(1))
    if stage > 2 and UPSTREAM_ROW in second.columns:
        second = second.withColumnRenamed(UPSTREAM_ROW, f"{UPSTREAM_ROW}_{stage - 1}")
    combined = first.unionByName(second.withColumn("stage", F.lit(stage)), allowMissingColumns=True)
    return late_in_order(combined, first.columns)


def late_in_order(combined: "DataFrame", leading: list[str]) -> "DataFrame":
    """Several stages' late rows (unioned by name) in one column order: the first stage's own columns
    (`leading`), `stage`, the other stages' columns, then __batch."""
    from pyspark.sql import functions as F

    hidden = [c for c in ("__batch",) if c in combined.columns]
    leading = [c for c in leading if c not in hidden and c != "stage"]
    order = [*leading, "stage", *(c for c in combined.columns if c not in leading and c not in hidden and c != "stage"),
             *hidden]
    return combined.select(*(F.col(quote_identifier(c)) for c in order))

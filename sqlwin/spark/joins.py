"""A windowed join in replay and streaming: the sides as one stream through the window runtime.

The sides' rows become one input (`UNION ALL`), each row tagged with its side, keyed by the join
keys, timed by its side's time column and carrying its side's columns. The window runtime windows
that stream as any other, with a clock per side and the earliest as the watermark, and keeps per
window and key the rows each side contributed (runtime/join.py); every firing's value is the
window's join, a list of tuples, which the SQL around it explodes into rows and names as the
query does (`l.v`, `r.window_start`, ...). The user's WHERE applies to the joined rows, as SQL's.

When an ON holds more than keys and bounds, Python cannot evaluate it as Spark would: the runtime
then gives each firing the rows every side kept (JoinSpec.grouped) and `_paired` joins them in
Spark SQL, step by step, under the whole ON -- a row no partner satisfies it with padded once, by
the same expression that matches (one firing per window's close, restored with the state).

Values cross to the runtime as Spark hands them over; TIMESTAMP and DATE columns as numbers
(epoch microseconds, days), turned back into their types in the result.
"""

from __future__ import annotations

import dataclasses
import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError, SqlwinValidationError
from sqlwin.runtime.model import AggregateSpec, JoinSpec
from sqlwin.spark import layout
from sqlwin.spark.input_rows import source_sql
from sqlwin.spark.operator import OperatorConfig, follows_processing_time
from sqlwin.spark.stateful_query import StatefulQuery, can_spread_clock
from sqlwin.spark.time_sql import epoch_ms_sql, micros_timestamp_sql, timestamp_micros_sql
from sqlwin.sql.plan import QueryPlan, TimeColumn, node_position
from sqlwin.sql.text import identifier_name, named_struct, quote_identifier, quote_string

WINDOW_BOUNDS = ("window_start", "window_end", "window_time")
ARRIVAL = ("arrival_order", "arrival_batch", "arrival_time")


@dataclasses.dataclass
class JoinQuery(StatefulQuery):
    """A StatefulQuery whose runtime input is the sides' union and whose result is the join."""

    side_columns: list[list[tuple[str, str, str]]] = dataclasses.field(default_factory=list)
    # per side: (column name, Spark type, field of the tuple struct)

    def typed_emissions_sql(self, records: str) -> str:
        columns = [*self._window_columns(), "__agg0", "__op", "__firing", "__seq", "__batch"]
        return f"SELECT {', '.join(columns)} FROM {records} WHERE __kind = 'emit'"

    def result_sql(self, typed: str) -> str:
        select: exp.Select = self.plan.ast
        outputs = []
        for item in self._expanded(select.expressions):
            rewritten = self._rewrite(item.copy())
            if not isinstance(item, exp.Alias) and isinstance(item, exp.Column):
                rewritten = exp.alias_(rewritten, self._output_name(item), quoted=True)
            outputs.append(rewritten.sql(dialect="spark"))
        join = self.plan.join
        op = "'+I'" if join.emit_mode == "complete" else "__op"
        system = [f"{op} AS op", "__firing AS firing", "__seq AS emit_seq", "__batch", "__seq"]
        where = select.args.get("where")
        condition = f" WHERE {self._rewrite(where.this.copy()).sql(dialect='spark')}" if where is not None else ""
        if self.config.aggregates[0].join.grouped:
            typed, tuples = self._paired(typed), f"__j{len(join.sides) - 1}"
        else:
            tuples = "__agg0"
        return (f"SELECT {', '.join(outputs + system)} FROM {typed} "
                f"LATERAL VIEW explode({tuples}) __joined AS __t{condition}")

    def _paired(self, typed: str) -> str:
        """The firings of a grouped join (JoinSpec.grouped: per window, the rows each side kept) with
        `__j{n}`, the window's join by SQL's definition under the whole ON: an array of tuples
        `struct(r0, ..., r{n})`, each side's row a struct (NULL: no partner). Step j joins side j's rows
        `__row` to the tuples so far `__tup`; a pair matches when the side the ON names is present and the
        rest of ON is true (NULL is not); a LEFT / FULL join pads a tuple no row matches, a RIGHT / FULL
        join a row no tuple matches, once each."""
        join = self.plan.join
        rows = [f"transform(__g.s{s}c0, (__x, __i) -> {self._side_row(s, '__i')}) AS __kept{s}"
                for s in range(len(join.sides))]
        sql = (f"SELECT *, {', '.join(rows)}, transform(__kept0, __row -> named_struct('r0', __row)) AS __j0 "
               f"FROM {typed} LATERAL VIEW explode(__agg0) __grouped AS __g")
        for j, ((kind, reference), rest) in enumerate(zip(join.steps, join.conditions), start=1):
            tuples, new = f"__j{j - 1}", f"__kept{j}"

            def row(side: int, j=j) -> tuple[str, str]:
                return ("__row", "true") if side == j else (f"__tup.r{side}", f"__tup.r{side} IS NOT NULL")

            residual = " AND ".join(f"({self._rewrite(c.copy(), row).sql(dialect='spark')})" for c in rest)
            match = f"coalesce(__tup.r{reference} IS NOT NULL{' AND ' + residual if residual else ''}, false)"
            earlier = ", ".join(f"'r{s}', __tup.r{s}" for s in range(j))
            absent = ", ".join(f"'r{s}', CASE WHEN false THEN {self._side_row(s, '0')} END" for s in range(j))
            pairs = f"transform(filter({new}, __row -> {match}), __row -> named_struct({earlier}, 'r{j}', __row))"
            if kind in ("left", "full"):
                pad = f"array(named_struct({earlier}, 'r{j}', CASE WHEN false THEN {self._side_row(j, '0')} END))"
                pairs = f"CASE WHEN exists({new}, __row -> {match}) THEN {pairs} ELSE {pad} END"
            step = f"flatten(transform({tuples}, __tup -> {pairs}))"
            if kind in ("right", "full"):
                unmatched = (f"transform(filter({new}, __row -> NOT exists({tuples}, __tup -> {match})), "
                             f"__row -> named_struct({absent}, 'r{j}', __row))")
                step = f"concat({step}, {unmatched})"
            sql = f"SELECT *, {step} AS __j{j} FROM ({sql})"
        return f"({sql})"

    def _side_row(self, side: int, index: str) -> str:
        """Side `side`'s row `index` of a grouped firing `__g`, as a struct of its fields."""
        fields = ", ".join(f"'{field}', __g.{field}[{index}]" for _, _, field in self.side_columns[side])
        return f"named_struct({fields})"

    def _late_row_columns(self, row_struct: str | None) -> list[str]:
        """A join's late and rejected rows: `side` names the side each came from (its alias), and a
        struct column per side, named as the side, holds the row's own columns (NULL on the others);
        late_sql adds late_by, the window it missed and the reason, as for one window function."""
        names = self.plan.join.names
        side_of = " ".join(f"WHEN {s} THEN {quote_string(name)}" for s, name in enumerate(names))
        side = layout.carried(0)  # a join's late rows carry its arguments: the first is the side
        columns = [f"CASE {side} {side_of} END AS side"]
        for s, name in enumerate(names):
            fields = [(column, _from_runtime(layout.carried(position), kind)) for (column, kind, _), position
                      in zip(self.side_columns[s], self.config.aggregates[0].join.columns[s])]
            columns.append(f"CASE WHEN {side} = {s} THEN {named_struct(fields)} END AS {quote_identifier(name)}")
        return columns

    def late_row_sql(self, source: str, columns: dict[str, str]) -> dict[str, str]:
        """A row of `source` as the late / rejected rows of the first side that reads it."""
        if not self.config.output_late:
            return {}
        spec = self.config.aggregates[0].join
        for s, side in enumerate(self.plan.join.sides):
            if (identifier_name(side.source) or "").lower() != source.lower():
                continue
            filled = {layout.carried(0): str(s)}
            for (name, kind, _), position in zip(self.side_columns[s], spec.columns[s]):
                if name.lower() in columns:
                    filled[layout.carried(position)] = _to_runtime(quote_identifier(columns[name.lower()]), kind)
            return filled
        return {}

    def _expanded(self, items: list[exp.Expr]) -> list[exp.Expr]:
        """`*` and `l.*` as Spark expands them over the annotated sides: each side's columns, then its
        window_start, window_end and window_time."""
        join = self.plan.join
        out: list[exp.Expr] = []
        for item in items:
            star = item if isinstance(item, exp.Star) else item.this if (
                isinstance(item, exp.Column) and isinstance(item.this, exp.Star)) else None
            if star is None:
                out.append(item)
                continue
            table = item.table.lower() if isinstance(item, exp.Column) else ""
            if table and table not in join.names:
                raise SqlwinValidationError(f"{item.table} is not a side of the join", node_position(item),
                                            ", ".join(join.names), query=self.plan.sql)
            for side, name in enumerate(join.names):
                if table and name != table:
                    continue
                names = [c[0] for c in self.side_columns[side] if c[0].lower() not in WINDOW_BOUNDS]
                for column in [*names, *WINDOW_BOUNDS]:
                    out.append(exp.column(column, table=name, quoted=True))
        return out

    def _rewrite(self, node: exp.Expr, row: t.Callable[[int], tuple[str, str]] | None = None) -> exp.Expr:
        """`node` over the joined tuples `__t`; `row(side)`: (what holds the side's fields, whether the side is
        present) in other places (`_paired`)."""
        join = self.plan.join
        if row is None:
            grouped = self.config.aggregates[0].join.grouped

            def row(side: int) -> tuple[str, str]:
                return (f"__t.r{side}", f"__t.r{side} IS NOT NULL") if grouped else ("__t", f"__t.p{side}")
        if any(isinstance(n, exp.Star) for n in node.walk()):
            raise SqlwinUnsupportedError(
                "A windowed join in replay or streaming expands * only as a whole select item", node_position(node),
                "SELECT *, SELECT l.*, or the columns by name", query=self.plan.sql)

        def replace(n: exp.Expr) -> exp.Expr:
            if not isinstance(n, exp.Column):
                return n
            side = self._side_of(n)
            if side is None:  # an unqualified window bound: the window's own
                return exp.column(n.name.lower())
            name = n.name.lower()
            holder, present = row(side)
            if name in WINDOW_BOUNDS:
                return exp.maybe_parse(f"CASE WHEN {present} THEN {name} END", dialect="spark")
            column, kind, field = next(c for c in self.side_columns[side] if c[0].lower() == name)
            value = f"{holder}.{field}"
            if join.insert == "collect":
                if name in {k.lower() for k in join.keys[side]}:  # a key is one value for the window
                    return exp.maybe_parse(_from_runtime(f"element_at({value}, 1)", kind), dialect="spark")
                if kind.startswith(("timestamp", "date")):
                    return exp.maybe_parse(f"transform({value}, __v -> {_from_runtime('__v', kind)})",
                                           dialect="spark")
                return exp.maybe_parse(value, dialect="spark")
            return exp.maybe_parse(_from_runtime(value, kind), dialect="spark")

        return node.transform(replace)

    def _output_name(self, column: exp.Column) -> str:
        """The name Spark gives a selected column: the input's own spelling."""
        side = self._side_of(column)
        if side is None or column.name.lower() in WINDOW_BOUNDS:
            return column.name.lower() if column.name.lower() in WINDOW_BOUNDS else column.name
        return next(c[0] for c in self.side_columns[side] if c[0].lower() == column.name.lower())

    def _side_of(self, column: exp.Column) -> int | None:
        join = self.plan.join
        table, name = column.table.lower(), column.name.lower()
        if table:
            if table not in join.names:
                raise SqlwinValidationError(f"{column.table} is not a side of the join", node_position(column),
                                            ", ".join(join.names), query=self.plan.sql)
            side = join.names.index(table)
        else:
            if name in WINDOW_BOUNDS:
                return None
            owners = [s for s, columns in enumerate(self.side_columns) if name in {c[0].lower() for c in columns}]
            if len(owners) != 1:
                raise SqlwinValidationError(
                    f"{column.name} is {'in more than one side' if owners else 'not a column'} of the join",
                    node_position(column, column.name),
                    f"qualified: {', '.join(f'{n}.{column.name}' for n in join.names)}", query=self.plan.sql)
            side = owners[0]
        if name not in WINDOW_BOUNDS and name not in {c[0].lower() for c in self.side_columns[side]}:
            raise SqlwinValidationError(
                f"{column.name} is not a column of {join.names[side]}", node_position(column, column.name),
                ", ".join(c[0] for c in self.side_columns[side]), query=self.plan.sql)
        return side


def _to_runtime(sql: str, kind: str) -> str:
    """A side's value as the runtime carries it: TIMESTAMP (and TIMESTAMP_NTZ, in no zone) as epoch
    microseconds, DATE as days."""
    if kind.startswith("timestamp"):
        return timestamp_micros_sql(sql, kind.startswith("timestamp_ntz"))
    if kind == "date":
        return f"unix_date({sql})"
    return sql


def _runtime_type(kind: str) -> str:
    return "bigint" if kind.startswith("timestamp") else "int" if kind == "date" else kind


def _from_runtime(sql: str, kind: str) -> str:
    if kind.startswith("timestamp"):
        return micros_timestamp_sql(sql, kind.startswith("timestamp_ntz"))
    if kind == "date":
        return f"date_from_unix_date({sql})"
    return sql


def prepare_join(plan: QueryPlan, mode: str, bucket_count: int, bucket_ids: tuple[int, ...] = (),
                 spread: bool = False) -> JoinQuery:
    join = plan.join
    sides = join.sides
    for clause in ("group", "having", "order", "limit", "qualify"):
        if plan.ast.args.get(clause) is not None:
            raise SqlwinUnsupportedError(
                f"In {mode} mode a windowed join gives its joined rows; {clause.upper()} over them belongs in a "
                "second query over its result", node_position(plan.ast.args.get(clause)),
                "SELECT columns of the sides and their window bounds; aggregate the result afterwards",
                query=plan.sql)
    for side in sides:
        if not side.columns:
            raise SqlwinValidationError(f"The columns of {side.source} are unknown", side.position,
                                        "a table or view the session knows", query=plan.sql)
    for option in ARRIVAL:
        kinds = {side.columns.get(side.options[option], "") for side in sides if option in side.options}
        if len(kinds) > 1:
            raise SqlwinValidationError(
                f"{option} must have one type on every side (one arrival sequence shared by the inputs), got "
                f"{' and '.join(sorted(k.upper() for k in kinds))}", sides[1].position,
                "CAST(... AS BIGINT) in a subquery", query=plan.sql)
    keys = len(join.keys[0])
    side_columns: list[list[tuple[str, str, str]]] = []
    argument_sql = ["__side"]
    index = 1
    spec_columns = []
    for s, side in enumerate(sides):
        columns = []
        positions = []
        for c, (name, kind) in enumerate(side.columns.items()):
            field = f"s{s}c{c}"
            columns.append((name, kind, field))
            argument_sql.append(f"__{field}")
            positions.append(index)
            index += 1
        side_columns.append(columns)
        spec_columns.append(tuple(positions))
    selects = []
    first = sides[0]
    for s, side in enumerate(sides):
        parts = [f"{s} AS __side"]
        parts += [f"{quote_identifier(k)} AS __jk{i}" for i, k in enumerate(join.keys[s])]
        time_sql = epoch_ms_sql(side.time) if side.time.kind == "epoch_ms" else quote_identifier(side.time.name)
        parts.append(f"{time_sql} AS __ts")
        for option in ARRIVAL:
            if option in side.options:
                parts.append(f"{quote_identifier(side.options[option])} AS __{option}")
        for o, columns in enumerate(side_columns):
            for name, kind, field in columns:
                value = _to_runtime(quote_identifier(name), kind) if o == s else "NULL"
                parts.append(f"CAST({value} AS {_runtime_type(kind)}) AS __{field}")
        selects.append(f"SELECT {', '.join(parts)} FROM {source_sql(side)}")
    union = f"({' UNION ALL '.join(selects)}) AS __sides"
    columns = {"__side": "int", **{f"__jk{i}": first.columns.get(k, "") for i, k in enumerate(join.keys[0])},
               "__ts": "bigint" if first.time.kind == "epoch_ms" else "timestamp_ntz" if first.time.ntz else "timestamp"}
    for option in ARRIVAL:
        if option in first.options:
            columns[f"__{option}"] = first.columns.get(first.options[option], "")
    options = {option: f"__{option}" for option in ARRIVAL if option in first.options}
    relation = dataclasses.replace(
        first, source=union, source_alias=None, columns=columns, partition_by=(), order_by=(),
        time=TimeColumn("__ts", first.time.kind, ntz=first.time.ntz), options=options)
    per_key = all(side.partition_by for side in sides)
    watermark = dataclasses.replace(first.watermark, sides=len(sides), scope="key" if per_key else "stream")
    emit = plan.emit
    if join.emit_mode in ("running", "complete"):
        emit = dataclasses.replace(emit, final=False, changes=True)
    spec = AggregateSpec("window_join", arg=0, join=JoinSpec(
        columns=tuple(spec_columns), insert=join.insert, steps=tuple(join.steps), complete=join.emit_mode == "complete",
        grouped=any(join.conditions)))
    timers = follows_processing_time(watermark)  # (a join's EMIT has no intervals)
    if timers and mode == "replay" and "arrival_time" not in options:
        raise SqlwinValidationError(
            "This join's watermark follows processing time, which a replay reads from the recorded arrival times",
            first.position, "WITH (arrival_order = offset_col, arrival_time = arrival_ts_col) on every side",
            query=plan.sql)
    config = OperatorConfig(
        windower=first.windower, watermark=watermark, emit=emit, aggregates=(spec,), processing_time=False,
        key_count=keys, clock_positions=None if per_key else (), argument_count=len(argument_sql), row_count=0,
        output_late=bool(plan.late_into), timers=timers, late_from_arguments=True)
    with_ = plan.ast.args.get("with_")
    with_sql = f"{with_.sql(dialect='spark')} " if with_ else ""
    if watermark.idle_timeout is not None and watermark.idle_clock == "event_time":
        bucket_count = 1
    spread = spread and not per_key and can_spread_clock(watermark)
    count = bucket_count if per_key or spread else 1
    return JoinQuery(
        plan=plan, relation=relation, config=config, key_names=[f"__jk{i}" for i in range(keys)],
        argument_sql=argument_sql, aggregate_sql=["__join"], row_columns=[], source_sql=f"FROM {union}",
        with_sql=with_sql, key_sql=[f"__jk{i}" for i in range(keys)], bucket_count=count,
        bucket_ids=tuple(bucket_ids)[:count], side_columns=side_columns, spread=spread and count > 1)


def join_result_type(spec: AggregateSpec, types: dict):
    """The Spark type of the join's value: an array of tuples, one field per side's presence and column."""
    from pyspark.sql.types import ArrayType, BooleanType, StructField, StructType

    fields = []
    names = layout.arguments(max(i for c in spec.join.columns for i in c) + 1)
    for s, positions in enumerate(spec.join.columns):
        fields.append(StructField(f"p{s}", BooleanType(), True))
        for c, position in enumerate(positions):
            kind = types[names[position]]
            gathered = spec.join.insert == "collect" or spec.join.grouped
            fields.append(StructField(f"s{s}c{c}", ArrayType(kind, True) if gathered else kind, True))
    return ArrayType(StructType(fields), True)


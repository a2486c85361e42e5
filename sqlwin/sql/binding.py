"""A window function's arguments bound and checked: from `TUMBLE(TABLE t ..., DESCRIPTOR(ts), ...)`
to a `WindowRelation`.

Positional and named (`SIZE => ...`) arguments matched to each function's parameters; the input's
columns looked up (`schema_of`) and checked in PARTITION BY, ORDER BY, DESCRIPTOR and WATERMARK; the
time column's kind read from its type; the windower's sizes (sqlwin/sql/durations.py); the WITH
options and the watermark. Every error is placed at the argument it is about.
"""

from __future__ import annotations

import contextlib
import contextvars
import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinError
from sqlwin.ir import (
    BY_SQL_NAME,
    UNBOUNDED,
    WINDOWERS,
    IdleClock,
    LatenessRule,
    WatermarkScope,
    WatermarkSpec,
    WatermarkStrategy,
    Windower,
    WindowerError,
)
from sqlwin.sql.ast_nodes import Descriptor, TableArg, WindowOptions, WindowTVF
from sqlwin.sql.durations import duration_micros, offset_micros
from sqlwin.sql.places import did_you_mean, fail, node_position, user_text
from sqlwin.sql.relation import WINDOW_COLUMNS, TimeColumn, WindowRelation

MAX_ROWS = 2**31 - 1  # a row count (COUNT_WINDOW, EVERY n ROWS) must fit Spark's INT
TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")
EPOCH_MS_TYPES = ("bigint", "int", "smallint", "tinyint")
FRACTIONAL_MS_TYPES = ("double", "float")  # and decimal(p,s): epoch ms rounded to the closest ms

SchemaLookup = t.Callable[[str], "dict[str, str] | None"]

OPTION_VALUES: dict[str, tuple[str, ...] | None] = {
    "watermark_strategy": t.get_args(WatermarkStrategy),
    "watermark_scope": t.get_args(WatermarkScope),
    "idle_timeout": None,  # an interval
    "idle_clock": t.get_args(IdleClock),
    "lateness_rule": t.get_args(LatenessRule),
    "arrival_order": None,  # a column: replay
    "arrival_batch": None,  # a column: replay micro-batch boundaries
    "arrival_time": None,  # a column: replay processing time
    "join_insert": ("product", "first", "last", "collect"),  # a windowed join (sql/joins.py)
    "join_emit": ("final", "running", "complete"),
}

SIGNATURES: dict[str, tuple[tuple[str, ...], int]] = {
    # function: (parameters after TABLE and DESCRIPTOR, how many are required)
    kind.sql_name: (kind.sql_parameters, kind.sql_required) for kind in WINDOWERS
}
PARAMETER_ALIASES = {"MAX_SIZE": "SIZE", "STEP_SIZE": "STEP"}


def window_relation(node: WindowTVF, schema_of: SchemaLookup, time_zone: str = "UTC") -> WindowRelation:
    """The window function at `node` bound: its input's columns from `schema_of`, every argument checked."""
    function = node.function
    table_arg, descriptor, params = _bind_arguments(node)
    table = table_arg.this
    reference = table.copy()
    reference.set("alias", None)
    source = reference.sql(dialect="spark")  # the name alone, quoted as needed (`x AS y` stays whole)
    try:
        columns = schema_of(source) or {}
    except SqlwinError as err:
        if err.position is not None:
            raise
        # An unknown table: the caret on the TABLE argument, not on some other word of that name.
        raise type(err)(err.message, node_position(table.this, user_text(table.this)), err.hint) from None
    options = _options(table_arg.args.get("options"))
    partition_by = tuple(_column_sql(e, columns, "PARTITION BY") for e in table_arg.args.get("partition_by") or [])
    order_by = tuple(_ordering_sql(e, columns) for e in table_arg.args.get("order") or [])
    time = _time_column(node, descriptor, columns)
    # COUNT_WINDOW over a finished table needs an order for its rows (checked where the complete
    # input is lowered); a stream counts its rows in the order they arrive.
    if not BY_SQL_NAME[function].ordered and order_by:
        fail(f"{function} takes no ORDER BY (rows are placed by their time)", table_arg.args["order"][0],
             "ORDER BY only in COUNT_WINDOW")
    windower = _windower(function, params, time, node, time_zone)
    watermark = _watermark(table_arg, time, options, columns)
    for name in partition_by:
        if name in WINDOW_COLUMNS:
            fail(f"{name} is produced by the window function and cannot be a key", node)
    alias = node.args.get("alias")
    return WindowRelation(
        node=node,
        function=function,
        source=source,
        source_alias=table.alias or None,
        columns=columns,
        partition_by=partition_by,
        order_by=order_by,
        time=time,
        windower=windower,
        watermark=watermark,
        options=options,
        position=node_position(node, function),
        alias=alias.name if alias else None,
    )


def _bind_arguments(node: WindowTVF) -> tuple[TableArg, Descriptor | None, dict[str, exp.Expr]]:
    """Match positional and named (`NAME => value`) arguments to the function's parameters."""
    function = node.function
    parameters, required = SIGNATURES[function]
    table_arg: TableArg | None = None
    descriptor: Descriptor | None = None
    positional: list[exp.Expr] = []
    named: dict[str, exp.Expr] = {}
    for arg in node.expressions:
        if isinstance(arg, exp.Kwarg):
            name = arg.this.name.upper()
            name = PARAMETER_ALIASES.get(name, name)
            value = arg.expression
            if name == "DATA":
                table_arg = _expect_table(value, function)
            elif name == "TIMECOL":
                descriptor = _expect_descriptor(value, function)
            elif name in parameters:
                if name in named:
                    fail(f"{function} got {name} twice", arg)
                named[name] = value
            else:
                accepted = ", ".join(("DATA", "TIMECOL", *parameters))
                fail(f"{function} has no parameter named {name}", arg, accepted, text=arg.this.name)
        elif isinstance(arg, TableArg):
            table_arg = arg
        elif isinstance(arg, Descriptor):
            descriptor = arg
        else:
            positional.append(arg)
    usage = _usage(function)
    if table_arg is None:
        fail(f"{function} needs its input as TABLE name", node, usage, text=function)
    free = [p for p in parameters if p not in named]
    if len(positional) > len(free):
        fail(f"{function} takes {len(parameters)} value argument(s) after the table and time column, "
             f"got {len(positional) + len(named)}", positional[len(free)], usage)
    params = dict(named)
    params.update(zip(free, positional))
    missing = [p for p in parameters[:required] if p not in params]
    if missing:
        fail(f"{function} is missing its {missing[0]} argument", node, usage, text=function)
    if not BY_SQL_NAME[function].time_optional and descriptor is None:
        fail(f"{function} needs the time column as DESCRIPTOR(column)", node, usage, text=function)
    return table_arg, descriptor, params


def _usage(function: str) -> str:
    return BY_SQL_NAME[function].sql_usage


def _expect_table(value: exp.Expr, function: str) -> TableArg:
    if not isinstance(value, TableArg):
        fail(f"DATA of {function} must be TABLE name", value, _usage(function))
    return value


def _expect_descriptor(value: exp.Expr, function: str) -> Descriptor:
    if not isinstance(value, Descriptor):
        fail(f"TIMECOL of {function} must be DESCRIPTOR(column)", value, _usage(function))
    return value


def _column_sql(expr: exp.Expr, columns: dict[str, str], clause: str) -> str:
    for column in expr.find_all(exp.Column):
        _check_column(column, columns, clause)
    return expr.sql(dialect="spark")


def _ordering_sql(expr: exp.Expr, columns: dict[str, str]) -> str:
    for column in expr.find_all(exp.Column):
        _check_column(column, columns, "ORDER BY")
    return expr.sql(dialect="spark")


def _check_column(column: exp.Column, columns: dict[str, str], clause: str) -> None:
    if columns and column.name.lower() not in {c.lower() for c in columns}:
        fail(f"Unknown column {column.name} in {clause}" + did_you_mean(column.name, columns), column,
             "one of the input's columns: " + ", ".join(columns), text=column.name)


# The type a time column of unknown type is taken to have (None: TIMESTAMP). A check before Spark
# starts, without schemas, plans a query under each assumption (sqlwin.check).
_ASSUMED_TIME_TYPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("assumed_time_type", default=None)


@contextlib.contextmanager
def assuming_time_type(type_name: str | None) -> t.Iterator[None]:
    token = _ASSUMED_TIME_TYPE.set(type_name)
    try:
        yield
    finally:
        _ASSUMED_TIME_TYPE.reset(token)


def _time_column(node: WindowTVF, descriptor: Descriptor | None, columns: dict[str, str]) -> TimeColumn | None:
    if descriptor is None:
        return None
    inner = descriptor.this
    if isinstance(inner, (exp.Anonymous, exp.Func)) and inner.sql().upper().startswith(("PROCTIME", "CURRENT_TIMESTAMP")):
        return TimeColumn(None, "processing_time")
    if not isinstance(inner, exp.Column):
        fail("DESCRIPTOR takes one column name, or PROCTIME() for processing time", descriptor,
             "DESCRIPTOR(ts) | DESCRIPTOR(PROCTIME())")
    _check_column(inner, columns, "DESCRIPTOR")
    type_name = _type_of(inner.name, columns) or _ASSUMED_TIME_TYPE.get()
    if type_name is None or type_name in TIMESTAMP_TYPES:
        return TimeColumn(inner.name, "timestamp", ntz=type_name == "timestamp_ntz")
    if type_name in EPOCH_MS_TYPES:
        return TimeColumn(inner.name, "epoch_ms")
    if type_name in FRACTIONAL_MS_TYPES or type_name.startswith("decimal"):
        return TimeColumn(inner.name, "epoch_ms", rounded=True)  # finer than 1 ms: rounded (QX-20)
    fail(f"Time column {inner.name} is {type_name.upper()}, not a time", inner,
         "a TIMESTAMP column, or a column of epoch milliseconds (LONG; DOUBLE or DECIMAL are rounded to the ms)",
         text=inner.name)


def _type_of(name: str, columns: dict[str, str]) -> str | None:
    for column, type_name in columns.items():
        if column.lower() == name.lower():
            return type_name.lower()
    return None


def _windower(function: str, params: dict[str, exp.Expr], time: TimeColumn | None, node: WindowTVF,
              time_zone: str = "UTC") -> Windower:
    try:
        return BY_SQL_NAME[function].from_arguments(_Arguments(params, time, time_zone))
    except WindowerError:
        pass  # the one rule durations do not check: CUMULATE's step divides its max size
    fail("CUMULATE's step must divide its max size", params["STEP"],
         f"a step that divides {user_text(params['SIZE'])} evenly")


class _Arguments:
    """A window function's bound value arguments as the IR's `from_arguments` reads them."""

    def __init__(self, params: dict[str, exp.Expr], time: TimeColumn | None, time_zone: str):
        self.params, self.time, self.time_zone = params, time, time_zone
        self.timed = _timed(time)

    def duration(self, name: str) -> int:
        return duration_micros(self.params[name.upper()], self.time, name.upper())

    def offset(self, period: int) -> int:
        params = self.params
        return offset_micros(params["OFFSET"], self.time, self.time_zone) % period if "OFFSET" in params else 0

    def rows(self, name: str) -> int:
        return _row_count(self.params[name.upper()], name.upper())

    def __contains__(self, name: str) -> bool:
        return name.upper() in self.params


def _timed(time: TimeColumn | None) -> bool:
    """Whether rows carry a time of their own (a NULL one then joins no window): a named column."""
    return time is not None and time.kind != "processing_time"


def _row_count(value: exp.Expr, what: str) -> int:
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isascii() and value.this.isdigit()):
        if isinstance(value, exp.Neg):
            fail(f"COUNT_WINDOW {what} must be a positive number of rows", value, "a whole number of rows, e.g. 3")
        fail(f"COUNT_WINDOW {what} is a number of rows", value, "a whole number of rows, e.g. 3")
    count = int(value.this)
    if count <= 0:
        fail(f"COUNT_WINDOW {what} must be a positive number of rows, got {count}", value, "a whole number >= 1")
    if count > MAX_ROWS:
        fail(f"COUNT_WINDOW {what} of {count} rows is too large", value, f"a whole number of rows up to {MAX_ROWS}")
    return count


# -- watermark and options ----------------------------------------------------------


def _options(node: WindowOptions | None) -> dict[str, t.Any]:
    options: dict[str, t.Any] = {}
    for option in node.expressions if node else []:
        name = option.this.name.lower()
        if name not in OPTION_VALUES:
            fail(f"Unknown window option {name}", option, ", ".join(OPTION_VALUES), text=option.this.name)
        value = option.expression
        allowed = OPTION_VALUES[name]
        if allowed is not None:
            text = value.name.lower() if isinstance(value, (exp.Literal, exp.Column)) else ""
            if text not in allowed:
                fail(f"Option {name} cannot be {user_text(value)}", value,
                     " | ".join(f"'{a}'" for a in allowed))
            options[name] = text
        elif name in ("arrival_order", "arrival_batch", "arrival_time"):
            if not isinstance(value, (exp.Column, exp.Literal)):
                fail(f"Option {name} names a column", value, f"{name} = column_name")
            options[name] = value.name
        else:
            options[name] = value  # converted to micros once the time column is known
    return options


def _watermark(table_arg: TableArg, time: TimeColumn | None, options: dict[str, t.Any],
               columns: dict[str, str]) -> WatermarkSpec:
    clause = table_arg.args.get("watermark")
    delay = 0
    column = time.name if time else None
    if clause is not None:
        column = clause.this.name
        _check_column(clause.this, columns, "WATERMARK")
        if time is not None and time.name and column.lower() != time.name.lower():
            fail(f"WATERMARK is on {column} but the window's time column is {time.name}", clause.this,
                 f"WATERMARK {time.name} DELAY OF ...", text=column)
        delay_node = clause.args.get("delay")
        if isinstance(delay_node, exp.Column) and delay_node.name.upper() == "UNBOUNDED":
            delay = UNBOUNDED
        elif delay_node is not None:
            delay = duration_micros(delay_node, time, "DELAY", allow_zero=True)
    idle = options.get("idle_timeout")
    return WatermarkSpec(
        column=column,
        delay=delay,
        strategy=options.get("watermark_strategy", "max_event_time"),
        scope=options.get("watermark_scope", "key"),
        idle_timeout=duration_micros(idle, time, "idle_timeout") if idle is not None else None,
        idle_clock=options.get("idle_clock", "processing_time"),
        lateness_rule=options.get("lateness_rule", "window_closed"),
    )

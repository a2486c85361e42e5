"""A window function's call as Spark analyses it (`analyze`): its arguments bound by position or
name, checked, and the columns it adds -- what the registered Python UDTFs (spark/functions.py)
and their native plans (spark/function_plans.py) both read. Loaded on workers too: no sqlglot.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import typing as t

from pyspark.sql.types import (
    ByteType,
    DataType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
    YearMonthIntervalType,
)
from pyspark.sql.udtf import AnalyzeResult

from sqlwin.errors import SqlwinValidationError
from sqlwin.ir import WINDOW_COLUMNS, WINDOWERS, WindowerError

MAX_MICROS = 2**63 - 1
MAX_ROWS = 2**31 - 1
INTEGRAL = (LongType, IntegerType, ShortType, ByteType)
FRACTIONAL = (DoubleType, FloatType, DecimalType)

# Positional parameters after the TABLE argument; [name] is optional.
USAGE = {
    "tumble": "tumble(TABLE(t), 'ts', size [, offset])",
    "hop": "hop(TABLE(t), 'ts', slide, size [, offset])",
    "cumulate": "cumulate(TABLE(t), 'ts', step, size [, offset])",
    "session": "session(TABLE(t) PARTITION BY (k), 'ts', gap)",
    "slide": "slide(TABLE(t) [PARTITION BY (k)], 'ts', size)",
    "count_window": "count_window(TABLE(t) [PARTITION BY k] ORDER BY (col), 'col', size [, slide])",
    "global_window": "global_window(TABLE(t) [PARTITION BY (k)] [, 'ts'])",
}
KINDS = {kind.sql_name.lower(): kind for kind in WINDOWERS}  # the registered functions' names: the IR's, lower case
PARAMETERS = {name: ("timecol", *(p.lower() for p in kind.sql_parameters)) for name, kind in KINDS.items()}
# How many of PARAMETERS are required: the time column, then the IR's required values (a function
# with none, global_window, takes its time column optionally).
REQUIRED = {name: 1 + kind.sql_required if kind.sql_required else 0 for name, kind in KINDS.items()}
# Functions whose windows depend on a key's other rows: every row of a key must reach one instance.
KEYED = tuple(name for name, kind in KINDS.items() if kind.data_dependent)
DURATION_HINT = "an INTERVAL of fixed length, e.g. INTERVAL '10' SECONDS or INTERVAL 1 HOUR"


class WindowFunctionError(SqlwinValidationError):
    """A call to a registered window function that cannot run: what is wrong and what is accepted.

    Raised in `analyze`, so Spark reports it (an AnalysisException carrying this message) before
    any row is read; `.function` names the function, `.hint` says what it accepts.
    """

    __module__ = "sqlwin.spark.functions"  # where users import it, and the name Spark's message shows

    def __init__(self, function: str, message: str, accepted: str | None = None):
        self.function = function
        super().__init__(f"sqlwin {function}: {message}", hint=accepted or USAGE[function])


@dataclasses.dataclass
class WindowCall(AnalyzeResult):
    """What `analyze` decided, handed to every instance on the workers (Spark pickles it)."""

    function: str = ""
    windower: t.Any = None  # a sqlwin.ir windower, durations in the time column's unit
    time_column: str | None = None
    time_kind: str = ""  # 'timestamp', 'timestamp_ntz', 'epoch_ms', 'rounded_ms' or 'bound' (count_window)
    keep: tuple = ()  # the input columns that pass through, in order


# --------------------------------------------------------------------------- analyze


def analyze_call(function: str, args: t.Sequence, kwargs: dict) -> WindowCall:
    """Read a call's arguments (Spark's AnalyzeArguments) into a WindowCall, or raise WindowFunctionError."""
    table, params = _bind(function, list(args), {k.lower(): v for k, v in kwargs.items()})
    fields = list(table.dataType.fields)
    time_field = _time_field(function, params.get("timecol"), fields)
    kind = _time_kind(function, time_field)
    unit = 1_000 if kind in ("epoch_ms", "rounded_ms") else 1

    try:
        windower = KINDS[function].from_arguments(_CallArguments(function, params, kind))
    except WindowerError:  # the one rule durations do not check: cumulate's step divides its size
        raise WindowFunctionError(function, f"step {_shown(params['step'])} does not divide size "
                                            f"{_shown(params['size'])}", "a step that divides the size evenly") from None
    # durations in the time column's unit
    windower = dataclasses.replace(windower, **{name: getattr(windower, name) // unit for name in windower.durations})

    keep = tuple(f.name for f in fields if f.name.lower() not in WINDOW_COLUMNS)
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields if f.name in keep]
                        + [StructField(name, data_type, True)
                           for name, data_type in _window_fields(function, time_field, kind)])
    return WindowCall(schema=schema, function=function, windower=windower,
                      time_column=time_field.name if time_field else None, time_kind=kind, keep=keep)


class _CallArguments:
    """A call's bound arguments as the IR's `from_arguments` reads them (durations in microseconds)."""

    timed = False  # set by the native plans (function_plans), which know the time column

    def __init__(self, function: str, params: dict, kind: str):
        self.function, self.params, self.kind = function, params, kind

    def duration(self, name: str) -> int:
        return _duration(self.function, name, self.params[name], self.kind)

    def offset(self, period: int) -> int:
        # as sqlwin.sql.plan: the offset modulo the period, in microseconds
        return _offset(self.function, self.params["offset"], self.kind) % period if "offset" in self.params else 0

    def rows(self, name: str) -> int:
        return _row_count(self.function, name, self.params[name])

    def __contains__(self, name: str) -> bool:
        return name in self.params


def _bind(function: str, args: list, kwargs: dict):
    """The TABLE argument and the named parameters of a call (positional ones named by position)."""
    names = PARAMETERS[function]
    table = kwargs.pop("data", None)
    if table is None and args and args[0].isTable:
        table = args.pop(0)
    if table is None or not table.isTable:
        raise WindowFunctionError(function, "the first argument must be the input table, TABLE(name) "
                                            "or TABLE(SELECT ...)")
    if any(a.isTable for a in [*args, *kwargs.values()]):
        raise WindowFunctionError(function, "takes one TABLE argument, got more")
    if function == "cumulate" and "max_size" in kwargs:
        kwargs.setdefault("size", kwargs.pop("max_size"))
    if KINDS[function].ordered and args and not isinstance(args[0].dataType, StringType):
        names = names[1:]  # count_window(TABLE(t) ORDER BY (ts), 3): say that the column is missing
    unknown = sorted(set(kwargs) - set(names) - {"timecol"})
    if unknown:
        raise WindowFunctionError(function, f"there is no parameter {unknown[0]} (the parameters are data, "
                                            f"{', '.join(PARAMETERS[function])})")
    if len(args) > len(names):
        raise WindowFunctionError(function, f"at most {len(PARAMETERS[function]) + 1} arguments are accepted, "
                                            f"got {len(args) + 1 + len(kwargs)}")
    params = dict(zip(names, args))
    for name, value in kwargs.items():
        if name in params:
            raise WindowFunctionError(function, f"{name} is given twice, by position and by name")
        params[name] = value
    required = PARAMETERS[function][:REQUIRED[function]]
    missing = [p for p in required if p not in params and not (p == "timecol" and KINDS[function].ordered)]
    if missing:
        what = "time column ('ts')" if missing[0] == "timecol" else missing[0]
        raise WindowFunctionError(function, f"the {what} argument is missing")
    for name, value in params.items():
        if name == "timecol" and not (value.isConstantExpression and isinstance(value.dataType, StringType)):
            raise WindowFunctionError(function, "the time column is given by its name, as a string: 'ts'")
        if not value.isConstantExpression:
            raise WindowFunctionError(function, f"{name} must be a constant (a literal), not an expression over rows")
        if value.value is None:
            raise WindowFunctionError(function, f"{name} must not be NULL")
    return table, params


def _time_field(function: str, argument, fields: list[StructField]) -> StructField | None:
    if argument is None:
        if KINDS[function].ordered:
            raise WindowFunctionError(function, "the column whose first and last values bound each window "
                                                "(normally the ORDER BY column) must follow the TABLE argument, "
                                                "as a string")
        return None
    name = argument.value
    matches = [f for f in fields if f.name == name] or [f for f in fields if f.name.lower() == name.lower()]
    if len(matches) != 1:
        columns = ", ".join(f.name for f in fields)
        raise WindowFunctionError(function, f"unknown time column {name!r}" if not matches else
                                  f"time column {name!r} is ambiguous", f"one of the input's columns: {columns}")
    return matches[0]


def _time_kind(function: str, field: StructField | None) -> str:
    if field is None:
        return "none"
    data_type = field.dataType
    if isinstance(data_type, TimestampType):
        return "timestamp"
    if isinstance(data_type, TimestampNTZType):
        return "timestamp_ntz"
    if isinstance(data_type, INTEGRAL):
        return "epoch_ms"
    if isinstance(data_type, FRACTIONAL):
        return "rounded_ms"  # epoch ms finer than a millisecond: rounded to the closest one (QX-20)
    raise WindowFunctionError(function, f"time column {field.name} is {data_type.simpleString().upper()}, not a time",
                              "a TIMESTAMP column, or a column of epoch milliseconds (BIGINT; DOUBLE or DECIMAL "
                              "are rounded to the millisecond)")


def _window_fields(function: str, field: StructField | None, kind: str) -> list[tuple[str, DataType]]:
    names = ("window_start", "window_end", "window_time")
    if KINDS[function].ordered:
        # a count window spans its first and last row: their values of the column, as given
        # (a fractional epoch-ms column rounded to whole milliseconds, as everywhere)
        bound = LongType() if kind == "rounded_ms" else field.dataType
        return [(n, bound) for n in names] + [("window_index", LongType())]
    if kind == "timestamp_ntz" and function != "global_window":
        return [(n, TimestampNTZType()) for n in names]
    return [(n, LongType() if kind in ("epoch_ms", "rounded_ms") else TimestampType()) for n in names]


def _duration(function: str, name: str, argument, kind: str) -> int:
    """A positive duration in microseconds: a day-time INTERVAL, or whole milliseconds with an epoch-ms column."""
    data_type, value = argument.dataType, argument.value
    if isinstance(data_type, DayTimeIntervalType):
        micros = value // dt.timedelta(microseconds=1)
    elif isinstance(data_type, INTEGRAL) and kind in ("epoch_ms", "rounded_ms"):
        micros = value * 1_000
    elif isinstance(data_type, YearMonthIntervalType):
        raise WindowFunctionError(function, f"{name} of months or years has no fixed length", DURATION_HINT)
    elif isinstance(data_type, INTEGRAL):
        raise WindowFunctionError(function, f"{name} needs a unit: {value} of what?",
                                  f"{DURATION_HINT} (a bare number means milliseconds only with a BIGINT epoch-ms "
                                  "time column)")
    else:
        raise WindowFunctionError(function, f"{name} must be an interval, got {data_type.simpleString().upper()} "
                                            f"{value!r}", DURATION_HINT)
    if micros <= 0:
        raise WindowFunctionError(function, f"{name} must be positive, got {_shown(argument)}", DURATION_HINT)
    if micros > MAX_MICROS:
        raise WindowFunctionError(function, f"{name} {_shown(argument)} does not fit in 64-bit microseconds",
                                  DURATION_HINT)
    if kind in ("epoch_ms", "rounded_ms") and micros % 1_000:
        raise WindowFunctionError(function, f"{name} is finer than a millisecond, the unit of the time column",
                                  "a whole number of milliseconds")
    return micros


def _offset(function: str, argument, kind: str) -> int:
    """OFFSET: an interval (may be negative), or an instant the windows align to, in microseconds."""
    data_type, value = argument.dataType, argument.value
    if isinstance(data_type, TimestampType):
        # Spark read the literal in the session time zone; the worker sees it as local wall time
        seconds = int(value.replace(microsecond=0).timestamp())
        return seconds * 1_000_000 + value.microsecond
    if isinstance(data_type, (TimestampNTZType, StringType)):
        # a wall-clock instant without a zone is UTC, as sqlwin's own SQL reads OFFSET => TIMESTAMP '...'
        try:
            instant = value if isinstance(value, dt.datetime) else dt.datetime.fromisoformat(value.replace(" ", "T"))
        except ValueError:
            raise WindowFunctionError(function, f"cannot read the alignment instant {value!r}",
                                      "an INTERVAL, or an instant: TIMESTAMP '2023-12-14 00:00:00'") from None
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=dt.timezone.utc)
        return (instant - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(microseconds=1)
    if isinstance(data_type, DayTimeIntervalType):
        return value // dt.timedelta(microseconds=1)
    if isinstance(data_type, INTEGRAL) and kind in ("epoch_ms", "rounded_ms"):
        return value * 1_000
    raise WindowFunctionError(function, f"offset must be an interval or an instant, got "
                                        f"{data_type.simpleString().upper()} {value!r}",
                              "INTERVAL '15' MINUTES, or TIMESTAMP '2023-12-14 00:00:00'")


def _row_count(function: str, name: str, argument) -> int:
    if not isinstance(argument.dataType, INTEGRAL):
        raise WindowFunctionError(function, f"{name} is a number of rows, got {argument.dataType.simpleString().upper()}",
                                  "a whole number of rows, e.g. 3")
    if not 0 < argument.value <= MAX_ROWS:
        raise WindowFunctionError(function, f"{name} must be a positive number of rows, got {argument.value}",
                                  f"a whole number of rows from 1 to {MAX_ROWS}")
    return argument.value


def _shown(argument) -> str:
    """An argument as the user might have written it: INTERVAL '-10' MINUTE, 60000."""
    value = argument.value
    if not isinstance(value, dt.timedelta):
        return repr(value)
    micros = value // dt.timedelta(microseconds=1)
    for unit, size in (("DAY", 86_400_000_000), ("HOUR", 3_600_000_000), ("MINUTE", 60_000_000),
                       ("SECOND", 1_000_000), ("MILLISECOND", 1_000)):
        if micros % size == 0:
            return f"INTERVAL '{micros // size}' {unit}"
    return f"INTERVAL '{micros}' MICROSECOND"


# --------------------------------------------------------------------------- eval (on the workers)

"""sqlwin's window functions as table functions of a SparkSession: plain `spark.sql` calls them.

    sqlwin.register(spark)
    spark.sql("SELECT * FROM tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)")
    spark.sql("SELECT * FROM session(TABLE(events) PARTITION BY (user_id), 'ts', INTERVAL 30 MINUTES)")

In a classic session `register` makes each function a native Spark plan built on the driver
(`sqlwin.spark.function_plans`: sw.sql's lowering, no Python on the workers), with the Python
UDTF below behind it for the calls that plan does not take; over Spark Connect the UDTFs run.

Each function is a Python UDTF whose static `analyze` reads the call's arguments and derives the
output schema from its input (the input's columns, then window_start, window_end, window_time and,
for count_window, window_index), and whose `eval` takes whole Arrow record batches (PySpark's
Arrow UDTF evaluation, which `@arrow_udtf` offers only with a fixed return type) and assigns
windows in NumPy with the formulas of `sqlwin.runtime.assign`. The result equals `sw.sql` on the
same query (docs/functions.md; tests/test_functions.py).

Workers load this module to run the functions: it imports the IR and the runtime's formulas,
never sqlglot or sqlwin.api.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import os
import sys
import typing as t

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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
from sqlwin.ir import CountWindow, Cumulate, GlobalWindow, Hop, Session, Slide, Tumble
from sqlwin.runtime.assign import count_spans, fixed_spans, session_spans, slide_spans

# The columns a window function adds; an input column of one of these names is replaced by the
# function's own (sqlwin.sql.plan.WINDOW_COLUMNS, which workers cannot import: it loads sqlglot).
WINDOW_COLUMNS = ("window_start", "window_end", "window_time", "window_index")

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
PARAMETERS = {
    "tumble": ("timecol", "size", "offset"),
    "hop": ("timecol", "slide", "size", "offset"),
    "cumulate": ("timecol", "step", "size", "offset"),
    "session": ("timecol", "gap"),
    "slide": ("timecol", "size"),
    "count_window": ("timecol", "size", "slide"),
    "global_window": ("timecol",),
}
REQUIRED = {"tumble": 2, "hop": 3, "cumulate": 3, "session": 2, "slide": 2, "count_window": 2, "global_window": 0}
# Functions whose windows depend on a key's other rows: every row of a key must reach one instance.
KEYED = ("session", "slide", "count_window")
DURATION_HINT = "an INTERVAL of fixed length, e.g. INTERVAL '10' SECONDS or INTERVAL 1 HOUR"


class WindowFunctionError(SqlwinValidationError):
    """A call to a registered window function that cannot run: what is wrong and what is accepted.

    Raised in `analyze`, so Spark reports it (an AnalysisException carrying this message) before
    any row is read; `.function` names the function, `.hint` says what it accepts.
    """

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

    def duration(name: str) -> int:
        return _duration(function, name, params[name], kind)

    def offset(period: int) -> int:
        # as sqlwin.sql.plan: the offset modulo the period, in microseconds, then in the column's unit
        return _offset(function, params["offset"], kind) % period if "offset" in params else 0

    if function == "tumble":
        size = duration("size")
        windower = Tumble(size // unit, offset(size) // unit)
    elif function == "hop":
        size, slide = duration("size"), duration("slide")
        windower = Hop(size // unit, slide // unit, offset(slide) // unit)
    elif function == "cumulate":
        step, size = duration("step"), duration("size")
        if size % step:
            raise WindowFunctionError(function, f"step {_shown(params['step'])} does not divide size "
                                                f"{_shown(params['size'])}", "a step that divides the size evenly")
        windower = Cumulate(step // unit, size // unit, offset(size) // unit)
    elif function == "session":
        windower = Session(duration("gap") // unit)
    elif function == "slide":
        windower = Slide(duration("size") // unit)
    elif function == "count_window":
        size = _row_count(function, "size", params["size"])
        slide = _row_count(function, "slide", params["slide"]) if "slide" in params else size
        windower = CountWindow(size, slide)
    else:
        windower = GlobalWindow()

    keep = tuple(f.name for f in fields if f.name.lower() not in WINDOW_COLUMNS)
    schema = StructType([StructField(f.name, f.dataType, True) for f in fields if f.name in keep]
                        + [StructField(name, data_type, True)
                           for name, data_type in _window_fields(function, time_field, kind)])
    return WindowCall(schema=schema, function=function, windower=windower,
                      time_column=time_field.name if time_field else None, time_kind=kind, keep=keep)


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
    if function == "count_window" and args and not isinstance(args[0].dataType, StringType):
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
    missing = [p for p in required if p not in params and not (p == "timecol" and function == "count_window")]
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
        if function == "count_window":
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
    if function == "count_window":
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


class WindowFunction:
    """The body every registered function shares: an instance sees one task's rows, or one
    key's with PARTITION BY, as Arrow record batches."""

    FUNCTION = ""  # the SQL name, set per function below

    def __init__(self, analyze_result: WindowCall):
        self.call = analyze_result
        self.keyed = self.call.function in KEYED
        self.partitioner = _partitioner()
        self.partitioned = self.keyed and self.partitioner is not None
        self.batches: list[pa.RecordBatch] = []
        self.checked = False

    @staticmethod
    def analyze(*args, **kwargs):  # replaced per function below
        raise NotImplementedError

    def eval(self, *args, **kwargs):
        batch = next(a for a in [*args, *kwargs.values()] if isinstance(a, pa.RecordBatch))
        if self._null_key():
            return  # QX-20: a row whose PARTITION BY key is NULL joins no window, as in sqlwin's own SQL
        if not self.keyed:
            yield from self._fixed_or_global(batch)
            return
        if not self.checked:
            self._check_partitioning()
        self.batches.append(batch)

    def _null_key(self) -> bool:
        """True when this instance's PARTITION BY key has a NULL part (PySpark sets the key before each `eval`)."""
        key = getattr(self.partitioner, "_last_partition_key", None)
        return key is not None and any(part is None for part in key)

    def terminate(self):
        if not self.batches:
            return
        table = pa.Table.from_batches(self.batches)
        self.batches = []
        if self.call.function == "count_window":
            yield from self._count(table)
        else:
            yield from self._keyed_by_time(table)

    # -- the window kinds ----------------------------------------------------------------

    def _fixed_or_global(self, batch: pa.RecordBatch):
        call = self.call
        data = batch.select(list(call.keep))
        if isinstance(call.windower, GlobalWindow):
            if call.time_column is not None:  # named, a time column leaves out the rows without one
                data = data.filter(self._times(batch)[1])
            nulls = pa.nulls(data.num_rows, _arrow_type(call.schema["window_start"].dataType))
            yield self._output(data, (nulls, nulls, nulls))
            return
        times, present = self._times(batch)
        rows = np.flatnonzero(present)
        span_row, starts, ends = fixed_spans(call.windower, times[rows])
        taken = rows[span_row]
        if len(taken) != batch.num_rows or not np.array_equal(taken, np.arange(batch.num_rows)):
            data = data.take(pa.array(taken))
        yield self._output(data, self._bounds(starts, ends, ends - 1))

    def _keyed_by_time(self, table: pa.Table):
        """SESSION and SLIDE: a key's rows in time order; rows without a time join no window."""
        times, present = self._times(table)
        rows = np.flatnonzero(present)
        order = rows[np.argsort(times[rows], kind="stable")]
        ordered = times[order]
        if isinstance(self.call.windower, Session):
            session, starts, ends = session_spans(ordered, self.call.windower.gap)
            taken, starts, ends = order, starts[session], ends[session]
            bounds = self._bounds(starts, ends, ends - 1)
        else:
            position, ends = slide_spans(ordered, self.call.windower.size)
            taken = order[position]
            bounds = self._bounds(ends - self.call.windower.size, ends, ends)
        yield from self._output(table.select(list(self.call.keep)).take(pa.array(taken)), bounds).to_batches()

    def _count(self, table: pa.Table):
        """COUNT_WINDOW: the key's rows with a time, in the order they arrive (the TABLE argument's ORDER BY)."""
        w = self.call.windower
        table = table.filter(self._times(table)[1])
        rows, index, first, last = count_spans(table.num_rows, w.size, w.slide)
        bound = table.column(self.call.time_column)
        if self.call.time_kind == "rounded_ms":
            bound = _rounded_ms(bound)
        first_values = bound.take(pa.array(first))
        last_values = bound.take(pa.array(last))
        data = table.select(list(self.call.keep)).take(pa.array(rows))
        yield from self._output(data, (first_values, last_values, last_values, pa.array(index))).to_batches()

    # -- columns -----------------------------------------------------------------------

    def _times(self, data) -> tuple[np.ndarray, np.ndarray]:
        """The time column as int64 in its unit (epoch microseconds or milliseconds) and where it is present."""
        column = data.column(self.call.time_column)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if self.call.time_kind == "rounded_ms":
            column = _rounded_ms(column)
        else:
            column = column.cast(pa.int64())
        present = column.is_valid().to_numpy(zero_copy_only=False)
        times = column.fill_null(0).to_numpy(zero_copy_only=False) if column.null_count else column.to_numpy()
        return times.astype(np.int64, copy=False), present

    def _bounds(self, starts: np.ndarray, ends: np.ndarray, last: np.ndarray) -> tuple:
        kind = _arrow_type(self.call.schema["window_start"].dataType)
        return tuple(pa.array(np.ascontiguousarray(a, dtype=np.int64)).view(kind) for a in (starts, ends, last))

    def _output(self, data, window_columns: tuple):
        names = [f.name for f in self.call.schema.fields]
        columns = [*data.columns, *window_columns]
        if isinstance(data, pa.Table):
            return pa.Table.from_arrays([pa.chunked_array([c]) if isinstance(c, pa.Array) else c for c in columns],
                                        names=names)
        return pa.RecordBatch.from_arrays(columns, names=names)

    def _check_partitioning(self) -> None:
        """A key's windows need all of its rows in one instance: PARTITION BY, or WITH SINGLE PARTITION.

        Without either Spark hands each task its share of the input and the windows would depend
        on how the input is split; a second task shows that this happened.
        """
        self.checked = True
        if self.partitioned:
            return
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is not None and context.partitionId() > 0:
            _without_traceback()
            raise WindowFunctionError(
                self.call.function, "the input reaches it in several partitions, so a key's rows would be split",
                f"{USAGE[self.call.function]}, or TABLE(t) WITH SINGLE PARTITION for one window sequence "
                "over all rows")


def _partitioner():
    """PySpark's ArrowUDTFWithPartition that made this instance for one PARTITION BY key of the
    TABLE argument, or None when the call does not partition its TABLE argument.

    That wrapper constructs one instance per key and holds the key it calls `eval` for; nothing
    else tells the instance either fact.
    """
    frame = sys._getframe(1)
    for _ in range(6):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if type(owner).__name__ == "ArrowUDTFWithPartition":
            return owner
        frame = frame.f_back
    return None


def _rounded_ms(column) -> pa.Array:
    """Epoch ms of a DOUBLE / FLOAT / DECIMAL column as BIGINT, rounded halves away from zero
    (Spark's round); NaN, infinities and values beyond BIGINT are no time (NULL, as TRY_CAST)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    rounded = pc.round(column, 0, round_mode="half_towards_infinity")
    if pa.types.is_decimal(column.type):
        in_range = pc.and_(pc.greater_equal(rounded, pa.scalar(-(2**63), pa.decimal128(38, 0)).cast(rounded.type)),
                           pc.less_equal(rounded, pa.scalar(2**63 - 1, pa.decimal128(38, 0)).cast(rounded.type)))
    else:
        rounded = rounded.cast(pa.float64())
        in_range = pc.and_(pc.is_finite(rounded), pc.and_(pc.greater_equal(rounded, -(2.0**63)),
                                                          pc.less(rounded, 2.0**63)))
    kept = pc.if_else(in_range, rounded, pa.scalar(None, rounded.type))
    return kept.cast(pa.int64())


def _arrow_type(data_type: DataType) -> pa.DataType:
    if isinstance(data_type, TimestampType):
        return pa.timestamp("us", tz="UTC")
    if isinstance(data_type, TimestampNTZType):
        return pa.timestamp("us")
    return pa.int64()


def _function(name: str) -> type:
    def analyze(*args, **kwargs):
        _no_empty_profiler_updates()
        try:
            if "sqlwin_refusal" in kwargs:  # a call the native plan refused (function_plans.Refused)
                hint = kwargs.get("sqlwin_refusal_hint")
                raise WindowFunctionError(name, kwargs["sqlwin_refusal"].value, hint.value if hint else None)
            return analyze_call(name, args, kwargs)
        except WindowFunctionError as err:
            _without_traceback()
            raise err.with_traceback(None) from None

    return type(name, (WindowFunction,), {"FUNCTION": name, "analyze": staticmethod(analyze),
                                          "__module__": __name__, "__qualname__": name})


def _no_empty_profiler_updates() -> None:
    """In the Python worker that runs `analyze` (on the driver, or a Spark Connect server): report
    no accumulator updates for the UDF profiler's two accumulators when the profiler is off.

    That worker (pyspark.sql.worker.utils.worker_run) registers both accumulators with an empty
    value and sends them back whatever happened; the server then ends the command that analysed the
    call with a `__python_accumulator__` observed metric, and a client reading the command as a
    stream of events -- `spark-pipelines run` -- stops on it after the run completed
    (`[UNKNOWN_RESPONSE] Unknown response: Plan observed(__python_accumulator__=...)`, exit 1). A
    UDTF without `analyze` never starts that worker, so it never showed. With a profiler on
    (spark.sql.pyspark.udf.profiler) the accumulators hold results and are sent as before.
    In any other process nothing changes."""
    utils = sys.modules.get("pyspark.sql.worker.utils")
    if utils is None or "pyspark.sql.worker.analyze_udtf" not in sys.modules \
            or getattr(utils.send_accumulator_updates, "sqlwin", False):
        return
    send_all = utils.send_accumulator_updates

    def send_updates(outfile) -> None:
        from pyspark.accumulators import SpecialAccumulatorIds, _accumulatorRegistry

        for aid in (SpecialAccumulatorIds.SQL_UDF_PROFIER, SpecialAccumulatorIds.SQL_UDF_PROFIER_V2):
            accumulator = _accumulatorRegistry.get(aid)
            if accumulator is not None and not accumulator._value:
                del _accumulatorRegistry[aid]
        send_all(outfile)

    send_updates.sqlwin = True
    utils.send_accumulator_updates = send_updates


def _without_traceback() -> None:
    """In a Spark Python worker, about to fail with sqlwin's message: Spark puts the worker's Python
    traceback into the message unless SPARK_HIDE_TRACEBACK is set (pyspark.util.handle_worker_exception
    reads it when it reports the error). The worker exits after reporting it, so no other function's
    error loses its traceback. In any other process (a test calling analyze) nothing changes."""
    if "pyspark.worker" in sys.modules or "pyspark.sql.worker.analyze_udtf" in sys.modules:
        os.environ["SPARK_HIDE_TRACEBACK"] = "1"


FUNCTIONS = {name: _function(name) for name in USAGE}
for _name, _class in FUNCTIONS.items():
    globals()[_name] = _class  # importable by name: workers unpickle the classes by reference


# --------------------------------------------------------------------------- register (driver)


def register(spark, native: bool = True) -> list[str]:
    """Register tumble, hop, cumulate, session, slide, count_window and global_window in `spark`,
    callable from plain `spark.sql(...)` as table functions (docs/functions.md). Returns their names.

    In a classic session each becomes a native Spark plan built on the driver
    (`sqlwin.spark.function_plans`), with its Python UDTF behind it for the calls the plan does
    not take; a Spark Connect session, or `native=False`, registers the Python UDTFs alone."""
    udtfs = {name: python_udtf(name, spark) for name in FUNCTIONS}
    for name, function in udtfs.items():
        spark.udtf.register(name, function)
    if native:
        from sqlwin.spark.function_plans import register_native

        register_native(spark, udtfs)
    _quiet_error_log()
    return list(FUNCTIONS)


def python_udtf(name: str, spark=None):
    """The Python UDTF of one function (every row through a Python worker in Arrow batches): what
    a Spark Connect session runs, and what `spark.udtf.register(other_name, python_udtf(name))`
    registers beside the native functions (benchmarks/functions.py, tests/test_functions.py)."""
    from pyspark.util import PythonEvalType

    if spark is not None and type(spark).__module__.startswith("pyspark.sql.connect"):  # Spark Connect
        from pyspark.sql.connect.udtf import UserDefinedTableFunction
    else:
        from pyspark.sql.udtf import UserDefinedTableFunction
    # PySpark's Arrow UDTF evaluation (whole record batches in and out), with `analyze`;
    # `@arrow_udtf` refuses `analyze` (SPARK-53286), the evaluation itself does not.
    return UserDefinedTableFunction(FUNCTIONS[name], returnType=None, name=name, evalType=PythonEvalType.SQL_ARROW_UDTF)


class _OwnErrors(logging.Filter):
    """Drops PySpark's log record of an error that is one of the functions' own (its message says it
    all, and PySpark's record repeats it with the JVM stack: a hundred lines of JSON on stderr)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not ("TABLE_VALUED_FUNCTION_FAILED_TO_ANALYZE_IN_PYTHON" in text and "WindowFunctionError: sqlwin " in text)


def _quiet_error_log() -> None:
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # a PySpark without structured logging
        return
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")  # PySpark's own logger class (see runner.py)
    if not any(isinstance(f, _OwnErrors) for f in logger.filters):
        logger.addFilter(_OwnErrors())

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

import logging
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DataType, TimestampNTZType, TimestampType

from sqlwin.ir import CountWindow, Cumulate, GlobalWindow, Hop, Session, Slide, Tumble
from sqlwin.runtime.assign import count_spans, fixed_spans, session_spans, slide_spans
from sqlwin.spark.function_calls import KEYED, USAGE, WindowCall, WindowFunctionError, analyze_call

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
            yield from BODIES[type(self.call.windower)](self, batch)
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
        yield from BODIES[type(self.call.windower)](self, table)

    # -- the window kinds ----------------------------------------------------------------

    def global_window(self, batch: pa.RecordBatch):
        call = self.call
        data = batch.select(list(call.keep))
        if call.time_column is not None:  # named, a time column leaves out the rows without one
            data = data.filter(self._times(batch)[1])
        nulls = pa.nulls(data.num_rows, _arrow_type(call.schema["window_start"].dataType))
        yield self._output(data, (nulls, nulls, nulls))

    def fixed(self, batch: pa.RecordBatch):
        """TUMBLE, HOP, CUMULATE: each batch's rows as they come."""
        call = self.call
        data = batch.select(list(call.keep))
        times, present = self._times(batch)
        rows = np.flatnonzero(present)
        span_row, starts, ends = fixed_spans(call.windower, times[rows])
        taken = rows[span_row]
        if len(taken) != batch.num_rows or not np.array_equal(taken, np.arange(batch.num_rows)):
            data = data.take(pa.array(taken))
        yield self._output(data, self._bounds(starts, ends, ends - 1))

    def _in_time_order(self, table: pa.Table) -> tuple[np.ndarray, np.ndarray]:
        """SESSION and SLIDE: a key's rows in time order (their positions, their times); rows without a
        time join no window."""
        times, present = self._times(table)
        rows = np.flatnonzero(present)
        order = rows[np.argsort(times[rows], kind="stable")]
        return order, times[order]

    def sessions(self, table: pa.Table):
        order, ordered = self._in_time_order(table)
        session, starts, ends = session_spans(ordered, self.call.windower.gap)
        taken, starts, ends = order, starts[session], ends[session]
        bounds = self._bounds(starts, ends, ends - 1)
        yield from self._output(table.select(list(self.call.keep)).take(pa.array(taken)), bounds).to_batches()

    def slides(self, table: pa.Table):
        order, ordered = self._in_time_order(table)
        position, ends = slide_spans(ordered, self.call.windower.size)
        taken = order[position]
        bounds = self._bounds(ends - self.call.windower.size, ends, ends)
        yield from self._output(table.select(list(self.call.keep)).take(pa.array(taken)), bounds).to_batches()

    def count(self, table: pa.Table):
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


# Each kind's body, keyed by the IR's class: fixed and global windows per batch as it arrives, the
# others (KEYED) over all of a key's rows when the instance ends.
BODIES = {Tumble: WindowFunction.fixed, Hop: WindowFunction.fixed, Cumulate: WindowFunction.fixed,
          GlobalWindow: WindowFunction.global_window, Session: WindowFunction.sessions,
          Slide: WindowFunction.slides, CountWindow: WindowFunction.count}


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

"""The registered window functions as native Spark plans: what `sqlwin.register` installs in a
classic SparkSession (one with a JVM in this process; a Spark Connect session keeps the Python
UDTFs of `sqlwin.spark.functions`).

Each function is a table function builder in the session's table function registry, the hook
Spark's own table functions (`range`, `explode`, ...) use: when Spark analyses
`tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)` it hands the builder the call's arguments
(the TABLE argument's resolved plan, its PARTITION BY / ORDER BY, the constants) and the builder
answers with a logical plan. The builder is Python on the driver (a py4j callback, as
`foreachBatch` is): it reads the arguments with the same `analyze_call` as the UDTFs, writes the
window assignment with the same lowering as `sw.sql` (`sqlwin.spark.complete.annotate`), has
Spark parse that text, and puts the TABLE argument's plan where the text reads its input. No
row goes through Python: the functions run at `sw.sql`'s speed, and give its rows.

A call the native plan does not take is handed to the Python UDTF of the same name
(`UserDefinedPythonTableFunction.builder`), which then runs as before:
- a call `analyze_call` refuses: the UDTF's `analyze` refuses it again, and Spark reports it as
  an AnalysisException carrying sqlwin's message (a Python error raised here would reach Spark
  as a py4j error with a Python traceback);
- session / slide / count_window with neither PARTITION BY nor WITH SINGLE PARTITION (the UDTF
  refuses a split input at run time), count_window without ORDER BY (arrival order);
- session / slide / count_window over a stream: refused, the refusal handed to the UDTF's
  `analyze` as the argument `sqlwin_refusal` (docs/functions.md).

Only the driver loads this module (it imports sqlglot through sqlwin.spark.complete); workers
run Spark's own operators.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import logging
import types

from pyspark.sql.types import (
    DataType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    FloatType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
    _parse_datatype_json_string,
)

from sqlwin.errors import Position
from sqlwin.ir import WatermarkSpec
from sqlwin.spark.function_calls import INTEGRAL, KEYED, KINDS, WindowFunctionError, analyze_call

log = logging.getLogger(__name__)

INPUT = "__sqlwin_function_input"  # the name the lowered text reads its input by
CATALYST = "org.apache.spark.sql.catalyst"
REFUSAL, REFUSAL_HINT = "sqlwin_refusal", "sqlwin_refusal_hint"  # read by functions._function's analyze


class Refused(Exception):
    """A call the native plan refuses: what is wrong and what to do instead, handed to the UDTF's
    `analyze`, which raises them as a WindowFunctionError (Spark reports it as an AnalysisException)."""

    def __init__(self, message: str, accepted: str):
        super().__init__(message)
        self.message, self.accepted = message, accepted


class Declined(Exception):
    """A call the native plan does not take: the Python UDTF runs it (or reports what is wrong)."""


class WindowFunctionBuilder:
    """`Seq[Expression] => LogicalPlan` for one function: Spark's table function builder, in Python."""

    def __init__(self, spark, name: str, udtf):
        self.jvm = spark._jvm
        self.name = name
        self.parser = spark._jsparkSession.sessionState().sqlParser()
        self.udtf = udtf._judtf  # the Python UDTF's JVM side, for the calls handed over
        self.parser_thunk = _Thunk(self.parser)
        self.placeholder = self.parser.parsePlan(f"SELECT * FROM {INPUT}").child()  # UnresolvedRelation
        # JVM classes looked up once: each py4j lookup by name is a few round trips to the JVM
        self.hash_map = self.jvm.java.util.HashMap
        self.array_list = self.jvm.java.util.ArrayList
        self.python_utils = self.jvm.org.apache.spark.api.python.PythonUtils

    def apply(self, arguments):
        args = [arguments.apply(i) for i in range(arguments.size())]
        try:
            return self.plan(args)
        except Declined:
            pass
        except Refused as refused:
            arguments = self._seq([*args, self._named(REFUSAL, refused.message),
                                   self._named(REFUSAL_HINT, refused.accepted)])
        except Exception:  # noqa: BLE001 -- a bug here must not fail the query: the UDTF gives the same rows
            log.warning("sqlwin %s: no native plan for this call, running the Python UDTF", self.name, exc_info=True)
        return self.udtf.builder(arguments, self.parser_thunk)

    class Java:
        implements = ["scala.Function1"]

    # -- the native plan -------------------------------------------------------------------

    def plan(self, args: list):
        from sqlwin.spark.complete import annotate
        from sqlwin.sql.plan import TimeColumn, WindowRelation
        from sqlwin.sql.text import quote_identifier

        table, schema, positional, named = self._arguments(args)
        try:
            call = analyze_call(self.name, positional, named)
        except WindowFunctionError:
            raise Declined from None
        partition, order = list(_seq(table.partitionByExpressions())), list(_seq(table.orderByExpressions()))
        source = table.plan()
        keyed = self.name in KEYED
        if keyed and source.isStreaming():
            raise Refused(
                f"the input is a stream: {self.name} windows are formed from all of a key's rows, "
                "which a stream never has (Spark cannot sort a stream)",
                f"sw.stream(\"SELECT ... FROM {self.name.upper()}(TABLE t PARTITION BY k WATERMARK ts DELAY OF "
                "INTERVAL '10' SECONDS, DESCRIPTOR(ts), ...)\", sources={'t': <the streaming DataFrame>}, "
                "sink=DIR, checkpoint=DIR), which keeps each key's windows in state; or the function over a "
                "finished table")
        if keyed and not partition and not table.withSinglePartition():
            raise Declined  # the UDTF refuses a split input, and runs one that is not
        if KINDS[self.name].ordered and not order:
            raise Declined  # counted in arrival order, which only the UDTF sees
        kind = call.time_kind
        time = None if call.time_column is None else TimeColumn(
            call.time_column, "timestamp" if kind.startswith("timestamp") else "epoch_ms",
            rounded=kind == "rounded_ms", ntz=kind == "timestamp_ntz")
        unit = 1_000 if kind in ("epoch_ms", "rounded_ms") else 1
        columns = {f.name: f.dataType.simpleString() for f in schema.fields}
        added = {}  # PARTITION BY / ORDER BY expressions that are no input column: computed as columns

        def term(expression, name: str) -> str:
            column = _column(expression, columns)
            if column is not None:
                return quote_identifier(column)
            added[name] = expression
            return quote_identifier(name)

        relation = WindowRelation(
            node=None, function=self.name.upper(), source=INPUT, source_alias=None, columns=columns,
            partition_by=tuple(term(e, f"__sqlwin_k{i}") for i, e in enumerate(partition)),
            order_by=tuple(f"{term(s.child(), f'__sqlwin_o{i}')} {s.direction().sql()} {s.nullOrdering().sql()}"
                           for i, s in enumerate(order)),
            time=time, windower=_in_micros(call.windower, unit, time is not None), watermark=WatermarkSpec(),
            options={}, position=Position(1, 1))
        sql, _ = annotate(relation)
        if added:
            sql = f"SELECT * EXCEPT ({', '.join(map(quote_identifier, added))}) FROM ({sql})"
            source = self._with_columns(source, added)
        return self._substitute(self.parser.parsePlan(sql), source)

    def _arguments(self, args: list):
        """The TABLE argument, and every argument as PySpark's AnalyzeArgument shows it to `analyze`."""
        table, schema, positional, named = None, None, [], {}
        for arg in args:
            key, node = None, arg.nodeName()
            if node == "NamedArgumentExpression":
                key, arg = arg.key(), arg.value()
                node = arg.nodeName()
            if node == "FunctionTableSubqueryArgumentExpression":
                if table is not None:
                    raise Declined  # analyze refuses two TABLE arguments
                table, schema = arg, StructType.fromJson(_json(arg.plan().schema().json()))
                shown = types.SimpleNamespace(isTable=True, isConstantExpression=False, value=None, dataType=schema)
            else:
                shown = _constant(arg)
            if key is None:
                positional.append(shown)
            else:
                named[key] = shown
        if table is None:
            raise Declined
        return table, schema, positional, named

    # -- plans -------------------------------------------------------------------------------

    def _seq(self, items: list):
        java = self.array_list()
        for item in items:
            java.add(item)
        return self.python_utils.toSeq(java)

    def _named(self, key: str, text: str):
        from sqlwin.sql.text import quote_string

        literal = self.parser.parseExpression(quote_string(text))
        return self._class("expressions.NamedArgumentExpression")(key, literal)

    def _class(self, name: str):
        """A Catalyst class by its name under org.apache.spark.sql.catalyst."""
        found = self.jvm
        for part in f"{CATALYST}.{name}".split("."):
            found = getattr(found, part)
        return found

    def _with_columns(self, source, columns: dict):
        """`SELECT *, <expr> AS name, ... FROM source` with the given (unresolved) expressions."""
        names = ", ".join(f"NULL AS `{name}`" for name in columns)
        project = self.parser.parsePlan(f"SELECT *, {names} FROM {INPUT}")
        items = list(_seq(project.projectList()))
        items[1:] = [alias.withNewChildren(self._seq([expression]))
                     for alias, expression in zip(items[1:], columns.values())]
        return self._class("plans.logical.Project")(self._seq(items), source)

    def _substitute(self, plan, source):
        """`plan` with every read of INPUT replaced by `source` (the lowered text reads it once or twice):
        one `transformUp` in the JVM, with a Scala Map {INPUT's relation -> source} as the partial function."""
        replacement = self.hash_map()
        replacement.put(self.placeholder, source)
        return plan.transformUp(self.python_utils.toScalaMap(replacement))


class _Thunk:
    """`() => ParserInterface`: the parser argument of UserDefinedPythonTableFunction.builder."""

    def __init__(self, parser):
        self.parser = parser

    def apply(self):
        return self.parser

    class Java:
        implements = ["scala.Function0"]


def _is(node, class_name: str) -> bool:
    return node.nodeName() == class_name  # Catalyst's TreeNode.nodeName: the class's simple name


def _column(expression, columns: dict) -> str | None:
    """The input column a PARTITION BY / ORDER BY expression names, if it is one (`k`, not `lower(k)`)."""
    if not _is(expression, "UnresolvedAttribute"):
        return None
    parts = _seq(expression.nameParts())
    if len(parts) != 1:
        return None
    if parts[0] in columns:
        return parts[0]
    matches = [name for name in columns if name.lower() == parts[0].lower()]
    return matches[0] if len(matches) == 1 else None


def _seq(seq) -> list:
    return [seq.apply(i) for i in range(seq.size())]


def _json(text: str) -> dict:
    import json

    return json.loads(text)


def _constant(expression) -> types.SimpleNamespace:
    """A non-TABLE argument as PySpark hands it to `analyze`: its type, and its value when constant."""
    data_type = _parse_datatype_json_string(expression.dataType().json())
    constant = bool(expression.foldable())
    value = _python_value(expression.eval(None), data_type) if constant else None
    return types.SimpleNamespace(isTable=False, isConstantExpression=constant, value=value, dataType=data_type)


def _python_value(internal, data_type: DataType):
    if internal is None:
        return None
    if isinstance(data_type, StringType):
        return internal.toString()
    if isinstance(data_type, DayTimeIntervalType):
        return dt.timedelta(microseconds=internal)
    if isinstance(data_type, (TimestampType, TimestampNTZType)):
        return data_type.fromInternal(internal)
    if isinstance(data_type, INTEGRAL):
        return int(internal)
    if isinstance(data_type, (DoubleType, FloatType)):
        return float(internal)
    if isinstance(data_type, DecimalType):
        return decimal.Decimal(internal.toString())
    raise Declined  # a type PySpark reports itself (an interval of months: NOT_IMPLEMENTED)


def _in_micros(windower, unit: int, timed: bool):
    """analyze_call's windower (durations in the time column's unit) with durations in microseconds, as
    sw.sql's plan holds them."""
    if not windower.durations:  # COUNT_WINDOW, GLOBAL_WINDOW
        return dataclasses.replace(windower, timed=timed)
    return dataclasses.replace(windower, **{name: getattr(windower, name) * unit for name in windower.durations})


def register_native(spark, udtfs: dict) -> bool:
    """Install a native builder per function in `spark`'s table function registry (replacing the
    Python UDTFs registered under the same names); False when `spark` has no JVM here (Spark Connect)."""
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:
        return False
    from pyspark.java_gateway import ensure_callback_server_started

    ensure_callback_server_started(spark.sparkContext._gateway)
    registry = jsession.sessionState().tableFunctionRegistry()
    for name, udtf in udtfs.items():
        registry.createOrReplaceTempFunction(name, WindowFunctionBuilder(spark, name, udtf), "python_udtf")
    return True

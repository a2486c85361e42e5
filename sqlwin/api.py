"""The Python API: `sw = sqlwin.attach(spark)`, then `sw.sql(...)` and `sw.explain(...)`."""

from __future__ import annotations

import contextlib
import re
import typing as t
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.errors import SqlglotError

from sqlwin.dialect import parse_one
from sqlwin.errors import Position, SqlwinError, SqlwinValidationError
from sqlwin.lower.batch import LoweredQuery, lower_complete
from sqlwin.lower.replay import is_replay, run_replay
from sqlwin.plan import QueryPlan, build_plan, require_final_only

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from sqlwin.lower.streaming import StreamingWindowQuery


@dataclass
class Explanation:
    """What `sw.explain(query)` returns: the IR, the lowering chosen and why, the Spark SQL."""

    plan: QueryPlan
    mode: str
    lowered: LoweredQuery

    def __str__(self) -> str:
        lines = [f"mode: {self.mode}"]
        for window in self.plan.windows:
            lines.append(f"window: {window.function} over {window.source} at {window.position}")
            lines.append(f"  windower: {window.windower}")
            lines.append(f"  time: {window.time}")
            lines.append(f"  partition by: {', '.join(window.partition_by) or '(none: one stream)'}")
            if window.order_by:
                lines.append(f"  order by: {', '.join(window.order_by)}")
            lines.append(f"  watermark: {window.watermark}")
        lines.append(f"emit: {self.plan.emit}")
        if self.plan.late_into:
            lines.append(f"late rows into: {self.plan.late_into}")
        if self.plan.aggregation:
            keys = ", ".join(self.plan.aggregation.group_keys) or "(none)"
            lines.append(f"windowed aggregation: GROUP BY {keys}, window_start, window_end")
        lines.append("lowering:")
        lines += [f"  {s}" for s in self.lowered.strategies] or ["  (no window function: plain Spark SQL)"]
        lines.append("spark sql:")
        lines.append(f"  {self.lowered.sql}")
        return "\n".join(lines)


class Sqlwin:
    """sqlwin bound to one SparkSession. Table names resolve through its catalog (temp views included)."""

    def __init__(self, spark: "SparkSession"):
        self.spark = spark

    # -- public ------------------------------------------------------------------

    def plan(self, query: str) -> QueryPlan:
        """Parse and validate; the IR every execution mode reads."""
        resolver = _SchemaResolver(self, query)
        return build_plan(query, resolver)

    def sql(self, query: str) -> "DataFrame":
        """Run a windowed query over finished tables: a DataFrame.

        A table recording arrival (WITH (arrival_order = col ...)) is replayed through the window
        runtime, as the live stream would have run; LATE ROWS INTO registers the late rows as a
        temp view. Any other table is complete input, lowered to native Spark SQL.
        """
        plan = self.plan(query)
        if is_replay(plan):
            return run_replay(self, plan).result
        require_final_only(plan, "complete-input")
        lowered = lower_complete(plan)
        return self._spark_sql(lowered.sql, query)

    def stream(self, query: str, sources: dict[str, t.Any], sink: str, checkpoint: str,
               late_sink: str | None = None, source_format: str = "parquet",
               source_options: dict[str, str] | None = None, trigger: dict | None = None,
               buckets: int | None = None) -> "StreamingWindowQuery":
        """Start `query` as a Structured Streaming query; results land in `sink` per micro-batch.

        sources: {table name in the query: a streaming DataFrame, or a directory of files in
        `source_format`}. Results are parquet under `sink/batch_id=N/` (late rows, with LATE ROWS
        INTO, under `late_sink`), each batch replaced if Spark re-runs it: exactly once across
        restarts from `checkpoint`.
        """
        from sqlwin.lower.streaming import start_stream

        return start_stream(self, query, sources, sink, checkpoint, late_sink=late_sink,
                            source_format=source_format, source_options=source_options,
                            trigger=trigger, buckets=buckets)

    def explain(self, query: str) -> Explanation:
        plan = self.plan(query)
        require_final_only(plan, "complete-input")
        return Explanation(plan, "complete input (native Spark SQL)", lower_complete(plan))

    # -- internals -----------------------------------------------------------------

    def _spark_sql(self, sql: str, original: str) -> "DataFrame":
        from pyspark.errors import AnalysisException, ParseException

        try:
            with _quiet_spark_error_log():
                return self.spark.sql(sql)
        except (AnalysisException, ParseException) as err:
            raise spark_error(err, original) from None

    def _table_schema(self, name: str) -> dict[str, str] | None:
        from pyspark.errors import AnalysisException

        try:
            schema = self.spark.table(name).schema
        except AnalysisException:
            return None
        return {f.name: f.dataType.simpleString() for f in schema.fields}


class _SchemaResolver:
    """Column types of a window function's input: a catalog table, a temp view, or a CTE of the query."""

    def __init__(self, sw: Sqlwin, query: str, resolving: frozenset[str] = frozenset()):
        self.sw = sw
        self.query = query
        self.resolving = resolving
        self._ctes: dict[str, exp.Expr] | None = None

    def __call__(self, name: str) -> dict[str, str] | None:
        """`name`: the table reference as Spark SQL text (`` `my cte` ``, db.t)."""
        ctes = self._cte_definitions()
        cte = _cte_name(name)
        if cte in ctes and cte not in self.resolving:
            return self._cte_schema(cte)
        schema = self.sw._table_schema(name)
        if schema is None and cte not in ctes:
            raise _unknown_table(name, self.query)
        return schema

    def _cte_definitions(self) -> dict[str, exp.Expr]:
        if self._ctes is None:
            ast = parse_one(self.query)
            with_ = ast.args.get("with_")
            self._ctes = {c.alias.lower(): c for c in with_.expressions} if with_ else {}
        return self._ctes

    def _cte_schema(self, name: str) -> dict[str, str] | None:
        ast = parse_one(self.query)
        probe = exp.select("*").from_(exp.Table(this=exp.to_identifier(name, quoted=True)))
        probe.set("with_", ast.args.get("with_"))
        from sqlwin.dialect import Sqlwin as SqlwinDialect

        probe_sql = probe.sql(dialect=SqlwinDialect)
        inner = _SchemaResolver(self.sw, probe_sql, self.resolving | {name})
        try:
            lowered = lower_complete(build_plan(probe_sql, inner))
            df = self.sw._spark_sql(lowered.sql, self.query)
        except SqlwinError:
            return None  # reported with its real position when the whole query is planned
        return {f.name: f.dataType.simpleString() for f in df.schema.fields}


def _cte_name(reference: str) -> str | None:
    """The CTE a table reference (Spark SQL text) can stand for: a one-part name, lower case."""
    try:
        table = exp.to_table(reference, dialect="spark")
    except SqlglotError:
        return None
    return table.name.lower() if not (table.args.get("db") or table.args.get("catalog")) else None


def _unknown_table(name: str, query: str) -> SqlwinValidationError:
    match = re.search(rf"\b{re.escape(name)}\b", query)
    position = _position_of(query, match.start(), name) if match else None
    return SqlwinValidationError(
        f"Unknown table {name}", position,
        "a table or view in the Spark catalog (sw.spark.createOrReplaceTempView / --table NAME=PATH) or a CTE",
        query=query,
    )


def _position_of(query: str, index: int, text: str) -> Position:
    line = query.count("\n", 0, index) + 1
    column = index - (query.rfind("\n", 0, index) + 1) + 1
    return Position(line, column, text)


_SPARK_NAME = re.compile(r"name `([^`]+)`|`([^`]+)`")


def spark_error(err: Exception, query: str) -> SqlwinError:
    """A Spark analysis error as a sqlwin error pointing into the user's query, not the lowered SQL."""
    text = str(err)
    condition = getattr(err, "getCondition", lambda: None)() or ""
    # Spark's message, never an empty one: a ParseException's text starts with a blank line.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = re.sub(r"\s*SQLSTATE: \w+", "", first)
    first = re.sub(r"; line \d+ pos \d+.*", "", first).strip()
    first = first or condition or type(err).__name__
    position = None
    for match in _SPARK_NAME.finditer(first):
        name = (match.group(1) or match.group(2)).split(".")[-1]
        if name.startswith("__"):
            continue
        found = re.search(rf"\b{re.escape(name)}\b", query)
        if found:
            position = _position_of(query, found.start(), name)
            break
    hint = None
    if "UNRESOLVED_COLUMN" in first:
        hint = "a column of the window function's input, or window_start / window_end / window_time"
    return SqlwinValidationError(f"Spark cannot run the query: {first}", position, hint, query=query)


@contextlib.contextmanager
def _quiet_spark_error_log():
    """PySpark logs every analysis error with its JVM stack; sqlwin reports it itself, briefly.

    The logger is PySpark's own (a PySparkLogger, whose calls take keyword context such as
    errorClass=): created here with plain logging.getLogger, before PySpark creates it, it
    would be a logging.Logger, and every later Spark error in the session a TypeError.
    """
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # a PySpark without structured logging: nothing of ours to quiet
        yield
        return
    logger = PySparkLogger.getLogger("SQLQueryContextLogger")
    previous = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = previous


def attach(spark: "SparkSession") -> Sqlwin:
    """sqlwin for this SparkSession."""
    return Sqlwin(spark)

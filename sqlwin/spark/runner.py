"""The one door to Spark: run generated SQL and report Spark's errors in the user's words.

The API hands a `SparkRunner` down to the lowerings (replay, streaming) instead of itself, so a
lowering never imports the API facade.
"""

from __future__ import annotations

import contextlib
import re
import typing as t

from sqlwin.errors import Position, SqlwinError, SqlwinUsageError, SqlwinValidationError, hide_internal_names

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from sqlwin.sql.plan import QueryPlan

# Spark's error for any analysis in a Spark Declarative Pipeline's query function (docs/pipelines.md)
IN_PIPELINE_QUERY_FUNCTION = "ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION"


class SparkRunner:
    """One SparkSession: generated SQL runs here, its errors come back as sqlwin errors."""

    def __init__(self, spark: "SparkSession", planner: "t.Callable[[str], QueryPlan] | None" = None):
        self.spark = spark
        # The plan of a query text, as the API makes it (schemas from the catalog): a lowering that
        # runs a query in parts (window propagation, AP-11) plans each part with it.
        self.planner = planner

    def sql(self, sql: str, original: str) -> "DataFrame":
        """Run generated `sql`; an analysis error points into `original`, the user's query."""
        from pyspark.errors import AnalysisException, ParseException

        try:
            with quiet_spark_error_log():
                return self.spark.sql(sql)
        except (AnalysisException, ParseException) as err:
            raise spark_error(err, original) from None

    def table_schema(self, name: str) -> dict[str, str] | None:
        """Column name -> Spark type of a catalog table or temp view, or None when there is none."""
        from pyspark.errors import AnalysisException

        try:
            schema = self.spark.table(name).schema
        except AnalysisException as err:
            if (err.getCondition() or "") == IN_PIPELINE_QUERY_FUNCTION:
                raise SqlwinUsageError(
                    "sw.sql / sw.stream cannot run in a pipeline's query function: they ask Spark for the tables' "
                    "columns, and a pipeline forbids any analysis there (ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION)",
                    hint="sqlwin.pipelines: swp.materialized_view(spark, name, query) / swp.streaming_table(...) in "
                         "the pipeline file, or return swp.query(spark, query) from the query function "
                         "(docs/pipelines.md)") from None
            return None
        return {f.name: f.dataType.simpleString() for f in schema.fields}

    def is_streaming(self, name: str) -> bool:
        """Whether a table or view is a stream (a streaming DataFrame registered as a temp view)."""
        try:
            return bool(self.spark.table(name).isStreaming)
        except Exception:  # noqa: BLE001 - no such table: Spark says so where the query reads it
            return False

    def table_names(self) -> list[str]:
        """The tables and views the session's current database and temp views hold (for "did you mean")."""
        try:
            return [table.name for table in self.spark.catalog.listTables()]
        except Exception:  # noqa: BLE001 - a suggestion must not fail the error it decorates
            return []

    @property
    def shuffle_partitions(self) -> int:
        return max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions") or 1))


def position_of(query: str, index: int, text: str) -> Position:
    line = query.count("\n", 0, index) + 1
    column = index - (query.rfind("\n", 0, index) + 1) + 1
    return Position(line, column, text)


_SPARK_NAME = re.compile(r"name `([^`]+)`|`([^`]+)`|expression \"([^\"]+)\"")
# A window function of sqlwin's called in the query (for the hint of an unknown column).
_WINDOW_CALL = re.compile(r"\b(TUMBLE|HOP|CUMULATE|SESSION|SLIDE|COUNT_WINDOW|GLOBAL_WINDOW)\s*\(", re.IGNORECASE)


def spark_error(err: Exception, query: str) -> SqlwinError:
    """A Spark analysis error as a sqlwin error pointing into the user's query, not the lowered SQL."""
    text = str(err)
    condition = getattr(err, "getCondition", lambda: None)() or ""
    # Spark's message, never an empty one: a ParseException's text starts with a blank line.
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = lines[0] if lines else ""
    first = re.sub(r"\s*SQLSTATE: \w+", "", first)
    first = re.sub(r"; line \d+ pos \d+.*", "", first).strip()
    first = hide_internal_names(first or condition or type(err).__name__)
    position = None
    for match in _SPARK_NAME.finditer(first):
        name = (match.group(1) or match.group(2) or match.group(3)).split(".")[-1]
        if name.startswith("__"):
            continue
        found = re.search(rf"\b{re.escape(name)}\b", query)
        if found:
            position = position_of(query, found.start(), name)
            break
    hint = None
    if "UNRESOLVED_COLUMN" in first:
        hint = ("a column of the window function's input, or window_start / window_end / window_time"
                if _WINDOW_CALL.search(query) else "a column of the tables the query reads")
    error = SqlwinValidationError(f"Spark cannot run the query: {first}", position, hint, query=query)
    error.spark_parse = type(err).__name__ == "ParseException"  # Spark could not read the text at all
    return error


def spark_error_logger():
    """PySpark's logger of every error that carries a query context, which it logs as JSON with the
    JVM stack before raising it; None for a PySpark without one.

    The logger is PySpark's own (a PySparkLogger, whose calls take keyword context such as
    errorClass=): created here with plain logging.getLogger, before PySpark creates it, it
    would be a logging.Logger, and every later Spark error in the session a TypeError.
    """
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # a PySpark without structured logging: nothing of ours to quiet
        return None
    return PySparkLogger.getLogger("SQLQueryContextLogger")


@contextlib.contextmanager
def quiet_spark_error_log():
    """PySpark logs every analysis error with its JVM stack; sqlwin reports it itself, briefly."""
    logger = spark_error_logger()
    if logger is None:
        yield
        return
    previous = logger.disabled
    logger.disabled = True
    try:
        yield
    finally:
        logger.disabled = previous

"""sqlwin in Spark Declarative Pipelines (`spark-pipelines run`; docs/pipelines.md).

In a pipeline's Python file (PySpark puts the pipeline's session in `spark`):

    import sqlwin.pipelines as swp

    # a materialized view: complete input, native Spark SQL (LATE ROWS INTO: a second one)
    swp.materialized_view(spark, "sessions", '''
        SELECT user_id, window_start, window_end, count(*) AS clicks
        FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
        GROUP BY user_id, window_start, window_end''')

    # a streaming table: the window runtime over an external stream, as sw.stream runs it
    arriving = spark.readStream.schema("user_id STRING, id STRING, ts TIMESTAMP").csv("/data/clicks/")
    swp.streaming_table(spark, "clicks_per_half_hour", '''
        SELECT user_id, window_start, window_end, count(*) AS clicks
        FROM TUMBLE(TABLE arriving PARTITION BY user_id WATERMARK ts DELAY OF INTERVAL 5 MINUTES,
                    DESCRIPTOR(ts), INTERVAL 30 MINUTES)
        GROUP BY user_id, window_start, window_end EMIT FINAL''', sources={"arriving": arriving})

    # or by hand, in a query function of your own
    @dp.materialized_view
    def sessions():
        return swp.query(spark, "SELECT ... FROM SESSION(TABLE clicks ...) ...")

A pipeline forbids analysis in a query function (and its datasets do not exist before its first
run), so sqlwin plans a query when it is defined, from the text and the columns it knows there (a
materialized view's `schemas`: a dataset's columns and types, as a DDL string or a StructType; a
streaming table's sources' own schemas); the query function only builds the DataFrame
(sqlwin/spark/pipeline.py). Errors are sqlwin's, raised where the dataset is defined.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinError, SqlwinUnsupportedError, SqlwinUsageError
from sqlwin.spark.complete import lower_complete, name_select_items
from sqlwin.spark.pipeline import SOURCE, complete_frame, formatted, prepare_stream
from sqlwin.spark.replay import is_replay
from sqlwin.sql.dialect import parse_one
from sqlwin.sql.plan import QueryPlan, build_plan, node_position, require_final_only

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Schemas = t.Mapping[str, t.Any]  # {dataset name: "col TYPE, ..." or a StructType}
DEFAULT_BUCKETS = 8
# transformWithStateInPandas keeps its state in RocksDB only (sqlwin.session.STATE_STORE; importing that
# module here would put it in place of the `sqlwin.session` function)
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"


class _Planned(t.NamedTuple):
    plan: QueryPlan
    sources: dict[str, str]  # SOURCE name in the generated SQL -> the dataset it reads
    schemas: dict[str, t.Any]  # SOURCE name -> StructType


def _plan(spark: "SparkSession", query: str, schemas: Schemas | None, streaming: bool, analyse: bool) -> _Planned:
    """Plan `query` with the declared columns. Each declared dataset is read through a SOURCE name of
    the generated SQL, so that Spark can analyse that SQL at definition time over an empty stand-in.
    `analyse`: Spark may be asked (at definition time; not in a query function)."""
    from pyspark.sql.types import StructType

    declared: dict[str, t.Any] = {}
    for name, schema in (schemas or {}).items():
        if isinstance(schema, StructType):
            declared[name.lower()] = schema
        elif not analyse:  # parsing DDL asks the server (an analysis): read the columns' names and types here
            declared[name.lower()] = _ddl_columns(name, schema)
        else:
            try:
                declared[name.lower()] = StructType.fromDDL(schema)
            except Exception as err:  # noqa: BLE001 - PySpark's parse error, said in sqlwin's words
                raise SqlwinUsageError(f"schemas[{name!r}] is not a schema: {str(err).splitlines()[0]}",
                                       hint=DDL_HINT) from None
    names = {name: SOURCE.format(i) for i, name in enumerate(declared)}
    by_source = {names[name]: schema for name, schema in declared.items()}
    derived = _derived_names(query) if streaming else set()

    def schema_of(reference: str) -> dict[str, str] | None:
        schema = by_source.get(reference.strip("`"))
        if isinstance(schema, dict):
            return schema
        if schema is not None:
            return _columns(schema)
        if reference.startswith("(") or reference.strip("`").lower() in derived:
            return None  # a subquery or a CTE over the sources: Spark analyses its rows at definition time
        if streaming:
            raise SqlwinUsageError(
                f"{reference} is not one of the streaming table's sources: sqlwin's window runtime in a pipeline "
                "reads an external stream, given as a streaming DataFrame -- not a dataset of the pipeline, which "
                "Spark Connect would have to resolve when the flow is defined, before the pipeline resolves its "
                "datasets (TABLE_OR_VIEW_NOT_FOUND)",
                hint=f"sources={{'{reference}': spark.readStream.format(...).schema(...).load(...)}}; or, over a "
                     "pipeline dataset, swp.materialized_view (complete input)")
        return None  # a materialized view reads it by name; its time column is taken for a TIMESTAMP

    time_zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"
    plan = build_plan(query, schema_of, time_zone, tables=names or None)
    planned = _Planned(plan, {source: name for name, source in names.items()}, by_source)
    if not plan.plain_spark:
        _name_items(spark, planned, analyse)
    return planned


def _columns(schema) -> dict[str, str]:
    """{column: Spark's simple type name} of a StructType, as a plan reads a table's columns."""
    return {f.name: f.dataType.simpleString() for f in schema.fields}


def _derived_names(query: str) -> set[str]:
    """The names of the query's CTEs (lower case): a window function may read one, not only a source."""
    try:
        ast = parse_one(query)
    except SqlwinError:
        return set()  # build_plan says what is wrong with the text
    return {cte.alias_or_name.lower() for cte in ast.find_all(exp.CTE)}


DDL_HINT = "a DDL string, e.g. 'user_id STRING, ts TIMESTAMP', or a StructType"
# Spark's other names of the types a plan reads (its simpleString names them the first way)
_TYPE_NAMES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint", "real": "float",
               "dec": "decimal", "numeric": "decimal"}


def _ddl_columns(name: str, ddl: t.Any) -> dict[str, str]:
    """{column: Spark's simple type name} of a DDL string ('user_id STRING, ts TIMESTAMP'), read without
    Spark: inside a query function PySpark would ask the server to parse it, an analysis."""
    if not isinstance(ddl, str):
        raise SqlwinUsageError(f"schemas[{name!r}] is not a schema: {ddl!r}", hint=DDL_HINT)
    columns, depth, part = {}, 0, ""
    for char in ddl + ",":
        depth += {"(": 1, "<": 1, ")": -1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            words = part.strip().split(None, 1)
            if len(words) != 2:
                raise SqlwinUsageError(f"schemas[{name!r}] is not a schema: cannot read {part.strip()!r}",
                                       hint=DDL_HINT)
            column, kind = words[0].strip("`"), "".join(words[1].lower().split())
            base = kind.split("(")[0]
            columns[column] = _TYPE_NAMES.get(base, base) + kind[len(base):]
            part = ""
        else:
            part += char
    return columns


def _name_items(spark: "SparkSession", planned: _Planned, analyse: bool) -> None:
    """Unaliased items (`count(*)`) get the names Spark gives them, asked of Spark over stand-ins of the
    declared columns; where Spark cannot be asked (no declared columns, or inside a query function),
    an alias is required."""
    plan = planned.plan
    agg = plan.aggregation
    if agg is None:
        return
    if agg.relation.columns and analyse and all(not isinstance(v, dict) for v in planned.schemas.values()):
        stand_ins = {name: spark.createDataFrame([], schema) for name, schema in planned.schemas.items()}
        name_select_items(plan, lambda sql: formatted(spark, sql, stand_ins).columns)
        return
    for item in agg.select.expressions:
        if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            raise SqlwinUsageError(
                "An item without a name in a pipeline's sqlwin query: Spark names it when it analyses the query, "
                "which a pipeline does only once it runs", node_position(item, item.sql(dialect="spark")),
                "an alias (count(*) AS clicks); or swp.materialized_view(..., schemas={table: 'col TYPE, ...'}), "
                "which asks Spark for the name when the dataset is defined", query=plan.sql)


def query(spark: "SparkSession", query: str, schemas: Schemas | None = None) -> "DataFrame":
    """The DataFrame of `query` over finished tables (complete input: native Spark SQL), built without
    analysis: return it from a `@dp.materialized_view` (or `@dp.temporary_view`) query function.
    LATE ROWS INTO's rows are `rejected(spark, query)`."""
    return _complete(spark, query, schemas, analyse=False).frame(spark)


def rejected(spark: "SparkSession", query: str, schemas: Schemas | None = None) -> "DataFrame":
    """The rows of a complete-input `query` that no window takes (a NULL key or time), with `reason`, as
    LATE ROWS INTO lists them (a finished table has no late row): a dataset of their own."""
    return _complete(spark, query, schemas, analyse=False).rejected(spark)


class _Complete(t.NamedTuple):
    """A complete-input query lowered: its SQL, its rejected rows' SQL, the datasets they read."""

    plan: QueryPlan
    sql: str
    rejected_sql: str | None
    sources: dict[str, str]

    def frame(self, spark: "SparkSession") -> "DataFrame":
        return complete_frame(spark, self.sql, self.sources)

    def rejected(self, spark: "SparkSession") -> "DataFrame":
        if not self.rejected_sql:
            raise SqlwinUsageError("The query has no window function whose input rows could be rejected",
                                   hint="a query with a window table function (TUMBLE, SESSION, ...)")
        return complete_frame(spark, self.rejected_sql, self.sources)


def _complete(spark: "SparkSession", text: str, schemas: Schemas | None, analyse: bool) -> _Complete:
    planned = _plan(spark, text, schemas, streaming=False, analyse=analyse)
    plan = planned.plan
    if plan.plain_spark:
        return _Complete(plan, text, None, planned.sources)
    if is_replay(plan):
        raise SqlwinUnsupportedError(
            "A replay (arrival_order) in a pipeline's materialized view: a replay's result is Spark SQL over the "
            "records of its operator (and, with one watermark for the stream or processing time, the stream's "
            "clock per recorded batch is first computed by a Spark job and handed to the operator); in a pipeline "
            "a dataset read by spark.sql over a DataFrame does not resolve, and a query function may run no job "
            "(ATTEMPT_ANALYSIS_IN_PIPELINE_QUERY_FUNCTION)", plan.windows[0].position,
            "sw.sql(...) outside the pipeline (its result written as a table the pipeline reads); the recorded "
            "stream as a streaming table's source (swp.streaming_table); or the query without arrival_order "
            "(complete input)", query=plan.sql)
    require_final_only(plan, "complete-input")
    lowered = lower_complete(plan)
    return _Complete(plan, lowered.sql, lowered.rejected_sql, planned.sources)


def materialized_view(spark: "SparkSession", name: str, query: str, schemas: Schemas | None = None,
                      **options: t.Any) -> None:
    """Define the materialized view `name` as sqlwin's complete-input `query` over the pipeline's datasets;
    with LATE ROWS INTO t, also the materialized view `t` of the rows no window takes. `options` go to
    `dp.materialized_view` (comment, table_properties, partition_cols, ...). Planned here, once: the
    query functions only build the DataFrames."""
    from pyspark import pipelines as dp

    complete = _complete(spark, query, schemas, analyse=True)
    dp.materialized_view(name=name, **options)(lambda: complete.frame(spark))
    if complete.plan.late_into:
        dp.materialized_view(name=complete.plan.late_into,
                             comment=f"the rows of {name}'s input no window takes (LATE ROWS INTO)")(
            lambda: complete.rejected(spark))


def streaming_table(spark: "SparkSession", name: str, query: str, sources: t.Mapping[str, "DataFrame"],
                    buckets: int = DEFAULT_BUCKETS, **options: t.Any) -> None:
    """Define the streaming table `name`: `query` run by sqlwin's window runtime as `sw.stream` runs it --
    watermarks per key or for the stream, EMIT FINAL / CHANGES / EARLY / RETRACTING ..., late rows
    judged and dropped -- each emission appended with its `op`, `firing` and `emit_seq`.

    `sources`: {the window function's input as the query names it: a streaming DataFrame of an external
    source} (`spark.readStream.format(...)...load(...)`, Kafka, ...). Not a dataset of the pipeline:
    Spark Connect analyses the input of transformWithStateInPandas when the flow is defined, before the
    pipeline has resolved (or created) its datasets (docs/pipelines.md). `buckets`: how many pieces the
    state is kept in; keep it across runs (a change needs a full refresh of the table). `options` go to
    `dp.table`."""
    from pyspark import pipelines as dp

    if not isinstance(buckets, int) or isinstance(buckets, bool) or buckets < 1:
        raise SqlwinUsageError(f"buckets must be a positive whole number, got {buckets!r}", hint="e.g. 8")
    frames = dict(sources or {})
    for source, frame in frames.items():
        if not getattr(frame, "isStreaming", False):
            raise SqlwinUsageError(
                f"sources[{source!r}] is not a streaming DataFrame",
                hint="spark.readStream.format(...).schema(...).load(...) (an external source, read as a stream)")
    schemas = {source: frame.schema for source, frame in frames.items()}  # analysed here, where a pipeline allows it
    planned = _plan(spark, query, schemas, streaming=True, analyse=True)
    if planned.plan.plain_spark:
        raise SqlwinUsageError("The query has no window function of sqlwin's: a streaming table of Spark SQL "
                               "needs no sqlwin", hint="@dp.table returning spark.readStream... / a SQL file")
    by_name = {key.lower(): frame for key, frame in frames.items()}
    time_zone = spark.conf.get("spark.sql.session.timeZone") or "UTC"

    def plan_of(text: str, views: dict) -> QueryPlan:  # a chain's stage, over SOURCE names and stages' results
        def schema_of(reference: str):
            schema = views.get(reference.strip("`")) or planned.schemas.get(reference.strip("`"))
            return None if schema is None else _columns(schema)
        return build_plan(text, schema_of, time_zone)

    flow = prepare_stream(spark, planned.plan, plan_of,
                          {source: (by_name[planned.sources[source].lower()], schema)
                           for source, schema in planned.schemas.items()}, buckets)
    # sqlwin.session() sets this for its sessions; a pipeline's is the pipeline's own
    spark_conf = {"spark.sql.streaming.stateStore.providerClass": STATE_STORE, **(options.pop("spark_conf", None) or {})}
    dp.table(name=name, spark_conf=spark_conf, **options)(lambda: flow.frame(spark))

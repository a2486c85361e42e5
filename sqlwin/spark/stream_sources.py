"""A stream's sources: each read through a view of sqlwin's own, a directory of files read as a
stream, and the rows of a CSV / JSON file with a value that did not convert (malformed rows).

Such rows are not windowed with NULLs in them: read PERMISSIVE with Spark's corrupt-record
column, they are routed whole to the rejected rows (reason `malformed`), beside the operator's
records. A directory so read is scanned by two branches, and its rows counted twice by Spark.
"""

from __future__ import annotations

import json
import os
import typing as t

from pyspark.sql import functions as F

from sqlwin.errors import SqlwinUsageError
from sqlwin.spark.stateful_query import StatefulQuery
from sqlwin.sql.text import quote_identifier

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

SOURCE_VIEW = "__sqlwin_source_"  # a stream's source is read through a view of this prefix, not its name
CORRUPT = "_corrupt_record"  # Spark's column for a CSV / JSON line with a value that did not convert
MALFORMED = "malformed"  # the reason such a row is rejected with


def read_directory(spark, path: str, source_format: str, options: dict[str, str],
                   stored_schema: str | None = None):
    """A directory of files as a streaming source: (the stream of good rows, the stream of rows
    with a value that did not convert or None, the schema).

    The schema is the one the checkpoint stored at the stream's first start (`stored_schema`),
    else what the files there now give: a file that arrives later with other types cannot change
    it, so a restart reads the stream as it was read before. CSV and JSON are read PERMISSIVE
    with Spark's corrupt-record column: a row with a value that does not convert is not windowed
    with NULLs in it but routed, whole, to the rejected rows (reason `malformed`).
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql.types import StringType, StructField, StructType

    read_options = _read_options(source_format, options)
    shown, path = path, os.path.abspath(path)  # messages say what the user wrote; Spark gets it absolute
    if stored_schema is not None:
        schema = StructType.fromJson(json.loads(stored_schema))
    else:
        try:
            schema = spark.read.format(source_format).options(**read_options).load(path).schema
        except AnalysisException as err:
            condition = err.getCondition() or ""
            if condition == "PATH_NOT_FOUND":
                raise SqlwinUsageError(f"The source directory {shown} does not exist",
                                       hint="an existing directory, with a first file of the stream in it") from None
            if condition == "UNABLE_TO_INFER_SCHEMA":
                raise SqlwinUsageError(
                    f"The source directory {shown} has no {source_format} file yet to take the stream's columns from",
                    hint=f"put a first {source_format} file in it before starting the stream (later files must "
                         "have its columns); or, from Python, pass sw.stream a streaming DataFrame with its schema"
                ) from None
            raise
    routed = source_format in ("csv", "json") and CORRUPT not in schema.fieldNames() \
        and not any(k.lower() in ("mode", "columnnameofcorruptrecord") for k in options)
    if not routed:
        reader = spark.readStream.format(source_format).schema(schema).options(**read_options)
        return reader.load(path), None, schema
    raw = spark.readStream.format(source_format).schema(StructType([*schema.fields, StructField(CORRUPT, StringType())])) \
        .options(**read_options, mode="PERMISSIVE", columnNameOfCorruptRecord=CORRUPT).load(path)
    columns = [F.col(quote_identifier(f.name)) for f in schema.fields]
    # Both branches read every column of the file: a CSV / JSON reader parses (and flags) only the
    # columns a query reads, so both must judge a row by the same columns; and a query that reads
    # only the corrupt-record column is refused by Spark (QUERY_ONLY_CORRUPT_RECORD_COLUMN). The
    # condition is always true, written so that the optimizer cannot fold it away (`hash(...) IS
    # NOT NULL` it folds: a hash is never NULL) and prune the columns.
    every_column = F.length(F.coalesce(*[c.cast("string") for c in columns], F.lit(""))) >= 0
    good = raw.where(F.col(CORRUPT).isNull() & every_column).select(*columns)
    bad = raw.where(F.col(CORRUPT).isNotNull() & every_column)
    return good, bad, schema


def _read_options(source_format: str, options: dict[str, str]) -> dict[str, str]:
    defaults = {"header": "true", "inferSchema": "true"} if source_format == "csv" else {}
    return {**defaults, **options}


def with_malformed(output: "DataFrame", malformed: dict[str, "DataFrame"], stateful: StatefulQuery,
                   schema) -> "DataFrame":
    """The operator's records with the sources' rows that did not convert, as rejected rows: of
    every directory source (a join's sides, a chain's input), counted and routed, each with its own
    columns where the operator reads that source (a join: on its side)."""
    for name, bad in malformed.items():
        output = output.unionByName(_malformed_records(bad, stateful, schema, name))
    return output


def _malformed_records(bad: "DataFrame", stateful: StatefulQuery, schema, source: str) -> "DataFrame":
    """The rows of `source` that did not convert as the operator's records of rejected rows: with
    LATE ROWS INTO, the row's columns as Spark could read them (NULL where a value did not convert),
    where the operator reads that source (a join: on its side)."""
    filled = stateful.late_row_sql(source, {name.lower(): name for name in bad.columns})
    columns = []
    for column in schema.fields:
        if column.name == "__kind":
            value = F.lit("rejected")
        elif column.name == "__reason":
            value = F.lit(MALFORMED)
        elif column.name in filled:
            value = F.expr(filled[column.name])
        else:
            value = F.lit(None)
        columns.append(value.cast(column.dataType).alias(column.name))
    return bad.select(*columns)


def rows_read(progress: dict, read_twice: tuple[str, ...]) -> int:
    """The rows a batch read. A CSV / JSON directory whose malformed rows are routed is scanned by
    two branches (`read_directory`) and Spark counts each of its rows twice (its progress has
    one source, FileStreamSource[file:<directory>], with twice the rows): such a source is halved."""
    sources = progress.get("sources") or []
    if not sources:
        return progress.get("numInputRows", 0) or 0
    total = 0
    for source in sources:
        rows = int(source.get("numInputRows") or 0)
        described = source.get("description") or ""
        total += rows // 2 if any(described.endswith(f"{path}]") for path in read_twice) else rows
    return total

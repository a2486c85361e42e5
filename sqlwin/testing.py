"""Feeding a streaming query one micro-batch at a time, for tests and for checking a replay.

`feed_stream` writes each arrival batch of a recorded table as one parquet file, lets a real
Structured Streaming query (file source, one file per trigger) process it, and collects what
every micro-batch emitted. The same recorded table, replayed with `sw.sql`, must give the same
rows: that is the invariant replay and streaming share.
"""

from __future__ import annotations

import tempfile
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.api import Sqlwin


@dataclass
class FedStream:
    """What a fed stream emitted: rows in emission order, and per micro-batch."""

    schema: t.Any  # StructType of the result rows
    rows: list[tuple]
    late_schema: t.Any
    late_rows: list[tuple]
    per_batch: list[list[tuple]] = field(default_factory=list)  # results of each data batch, in order
    status: dict | None = None  # the stream's figures when it ended (StreamingWindowQuery.status())


def feed_stream(sw: "Sqlwin", query: str, table: "DataFrame | dict[str, DataFrame]", source: str | None,
                batch_column: str | None, order_column: str | None = None, workdir: str | None = None,
                end_input: bool = True, late: bool = False, buckets: int | None = None,
                restart_after: int | None = None) -> FedStream:
    """Run `query` as a stream over `table` (registered as `source`), one micro-batch per batch value.

    Without `batch_column` every row is its own micro-batch (in `order_column` order).
    `restart_after=n` stops the query after the n-th batch and restarts it from its checkpoint.
    `table` may be {source name: table} (a join's inputs): each micro-batch then holds every
    table's rows of that batch value, one file per source, made visible together.
    """
    if isinstance(table, dict):
        return _feed_sources(sw, query, table, batch_column, order_column, workdir, end_input, buckets,
                             restart_after, late)
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    root = Path(workdir or tempfile.mkdtemp(prefix="sqlwin-feed-"))
    source_dir, sink, late_sink, checkpoint = (root / n for n in ("source", "sink", "late", "checkpoint"))
    source_dir.mkdir(parents=True, exist_ok=True)
    frame = _frame(table)
    order = [c for c in (batch_column, order_column) if c]
    if order:
        frame = frame.sort_values(order, kind="stable")
    groups = [g for _, g in frame.groupby(batch_column, sort=True)] if batch_column else \
        [frame.iloc[[i]] for i in range(len(frame))]
    schema = table.schema
    arrow_schema = to_arrow_schema(schema, timezone=sw.spark.conf.get("spark.sql.session.timeZone"))

    def start():
        frame = sw.spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source_dir))
        return sw.stream(query, sources={source: frame}, sink=str(sink), checkpoint=str(checkpoint),
                         late_sink=str(late_sink) if late else None, buckets=buckets)

    def write(index: int) -> None:
        data = pa.Table.from_pandas(groups[index], schema=arrow_schema, preserve_index=False)
        tmp = source_dir / f".batch-{index:06d}.tmp"
        pq.write_table(data, tmp, coerce_timestamps="us", allow_truncated_timestamps=True)
        tmp.rename(source_dir / f"batch-{index:06d}.parquet")

    handle, per_batch = _run_batches(start, len(groups), write, end_input, restart_after)
    return _fed(sw, handle, sink, per_batch, late_sink if late else None)


def _feed_sources(sw: "Sqlwin", query: str, tables: dict[str, "DataFrame"], batch_column: str | None,
                  order_column: str | None, workdir: str | None, end_input: bool, buckets: int | None,
                  restart_after: int | None, late: bool = False) -> FedStream:
    """Several sources fed batch by batch through ONE file source: each batch value's rows of every
    table go into one parquet file, each table's row in a struct column named after the table (NULL
    on the others' rows), and each source is that stream's rows of its table. One source lists one
    file per micro-batch, so every table's rows of a batch arrive in the same micro-batch (two file
    sources each list their directory on their own: a file made visible between the two listings
    went to the next micro-batch, and the tests saw a join that was not the replay's)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructField, StructType

    from sqlwin.sql.text import quote_identifier

    root = Path(workdir or tempfile.mkdtemp(prefix="sqlwin-feed-"))
    source_dir, sink, late_sink, checkpoint = (root / n for n in ("sources", "sink", "late", "checkpoint"))
    source_dir.mkdir(parents=True, exist_ok=True)
    zone = sw.spark.conf.get("spark.sql.session.timeZone")
    frames = {}
    values: set = set()
    for name, table in tables.items():
        frame = _frame(table)
        order = [c for c in (batch_column, order_column) if c]
        frames[name] = frame.sort_values(order, kind="stable") if order else frame
        if batch_column:
            values |= set(frame[batch_column].tolist())
    batches = sorted(values) if batch_column else [None]
    schema = StructType([StructField(name, table.schema, True) for name, table in tables.items()])
    arrow_schema = to_arrow_schema(schema, timezone=zone)

    def start():
        stream = sw.spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(source_dir))
        streams = {name: stream.where(f"{quote_identifier(name)} IS NOT NULL").select(f"{quote_identifier(name)}.*")
                   for name in tables}
        return sw.stream(query, sources=streams, sink=str(sink), checkpoint=str(checkpoint), buckets=buckets,
                         late_sink=str(late_sink) if late else None)

    def write(index: int) -> None:
        rows = []
        for name, frame in frames.items():
            part = frame[frame[batch_column] == batches[index]] if batch_column else frame
            part = pa.Table.from_pandas(part, schema=pa.schema(list(arrow_schema.field(name).type)),
                                        preserve_index=False)
            rows += [{name: row} for row in part.to_pylist()]
        data = pa.Table.from_pylist(rows, schema=arrow_schema)
        tmp = source_dir / f".batch-{index:06d}.tmp"
        pq.write_table(data, tmp, coerce_timestamps="us", allow_truncated_timestamps=True)
        tmp.rename(source_dir / f"batch-{index:06d}.parquet")

    handle, per_batch = _run_batches(start, len(batches), write, end_input, restart_after)
    return _fed(sw, handle, sink, per_batch, late_sink if late else None)


def _frame(table: "DataFrame"):
    """The table's rows as a pandas frame of Python objects: timestamps of any year 1 to 9999 (a
    pandas timestamp holds only 1677-2262)."""
    import pandas as pd

    rows = [tuple(r) for r in table.collect()]
    return pd.DataFrame({name: pd.Series([r[i] for r in rows], dtype=object) for i, name in enumerate(table.columns)})


def _run_batches(start: t.Callable, count: int, write: t.Callable[[int], None], end_input: bool,
                 restart_after: int | None) -> tuple[t.Any, list[list[int]]]:
    """Start the stream; per batch, write its input (`write(index)`) and let the stream take it;
    end the input. (The last handle, the stream's batch ids that each input batch ran.)
    `restart_after=n` stops the stream after the n-th batch and starts it again from its checkpoint."""
    handle = start()
    per_batch = []
    try:
        for index in range(count):
            if restart_after is not None and index == restart_after:
                handle.stop()  # windows are open: their state is only in the checkpoint now
                handle = start()
            before = len(handle.batches)
            write(index)
            handle.process_all_available()
            per_batch.append([b["batch"] for b in handle.batches[before:]])
        if end_input:
            handle.end_input()
    finally:
        handle.stop()
    return handle, per_batch


def _fed(sw: "Sqlwin", handle, sink: Path, per_batch: list[list[int]], late_sink: Path | None = None) -> FedStream:
    """What the sinks hold, in emission order and per input batch."""
    by_batch = _read_sink(sw, sink)
    rows = [r for batch in sorted(by_batch) for r in by_batch[batch]]
    per_batch = [[r for batch in ids for r in by_batch.get(batch, [])] for ids in per_batch]
    late_rows = [r for _, found in sorted(_read_sink(sw, late_sink).items()) for r in found] if late_sink else []
    return FedStream(handle.result_schema, rows, handle.late_schema, late_rows, per_batch, handle.status())


def _read_sink(sw: "Sqlwin", sink: Path) -> dict[int, list[tuple]]:
    """{batch id: its rows, in the order they were written}: the sink read once (one file per
    batch, never split at this size, so a file's rows keep their order)."""
    if not sink.exists() or not any(sink.glob("batch_id=*")):
        return {}
    by_batch: dict[int, list[tuple]] = {}
    for row in sw.spark.read.parquet(str(sink)).collect():
        values = tuple(row)
        by_batch.setdefault(int(values[-1]), []).append(values[:-1])  # batch_id, the partition column, comes last
    return by_batch

"""A stream's input rows packed per bucket: each Arrow batch's rows of one bucket as one Arrow IPC
blob (`pack_rows`, PACKED_SCHEMA), so the streaming processor receives a few rows per bucket and
reads the Arrow data as it is (`unpack_rows`); with a clock spread over buckets, the batch's
event-time extremes sent to every bucket as clock rows (`clock_packer`, `stream_bounds_of`).
"""

from __future__ import annotations

import functools
import typing as t

import numpy as np
import pandas as pd

from sqlwin.spark import layout

if t.TYPE_CHECKING:
    import pyarrow as pa


PACKED_SCHEMA = "__bucket INT, __pack BIGINT, __newest BIGINT, __blob BINARY"


def pack_rows(batches: t.Iterator["pa.RecordBatch"], clock: t.Callable | None = None,
              before: t.Callable | None = None) -> t.Iterator["pa.RecordBatch"]:
    """mapInArrow body: a stream's input rows packed, per Arrow batch and bucket, into one Arrow
    IPC blob each (schema PACKED_SCHEMA). `before`: what becomes of an Arrow batch's rows before
    they are packed (pre_aggregation.pre_aggregator); the clock rows read the rows as they came.

    transformWithStateInPandas hands a processor its rows one Python tuple at a time (PySpark
    4.3's worker regroups rows by key through itertuples): at 100,000 rows a batch that was the
    largest cost of the whole operator. Packed, the processor receives a few rows per bucket and
    reads the Arrow data as it is (`unpack_rows`). `__pack` keeps the order rows came in: the
    partition, then the blob's place in it (the rows' own order within a blob is kept);
    `__newest` is the newest arrival time in the blob (__ptime), for the arrival clock's watermark.
    """
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    context = TaskContext.get()
    next_pack = (context.partitionId() if context else 0) << 40
    for raw in batches:
        if raw.num_rows == 0:
            continue
        batch = before(raw) if before is not None else raw
        buckets = batch.column("__bucket").to_numpy(zero_copy_only=False)
        order = np.argsort(buckets, kind="stable")
        edges = np.concatenate([[0], np.flatnonzero(np.diff(buckets[order])) + 1, [len(order)]])
        ids, packs, newest, blobs = [], [], [], []
        for start, stop in zip(edges[:-1].tolist(), edges[1:].tolist()):
            part = batch.take(pa.array(order[start:stop]))
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, part.schema) as writer:
                writer.write_batch(part)
            ids.append(int(buckets[order[start]]))
            packs.append(next_pack)
            next_pack += 1
            newest.append(pc.max(part.column("__ptime")).as_py())
            blobs.append(sink.getvalue().to_pybytes())
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int32()), pa.array(packs, pa.int64()), pa.array(newest, pa.int64()),
             pa.array(blobs, pa.binary())], names=["__bucket", "__pack", "__newest", "__blob"])
        if clock is not None:  # clock_packer: the batch's extremes, to every bucket
            extremes = clock(raw)
            if extremes is not None:
                yield extremes


CLOCK_PACK = -1  # a packed row whose __pack is this carries an input partition's batch extremes


def clock_packer(bucket_ids: t.Sequence[int], key_count: int, side_column: str | None,
                 before: t.Callable | None = None):
    """mapInArrow body for a stream whose one clock is spread over buckets: `pack_rows`, and per
    input partition and Arrow batch one clock row for *every* bucket, its __blob as JSON: the
    partition's oldest and newest event time per side ({side: [low, high]}) over rows with a key
    and a time -- the rows that move a clock -- and under "ptime" its newest arrival time (the
    batch's processing time where the query reads one). Each bucket combines what every partition
    sent it (`stream_bounds_of`): the whole stream's extremes, in the same micro-batch, whatever
    bucket holds the rows, and the same again when Spark runs the batch again (they are a
    function of its input)."""
    import json

    import pyarrow.compute as pc

    def extremes(batch: "pa.RecordBatch") -> "pa.RecordBatch | None":
        import pyarrow as pa

        valid = pc.is_valid(batch.column("__time"))
        for i in range(key_count):
            valid = pc.and_(valid, pc.is_valid(batch.column(layout.key(i))))
        timed = batch.filter(valid)
        sides = timed.column(side_column).to_numpy(zero_copy_only=False) if side_column else None
        times = timed.column("__time").to_numpy(zero_copy_only=False).astype(np.int64)
        found: dict = {}
        if timed.num_rows:
            for side in (np.unique(sides).tolist() if sides is not None else [0]):
                mine = times[sides == side] if sides is not None else times
                found[str(int(side))] = [int(mine.min()), int(mine.max())]
        ptime = pc.max(batch.column("__ptime")).as_py()
        if ptime is not None:
            found["ptime"] = int(ptime)
        if not found:
            return None
        blob = json.dumps(found).encode()
        n = len(ids)
        return pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.int32()), pa.array([CLOCK_PACK] * n, pa.int64()), pa.nulls(n, pa.int64()),
             pa.array([blob] * n, pa.binary())], names=["__bucket", "__pack", "__newest", "__blob"])

    ids = list(bucket_ids)
    return functools.partial(pack_rows, clock=extremes, before=before)


def stream_bounds_of(packed: pd.DataFrame) -> tuple[pd.DataFrame, dict | None, int | None]:
    """(the data rows, the stream's batch extremes per side combined from the clock rows or None,
    the stream's newest arrival time in the batch or None)."""
    import json

    clock = (packed["__pack"] == CLOCK_PACK).to_numpy()
    if not clock.any():
        return packed, None, None
    bounds: dict[int, tuple[int, int]] = {}
    ptime = None
    for blob in packed.loc[clock, "__blob"].tolist():
        for name, value in json.loads(blob).items():
            if name == "ptime":
                ptime = value if ptime is None else max(ptime, value)
                continue
            low, high = value
            known = bounds.get(int(name))
            bounds[int(name)] = (low, high) if known is None else (min(known[0], low), max(known[1], high))
    return packed[~clock], bounds or None, ptime


def unpack_rows(packed: pd.DataFrame, columns: list[str]) -> "pa.Table":
    """The rows of `packed` (PACKED_SCHEMA rows of one bucket) in the order they came in (by
    __order), as Arrow: a vectorised runtime reads the columns as they are (arrow_columns), the
    general one a frame of them (`rows_frame`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(packed) == 0:  # (a bucket told the stream's clock, with no rows of its own)
        return pa.table({name: pa.array([], pa.int64()) for name in columns})
    blobs = packed.sort_values("__pack", kind="stable")["__blob"]
    table = pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs])
    return table.take(pc.sort_indices(table, [("__order", "ascending")]))  # a stable sort

"""A stream's stateful stage on the driver, inside foreachBatch, for a windowed aggregation with no key.

Such a stream's input partitions already aggregate their rows per bucket and pane
(pre_aggregation.py), so what reaches the stateful stage is a handful of rows of partial
aggregates a micro-batch. Running that stage as Spark's transformWithStateInPandas costs a
micro-batch ~290 ms whatever it computes (benchmarks/stateful_floor.py: a trivial count 403-420 ms
against 112-119 ms without state). Here the sink's foreachBatch collects the packed partials
instead, and the same WindowProcessor (the same runtime, the same records) merges them into state
the driver keeps in the checkpoint: one snapshot file per micro-batch, `<checkpoint>/sqlwin-driver-state/<batch id>`,
sealed as every state is (sqlwin.runtime.snapshots, kind DriverState).

Restart-safe as Spark's own state is: micro-batch N reads the newest snapshot before N and writes
N's atomically before the sink's files, so a micro-batch run again after a crash (Spark runs it with
the same rows) starts from the same state. The state is each bucket's (a value and its store's
directory, segments and index parts, sealed by sqlwin.runtime.snapshots as in Spark's state), a few
rows per open window and pane: small by construction, which is why only this shape runs here.
"""

from __future__ import annotations

import os
import typing as t
from pathlib import Path

from sqlwin.runtime.snapshots import seal, unseal
from sqlwin.spark.lazy_processor import INDEX, SEGMENT, SparkStore

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

DIRECTORY = "sqlwin-driver-state"  # in the checkpoint
KEPT = 10  # snapshots kept behind the newest (a re-run reads the one before its batch)


class _Value:
    """A ValueState's get / update / clear over one bucket's dict."""

    def __init__(self, bucket: dict, name: str):
        self.bucket, self.name = bucket, name

    def get(self):
        value = self.bucket.get(self.name)
        return (value,) if value is not None else None

    def update(self, value: tuple) -> None:
        self.bucket[self.name] = value[0]

    def clear(self) -> None:
        self.bucket.pop(self.name, None)


class _Parts:
    """A MapState's getValue / updateValue / removeKey over one bucket's parts of a kind {id: blob}."""

    def __init__(self, parts: dict):
        self.parts = parts

    def getValue(self, key: tuple):
        blob = self.parts.get(key[0])
        return (blob,) if blob is not None else None

    def updateValue(self, key: tuple, value: tuple) -> None:
        self.parts[key[0]] = value[0]

    def removeKey(self, key: tuple) -> None:
        self.parts.pop(key[0], None)


def _store(bucket: dict) -> SparkStore:
    """The segments' Store over one bucket's dict, as SparkStore over Spark's state."""
    parts = {kind: _Parts(bucket.setdefault(kind, {})) for kind in (SEGMENT, INDEX)}
    return SparkStore(_Value(bucket, "directory"), parts)


class DriverSnapshots:
    """The snapshot files of one stream: the newest before a batch, and a batch's written atomically."""

    def __init__(self, checkpoint: str):
        self.directory = Path(checkpoint) / DIRECTORY

    def _batches(self) -> list[int]:
        if not self.directory.is_dir():
            return []
        return sorted(int(p.name) for p in self.directory.iterdir() if p.name.isdigit())

    def before(self, batch_id: int) -> dict:
        """{bucket: its state} as the newest micro-batch before `batch_id` left it ({} at the start)."""
        earlier = [b for b in self._batches() if b < batch_id]
        if not earlier:
            return {}
        return unseal((self.directory / str(earlier[-1])).read_bytes(), "DriverState").state["buckets"]

    def write(self, batch_id: int, buckets: dict) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / f".{batch_id}.tmp"
        tmp.write_bytes(seal("DriverState", {"batch": batch_id, "buckets": buckets}))
        os.replace(tmp, self.directory / str(batch_id))
        for old in self._batches():
            if old < batch_id - KEPT or old > batch_id:  # a later one is a crashed run's: never read again
                (self.directory / str(old)).unlink(missing_ok=True)


class DriverOperator:
    """The stateful stage of one stream run in its foreachBatch (see the module): `apply` turns a
    micro-batch's packed partials and control rows into the records transformWithStateInPandas would
    have given, as a DataFrame of `schema`."""

    def __init__(self, processor, schema, checkpoint: str):
        self.processor, self.schema, self.checkpoint = processor, schema, checkpoint

    def apply(self, packed: "DataFrame", batch_id: int) -> tuple["DataFrame", dict]:
        """(the records, the sink's summary of them -- what stream_sink observes where Spark runs the
        operator: each stats record, a count per kind and of malformed rows -- read off the local table)."""
        import pyarrow as pa
        import pyarrow.compute as pc
        from pyspark.sql.pandas.types import to_arrow_schema

        snapshots = DriverSnapshots(self.checkpoint)
        buckets = snapshots.before(batch_id)
        # toArrow, not toPandas: a stream stopped mid-batch interrupts the collect, and toPandas then
        # warns of its Arrow path on the user's stderr (the suite saw it)
        rows = packed.toArrow().rename_columns(self.processor.columns)
        frames = []
        for bucket_id in sorted(pc.unique(rows.column("__bucket")).to_pylist()):
            part = rows.filter(pc.equal(rows.column("__bucket"), bucket_id)).to_pandas()
            bucket = buckets.setdefault(int(bucket_id), {})
            self.processor.state, self.processor.store = _Value(bucket, "value"), _store(bucket)
            self.processor.handle = None  # no timers in this shape
            frames += list(self.processor.handleInputRows((int(bucket_id),), [part], None))
        snapshots.write(batch_id, buckets)
        arrow_schema = to_arrow_schema(self.schema, timezone="UTC")
        tables = [pa.Table.from_pandas(frame.reindex(columns=self.schema.names), schema=arrow_schema,
                                       preserve_index=False, safe=False) for frame in frames if len(frame)]
        table = pa.concat_tables(tables) if tables else arrow_schema.empty_table()
        return packed.sparkSession.createDataFrame(table), _summary(table)


def _summary(table) -> dict:
    """stream_sink._summary_columns of one stage, over a local Arrow table of records."""
    import pyarrow.compute as pc

    from sqlwin.spark.operator import EMIT, LATE, REJECTED, STATS
    from sqlwin.spark.stream_sources import MALFORMED

    kind = table.column("__kind")
    summary = {name: pc.sum(pc.equal(kind, name)).as_py() or 0 for name in (EMIT, LATE, REJECTED)}
    summary["stats"] = table.column("__stats").filter(pc.equal(kind, STATS)).to_pylist()
    summary[MALFORMED] = pc.sum(pc.equal(table.column("__reason"), MALFORMED)).as_py() or 0
    return summary

"""What the worker code writes: emissions, late and rejected rows, progress figures and an earlier
stage's carried records, as tuples in the `record_columns` layout (`records`, `stats_record`,
`carried_records`) or as Arrow batches and frames of that layout (`result_batches`,
`tuple_batches`, `block_frames`: a columnar runtime's emission blocks without a Python object
per emission).
"""

from __future__ import annotations

import typing as t

import pandas as pd

from sqlwin.runtime import BatchResult
from sqlwin.spark import layout
from sqlwin.spark.operator import CARRIED, EMIT, LATE, REJECTED, STATS, OperatorConfig, record_columns

if t.TYPE_CHECKING:
    import pyarrow as pa


def records(config: OperatorConfig, results: t.Iterable[BatchResult], batch: int | None) -> list[tuple]:
    """Emissions, late rows and rejected rows as tuples in `record_columns` order."""
    k, a, r = config.key_count, len(config.aggregates), config.late_width
    no_key, no_aggs, no_row = (None,) * k, (None,) * a, (None,) * r
    carried = slice(0, config.argument_count) if config.late_from_arguments else slice(config.argument_count, None)
    out: list[tuple] = []
    for result in results:
        for e in result.emissions:
            out.append((EMIT, *e.key, e.window_start, e.window_end, e.window_index, *e.values,
                        e.op, e.firing, e.seq, batch, None, None, None, *no_row, None))
        if not config.output_late:
            continue
        for late in result.late:
            row = tuple(late.values[carried])
            out.append((LATE, *late.key, late.window_start, late.window_end, None, *no_aggs,
                        None, None, None, batch, late.event_time, late.late_by_us, "late", *row, None))
        for rejected in result.rejected:
            key = rejected.key if rejected.key is not None and len(rejected.key) == k else no_key
            row = tuple(rejected.values[carried])
            out.append((REJECTED, *key, None, None, None, *no_aggs, None, None, None, batch,
                        rejected.event_time, None, rejected.reason, *row, None))
    return out


def block_frames(results: t.Iterable[BatchResult], arrow_schema) -> list[pd.DataFrame]:
    """The emission blocks of `results` (a columnar runtime's) as frames of records in the
    operator's output schema: typed columns, no Python object per emission. Integers with NULLs
    as Python ints (a double would round a time in year 9999), timestamps as datetimes."""
    return [_block_batch(block, None, arrow_schema).to_pandas(integer_object_nulls=True, timestamp_as_object=True)
            for result in results for block in result.blocks]


def carried_records(config: OperatorConfig, payloads: t.Iterable[str]) -> list[tuple]:
    """An earlier stage's records (JSON), passed on as 'carried' records of this stage."""
    width = len(record_columns(config))
    return [(CARRIED, *(None,) * (width - 2), payload) for payload in payloads]


def records_frame(config: OperatorConfig, rows: list[tuple]) -> pd.DataFrame:
    columns = record_columns(config)
    if not rows:
        return pd.DataFrame({c: pd.Series([], dtype=object) for c in columns})
    data = list(zip(*rows))
    return pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in zip(columns, data)})


def stats_record(config: OperatorConfig, bucket: int, figures: dict) -> tuple:
    """A 'stats' record for progress reports: the bucket's figures as JSON in __stats.

    figures: keys, open_windows, watermark_low / watermark_high (µs, or None), and the runtime
    counts (rows, late, rejected, unassigned, emissions), all over the stream's whole life.
    """
    import json

    width = len(record_columns(config))
    return (STATS, *(None,) * (width - 2), json.dumps({"bucket": bucket, **figures}))


def result_batches(config: OperatorConfig, results: list[tuple[int, BatchResult]], arrow_schema):
    """Arrow batches of the records of (batch, result) pairs: emission blocks as columns, late and
    rejected rows through tuples (few, and each carries its row's values)."""
    tuples: list[tuple] = []
    for batch, result in results:
        for block in result.blocks:
            yield _block_batch(block, batch, arrow_schema)
        tuples += records(config, [result], batch)
    yield from tuple_batches(tuples, arrow_schema)


def _block_batch(block, batch: int, arrow_schema) -> "pa.RecordBatch":
    """An EmissionBlock as 'emit' records (`record_columns` layout, the replay's Arrow schema)."""
    import pyarrow as pa

    n = len(block)

    def constant(value, kind):
        return pa.nulls(n, kind).fill_null(pa.scalar(value, kind))

    def column(values, null, kind):
        array = pa.array(values, mask=null, from_pandas=True)  # NaN is NULL, as the tuples' path reads it
        return array if array.type == kind else array.cast(kind)

    fixed = {"__kind": lambda k: constant(EMIT, k), "__wstart": lambda k: column(block.starts, block.start_null, k),
             "__wend": lambda k: column(block.ends, block.end_null, k),
             "__windex": lambda k: pa.nulls(n, k) if block.indexes is None else column(block.indexes, None, k),
             "__op": lambda k: constant(block.op, k), "__firing": lambda k: constant(block.firing, k),
             "__seq": lambda k: column(block.seq, None, k),
             "__batch": lambda k: constant(batch, k) if block.batch is None else column(block.batch, None, k)}
    arrays = []
    for field in arrow_schema:
        name = field.name
        if name in fixed:
            arrays.append(fixed[name](field.type))
        elif layout.index_of(name, "__k") is not None:
            i = layout.index_of(name, "__k")
            arrays.append(pa.array([key[i] for key in block.keys], field.type, from_pandas=True))
        elif layout.index_of(name, "__agg") is not None:
            values, null = block.values[layout.index_of(name, "__agg")]
            arrays.append(column(values, null, field.type))
        else:  # late and rejected rows' columns, stats
            arrays.append(pa.nulls(n, field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema)


def tuple_batches(out: list[tuple], arrow_schema) -> t.Iterator["pa.RecordBatch"]:
    """Records as tuples (`records`) in Arrow, column by column (a pandas frame of objects in
    between cost a third of a replay's Python time: 0.53 of 1.6 s per million rows, cProfile)."""
    import pyarrow as pa

    if out:
        arrays = [pa.array(column, type=field.type, from_pandas=True)  # NaN is NULL, as pandas reads it
                  for column, field in zip(zip(*out), arrow_schema)]
        yield from pa.Table.from_arrays(arrays, schema=arrow_schema).to_batches()

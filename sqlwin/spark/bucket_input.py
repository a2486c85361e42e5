"""A bucket's input rows as the runtimes read them: the vectorised runtimes' Columns from a pandas
frame (`batch_columns`) or from Arrow without a frame (`arrow_columns`), the general runtime's row
tuples (`frame_rows`), and Arrow input as a frame read the way a replay reads its rows
(`rows_frame`). Keys are coded per batch; a key holding a NULL is rejected by the runtime.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime.columns import Columns
from sqlwin.spark import layout
from sqlwin.spark.operator import TIMESTAMP, OperatorConfig, column_values

if t.TYPE_CHECKING:
    import pyarrow as pa


def _flags(config: OperatorConfig, integral: tuple[bool, ...]) -> tuple[list[bool], list[bool], list[bool]]:
    """The flags of the key, argument and carried (argument, then row) columns: True an integer
    column, TIMESTAMP a timestamp column, else False."""
    c = config
    flags = list(integral) + [False] * (c.key_count + c.argument_count + c.row_count)
    return (flags[:c.key_count], flags[c.key_count:c.key_count + c.argument_count],
            flags[c.key_count:c.key_count + c.argument_count + c.row_count])


def _row_values(frame: t.Callable[[], pd.DataFrame], config: OperatorConfig, flags: list[bool]):
    """row_values(i) of Columns: row i's arguments and carried columns, as the general runtime sees
    them. Late and rejected rows only: the frame is read once, on the first call."""
    values: list | None = None
    names = layout.arguments(config.argument_count) + layout.carried_columns(config.row_count)

    def row_values(i: int) -> tuple:
        nonlocal values
        if values is None:
            data = frame()
            values = [column_values(data[name], flag) for name, flag in zip(names, flags)]
        return tuple(column[i] for column in values)

    return row_values


def batch_columns(frame: pd.DataFrame, config: OperatorConfig, integral: tuple[bool, ...]) -> Columns:
    """A bucket's micro-batch (arrival order) as the vectorised runtime's columns."""
    c = config
    key_flags, arg_flags, carried = _flags(config, integral)
    codes, keys, key_null = _combine_keys([_pandas_key(frame[layout.key(i)], flag) for i, flag in enumerate(key_flags)],
                                          len(frame))
    time = frame["__time"]
    time_null = time.isna().to_numpy()
    times = _filled(time, time_null, np.int64)
    args = []
    for i in range(c.argument_count):
        column = frame[layout.argument(i)]
        null = column.isna().to_numpy()
        if arg_flags[i] == TIMESTAMP:
            args.append((_micros(_arrow_times(column), null), null))
        else:
            args.append((_filled(column, null, np.int64 if arg_flags[i] else np.float64), null))
    return Columns(codes, keys, key_null, times, time_null, args, _row_values(lambda: frame, config, carried))


def _arrow_times(column: pd.Series) -> "pa.Array":
    """A pandas column of Python datetimes (aware or naive) as an Arrow timestamp array."""
    import pyarrow as pa

    return pa.array(column, from_pandas=True)


def _micros(column: "pa.Array", null: np.ndarray) -> np.ndarray:
    """A timestamp column as datetime64[us] (0 where NULL): the vectorised runtime compares and
    keeps timestamps as epoch microseconds (UTC for an aware type, the wall clock for a naive one),
    and Arrow turns them back into the output's timestamp type."""
    import pyarrow as pa

    if column.type == pa.null():  # every value NULL
        return np.zeros(len(null), "datetime64[us]")
    micros = column.cast(pa.timestamp("us", tz=getattr(column.type, "tz", None))).cast(pa.int64())
    return micros.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64).view("datetime64[us]")


def _filled(column: pd.Series, null: np.ndarray, dtype) -> np.ndarray:
    """A column's values as `dtype`, 0 where NULL. An integer column with NULLs comes as Python
    ints (unpack_rows): converted value by value, never through a double."""
    if not null.any():
        return column.to_numpy().astype(dtype)
    if column.dtype == object:
        return np.fromiter((0 if n else v for v, n in zip(column.tolist(), null.tolist())), dtype, len(column))
    return column.fillna(0).to_numpy().astype(dtype)


def arrow_columns(table: "pa.Table", config: OperatorConfig, integral: tuple[bool, ...]) -> Columns:
    """Rows in Arrow (one replay run, arrival order) as the vectorised runtime's columns: the same
    values `batch_columns` reads from the pandas frame of `table` (NaN is NULL, as pandas reads
    it), without building that frame (only late and rejected rows need it)."""
    import pyarrow.compute as pc

    c = config
    key_flags, arg_flags, carried = _flags(config, integral)
    codes, keys, key_null = _combine_keys([_arrow_key(column_array(table, layout.key(i)), flag) for i, flag in enumerate(key_flags)],
                                          table.num_rows)
    time = column_array(table, "__time")
    time_null = time.is_null().to_numpy(zero_copy_only=False)
    times = time.fill_null(0).to_numpy().astype(np.int64, copy=False)
    args = []
    for i in range(c.argument_count):
        column = column_array(table, layout.argument(i))
        null = pc.is_null(column, nan_is_null=True).to_numpy(zero_copy_only=False)
        if arg_flags[i] == TIMESTAMP:
            args.append((_micros(column, null), null))
            continue
        values = column.fill_null(0).to_numpy(zero_copy_only=False)
        args.append((values.astype(np.int64 if arg_flags[i] else np.float64, copy=False), null))
    weights = None  # rows of partial aggregates (pre_aggregation.py): how many input rows each stands for
    if layout.WEIGHT in table.column_names:
        weights = column_array(table, layout.WEIGHT).to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    return Columns(codes, keys, key_null, times, time_null, args,
                   _row_values(lambda: rows_frame(table), config, carried), weights)


def column_array(table: "pa.Table", name: str) -> "pa.Array":
    """A table's column as one Arrow array (its chunks combined)."""
    column = table.column(name)
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def _pandas_key(column: pd.Series, integral: bool) -> tuple:
    """One key column: (code per row, its distinct values as Python values, NULL mask)."""
    codes, uniques = pd.factorize(column, use_na_sentinel=False)
    return codes.astype(np.int64, copy=False), column_values(pd.Series(uniques, dtype=column.dtype), integral), \
        column.isna().to_numpy()


def _arrow_key(column: "pa.Array", integral: bool) -> tuple:
    """`_pandas_key` of an Arrow column: strings and integers encoded by Arrow, other types (whose
    Python values pandas decides: timestamps, decimals, floats with NaN) through pandas."""
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
        return _pandas_key(column.to_pandas(timestamp_as_object=True), integral)
    encoded = column.dictionary_encode()
    indices = encoded.indices
    null = indices.is_null().to_numpy(zero_copy_only=False)
    codes = indices.fill_null(len(encoded.dictionary)).to_numpy().astype(np.int64)  # NULL: a code of its own
    return codes, encoded.dictionary.to_pylist() + [None], null


def _combine_keys(parts: list[tuple], n: int):
    """(code per row, distinct key tuples, NULL-key mask) from the key columns' `_pandas_key`
    triples: a key holding a NULL is rejected."""
    if not parts:
        return np.zeros(n, np.int64), [()], np.zeros(n, bool)
    if len(parts) == 1:
        codes, values, null = parts[0]
        return codes, [(v,) for v in values], null
    null = np.zeros(n, bool)
    codes = np.zeros(n, np.int64)
    for part_codes, values, part_null in parts:  # renumbered 0..m-1 at each step: never overflows
        codes = pd.factorize(codes * max(1, len(values)) + part_codes)[0].astype(np.int64)
        null |= part_null
    _, first = np.unique(codes, return_index=True)  # the first row of each key
    keys = [tuple(values[part_codes[row]] for part_codes, values, _ in parts) for row in first.tolist()]
    return codes, keys, null


def frame_rows(frame: pd.DataFrame, config: OperatorConfig, integral: tuple[bool, ...]) -> list[tuple]:
    """A bucket's rows (a frame, arrival order) as the general runtime takes them: (key, time, values)."""
    c = config
    n = len(frame)
    flags = iter(integral)
    keys_columns = [column_values(frame[name], next(flags, False)) for name in layout.keys(c.key_count)]
    keys = list(zip(*keys_columns)) if keys_columns else [()] * n
    times = column_values(frame["__time"], True)
    value_columns = [column_values(frame[name], next(flags, False))
                     for name in layout.arguments(c.argument_count) + layout.carried_columns(c.row_count)]
    values = list(zip(*value_columns)) if value_columns else [()] * n
    return list(zip(keys, times, values))


def rows_frame(table: "pa.Table") -> pd.DataFrame:
    """Input rows in Arrow as a frame, read as a replay reads its rows: timestamps as Python objects
    (years 1 to 9999, not pandas' nanosecond range), so a stream and a replay see the same values.
    Integers with NULLs as Python ints, not float64: a time in year 9999 (2.5e17 µs) is past a
    double's 2^53 and came back a minute off (a chain's second stage, whose carried rows have no time)."""
    return table.to_pandas(timestamp_as_object=True, integer_object_nulls=True)

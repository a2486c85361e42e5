"""A micro-batch as columns, the input of the vectorised runtimes (fixed_final.py, count_final.py,
session_final.py): keys as codes into the batch's distinct keys, event times as int64
microseconds, each aggregate argument as one NumPy array with its NULL mask. NONE is the time of
a clock that has seen no row.
"""

from __future__ import annotations

import typing as t

import numpy as np

NONE = np.iinfo(np.int64).min  # a clock that has seen no row


class Columns:
    """One micro-batch as columns, in arrival order.

    key_codes: int64 per row, an index into `keys` (the batch's distinct keys); key_null: where the
    key is NULL or holds a NULL (such rows are rejected, with their key as given).
    time / time_null: event time in microseconds and where it is NULL. args: one float64 or
    int64 array per aggregate argument, with its NULL mask. row_values(i): the values tuple of
    row i as the general runtime sees it (arguments, then carried columns), for late and rejected
    rows only. weights: None (each row is one input row), or int64 per row: how many input rows a
    row of partial aggregates stands for (sqlwin.runtime.pre_aggregate), which the runtime counts
    as rows, late rows and rows in no window.
    """

    __slots__ = ("n", "key_codes", "keys", "key_null", "time", "time_null", "args", "row_values", "weights")

    def __init__(self, key_codes, keys, key_null, time, time_null, args, row_values, weights=None):
        self.n = len(time)
        self.key_codes, self.keys, self.key_null = key_codes, keys, key_null
        self.time, self.time_null = time, time_null
        self.args, self.row_values = args, row_values
        self.weights = weights

    def take(self, start: int, stop: int) -> "Columns":
        """Rows start..stop-1 (one micro-batch of a longer run)."""
        sl = slice(start, stop)
        return Columns(self.key_codes[sl], self.keys, self.key_null[sl], self.time[sl], self.time_null[sl],
                       [(v[sl], m[sl]) for v, m in self.args], lambda i: self.row_values(start + i),
                       None if self.weights is None else self.weights[sl])

    def weight(self, rows: np.ndarray) -> int:
        """How many input rows the rows `rows` (indices, or a boolean mask) stand for."""
        if self.weights is None:
            return int(rows.sum()) if rows.dtype == bool else len(rows)
        return int(self.weights[rows].sum())

    def weight_of(self, row: int) -> int:
        """How many input rows row `row` stands for."""
        return 1 if self.weights is None else int(self.weights[row])

    @classmethod
    def from_rows(cls, rows: t.Iterable, argument_count: int) -> "Columns":
        """Row tuples (key, time, values), as WindowRuntime.process_batch takes them."""
        rows = list(rows)
        index: dict = {}
        keys: list = []
        codes = np.empty(len(rows), np.int64)
        key_null = np.zeros(len(rows), bool)
        times = np.zeros(len(rows), np.int64)
        time_null = np.zeros(len(rows), bool)
        for i, (key, time, _) in enumerate(rows):
            key_null[i] = key is None or any(part is None for part in key)
            code = index.get(key)
            if code is None:
                code = index[key] = len(keys)
                keys.append(key)
            codes[i] = code
            if time is None:
                time_null[i] = True
            else:
                times[i] = time
        args = []
        for a in range(argument_count):
            column = [row[2][a] for row in rows]
            null = np.array([v is None for v in column], bool)
            integral = all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                           for v in column if v is not None)
            dtype = np.int64 if integral else np.float64
            args.append((np.array([0 if v is None else v for v in column], dtype), null))
        return cls(codes, keys, key_null, times, time_null, args, lambda i: tuple(rows[i][2]))

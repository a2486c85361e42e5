"""The aggregates of the vectorised runtimes, as columns: per aggregate one or a few NumPy arrays
parallel to the open windows (value, non-NULL count; min_by / max_by: value, its NULL mask, the
winner's ordering, event time and sequence), merged and added to a batch at a time, and each
window's result read from them. aggregates.py holds the same aggregates row by row.
"""

from __future__ import annotations

import typing as t

import numpy as np

from sqlwin.runtime.columns import NONE, Columns
from sqlwin.runtime.model import AggregateSpec

VECTOR_AGGREGATES = ("count", "sum", "min", "max", "avg", "min_by", "max_by")
BY_AGGREGATES = ("min_by", "max_by")


def empty_acc(spec: AggregateSpec, dtype) -> list[np.ndarray]:
    """The state of no window for one aggregate."""
    if spec.func == "count":
        return [np.empty(0, np.int64)]
    if spec.func in BY_AGGREGATES:
        return [np.empty(0, dtype), np.empty(0, bool), np.empty(0, dtype), np.empty(0, np.int64),
                np.empty(0, np.int64)]  # value, value NULL, ordering, its row's time and sequence
    return [np.empty(0, dtype), np.empty(0, np.int64)]  # value, non-NULL count


def initial(spec: AggregateSpec, dtype) -> t.Any:
    """The value of a window with no value yet."""
    if spec.func == "min":
        return np.nan if dtype == np.float64 else np.iinfo(np.int64).max
    if spec.func == "max":
        return -np.inf if dtype == np.float64 else np.iinfo(np.int64).min
    return 0


def accumulate(specs: t.Sequence[AggregateSpec], states: list[list[np.ndarray]], admitted: tuple[np.ndarray, int],
               count: int, old_group: np.ndarray, new_group: np.ndarray, cols: Columns,
               source_rows: np.ndarray) -> list[list[np.ndarray]]:
    """The accumulators of `count` windows: the old windows' states (`states`, one list of arrays per
    aggregate of `specs`) merged into their new window (`old_group`; several old sessions may merge
    into one), then the new rows' values added in arrival order (`new_group`, `source_rows`).
    `admitted`: the batch's admitted rows and the sequence before them (min_by / max_by ties)."""
    old = len(old_group)
    accs = []
    for a, spec in enumerate(specs):
        state = states[a]
        if spec.func == "count":
            acc = np.zeros(count, np.int64)
            np.add.at(acc, old_group, state[0])
            if spec.arg is None:  # count(*)
                np.add.at(acc, new_group, 1)
            else:
                np.add.at(acc, new_group[~cols.args[spec.arg][1][source_rows]], 1)
            accs.append([acc])
            continue
        if spec.func in BY_AGGREGATES:
            accs.append(accumulate_by(spec, state, admitted, count, old_group, new_group, cols, source_rows))
            continue
        values, null = cols.args[spec.arg]
        values, valid = values[source_rows], ~null[source_rows]
        integral = values.dtype == np.int64 and (not old or state[0].dtype == np.int64)
        dtype = np.int64 if integral else np.float64
        seen = np.zeros(count, np.int64)
        np.add.at(seen, old_group, state[1])
        value = np.full(count, initial(spec, dtype), dtype)
        old_values = state[0].astype(dtype, copy=False)
        if old and dtype != state[0].dtype:  # an integer state widened to float: empty ones anew
            old_values = np.where(state[1] > 0, old_values, initial(spec, dtype))
        group_valid, values_valid = new_group[valid], values[valid].astype(dtype, copy=False)
        for groups, vals in ((old_group, old_values), (group_valid, values_valid)):
            if spec.func in ("sum", "avg"):
                np.add.at(value, groups, vals)
            elif spec.func == "min":
                (np.fmin if dtype == np.float64 else np.minimum).at(value, groups, vals)
            else:
                with np.errstate(invalid="ignore"):  # NaN is the largest: it wins
                    np.maximum.at(value, groups, vals)
        np.add.at(seen, group_valid, 1)
        accs.append([value, seen])
    return accs


def accumulate_by(spec: AggregateSpec, state: list[np.ndarray], admitted: tuple[np.ndarray, int], count: int,
                  old_group: np.ndarray, new_group: np.ndarray, cols: Columns,
                  source_rows: np.ndarray) -> list[np.ndarray]:
    """min_by / max_by (aggregates.MinBy): per window the value at the row with the smallest /
    largest ordering; ties go to the earliest row by event time (no time first), then arrival.
    Rows with a NULL ordering take no part; a window without a candidate has NULL.

    State: value, its NULL mask, the winner's ordering, event time (NONE: none) and sequence
    (-1: no candidate). The candidates are the old windows' winners and the new rows."""
    values, value_null = cols.args[spec.arg]
    order, order_null = cols.args[spec.arg2]
    take = source_rows[~order_null[source_rows]]
    rows, base = admitted
    new_seq = base + 1 + np.searchsorted(rows, take)
    new_time = np.where(cols.time_null[take], NONE, cols.time[take])
    had = state[4] >= 0 if len(old_group) else np.zeros(0, bool)
    value_dtype, order_dtype = values.dtype, order.dtype
    if had.any():  # an old state of numbers meets a new column of another number type
        value_dtype, order_dtype = np.result_type(state[0], values), np.result_type(state[2], order)
    group = np.concatenate([old_group[had], new_group[~order_null[source_rows]]])
    c_value = np.concatenate([state[0][had].astype(value_dtype, copy=False), values[take].astype(value_dtype, copy=False)])
    c_null = np.concatenate([state[1][had], value_null[take]])
    c_order = np.concatenate([state[2][had].astype(order_dtype, copy=False), order[take].astype(order_dtype, copy=False)])
    c_time = np.concatenate([state[3][had], new_time])
    c_seq = np.concatenate([state[4][had], new_seq])
    rank = np.unique(c_order, return_inverse=True)[1].reshape(-1)  # comparable for every dtype
    if spec.func == "max_by":
        rank = -rank
    ranked = np.lexsort((c_seq, c_time, rank, group))
    winner = ranked[np.r_[True, group[ranked][1:] != group[ranked][:-1]]] if len(ranked) else ranked
    won = group[winner]
    value = np.zeros(count, value_dtype)
    null = np.ones(count, bool)
    best = np.zeros(count, order_dtype)
    time = np.full(count, NONE, np.int64)
    seq = np.full(count, -1, np.int64)
    value[won], null[won], best[won], time[won], seq[won] = (
        c_value[winner], c_null[winner], c_order[winner], c_time[winner], c_seq[winner])
    return [value, null, best, time, seq]


def results(spec: AggregateSpec, state: list[np.ndarray], windows: np.ndarray) -> tuple:
    """The aggregate's value in each window (`state` its arrays): (values, NULL mask or None)."""
    if spec.func == "count":
        return state[0][windows], None
    if spec.func in BY_AGGREGATES:
        return state[0][windows], state[1][windows]
    value, seen = state[0][windows], state[1][windows]
    if spec.func == "avg":
        value = value / np.where(seen > 0, seen, 1)
    return value, seen == 0

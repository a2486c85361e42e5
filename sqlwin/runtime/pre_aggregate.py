"""Partial aggregation before the window runtime: a batch's rows of one key and one *pane* -- an
interval whose rows all belong to the same windows (ir.WindowKind.pane) -- become one row of
partial aggregates, as Spark's partial aggregation does before its shuffle. The runtime then merges
those rows (MERGE: count -> sum of counts, sum -> sum, min / max -> min / max, max_by / min_by ->
the same over each pane's winner) and counts each as the input rows it stands for (Columns.weights).

Exact where a pane's rows share everything the runtime decides per row: their windows (the pane),
whether they are late (a window closes for all of its rows at once: the 'window_closed' rule),
and, for min_by / max_by, the tie rule (the earliest row by event time, then arrival): the pane's
row carries its winner's time and arrival, so panes tie as their winners would. The partials follow
column_aggregates' rules (NULLs skipped, a count never NULL, min_by / max_by ties), with reductions
over each pane's rows instead of its per-row accumulation: tests/runtime/test_pre_aggregate.py
checks the runtime gives over panes what it gives over rows.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

import numpy as np

from sqlwin.runtime.column_aggregates import BY_AGGREGATES
from sqlwin.runtime.columns import NONE, Columns
from sqlwin.runtime.model import AggregateSpec

# How each aggregate of a pane merges with the other panes of its window.
MERGE = {"count": "sum", "sum": "sum", "min": "min", "max": "max", "max_by": "max_by", "min_by": "min_by"}


def merge_specs(specs: t.Sequence[AggregateSpec]) -> tuple[AggregateSpec, ...] | None:
    """The aggregates that merge rows of partial aggregates, where spec j's partial is argument j;
    a min_by / max_by's ordering is the partial of the min / max of its ordering (the spec after
    it, as stateful.partial_aggregation lists them). None where an aggregate does not merge."""
    merged = []
    for j, spec in enumerate(specs):
        func = MERGE.get(spec.func)
        if func is None or spec.order or spec.filter is not None:
            return None
        if func in BY_AGGREGATES:
            after = specs[j + 1] if j + 1 < len(specs) else None
            wanted = "max" if func == "max_by" else "min"
            if after is None or after.func != wanted or after.arg != spec.arg2:
                return None
            merged.append(AggregateSpec(func, j, j + 1))
        else:
            merged.append(AggregateSpec(func, j))
    return tuple(merged)


def winner_spec(specs: t.Sequence[AggregateSpec]) -> int | None | bool:
    """The min_by / max_by whose winner is a pane's representative row (its time and arrival): the
    first one; None without any; False where two of them may pick different rows (not the same
    function over the same ordering), which a pane's one row cannot carry."""
    by = [j for j, spec in enumerate(specs) if spec.func in BY_AGGREGATES]
    if not by:
        return None
    first = specs[by[0]]
    if any((specs[j].func, specs[j].arg2) != (first.func, first.arg2) for j in by):
        return False
    return by[0]


@dataclass
class Partials:
    """One row per (key, pane) of a batch: `rows` the input row it takes its key, time and arrival
    from (in arrival order), `weights` how many input rows it stands for, `values` the partial of
    each aggregate as (values, NULL mask)."""

    rows: np.ndarray
    weights: np.ndarray
    values: list[tuple[np.ndarray, np.ndarray]]


def pre_aggregate(cols: Columns, pane: tuple[int, int], specs: t.Sequence[AggregateSpec],
                  winner: int | None) -> Partials:
    """`cols` (one batch, in arrival order) as rows of partial aggregates per key and pane. A row with
    a NULL key or time stays a row of its own (the runtime rejects it). `winner`: winner_spec."""
    length, offset = pane
    n = cols.n
    timed = ~(cols.time_null | cols.key_null)
    idx = np.flatnonzero(timed)
    panes = (cols.time[idx] - offset) // length
    codes = cols.key_codes[idx]
    order = np.lexsort((idx, panes, codes))
    change = np.ones(len(order), bool)
    change[1:] = (codes[order][1:] != codes[order][:-1]) | (panes[order][1:] != panes[order][:-1])
    group = np.empty(n, np.int64)
    group[idx[order]] = np.cumsum(change) - 1
    lone = np.flatnonzero(~timed)
    group[lone] = int(change.sum()) + np.arange(len(lone))
    by_group = np.argsort(group, kind="stable")  # each group's rows in arrival order
    starts = np.flatnonzero(np.r_[True, group[by_group][1:] != group[by_group][:-1]]) if n else np.empty(0, np.int64)
    weights = np.diff(np.r_[starts, n])
    winners: dict[tuple, np.ndarray] = {}
    values = [_partial(spec, cols, group, by_group, starts, weights, winners) for spec in specs]
    rows = by_group[starts]  # the group's first row
    if winner is not None:
        chosen = winners[(specs[winner].func, specs[winner].arg2)]
        rows = np.where(chosen >= 0, chosen, rows)
    arrival = np.argsort(rows, kind="stable")  # the pane rows in the order of the rows they stand for
    return Partials(rows[arrival], weights[arrival], [(v[arrival], m[arrival]) for v, m in values])


# The value a NULL takes in a reduction, which leaves the others as they are.
_IDENTITY = {("sum", True): 0, ("sum", False): 0.0, ("min", True): np.iinfo(np.int64).max, ("min", False): np.inf,
             ("max", True): np.iinfo(np.int64).min, ("max", False): -np.inf}


def _partial(spec: AggregateSpec, cols: Columns, group, by_group, starts, weights,
             winners: dict) -> tuple[np.ndarray, np.ndarray]:
    """One aggregate over each group (rows `by_group`, groups from `starts`), as the runtime's
    column_aggregates computes it over the same rows: (values, NULL mask)."""
    none = np.zeros(len(starts), bool)
    if spec.func == "count":
        if spec.arg is None:
            return weights.astype(np.int64), none
        valid = ~cols.args[spec.arg][1][by_group]
        return np.add.reduceat(valid.astype(np.int64), starts) if len(starts) else weights, none
    if spec.func in BY_AGGREGATES:
        key = (spec.func, spec.arg2)
        if key not in winners:
            winners[key] = _winners(spec.func, cols, group, len(starts), spec.arg2)
        chosen = winners[key]
        values, null = cols.args[spec.arg]
        taken = np.maximum(chosen, 0)
        return values[taken], null[taken] | (chosen < 0)
    values, null = cols.args[spec.arg]
    values, valid = values[by_group], ~null[by_group]
    integral = values.dtype == np.int64
    if not integral:
        values = values.astype(np.float64, copy=False)
    filled = np.where(valid, values, _IDENTITY[(spec.func, integral)])
    ufunc = {"sum": np.add, "min": np.minimum, "max": np.maximum}[spec.func]
    if not len(starts):
        return filled, none
    return ufunc.reduceat(filled, starts), np.add.reduceat(valid.astype(np.int64), starts) == 0


def _winners(func: str, cols: Columns, group: np.ndarray, count: int, arg2: int) -> np.ndarray:
    """Per group the row min_by / max_by takes its value from (-1: no row with an ordering value): the
    smallest / largest ordering, ties to the earliest event time (no time first), then arrival --
    column_aggregates.accumulate_by's rule."""
    order, order_null = cols.args[arg2]
    rows = np.flatnonzero(~order_null)
    ranked = order[rows]
    if ranked.dtype.kind == "M":
        ranked = ranked.view(np.int64)
    if func == "max_by":  # largest first; ~x reverses integers without overflow
        ranked = ~ranked if ranked.dtype.kind in "iu" else -ranked
    times = np.where(cols.time_null[rows], NONE, cols.time[rows])
    sort = np.lexsort((rows, times, ranked, group[rows]))
    head = sort[np.r_[True, group[rows][sort][1:] != group[rows][sort][:-1]]] if len(sort) else sort
    chosen = np.full(count, -1, np.int64)
    chosen[group[rows][head]] = rows[head]
    return chosen

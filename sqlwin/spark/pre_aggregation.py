"""A stream's windowed aggregation with no key, aggregated per input partition before the stateful
stage (Spark's partial aggregation one stage earlier): each input partition's rows of one bucket and
one pane become one row of partial aggregates (sqlwin.runtime.pre_aggregate), so the stateful
operator receives a handful of rows a batch, whatever the input's size, and merges them
(`PreAggregation.merged`). The stream's clock still comes from every row: the clock rows carry the
raw batch's extremes (packing.clock_packer).

Chosen (stateful.prepare_stateful, `pre_aggregate`) where it is exact: a stream's no-key partial
aggregation (stateful.partial_aggregation) with windows fixed by time (a pane), lateness by closed
windows, the max_event_time clock, late rows only counted (no LATE ROWS INTO: a pane's row does not
hold its rows), and at most one min_by / max_by winner per pane. A worker module: no parser, no API.
"""

from __future__ import annotations

import dataclasses
import typing as t
from dataclasses import dataclass

import numpy as np

from sqlwin.runtime.model import AggregateSpec
from sqlwin.runtime.pre_aggregate import merge_specs, pre_aggregate, winner_spec
from sqlwin.spark import layout
from sqlwin.spark.bucket_input import arrow_columns
from sqlwin.spark.operator import TIMESTAMP, OperatorConfig

if t.TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class PreAggregation:
    """How the input rows become rows of partial aggregates, and the operator's config over them."""

    pane: tuple[int, int]  # (length, offset) in microseconds
    config: OperatorConfig  # the raw rows' (their partial aggregates: config.aggregates)
    integral: tuple  # the raw rows' flags (replay.integral_flags)
    winner: int | None  # the min_by / max_by whose winner stands for its pane (winner_spec)
    merged: OperatorConfig  # the operator's: the merging aggregates over the partial columns

    @classmethod
    def of(cls, config: OperatorConfig, integral: tuple) -> "PreAggregation | None":
        """For a no-key partial aggregation's config (stateful.partial_aggregation's specs); None
        where the rows of a pane cannot stand in for their rows (see the module's docstring)."""
        pane = config.windower.pane
        winner = winner_spec(config.aggregates)
        merging = merge_specs(config.aggregates)
        watermark = config.watermark
        if (pane is None or merging is None or winner is False or config.output_late or config.timers
                or watermark.strategy != "max_event_time" or watermark.lateness_rule != "window_closed"
                or config.key_count != 1 or config.clock_positions != ()):
            return None
        merged = dataclasses.replace(config, aggregates=merging, argument_count=len(merging))
        return cls(pane, config, tuple(integral), winner, merged)

    @property
    def passed(self) -> list[str]:
        """The input columns a pane's row takes from the row it stands for (its bucket, key, time,
        arrival); its other columns are the partials __a<j> and __weight."""
        return [layout.BUCKET, *layout.keys(self.config.key_count), layout.TIME, layout.PTIME, layout.ORDER]

    def argument_flags(self) -> tuple:
        """The partial columns' flags, as integral_flags reads a schema: True an integer, TIMESTAMP a
        timestamp, else False."""
        arg_flags = self.integral[self.config.key_count:]
        # a count is an integer; sum, min, max, min_by / max_by keep their argument's kind
        return [True if spec.func == "count" else arg_flags[spec.arg] for spec in self.config.aggregates]


def pre_aggregator(pre: PreAggregation) -> t.Callable[["pa.RecordBatch"], "pa.RecordBatch"]:
    """The mapInArrow step before packing (packing.pack_rows' `before`): one Arrow batch of input
    rows (StatefulQuery.input_sql's columns) as its rows of partial aggregates: __bucket, the
    hidden key, __time / __ptime / __order of the row each stands for, __a<j> the partial of
    aggregate j, __weight."""

    def apply(batch: "pa.RecordBatch") -> "pa.RecordBatch":
        import pyarrow as pa
        import pyarrow.compute as pc

        table = pa.Table.from_batches([batch])
        order = batch.column(layout.ORDER)
        if order.null_count or (np.diff(order.to_numpy(zero_copy_only=False)) < 0).any():
            # arrival order (a stable sort); rows of a stream without arrival_order come in it
            table = table.take(pc.sort_indices(table, [(layout.ORDER, "ascending")]))
        cols = arrow_columns(table, pre.config, pre.integral)
        partials = pre_aggregate(cols, pre.pane, pre.config.aggregates, pre.winner)
        rows = pa.array(partials.rows)
        names, arrays = [], []
        for name in pre.passed:
            names.append(name)
            arrays.append(table.column(name).take(rows).combine_chunks())
        for j, ((values, null), flag) in enumerate(zip(partials.values, pre.argument_flags())):
            names.append(layout.argument(j))
            arrays.append(_arrow_values(values, null, flag, _source_type(table, pre.config.aggregates[j])))
        names.append(layout.WEIGHT)
        arrays.append(pa.array(partials.weights.astype(np.int64)))
        return pa.RecordBatch.from_arrays(arrays, names=names)

    return apply


def _source_type(table: "pa.Table", spec: AggregateSpec) -> "pa.DataType | None":
    """The Arrow type of the column an aggregate's partial takes its values from (None: count)."""
    return None if spec.func == "count" else table.column(layout.argument(spec.arg)).type


def _arrow_values(values: np.ndarray, null: np.ndarray, flag, source: "pa.DataType | None") -> "pa.Array":
    """A partial's values as Arrow: timestamps in their column's own type, integers as int64,
    else float64."""
    import pyarrow as pa

    if flag == TIMESTAMP:
        return pa.array(values.astype("datetime64[us]"), mask=null).cast(source)
    return pa.array(values.astype(np.int64 if flag is True else np.float64), mask=null)

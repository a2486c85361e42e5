"""A windowed aggregation over another's results (AP-11, a propagation) in a replay or a stream:
the outer stage's query.

The plan finds the two stages (sqlwin.sql.aggregation.Propagation); a replay or a stream runs the
inner one first and hands its results, as a view, to the outer query written here.
"""

from __future__ import annotations

import dataclasses
import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinUnsupportedError
from sqlwin.spark.operator import follows_processing_time, joint_clock, stage_clock
from sqlwin.spark.stateful import prepare_stateful
from sqlwin.sql.ast_nodes import TableArg, WindowTVF
from sqlwin.sql.dialect import SqlwinDialect

if t.TYPE_CHECKING:
    from sqlwin.sql.query_plan import QueryPlan


def chain_stages(plan: "QueryPlan", planner: t.Callable[[str], "QueryPlan"]) -> int:
    """How many stateful stages a chain of windowed aggregations runs: 1 for no chain."""
    stages = 1
    while plan.propagation is not None:
        plan, stages = planner(plan.propagation.inner_sql), stages + 1
    return stages


def outer_query(plan: "QueryPlan", source: str, options: dict[str, str]) -> str:
    """The outer query of a propagation reading `source` (a view of the inner results) in place of the
    inner query, with `options` added to its TABLE argument's (the replay's arrival columns)."""
    ast = plan.ast.copy()
    originals = list(plan.ast.find_all(WindowTVF))
    node = list(ast.find_all(WindowTVF))[next(i for i, n in enumerate(originals) if n is plan.propagation.outer.node)]
    table_arg = node.find(TableArg)
    table_arg.set("this", exp.to_table(source))
    if plan.propagation.inherit:
        options = {**options, "watermark_strategy": "upstream"}
    if options:
        table_arg.set_options({k: exp.Literal.string(v) if k == "watermark_strategy" else exp.column(v)
                               for k, v in options.items()})
    with_ = ast.args.get("with_")
    if with_ is not None:  # the inner query's CTEs are in `source` (every window function but the outer's)
        inner = (plan.propagation.cte or "").lower()
        kept = [c for c in with_.expressions if c.alias_or_name.lower() != inner and c.find(WindowTVF) is None]
        ast.set("with_", exp.With(expressions=kept) if kept else None)
    return ast.sql(dialect=SqlwinDialect)


def chain_clock(first: str, later: t.Sequence["QueryPlan"], query: str) -> str:
    """The clock a stream's chain runs on, from its first stage's (`first`, operator.stage_clock) and its
    later stages' plans (each a propagation whose outer window function reads the stage before), checked
    before anything is written into the checkpoint: 'processing' when a stage follows the wall clock,
    'arrival' when the first stage reads the recorded arrival times, else 'none'.

    Each stage's operator keeps its own timers. A later stage reads the stage before's results, which
    carry no arrival time: its processing time is the wall clock at which they reach it, so it cannot
    follow a first stage's recorded clock, nor read one of its own."""
    clocks = [first]
    for plan in later:
        outer = plan.propagation.outer
        clock = stage_clock(outer.options, later_timers(plan))
        if clock == "arrival":
            raise SqlwinUnsupportedError(
                "A later stage of a chain reads the stage before's results, which carry no recorded arrival "
                "time (arrival_time)", outer.position,
                "arrival_time on the first stage's table: its clock then drives the first stage's timers",
                query=query)
        if clock == "processing" and first == "arrival":
            raise SqlwinUnsupportedError(
                "This chain's first stage follows the recorded arrival times (arrival_time) and a later stage "
                "the wall clock (processing-time windows, EMIT intervals, a watermark behind ingestion time): "
                "a stream runs one processing clock, and the stage before's results carry no arrival time",
                outer.position, "the wall clock in every stage (no arrival_time), or event time in the later "
                "stages", query=query)
        clocks.append(clock)
    return joint_clock(clocks)


def later_timers(plan: "QueryPlan") -> bool:
    """Whether a chain's later stage (`plan`, a propagation) follows processing time: needs timers."""
    outer = plan.propagation.outer
    return follows_processing_time(outer.watermark, plan.emit, outer.processing_time)


def unrolled(plan: "QueryPlan", plan_of: t.Callable[[str], "QueryPlan"]) -> tuple["QueryPlan", list["QueryPlan"]]:
    """AP-11, window propagation: each inner windowed aggregation is an earlier stateful stage of the
    same stream, whose results, as a view, are the next stage's input. (the first stage's plan, the
    plans whose outer window function reads the stage before, first to last: the statement itself last);
    (plan, []) for a stage that is no chain."""
    later: list["QueryPlan"] = []
    first = plan
    while first.propagation is not None:
        later.insert(0, first)
        first = plan_of(first.propagation.inner_sql)
    if later:
        if first.aggregation is None:
            prepare_stateful(first, "streaming", 1)  # says why the inner query cannot run
        # The first stage's late and rejected rows go where the query sends its own (LATE ROWS INTO).
        first = dataclasses.replace(first, late_into=plan.late_into)
    return first, later

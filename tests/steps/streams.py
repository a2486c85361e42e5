"""Steps for recorded streams: one table, run as a replay and as a real Structured Streaming query.

A stream table lists rows in arrival order; the step numbers them in a column `arrival`
(1, 2, ...), and a `batch` column, when present, says which micro-batch each row arrived in.
The same query text runs in both modes: the replay reads `arrival_order` / `arrival_batch`;
the streaming query gets one micro-batch per batch value (one per row without a batch column)
and ends its input after the last one, as a replay ends at the end of its table.
"""

from __future__ import annotations

import functools
import typing as t
from pathlib import Path

import parse
import pytest
from pyspark.sql import functions as F
from pytest_bdd import given, parsers, then, when
from pytest_bdd.scenario import scenario_wrapper_template_registry

from sqlwin.errors import SqlwinError
from sqlwin.spark.operator import END_BATCH
from sqlwin.spark.replay import run_replay
from sqlwin.testing import feed_stream
from tests.steps.queries import _expected_rows, _table, result_is
from tests.steps.tables import create_table
from tests.steps.values import normalise, same


@pytest.fixture
def streams():
    """Stream tables of the scenario: name -> batch column or None."""
    return {}


@given(parsers.parse('the stream "{name}", arriving in this order:'))
def given_stream(spark, streams, name: str, datatable):
    header, *rows = datatable
    names = [h.split(":")[0].strip() for h in header]
    if "arrival" in names:  # the inputs of a join number their rows in one arrival sequence, given
        create_table(spark, name, datatable)
    else:
        create_table(spark, name, [header + ["arrival:int"]] + [row + [str(i + 1)] for i, row in enumerate(rows)])
    streams[name] = "batch" if "batch" in names else None


STREAM_STEP = 'the stream "{name}", arriving in this order:'
TABLE_STEP = 'the table "{name}":'
MODE_STEP = "I run the query in {mode} mode:"


@when(parsers.parse(MODE_STEP))
def run_in_mode(sw, spark, streams, outcome, tmp_path, ahead, scenario_streams, request, mode: str, docstring: str):
    streamed = ahead.named(request, scenario_streams)
    if streamed is not None:  # run ahead, in a session of its own, from this scenario's own steps
        outcome.update(streamed.result())
        return
    _run_in_mode(sw, spark, streams, outcome, tmp_path, mode, docstring)


def _run_in_mode(sw, spark, streams, outcome, tmp_path, mode: str, query: str) -> None:
    try:
        if mode == "replay":
            _replay(sw, spark, outcome, query)
        elif mode == "streaming":
            _stream(sw, spark, streams, outcome, tmp_path, query)
        elif mode.startswith("streaming restarted after batch "):
            _stream(sw, spark, streams, outcome, tmp_path, query, restart_after=int(mode.split()[-1]))
        else:
            raise AssertionError(f"unknown mode {mode}: replay or streaming")
    except SqlwinError as err:
        outcome["error"] = err


@pytest.fixture(scope="module")
def scenario_streams(spark, request) -> dict[str, t.Callable[[str], dict]]:
    """The scenarios' streaming examples, by test name, to run ahead of their turn (tests/support/ahead.py,
    `Ahead.named`) beside the scenarios in the foreground.

    A small stream mostly waits (tests/support/ahead.py), and the scenarios' 66 streaming examples
    took 169 of test_features' 215 s one after the other (tests/test_features.py alone: 258 s in
    their turn, 231 s one ahead, 207 s two ahead; 2026-12-08). Each runs in a SparkSession of its own
    (`newSession()` each: the same Spark, its own temp views and settings), from its scenario's own
    steps: its Given tables created there, then the same `_run_in_mode` the foreground would run; the
    When step takes what it gave. Only scenarios whose steps before the When create tables and streams
    (nothing else the foreground would set up) run ahead; the rest run in their turn.
    """
    feeds = {}
    for item in request.session.items:
        job = _ahead_job(item) if item.module is request.module else None
        if job is not None:
            feeds[item.name] = functools.partial(_run_ahead, spark, *job)
    return feeds


def _run_ahead(spark, givens: list[tuple[str, str, list]], mode: str, query: str, workdir: str) -> dict:
    import sqlwin

    own = spark.newSession()
    streams, outcome = {}, {}
    for kind, name, datatable in givens:
        if kind == "stream":
            given_stream(own, streams, name, datatable)
        else:
            create_table(own, name, datatable)
    _run_in_mode(sqlwin.attach(own), own, streams, outcome, Path(workdir), mode, query)
    return outcome


def _ahead_job(item) -> tuple[list, str, str] | None:
    """(the Given tables and streams, the mode, the query) of a scenario example that streams and
    whose steps before the When only create tables; else None."""
    template = scenario_wrapper_template_registry.get(getattr(item, "obj", None))
    example = getattr(getattr(item, "callspec", None), "params", {}).get("_pytest_bdd_example")
    if template is None or example is None:
        return None
    givens = []
    for step in template.render(example).steps:
        found = parse.parse(MODE_STEP, step.name)
        if found is not None and step.type == "when":
            mode = found["mode"]
            return (givens, mode, step.docstring) if mode.startswith("streaming") else None
        stream, table = parse.parse(STREAM_STEP, step.name), parse.parse(TABLE_STEP, step.name)
        if step.type != "given" or step.datatable is None or not (stream or table):
            return None
        givens.append(("stream" if stream else "table", (stream or table)["name"], step.datatable.raw()))
    return None


def _replay(sw, spark, outcome, query: str) -> None:
    plan = sw.plan(query)
    replay = run_replay(sw.runner, plan)
    frame = replay.batched
    if plan.around is not None:  # SQL around the windows: its result, no batch of its own
        frame = replay.result.withColumn("__batch", F.lit(None).cast("bigint"))
    outcome["types"] = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    rows = [[normalise(v) for v in row] for row in frame.collect()]
    columns = frame.columns
    position = columns.index("__batch")
    outcome["columns"] = [c for c in columns if c != "__batch"]
    outcome["rows"] = [r[:position] + r[position + 1:] for r in rows]
    outcome["batches"] = ["end" if r[position] == END_BATCH else r[position] for r in rows]
    if plan.late_into:
        _late(outcome, spark.table(plan.late_into))


def _stream(sw, spark, streams, outcome, tmp_path, query: str, restart_after: int | None = None) -> None:
    plan = sw.plan(query)
    if plan.join is not None:  # the join's inputs, each a source of the one stream
        _stream_join(sw, spark, streams, outcome, tmp_path, query, plan, restart_after)
        return
    if plan.around is not None:  # SQL around the windows: the stage reads the stream
        plan = plan.around.stage
    # A chain of windowed aggregations (AP-11) reads the stream in its inner window function.
    source = next(w.source for w in plan.windows if plan.propagation is None or w is not plan.propagation.outer)
    batch_column = streams.get(source)
    table = spark.table(source)
    fed = feed_stream(sw, query, table, source, batch_column, "arrival", workdir=str(tmp_path / "stream"),
                      late=bool(plan.late_into), restart_after=restart_after)
    _outcome(outcome, fed.schema, fed.rows)
    batch_values = sorted({r[0] for r in table.select(batch_column).collect()}) if batch_column else \
        [r[0] for r in table.orderBy("arrival").select("arrival").collect()]
    labels = []
    for value, emitted in zip(batch_values, fed.per_batch):
        labels += [value] * len(emitted)
    outcome["batches"] = labels + ["end"] * (len(fed.rows) - len(labels))
    if plan.late_into:
        outcome["late"] = {}
        _outcome(outcome["late"], fed.late_schema, fed.late_rows)


def _stream_join(sw, spark, streams, outcome, tmp_path, query, plan, restart_after) -> None:
    tables = {side.source: spark.table(side.source) for side in plan.join.sides}
    assert all(streams.get(name) == "batch" for name in tables), "a join's streams need a batch column each"
    fed = feed_stream(sw, query, tables, None, "batch", "arrival", workdir=str(tmp_path / "stream"),
                      restart_after=restart_after)
    _outcome(outcome, fed.schema, fed.rows)
    batch_values = sorted({r[0] for table in tables.values() for r in table.select("batch").collect()})
    labels = []
    for value, emitted in zip(batch_values, fed.per_batch):
        labels += [value] * len(emitted)
    outcome["batches"] = labels + ["end"] * (len(fed.rows) - len(labels))


def _outcome(target: dict, schema, rows) -> None:
    target["columns"] = [f.name for f in schema.fields] if schema else []
    target["types"] = {f.name: f.dataType.simpleString() for f in schema.fields} if schema else {}
    target["rows"] = [[normalise(v) for v in row] for row in rows]


def _late(outcome, frame) -> None:
    outcome["late"] = {}
    _outcome(outcome["late"], frame.schema, frame.collect())


@then("the late rows are:")
def late_rows_are(outcome, datatable):
    assert "error" not in outcome, f"the query failed: {outcome.get('error')}"
    late = outcome.get("late")
    assert late is not None, "the query has no LATE ROWS INTO"
    result_is(late, datatable)


@then("no row is late")
def no_late_rows(outcome):
    assert "error" not in outcome, f"the query failed: {outcome.get('error')}"
    late = outcome.get("late")
    assert late is not None, "the query has no LATE ROWS INTO"
    assert not late["rows"], f"late rows: {late['rows']}"


@then("each result is emitted after batch:")
def emitted_after(outcome, datatable):
    """The table's `after batch` column says which arrival batch emitted the row ('end': end of input)."""
    header = [h.strip() for h in datatable[0]]
    position = header.index("after batch")
    expected_batches = [row[position].strip() for row in datatable[1:]]
    table = [[h for i, h in enumerate(header) if i != position]] + \
        [[c for i, c in enumerate(row) if i != position] for row in datatable[1:]]
    names, expected = _expected_rows(outcome, table)
    index = [outcome["columns"].index(n) for n in names]
    actual = [([row[i] for i in index], str(batch)) for row, batch in zip(outcome["rows"], outcome["batches"])]
    wanted = [(row, batch) for row, batch in zip(expected, expected_batches)]
    unmatched = list(actual)
    missing = []
    for row, batch in wanted:
        match = next((a for a in unmatched if a[1] == batch and len(a[0]) == len(row)
                      and all(same(e, v) for e, v in zip(row, a[0]))), None)
        if match is None:
            missing.append(row + [batch])
        else:
            unmatched.remove(match)
    assert not missing and not unmatched, (
        f"\nexpected:\n{_table(names + ['after batch'], [r + [b] for r, b in wanted])}"
        f"\nactual:\n{_table(names + ['after batch'], [r + [b] for r, b in actual])}")

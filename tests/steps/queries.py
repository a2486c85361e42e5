"""Steps that run a sqlwin query and check what it returned or why it failed."""

from __future__ import annotations

import pytest
from pytest_bdd import parsers, then, when

from sqlwin.errors import SqlwinError
from tests.steps.values import normalise, parse_cell, same, show, split_header


@pytest.fixture
def outcome():
    """What the When step produced: {'rows', 'columns', 'types'} or {'error'}."""
    return {}


@when("I run the query:")
def run_query(sw, outcome, docstring: str):
    try:
        frame = sw.sql(docstring)
        outcome["columns"] = frame.columns
        outcome["types"] = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
        outcome["rows"] = [[normalise(v) for v in row] for row in frame.collect()]
    except SqlwinError as err:
        outcome["error"] = err


@when("I run the query expecting an error:")
def run_failing_query(sw, outcome, docstring: str):
    run_query(sw, outcome, docstring)
    assert "error" in outcome, f"the query ran and returned {len(outcome['rows'])} rows instead of failing"


def _expected_rows(outcome: dict, datatable: list[list[str]]) -> tuple[list[str], list[list]]:
    if "error" in outcome:
        pytest.fail(f"the query failed: {outcome['error']}")
    header, *rows = datatable
    names = [split_header(h)[0] for h in header]
    missing = [n for n in names if n not in outcome["columns"]]
    assert not missing, f"result has no column(s) {missing}; it has {outcome['columns']}"
    types = [split_header(h)[1] or outcome["types"][n] for h, n in zip(header, names)]
    return names, [[parse_cell(cell, ty) for cell, ty in zip(row, types)] for row in rows]


def _project(outcome: dict, names: list[str]) -> list[list]:
    index = [outcome["columns"].index(n) for n in names]
    return [[row[i] for i in index] for row in outcome["rows"]]


def _table(names: list[str], rows: list[list]) -> str:
    return "\n".join(["| " + " | ".join(names) + " |"] + ["| " + " | ".join(show(v) for v in r) + " |" for r in rows])


def _rows_equal(expected: list, actual: list) -> bool:
    return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))


@then("the result is:")
def result_is(outcome, datatable):
    """Order-insensitive: every expected row matches exactly one result row."""
    names, expected = _expected_rows(outcome, datatable)
    actual = _project(outcome, names)
    unmatched = list(actual)
    missing = []
    for row in expected:
        match = next((a for a in unmatched if _rows_equal(row, a)), None)
        if match is None:
            missing.append(row)
        else:
            unmatched.remove(match)
    assert not missing and not unmatched, (
        f"\nexpected:\n{_table(names, expected)}\nactual:\n{_table(names, actual)}"
        f"\nmissing:\n{_table(names, missing)}\nunexpected:\n{_table(names, unmatched)}"
    )


@then("the result is, in order:")
def result_in_order(outcome, datatable):
    names, expected = _expected_rows(outcome, datatable)
    actual = _project(outcome, names)
    assert len(expected) == len(actual) and all(_rows_equal(e, a) for e, a in zip(expected, actual)), (
        f"\nexpected (in order):\n{_table(names, expected)}\nactual:\n{_table(names, actual)}"
    )


@then(parsers.parse("the result has {count:d} rows"))
def result_count(outcome, count: int):
    assert "error" not in outcome, f"the query failed: {outcome.get('error')}"
    assert len(outcome["rows"]) == count, f"expected {count} rows, got {len(outcome['rows'])}"


@then(parsers.parse('it fails with a {kind} error at line {line:d}, column {column:d}: "{message}"'))
def fails_at(outcome, kind: str, line: int, column: int, message: str):
    error = outcome.get("error")
    assert error is not None, "the query did not fail"
    assert type(error).__name__.lower() == f"sqlwin{kind.lower()}error", f"{type(error).__name__}: {error}"
    assert message in error.message, f"message {error.message!r} does not say {message!r}"
    assert error.position is not None, f"the error has no position: {error}"
    assert (error.position.line, error.position.column) == (line, column), f"position {error.position}"


@then(parsers.parse('the error says what is accepted: "{accepted}"'))
def error_accepts(outcome, accepted: str):
    error = outcome["error"]
    assert error.hint and accepted in error.hint, f"hint {error.hint!r} does not mention {accepted!r}"

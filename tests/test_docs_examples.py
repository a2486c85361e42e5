"""Every example of docs/grammar.md and docs/migration.md runs on real Spark and gives the rows shown.

The documents mark their runnable pieces with HTML comments (invisible once rendered):

    <!-- setup -->            a ```sql block run once before the document's examples (shared views);
    <!-- example: NAME -->    a ```sql block: every statement but the last prepares (a temp view), the
                              last is the example; the first Markdown table after the block (before
                              the next marker, block or heading) is its result;
    <!-- table: VIEW -->      a Markdown table: what `spark.table(VIEW)` holds after the example above
                              (the late rows of LATE ROWS INTO);
    <!-- spark: NAME -->      a ```python block of plain PySpark (`spark`, `F`, `Window` in scope) that
                              binds `result` (`workdir`: a scratch directory); compared with the
                              table after the block, or, without one, with the table of example
                              NAME: the same rows;
    <!-- error: NAME -->      a ```sql block sqlwin refuses; the ```text block after it holds the
                              start of the message.

Every statement runs through `sw.sql` (Spark SQL without sqlwin's clauses passes to Spark as
written). A table's header names the columns compared (a replay's `op`, `firing` and `emit_seq`
appear where they matter); rows are compared as a multiset, cells as the documents write them:
NULL, `2024-05-01 10:00:00`, `[a, b]`, `21.0`.
"""

from __future__ import annotations

import datetime as dt
import re
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
DOCUMENTS = ("grammar.md", "migration.md")
MARKER = re.compile(r"^<!--\s*(setup|example|table|spark|error)\s*(?::\s*([\w.-]+))?\s*-->\s*$")


@dataclass
class Piece:
    kind: str  # setup | example | spark | error
    name: str
    document: str
    line: int
    code: str
    table: list[list[str]] | None = None  # header first
    views: list[tuple[str, list[list[str]]]] = field(default_factory=list)  # <!-- table: VIEW -->
    message: str | None = None


def _fence(lines: list[str], at: int) -> tuple[str, str, int]:
    """The fenced block starting at or after line `at`: (language, text, index after its closing fence)."""
    while at < len(lines) and not lines[at].startswith("```"):
        if lines[at].strip() and not lines[at].startswith("<!--"):
            raise ValueError(f"line {at + 1}: expected a fenced block, found {lines[at]!r}")
        at += 1
    language = lines[at][3:].strip()
    end = at + 1
    while not lines[end].startswith("```"):
        end += 1
    return language, "\n".join(lines[at + 1:end]), end + 1


def _table(lines: list[str], at: int) -> tuple[list[list[str]] | None, int]:
    """The first Markdown table from line `at` on, past prose ("Both give:"); None when a marker, a
    fenced block or a heading comes first."""
    while at < len(lines) and not lines[at].startswith("|"):
        if lines[at].startswith(("<!--", "```", "#")):
            return None, at
        at += 1
    if at >= len(lines):
        return None, at
    rows = []
    while at < len(lines) and lines[at].startswith("|"):
        cells = [c.strip() for c in lines[at].strip().strip("|").split("|")]
        if not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append(cells)
        at += 1
    return rows, at


def parse(document: str) -> list[Piece]:
    lines = (DOCS / document).read_text().splitlines()
    pieces: list[Piece] = []
    at = 0
    while at < len(lines):
        match = MARKER.match(lines[at])
        if not match:
            at += 1
            continue
        kind, name = match.group(1), match.group(2) or ""
        if kind == "table":
            table, at = _table(lines, at + 1)
            assert table is not None, f"{document}:{at}: <!-- table: {name} --> needs a table"
            owner = next(p for p in reversed(pieces) if p.kind == "example")
            owner.views.append((name, table))
            continue
        _, code, after = _fence(lines, at + 1)
        piece = Piece(kind, name, document, at + 1, code)
        if kind == "error":
            _, piece.message, after = _fence(lines, after)
        else:
            piece.table, after = _table(lines, after)
        pieces.append(piece)
        at = after
    return pieces


PIECES = {document: parse(document) for document in DOCUMENTS}
EXAMPLES = {(p.document, p.name): p for ps in PIECES.values() for p in ps if p.kind == "example"}


def statements(sql: str) -> list[str]:
    """`;`-separated statements (the documents put no `;` inside a string or a comment)."""
    return [s.strip() for s in sql.split(";") if s.strip() and not all(
        line.strip().startswith("--") or not line.strip() for line in s.strip().splitlines())]


def cell(value) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}" if value.microsecond else "")
    if isinstance(value, dt.timedelta):  # as Spark shows a DAY TO SECOND interval
        sign, value = ("-", -value) if value < dt.timedelta(0) else ("", value)
        minutes, seconds = divmod(value.seconds, 60)
        fraction = f".{value.microseconds:06d}" if value.microseconds else ""
        return (f"INTERVAL '{sign}{value.days} {minutes // 60:02d}:{minutes % 60:02d}:{seconds:02d}{fraction}'"
                " DAY TO SECOND")
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(cell(v) for v in value) + "]"
    if isinstance(value, (float, Decimal)):
        return str(value)
    return str(value)


def compare(actual: list[list[str]], table: list[list[str]], where: str) -> None:
    header, expected = table[0], table[1:]
    if sorted(actual) != sorted(expected):
        shown = lambda rows: "\n".join("| " + " | ".join(r) + " |" for r in rows)  # noqa: E731
        pytest.fail(f"{where}: rows differ\n| {' | '.join(header)} |\nexpected (the document):\n"
                    f"{shown(expected)}\nactual:\n{shown(actual)}\nmissing: {[r for r in expected if r not in actual]}"
                    f"\nunexpected: {[r for r in actual if r not in expected]}", pytrace=False)


def _views(sql: str) -> set[str]:
    names = set(re.findall(r"CREATE\s+OR\s+REPLACE\s+TEMP(?:ORARY)?\s+VIEW\s+(\w+)", sql, re.I))
    names |= set(re.findall(r"LATE\s+ROWS\s+INTO\s+(\w+)", sql, re.I))
    return names | set(re.findall(r"queryName\(\"(\w+)\"\)", sql))  # a Spark block's memory sink


@pytest.fixture(scope="module")
def documents(sw, spark):
    """Runs each document's setup blocks, then every example, refusal and Spark block, a few at a time.

    Each piece is a few short Spark jobs over a handful of rows, whose time is mostly the driver's
    (planning, code generation, scheduling, Python workers starting), so a few run at once on the one
    session. Each outcome (its rows, or the exception) is kept for the piece's own test below. Every
    view the documents create is dropped at the end.
    """
    for pieces in PIECES.values():
        for piece in pieces:
            if piece.kind == "setup":
                for statement in statements(piece.code):
                    sw.sql(statement)
    runnable = [p for ps in PIECES.values() for p in ps if p.kind in ("example", "spark", "error")]
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        outcomes = dict(zip(map(id, runnable), pool.map(lambda p: _outcome(sw, spark, p), runnable)))
    yield outcomes
    created = set().union(*(_views(p.code) for ps in PIECES.values() for p in ps))
    for name in created:
        spark.catalog.dropTempView(name)


WORKERS = 4  # pieces run at once


@dataclass
class Outcome:
    rows: list[list[str]] | None = None  # the example's columns named by its table, as cells
    views: dict[str, list[list[str]]] = field(default_factory=dict)
    columns: list[str] = field(default_factory=list)
    error: BaseException | None = None


def _cells(df, header: list[str], outcome: Outcome) -> list[list[str]] | None:
    outcome.columns = list(df.columns)
    if any(c not in df.columns for c in header):
        return None
    return [[cell(v) for v in row] for row in df.select(*[f"`{c}`" for c in header]).collect()]


def _outcome(sw, spark, piece: Piece) -> Outcome:
    outcome = Outcome()
    try:
        if piece.kind == "spark":
            from pyspark.sql import Window
            from pyspark.sql import functions as F

            with tempfile.TemporaryDirectory() as workdir:
                scope = {"spark": spark, "F": F, "Window": Window, "workdir": workdir}
                exec(compile(piece.code, f"{piece.document}:{piece.line}", "exec"), scope)  # noqa: S102
                table = piece.table or EXAMPLES[(piece.document, piece.name)].table
                outcome.rows = _cells(scope["result"], table[0], outcome)
            return outcome
        *prepare, query = statements(piece.code)
        for statement in prepare:
            sw.sql(statement)
        df = sw.sql(query)
        if piece.kind == "error":
            df.collect()
            return outcome
        outcome.rows = _cells(df, piece.table[0], outcome)
        for view, table in piece.views:
            outcome.views[view] = _cells(spark.table(view), table[0], Outcome())
    except Exception as err:  # noqa: BLE001 - reported by the piece's own test
        outcome.error = err
    return outcome


def _ids(kind: str) -> list:
    return [pytest.param(p, id=f"{p.document.removesuffix('.md')}-{p.name}")
            for ps in PIECES.values() for p in ps if p.kind == kind]


def test_documents_have_examples():
    assert len(EXAMPLES) >= 40
    for pieces in PIECES.values():
        names = [p.name for p in pieces if p.kind == "example"]
        assert len(names) == len(set(names)), "example names repeat"
        for piece in pieces:
            if piece.kind == "example":
                assert piece.table, f"{piece.document}:{piece.line}: example {piece.name} shows no result"
            if piece.kind == "spark":
                assert piece.table or (piece.document, piece.name) in EXAMPLES, \
                    f"{piece.document}:{piece.line}: spark block {piece.name} has no table to compare with"
    # Examples run side by side: the views they create (and LATE ROWS INTO) must not share a name.
    created = [name.lower() for ps in PIECES.values() for p in ps if p.kind != "setup" for name in _views(p.code)]
    assert len(created) == len(set(created)), sorted(created)


def _check(outcome: Outcome, table: list[list[str]], where: str) -> None:
    if outcome.error is not None:
        raise outcome.error
    missing = [c for c in table[0] if c not in outcome.columns]
    assert not missing, f"{where}: the result has no column {missing} (it has {outcome.columns})"
    compare(outcome.rows, table, where)


@pytest.mark.parametrize("piece", _ids("example"))
def test_example(documents, piece: Piece):
    outcome = documents[id(piece)]
    where = f"{piece.document}:{piece.line} ({piece.name})"
    _check(outcome, piece.table, where)
    for view, table in piece.views:
        assert outcome.views.get(view) is not None, f"{where}: no view {view}, or it lacks a column of {table[0]}"
        compare(outcome.views[view], table, f"{where}, late rows {view}")


@pytest.mark.parametrize("piece", _ids("spark"))
def test_spark_before(documents, piece: Piece):
    table = piece.table or EXAMPLES[(piece.document, piece.name)].table
    _check(documents[id(piece)], table, f"{piece.document}:{piece.line} (Spark code of {piece.name})")


@pytest.mark.parametrize("piece", _ids("error"))
def test_refused(documents, piece: Piece):
    from sqlwin.errors import SqlwinError

    error = documents[id(piece)].error
    assert isinstance(error, SqlwinError), f"{piece.document}:{piece.line}: expected a refusal, got {error!r}"
    assert error.message.startswith(piece.message.strip()), error.message

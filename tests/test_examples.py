"""Every shipped query in sql_examples/ prints the result its own comment promises.

Each example's header holds an "Expected result:" table (worked out from its data file, never
copied from a run); `sqlwin run` must print exactly those rows (as a multiset: not every example
orders its result), columns matched by name.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from sqlwin.cli import main

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "sql_examples").glob("*.sql"))


def _cells(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def expected_table(path: Path) -> tuple[list[str], list[tuple]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("-- Expected result"))
    table = []
    for line in lines[start + 1:]:
        if not line.startswith("--") or not line[2:].strip():
            break
        table.append(_cells(line[2:]))
    return table[0], [tuple(row) for row in table[1:]]


def printed_table(out: str) -> tuple[list[str], list[tuple]]:
    lines = [line for line in out.splitlines() if line.strip()]
    header, rows = _cells(lines[0]), lines[2:]  # the header, a line of dashes, the rows, "(n rows)"
    return header, [tuple(_cells(r)) for r in rows if not re.fullmatch(r"\(\d+ rows?\)", r.strip())]


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_an_example_prints_the_result_it_promises(spark, capsys, path):
    names, want = expected_table(path)
    assert want, f"{path.name} promises no rows"
    assert main(["run", str(path)]) == 0
    header, got = printed_table(capsys.readouterr().out)
    positions = [header.index(n) for n in names]
    got = [tuple(row[i] for i in positions) for row in got]
    assert Counter(got) == Counter(want), f"\nwanted {want}\ngot    {got}"

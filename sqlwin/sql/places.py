"""Where a plan error points: a parsed query's nodes in the user's own words.

A node's place (line, column and the text the user wrote there), its parents, and `fail`, which
raises a SqlwinValidationError placed at a node. Every reader of the parsed query (binding,
durations, the plan, the check before Spark) points its errors through these.
"""

from __future__ import annotations

import difflib
import typing as t

from sqlglot import exp

from sqlwin.errors import Position, SqlwinValidationError
from sqlwin.sql.dialect import SqlwinDialect


def parents(node: exp.Expr) -> t.Iterator[exp.Expr]:
    """The nodes around `node`, innermost first."""
    while node.parent is not None:
        node = node.parent
        yield node


def node_position(node: exp.Expr | None, text: str | None = None) -> Position | None:
    """Where `node` starts in the query (its first token's line and column) and the text to show there."""
    if node is None:
        return None
    meta = node.meta
    name_before = 0  # a call sqlglot kept no place for starts with its name, before its first argument
    if "line" not in meta:
        placed = [n for n in node.walk() if "line" in n.meta]
        if not placed:
            return None
        # the first token in the text: the smallest start (walk order is not text order)
        meta = min(placed, key=lambda n: (n.meta["line"], n.meta.get("start", n.meta["col"]))).meta
        called = _sql_text(node)
        if isinstance(node, exp.Func) and "(" in called and called[:called.index("(")].replace("_", "").isalnum():
            name_before = called.index("(") + 1
    col = meta["col"]
    token_text = text if text is not None else user_text(node, limit=60)
    # sqlglot records the column of a token's last character; show its first.
    start, end = meta.get("start"), meta.get("end")
    if start is not None and end is not None:
        col = col - (end - start)
    return Position(meta["line"], max(col - name_before, 1), token_text)


def short_sql(node: exp.Expr, limit: int = 60) -> str:
    """The node as the user might have written it, when short enough to quote ('' otherwise)."""
    text = _sql_text(node)
    return text if len(text) < limit else ""


def user_text(node: exp.Expr | None, limit: int | None = None) -> str:
    """What the user wrote for `node` (its first line), when the parser kept it; else the node as SQL."""
    source = node.meta.get("source") if node is not None else None
    text = source.strip().splitlines()[0] if source and source.strip() else _sql_text(node)
    return "" if limit is not None and len(text) >= limit else text


def _sql_text(node: exp.Expr | None) -> str:
    """The node as SQL, for a message ('' for a node sqlglot cannot write)."""
    try:
        return node.sql(dialect=SqlwinDialect) if node is not None else ""
    except Exception:  # noqa: BLE001 - a message must not fail while saying what is wrong
        return ""


def fail(message: str, node: exp.Expr | None, hint: str | None = None, text: str | None = None,
         start: exp.Expr | None = None) -> t.NoReturn:
    """`start`: where the caret begins when it is not where sqlglot places `node` (its first token)."""
    if start is not None:
        place = node_position(start)
        whole = node_position(node)
        if place is not None and whole is not None:
            raise SqlwinValidationError(message, Position(place.line, place.column, whole.text), hint)
    raise SqlwinValidationError(message, node_position(node, text), hint)


def did_you_mean(name: str, known: t.Iterable[str]) -> str:
    """`: did you mean x?` for the known name closest to a misspelt `name` ('' when none is close)."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f": did you mean {by_lower[close[0]]}?" if close else ""

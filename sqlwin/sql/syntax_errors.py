"""Syntax errors in the query's own words, placed where the user wrote the text.

sqlglot's ParseError and TokenError rewritten (token reprs and class names into the query's words,
a misspelt keyword named: `SELEC` -> did you mean SELECT?), unclosed strings, quoted names and
comments pointed at where they open, a token's place (`token_position`), and `internal_error` for
what nobody foresaw, still placed in the query.
"""

from __future__ import annotations

import re

from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import Position, SqlwinError, SqlwinSyntaxError
from sqlwin.sql.ast_nodes import WINDOW_FUNCTIONS
from sqlwin.sql.scan import Span


def token_position(token: Token | None) -> Position | None:
    """Where a token starts, and its text as written: a quoted string's or name's quotes included
    (the token's text leaves them out, and its column is where the closing quote is)."""
    if token is None:
        return None
    text = token.text
    span = token.end - token.start + 1 if token.end >= token.start else len(text)
    if span == len(text) + 2 and token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        quote = "'" if token.token_type == TokenType.STRING else "`"
        text = f"{quote}{text}{quote}"
    return Position(token.line, max(token.col - max(span, len(text)) + 1, 1), text)


def internal_error(kind: type[SqlwinError], err: Exception, position: Position | None, sql: str) -> SqlwinError:
    """An exception sqlwin did not foresee, as a SqlwinError that still points into the query.

    Only the parse and plan entry points use this, after every known cause has its own error;
    `.internal` keeps what happened (the fuzz test counts these as crashes).
    """
    error = kind(f"sqlwin cannot read the query here ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})",
                 position or Position(1, 1), "Spark SQL with sqlwin's window functions (docs/sql.md); if the query "
                 "is valid, please report it", query=sql)
    error.internal = f"{type(err).__name__}: {err}"
    return error


_SYNTAX_HINT = "Spark SQL; window functions as FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)"

# Words a misspelling is compared with ("SELEC" -> SELECT).
KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "WITH", "JOIN", "INNER", "LEFT", "RIGHT", "FULL",
    "OUTER", "CROSS", "UNION", "EXCEPT", "INTERSECT", "DISTINCT", "TABLE", "DESCRIPTOR", "INTERVAL", "EMIT", "WATERMARK",
    "DELAY", "PARTITION", "BETWEEN", "EXISTS", "LATERAL", "VALUES", "CASE", "WHEN", "THEN", "ELSE", "FINAL", "CHANGES",
    "EARLY", "EVERY", "ALLOWED", "LATENESS", "ROWS", "INTO", "ACCUMULATING", "DISCARDING", "RETRACTING", "UPDATED",
    "UNBOUNDED", "PROCTIME", "TIMESTAMP", *WINDOW_FUNCTIONS,
)
_STATEMENT_STARTS = ("SELECT", "WITH", "FROM", "VALUES", "TABLE")

_NODE_WORDS = {
    "Mul": "'*'", "Div": "'/'", "Add": "'+'", "Sub": "'-'", "Mod": "'%'", "EQ": "'='", "NEQ": "'<>'", "GT": "'>'",
    "GTE": "'>='", "LT": "'<'", "LTE": "'<='", "And": "AND", "Or": "OR", "Not": "NOT", "Alias": "the alias",
    "Where": "WHERE", "Having": "HAVING", "Group": "GROUP BY", "Order": "ORDER BY", "Limit": "LIMIT",
    "Interval": "INTERVAL", "Cast": "CAST", "Between": "BETWEEN", "In": "IN", "Like": "LIKE", "Join": "JOIN",
    "Neg": "'-'", "Paren": "'('", "Kwarg": "'=>'", "PropertyEQ": "':='",
}


def _words(node_class: str) -> str:
    return _NODE_WORDS.get(node_class) or re.sub(r"(?<!^)(?=[A-Z])", " ", node_class).lower()


def _readable(description: str, found: str) -> str:
    """sqlglot's description with its internals (token reprs, class names) in the words of the query."""
    description = re.sub(r"<Token token_type: TokenType\.SENTINEL,[^>]*>", "the end of the query", description)
    description = re.sub(r"<Token token_type: [^,]+, text: (.*?), line: [^>]*>", r"'\1'", description)
    required = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>", description)
    if required:
        return f"{_words(required.group(2))} is incomplete, found {found}"
    if description.startswith("Invalid expression / Unexpected token"):
        return f"unexpected {found}"
    expecting = re.fullmatch(r"Expecting (\S+)", description)
    if expecting:
        return f"expected '{expecting.group(1)}', found {found}"
    return re.sub(r"<class '[\w.]*?(\w+)'>", lambda m: _words(m.group(1)), description)


def misspelling(word: str) -> str | None:
    """The keyword `word` is one typo (a letter dropped, added, changed or two swapped) away from."""
    upper = word.upper()
    if len(upper) < 4 or upper in KEYWORDS or not upper.replace("_", "").isalpha():
        return None
    for keyword in KEYWORDS:
        if abs(len(keyword) - len(upper)) <= 1 and edit_distance(upper, keyword) <= 1:
            return keyword
    return None


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (Levenshtein plus swapped neighbours)."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def from_parse_error(err: ParseError, sql: str, tokens: list[Token], current: Token | None,
                     previous: Token | None) -> SqlwinSyntaxError:
    detail = err.errors[0] if err.errors else {}
    line, col = detail.get("line"), detail.get("col")
    highlight = detail.get("highlight") or ""
    if line and col:
        position = Position(line, max(col - len(highlight) + 1, 1), highlight)
    else:  # a ParseError without a place: where the parser stopped
        position = token_position(current or previous) or Position(1, 1)
    at = next((i for i, tok in enumerate(tokens) if (tok.line, tok.col) == (line, col)), None)
    found = f"'{highlight}'" if highlight and at is not None and current else "the end of the query"
    description = _readable(detail.get("description") or str(err).splitlines()[0], found)

    # A misspelled keyword: at the start of the statement, where the parser stopped, or just before.
    if at is not None:
        start = next((i + 1 for i in range(at - 1, -1, -1) if tokens[i].token_type == TokenType.SEMICOLON), 0)
        first = tokens[start]
        if first.token_type == TokenType.VAR and first.text.upper() not in _STATEMENT_STARTS:
            keyword = misspelling(first.text)
            message = f"'{first.text}' cannot start a statement" + (f": did you mean {keyword}?" if keyword else "")
            return SqlwinSyntaxError(message, token_position(first), "a statement starting with SELECT or WITH", query=sql)
        called = (tokens[i] for i in range(at - 1, max(start, at - 12) - 1, -1)
                  if tokens[i].token_type == TokenType.VAR and tokens[i + 1].token_type == TokenType.L_PAREN)
        for token in (tokens[at], tokens[at - 1] if at > start else None, next(called, None)):
            if token is not None and token.token_type == TokenType.VAR and misspelling(token.text):
                description += f" (did you mean {misspelling(token.text)} instead of '{token.text}'?)"
                break
    return SqlwinSyntaxError(f"Syntax error: {description}", position, hint=_SYNTAX_HINT, query=sql)


def _offset_position(sql: str, offset: int, length: int = 1) -> Position:
    offset = max(min(offset, len(sql) - 1), 0)
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    text = sql[offset:offset + length].split("\n")[0]
    return Position(line, column, text)


def unclosed_error(sql: str, span: Span) -> SqlwinSyntaxError:
    """The string, quoted name or /* comment `span` is never closed."""
    kind, offset = span.kind, span.start
    opener = sql[offset:offset + 2] if kind == "comment" else sql[offset]
    what = {"comment": "comment", "string": "string literal", "identifier": "quoted name"}[kind]
    closer = "*/" if kind == "comment" else opener
    position = _offset_position(sql, offset, max(len(sql[offset:].split("\n")[0][:20]), 1))
    return SqlwinSyntaxError(f"Unterminated {what}: the {opener} here is never closed", position,
                             f"{what}s end with {closer}" + (" (an escaped quote inside is \\' or '')" if kind == "string"
                                                             and opener == "'" else ""), query=sql)


def from_token_error(err: TokenError, sql: str, open_span: Span | None) -> SqlwinSyntaxError:
    if open_span is not None:
        return unclosed_error(sql, open_span)
    cause = str(err.__cause__ or err)
    place = re.search(r" from (\d+):(\d+)$", cause)
    if place:
        offset = int(place.group(2))
    elif err.start is not None:
        offset = err.start + 50 if err.start else 0
    else:
        offset = 0
    reason = re.sub(r" from \d+:\d+$", "", cause.splitlines()[0] if cause else "")
    return SqlwinSyntaxError(f"Cannot read the query: {reason}", _offset_position(sql, offset),
                             hint="Spark SQL with sqlwin's window functions", query=sql)

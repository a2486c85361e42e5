"""The one reading of Spark SQL text below the grammar: where its strings, quoted names and
comments are, and where its statements end.

sqlglot tokenizes a statement for the parser; this is for what has to be known before or
around that: where a script's statements end (the shell), whether the lines typed so far end
one, a statement as one history line, and which quote or comment a query leaves open (the
dialect's "Unterminated ..." errors). It reads the text as Spark's lexer does:

    'string' "string"   a backslash escapes the next character, the quote included
    r'raw' R"raw"       no escapes: the string ends at the next quote of its kind
    `name`              a doubled backquote inside stands for one; no backslash escapes
    -- comment          to the end of the line (the newline is not part of it)
    /* comment */       nested, as Spark nests them: /* a /* b */ still a */
    ;                   ends a statement

`spans` cuts the text into contiguous spans of these kinds, code between them; the rest is
read off the spans. A doubled quote inside a string ('it''s') is two strings side by side, as
both Spark and sqlglot read it; it ends nothing either way.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

CODE = "code"              # anything else: keywords, names, numbers, operators, white space
STRING = "string"          # '...', "...", r'...' (the r is the code's last character)
IDENTIFIER = "identifier"  # `...`
COMMENT = "comment"        # -- ... or /* ... */
END = "end"                # ; outside the others: the end of a statement

_SPECIAL = frozenset("'\"`;-/")


@dataclass(frozen=True)
class Span:
    """`text[start:end]` is one piece of kind `kind`. `closed` is False only for the text's last
    span, when it is a string, quoted name or /* comment that the text ends inside."""

    kind: str
    start: int
    end: int
    closed: bool = True


def spans(text: str) -> t.Iterator[Span]:
    """The spans of `text`, in order, covering it with neither gap nor overlap."""
    i, n = 0, len(text)
    code = 0  # where the code not yet yielded starts
    while i < n:
        char = text[i]
        if char not in _SPECIAL or (char in "-/" and not text.startswith(("--", "/*"), i)):
            i += 1
            continue
        if code < i:
            yield Span(CODE, code, i)
        if char == ";":
            span = Span(END, i, i + 1)
        elif char == "-":
            newline = text.find("\n", i)
            span = Span(COMMENT, i, n if newline < 0 else newline)
        elif char == "/":
            span = _bracketed_comment(text, i)
        else:
            span = _quoted(text, i)
        yield span
        i = code = span.end
    if code < n:
        yield Span(CODE, code, n)


def _quoted(text: str, i: int) -> Span:
    quote, n = text[i], len(text)
    kind = IDENTIFIER if quote == "`" else STRING
    escapes = quote != "`" and not _raw(text, i)
    j = i + 1
    while j < n:
        char = text[j]
        if char == "\\" and escapes:
            j += 2  # the escaped character, a quote included
        elif char != quote:
            j += 1
        elif quote == "`" and text.startswith("``", j):
            j += 2  # a doubled backquote inside a quoted name
        else:
            return Span(kind, i, j + 1)
    return Span(kind, i, n, closed=False)


def _raw(text: str, i: int) -> bool:
    """Whether the quote at `i` opens a raw string: r or R before it, and that letter not the end of a longer name."""
    if i < 1 or text[i - 1] not in "rR":
        return False
    return i < 2 or not (text[i - 2].isalnum() or text[i - 2] == "_")


def _bracketed_comment(text: str, i: int) -> Span:
    depth, j, n = 1, i + 2, len(text)
    while j < n:
        if text.startswith("*/", j):
            depth, j = depth - 1, j + 2
            if not depth:
                return Span(COMMENT, i, j)
        elif text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        else:
            j += 1
    return Span(COMMENT, i, n, closed=False)


def unclosed(text: str) -> Span | None:
    """The string, quoted name or /* comment that `text` ends inside (its opening is `start`), or None."""
    last = None
    for last in spans(text):
        pass
    return last if last is not None and not last.closed else None


def split(text: str) -> list[str]:
    """The pieces of `text` between its statement-ending `;`s, blank and comment-only ones
    included, so that `";".join(split(text)) == text`."""
    pieces, start = [], 0
    for span in spans(text):
        if span.kind == END:
            pieces.append(text[start:span.start])
            start = span.end
    pieces.append(text[start:])
    return pieces


def significant(text: str, span: Span) -> int | None:
    """Where the span's first character that counts as a statement's starts (not white space,
    not a comment, not a `;`), or None."""
    if span.kind in (STRING, IDENTIFIER):
        return span.start
    if span.kind == CODE:
        piece = text[span.start:span.end]
        stripped = len(piece) - len(piece.lstrip())
        if stripped < len(piece):
            return span.start + stripped
    return None


def statements(text: str) -> list[tuple[int, int]]:
    """(start, end) of each statement of `text`: from its first character that is not white
    space or comment to its `;` (excluded) or the end of the text. Pieces with nothing but
    white space and comments are no statement; the text after the last `;` is one."""
    found: list[tuple[int, int]] = []
    start = None
    for span in spans(text):
        if span.kind == END:
            if start is not None:
                found.append((start, span.start))
            start = None
        elif start is None:
            start = significant(text, span)
    if start is not None:
        found.append((start, len(text)))
    return found


def ends_statement(text: str) -> bool:
    """Whether `text` ends a statement: a `;` with nothing after it but white space and closed
    comments."""
    ended = False
    for span in spans(text):
        if span.kind == END:
            ended = True
        elif not span.closed or significant(text, span) is not None:
            ended = False
    return ended

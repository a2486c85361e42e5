"""sqlwin.sql.scan, the one reading of Spark SQL text's quotes, comments and statement ends.

Expected values are written by hand from Spark's lexer rules; the property tests build scripts
from pieces whose reading is known (strings, names, comments with `;` inside) and check that
splitting finds exactly the statements they were joined from.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sqlwin.shell import one_line, split_statements, statement_complete
from sqlwin.sql.scan import spans, split, statements, unclosed


def kinds(text):
    return [(span.kind, text[span.start:span.end]) for span in spans(text)]


# --------------------------------------------------------------------------- spans


@pytest.mark.parametrize("text, expected", [
    ("", []),
    ("SELECT 1", [("code", "SELECT 1")]),
    ("a - b / c * d", [("code", "a - b / c * d")]),  # a lone - or / is code
    ("'it\\'s'", [("string", "'it\\'s'")]),
    ("'a\\\\' x", [("string", "'a\\\\'"), ("code", " x")]),  # an escaped backslash, then the quote closes
    ('"say \\"hi\\""', [("string", '"say \\"hi\\""')]),
    ("'a' \"b\" 'c'", [("string", "'a'"), ("code", " "), ("string", '"b"'), ("code", " "), ("string", "'c'")]),
    ("'it''s'", [("string", "'it'"), ("string", "'s'")]),  # two strings side by side, as Spark reads it
    ("'\"`'", [("string", "'\"`'")]),
    ("`a``b`.c", [("identifier", "`a``b`"), ("code", ".c")]),
    ("`a\\`b`", [("identifier", "`a\\`"), ("code", "b"), ("identifier", "`")]),  # no backslash escape in a name
    ("r'\\' x", [("code", "r"), ("string", "'\\'"), ("code", " x")]),
    ('R"C:\\" x', [("code", "R"), ("string", '"C:\\"'), ("code", " x")]),
    ("bar'\\'' x", [("code", "bar"), ("string", "'\\''"), ("code", " x")]),  # bar's r is no raw prefix
    ("_r'\\''", [("code", "_r"), ("string", "'\\''")]),
    ("(r'\\')", [("code", "(r"), ("string", "'\\'"), ("code", ")")]),
    ("a -- b; 'c\nd", [("code", "a "), ("comment", "-- b; 'c"), ("code", "\nd")]),
    ("a --", [("code", "a "), ("comment", "--")]),
    ("/* a /* b; */ c; */d", [("comment", "/* a /* b; */ c; */"), ("code", "d")]),
    ("/**/;", [("comment", "/**/"), ("end", ";")]),
    ("/*/ x */", [("comment", "/*/ x */")]),
    ("/* ' */ 'x'", [("comment", "/* ' */"), ("code", " "), ("string", "'x'")]),
    ("'/* -- ;'", [("string", "'/* -- ;'")]),
    ("a;;b", [("code", "a"), ("end", ";"), ("end", ";"), ("code", "b")]),
])
def test_spans_by_hand(text, expected):
    assert kinds(text) == expected


@pytest.mark.parametrize("text, kind, start", [
    ("SELECT 'abc", "string", 7),
    ("SELECT \"abc\\\"", "string", 7),  # the escaped quote does not close it
    ("SELECT 'a\\", "string", 7),  # a backslash as the last character
    ("SELECT `abc", "identifier", 7),
    ("SELECT `a``", "identifier", 7),  # a doubled backquote does not close it
    ("SELECT 'a''b", "string", 10),  # 'a' closed, the second string open
    ("SELECT r'a\\''", "string", 12),  # raw: the backslash escapes nothing, so the last ' opens a string
    ("SELECT 1 /* a", "comment", 9),
    ("SELECT 1 /* a /* b */ c", "comment", 9),  # the inner comment closes, the outer does not
    ("/* a */ /* b /* c */ */ /* d", "comment", 24),
])
def test_unclosed_is_the_last_span_open(text, kind, start):
    span = unclosed(text)
    assert (span.kind, span.start, span.end, span.closed) == (kind, start, len(text), False)


@pytest.mark.parametrize("text", [
    "SELECT 1", "SELECT 'a\\'b'", "SELECT r'\\'", "SELECT `a``b`", "x -- open ' quote", "/* /* */ */",
    "-- /* not a bracketed comment", "'--' /* ' */",
])
def test_closed_text_leaves_nothing_open(text):
    assert unclosed(text) is None


# --------------------------------------------------------------------------- statements


def test_statements_end_at_semicolons_outside_everything():
    text = "SELECT ';', \";\", `;` -- ;\n/* ; /* ; */ ; */ FROM t; r'\\';  \n\t-- only a comment\n;SELECT 2"
    assert split(text) == ["SELECT ';', \";\", `;` -- ;\n/* ; /* ; */ ; */ FROM t", " r'\\'",
                           "  \n\t-- only a comment\n", "SELECT 2"]
    assert [text[a:b] for a, b in statements(text)] == [
        "SELECT ';', \";\", `;` -- ;\n/* ; /* ; */ ; */ FROM t", "r'\\'", "SELECT 2"]


def test_a_statement_starts_at_its_first_string_or_code_after_comments():
    text = "/* c */ -- d\n  'x' AS y"
    assert statements(text) == [(15, len(text))]


@pytest.mark.parametrize("text, complete", [
    ("SELECT 1;", True), ("SELECT 1; /* done */ -- really\n", True), ("SELECT 1;;", True),
    ("SELECT 1; '", False), ("SELECT 1; /*", False), ("SELECT 1; /* /* */", False),
    ("SELECT '; '", False), ("SELECT `;``;`", False), ("SELECT r'\\';", True), ("SELECT '\\';", False),
    ("SELECT 1 -- ;", False), ("", False),
])
def test_statement_complete(text, complete):
    assert statement_complete(text) is complete


def test_one_line_drops_line_comments_and_keeps_strings_as_typed():
    typed = "SELECT 'a\nb', -- x\n  /* it's\n a */ `c\nd`\nFROM t -- ' opens nothing\n;"
    assert one_line(typed) == "SELECT 'a\nb',    /* it's  a */ `c\nd` FROM t  ;"


# --------------------------------------------------------------------------- properties

_plain = st.text(alphabet="abcrR_ 09(),.=*+<>\n\t", max_size=8)
_in_quotes = st.sampled_from(list("ab ;-/*`\n") + ["--", "/*", "*/", "\\\\", "\\'", '\\"', "\\;", "\\`"])


def _string(quote):
    body = st.lists(_in_quotes.filter(lambda part: part != quote), max_size=6).map("".join)
    return body.map(lambda text: quote + text + quote)


def _raw(quote):
    body = st.text(alphabet="ab ;\\-/*`", max_size=6).map(lambda text: text.replace(quote, ""))
    return st.tuples(st.sampled_from("rR"), body).map(lambda p: p[0] + quote + p[1] + quote)


_identifier = st.lists(st.sampled_from(list("ab ;'\"\\-/*") + ["``"]), max_size=6).map(lambda p: "`" + "".join(p) + "`")
_line_comment = st.text(alphabet="ab ;'\"`*/-\\", max_size=8).map(lambda text: "--" + text + "\n")
_in_comment = st.text(alphabet="ab ;'\"`-\\\n", max_size=6)
_bracketed = st.recursive(_in_comment.map(lambda text: "/*" + text + "*/"),
                          lambda inner: st.tuples(_in_comment, inner, _in_comment).map(
                              lambda p: "/*" + p[0] + p[1] + p[2] + "*/"),
                          max_leaves=4)
_piece = st.one_of(_plain, _string("'"), _string('"'), _raw("'"), _raw('"'), _identifier, _line_comment, _bracketed)
_statement = st.tuples(st.text(alphabet="abcSELECT", min_size=1, max_size=6),
                       st.lists(_piece, max_size=6)).map(lambda p: " ".join([p[0], *p[1]]))


@settings(max_examples=300, deadline=None)
@given(st.lists(_statement, min_size=1, max_size=5))
def test_splitting_a_joined_script_gives_back_its_statements(parts):
    script = ";".join(parts)
    assert split(script) == parts
    assert [s.text for s in split_statements(script)] == [part.strip() for part in parts]
    assert unclosed(script) is None
    assert statement_complete(script + ";")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab r'\"`\\;-/*\n", max_size=30))
def test_any_text_splits_and_joins_back(text):
    assert ";".join(split(text)) == text
    cut = list(spans(text))
    assert "".join(text[s.start:s.end] for s in cut) == text
    assert all(a.end == b.start for a, b in zip(cut, cut[1:]))
    assert all(s.closed for s in cut[:-1])
    for start, end in statements(text):
        assert text[start:end].strip() and "end" not in [kind for kind, _ in kinds(text[start:end])]

"""A parser that never crashes: mutated queries end in success or a positioned SqlwinError.

The corpus is every shipped query (`sql_examples/*.sql`) and every SQL docstring of the
Gherkin scenarios (`features/*.feature`). Each example applies one to three mutations to
one query — a token dropped, duplicated or swapped with another, a number replaced by a
huge, negative or odd one (1e308, -5, 99999999999999999999, NaN, ...), a token replaced by
a random identifier or unicode text, a keyword or punctuation inserted (doubled keywords,
stray quotes and comment openers), a word misspelled, the text truncated — and runs
parse + plan building (`build_plan`) without Spark: table schemas come from the scenarios'
Gherkin tables and the examples' CSV headers, through the same `schema_of` callback the
API gives the planner.

Every outcome must be a plan or a `SqlwinError` whose position (line, column) lies in the
query, and no call may take 2 s or more.

CI runs a few hundred derandomized examples (a fixed seed). A long run:

    SQLWIN_FUZZ_EXAMPLES=20000 .venv/bin/python -m pytest tests/test_parser_fuzz.py -s

runs that many hypothesis examples and also a census: the same number of mutations drawn
with `random.Random(SQLWIN_FUZZ_SEED or 0)`, every outcome counted, crashes grouped by
exception type and message (the census fails if there is any, and prints the figures).
"""

from __future__ import annotations

import collections
import csv
import os
import random
import re
import textwrap
import time
import traceback
import typing as t
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqlwin.errors import SqlwinError, SqlwinSyntaxError, SqlwinValidationError
from sqlwin.sql.plan import build_plan
from tests.steps.values import infer_type, split_header

ROOT = Path(__file__).resolve().parent.parent
LONG_RUN = int(os.environ.get("SQLWIN_FUZZ_EXAMPLES") or 0)
EXAMPLES = LONG_RUN or 300
SLOWEST_ALLOWED = 2.0  # seconds per call

# --------------------------------------------------------------------------- the corpus


def _feature_queries() -> list[str]:
    queries = []
    for feature in sorted((ROOT / "features").glob("*.feature")):
        text = feature.read_text()
        for match in re.finditer(r'^[ \t]*"""\n(.*?)^[ \t]*"""', text, re.M | re.S):
            body = textwrap.dedent(match.group(1)).strip()
            # Scenario Outline placeholders (only `<strategy>` and `<mode>` occur in queries).
            queries.append(re.sub(r"<strategy>", "max_event_time", body))
    return queries


def _example_queries() -> list[str]:
    queries = []
    for path in sorted((ROOT / "sql_examples").glob("*.sql")):
        lines = path.read_text().splitlines()
        while lines and lines[0].startswith("--"):  # the header comment: the expected result
            lines.pop(0)
        queries.append("\n".join(lines).strip())
    return queries


def _schemas() -> dict[str, dict[str, str]]:
    """Column types of every table the corpus reads: Gherkin tables and the examples' CSV files."""
    schemas: dict[str, dict[str, str]] = {}
    for feature in sorted((ROOT / "features").glob("*.feature")):
        lines = feature.read_text().splitlines()
        for i, line in enumerate(lines):
            named = re.search(r'Given the (table|stream) "(\w+)"', line)
            if not named:
                continue
            counting = re.search(r'with \d+ rows of "(\w+)"', line)
            if counting:
                schemas[named.group(2)] = {counting.group(1): "bigint"}
                continue
            rows = []
            for row in lines[i + 1:]:
                if not row.strip().startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            if not rows:
                continue
            header, *data = rows
            schema = {}
            for index, cell in enumerate(header):
                name, declared = split_header(cell)
                schema[name] = declared or infer_type(r[index] for r in data if index < len(r))
            if named.group(1) == "stream":
                schema["arrival"] = "int"
            schemas[named.group(2)] = schema
    for path in sorted((ROOT / "sql_examples" / "data").glob("*.csv")):
        with path.open() as f:
            header, *data = list(csv.reader(f))[:6]
        schemas[path.stem] = {name: infer_type(r[i] for r in data) for i, name in enumerate(header)}
    return schemas


QUERIES = _example_queries() + _feature_queries()
SCHEMAS = _schemas()


def schema_of(name: str) -> dict[str, str] | None:
    """What `Sqlwin.plan` passes the planner, from a dict instead of Spark's catalog (None: unknown)."""
    return SCHEMAS.get(name) or SCHEMAS.get(name.lower())


# --------------------------------------------------------------------------- mutations

_TOKEN = re.compile(
    r"--[^\n]*|/\*.*?\*/|'(?:[^']|'')*'|\"[^\"]*\"|`[^`]*`"
    r"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|\w+|=>|<=|>=|<>|!=|\|\||\s+|."
)
NUMBERS = (
    "1e308", "-1e308", "1e309", "-5", "-0", "0", "00", "0.5", "1e-9", "0.0000001", "1.5",
    "99999999999999999999", "-99999999999999999999", "9223372036854775807", "9223372036854775808",
    "106751991167", "2562047788", "153722867280", "1e20", "NaN", "Infinity", "'1e308'", "'-5'",
    "1e308 MINUTES", "'99999999999999999999 days'", "'1e308 seconds'", "'nan seconds'",
)
WORDS = (
    "SELECT", "FROM", "TABLE", "DESCRIPTOR", "DESCRIPTOR()", "INTERVAL", "EMIT", "WATERMARK", "DELAY", "OF",
    "PARTITION BY", "ORDER BY", "GROUP BY", "HAVING", "WITH", "WITH ()", "AS", "=>", "(", ")", ",", ";", "'",
    '"', "`", "/*", "--", "*/", "=", "-", "+", "*", ".", "LATE ROWS INTO", "LATE", "EARLY EVERY", "EVERY",
    "ALLOWED LATENESS", "ROWS", "UNBOUNDED", "PROCTIME()", "TUMBLE(", "HOP", "SESSION(TABLE", "COUNT_WINDOW",
    "NULL", "CAST(", "\n", "FINAL", "CHANGES", "RETRACTING", "ONLY UPDATED", "SIZE =>", "DATA =>",
    "TIMECOL =>", "OFFSET =>", "TIMESTAMP", "TIMESTAMP 'x'", "UNION", "JOIN", "ON", "LATERAL", "VALUES",
    "MONTH", "YEAR", "MS", "US", "FORTNIGHT", "DAYS", "WEEKS", "MICROSECONDS", "NANOSECOND", "DAY TO SECOND",
)
IDENTIFIERS = ("x", "ts", "k", "window_start", "window_end", "v", "nope", "SELEC", "FORM", "TUMBEL", "unbounded",
               "proctime", "DESCRIPTER", "INTERVALL", "_", "a1", "arrival", "offset", "timestamp")
UNICODE = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=6)


class Draw(t.Protocol):
    def integer(self, low: int, high: int) -> int: ...

    def text(self) -> str: ...


def mutate(query: str, draw: Draw) -> str:
    """One to three mutations of `query`, every choice made through `draw`."""
    tokens = _TOKEN.findall(query)
    for _ in range(draw.integer(1, 3)):
        tokens = _mutate_once(tokens, draw)
    return "".join(tokens)


def _mutate_once(tokens: list[str], draw: Draw) -> list[str]:
    solid = [i for i, tok in enumerate(tokens) if tok and not tok.isspace()]
    if not solid:
        return [draw.text()]
    i = solid[draw.integer(0, len(solid) - 1)]
    j = solid[draw.integer(0, len(solid) - 1)]
    tokens = list(tokens)
    kind = draw.integer(0, 9)
    if kind == 0:  # drop
        del tokens[i]
    elif kind == 1:  # duplicate (FROM FROM, a doubled keyword)
        tokens[i:i + 1] = [tokens[i], " ", tokens[i]]
    elif kind == 2:  # swap
        tokens[i], tokens[j] = tokens[j], tokens[i]
    elif kind == 3:  # a number replaced by an extreme one
        numbers = [k for k in solid if tokens[k][0].isdigit()] or [i]
        tokens[numbers[draw.integer(0, len(numbers) - 1)]] = NUMBERS[draw.integer(0, len(NUMBERS) - 1)]
    elif kind == 4:  # a random identifier
        tokens[i] = IDENTIFIERS[draw.integer(0, len(IDENTIFIERS) - 1)]
    elif kind == 5:  # random unicode, replacing or inserted
        text = draw.text()
        tokens[i:i + 1] = [text] if draw.integer(0, 1) else [tokens[i], text]
    elif kind == 6:  # a keyword or punctuation inserted
        tokens[i:i] = [WORDS[draw.integer(0, len(WORDS) - 1)], " "]
    elif kind == 7:  # truncated at a random character
        text = "".join(tokens)
        return _TOKEN.findall(text[:draw.integer(0, len(text))])
    elif kind == 8:  # a misspelled word: one character dropped or doubled
        word = tokens[i]
        at = draw.integer(0, len(word) - 1)
        tokens[i] = word[:at] + word[at + 1:] if draw.integer(0, 1) else word[:at + 1] + word[at:]
    else:  # a token replaced by another token of the query (a keyword where a value belongs...)
        tokens[i] = tokens[j]
    return tokens


class _HypothesisDraw:
    def __init__(self, data: st.DataObject):
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def text(self) -> str:
        return self.data.draw(UNICODE)


class _RandomDraw:
    ALPHABET = "aé日\u200b\x00\t\n'\"`()-+*/;,.=<>\\$€😀ßİ\u0301ﬁ٣"

    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def text(self) -> str:
        return "".join(self.rng.choice(self.ALPHABET) for _ in range(self.rng.randint(1, 6)))


# --------------------------------------------------------------------------- the check


def outcome(sql: str) -> tuple[str, float]:
    """'ok', 'error' (a positioned SqlwinError), or a crash description; and the seconds it took."""
    started = time.perf_counter()
    try:
        build_plan(sql, schema_of)
        result = "ok"
    except SqlwinError as err:
        result = _check_error(sql, err)
    except Exception as err:  # noqa: BLE001 - what the test is looking for
        result = f"{type(err).__name__} in {_where(err)}: {str(err).splitlines()[0] if str(err) else ''}"
    return result, time.perf_counter() - started


def _check_error(sql: str, err: SqlwinError) -> str:
    if getattr(err, "internal", None):  # the entry points' last resort: placed, but a cause nobody handled
        return f"{type(err).__name__} from the last resort: {err.internal}"
    position = err.position
    if position is None:
        return f"{type(err).__name__} without a position: {err.message}"
    lines = max(len(sql.splitlines()), 1)
    if not (1 <= position.line <= lines and position.column >= 1):
        return f"{type(err).__name__} at line {position.line}, column {position.column} outside the query"
    str(err)  # renders
    return "error"


def _where(err: Exception) -> str:
    """The innermost sqlwin function the exception passed through."""
    frames = traceback.extract_tb(err.__traceback__)
    ours = [f for f in frames if "/sqlwin/" in f.filename] or frames
    return f"{Path(ours[-1].filename).name}:{ours[-1].name}" if ours else "?"


def _crash_class(description: str) -> str:
    """A crash's class: its type and message with the user's text and numbers left out."""
    text = description.splitlines()[0] if description else ""
    text = text.split("Error tokenizing")[0] + ("Error tokenizing" if "Error tokenizing" in text else "")
    text = re.sub(r"'[^']*'|\"[^\"]*\"", lambda m: m.group(0) if len(m.group(0)) < 24 else "'…'", text)
    return re.sub(r"\d+", "N", text)[:120]


# --------------------------------------------------------------------------- the crash classes, one by one

T = "SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ts), {})"
AGG = ("SELECT k, window_start, window_end, count(*) FROM TUMBLE(TABLE t PARTITION BY k, DESCRIPTOR(ts), "
       "INTERVAL 1 MINUTE) GROUP BY k, window_start, window_end {}")
EXPLICIT_SCHEMA = {"t": {"k": "string", "ts": "timestamp", "ms": "bigint", "pos": "bigint"}}


@pytest.mark.parametrize(
    "sql, error, message, line, column, text",
    [
        # Each of these raised OverflowError, ValueError or AttributeError, or a SqlwinError without a place.
        (T.format("INTERVAL 1e308 MINUTES"), SqlwinValidationError, "SIZE INTERVAL 1e308 MINUTES is too long", 1, 47,
         "INTERVAL 1e308 MINUTES"),
        (T.format("INTERVAL 99999999999999999999 DAYS"), SqlwinValidationError, "fit in 64-bit microseconds", 1, 47,
         "INTERVAL 99999999999999999999 DAYS"),
        (T.format("INTERVAL 106751992 DAYS"), SqlwinValidationError, "is too long", 1, 47, None),
        (T.format("INTERVAL NaN SECONDS"), SqlwinValidationError, "its amount must be a number", 1, 47, None),
        (T.format("INTERVAL Infinity SECONDS"), SqlwinValidationError, "its amount must be a number", 1, 47, None),
        (T.format("INTERVAL k MINUTES"), SqlwinValidationError, "its amount must be a number", 1, 47, None),
        (T.format("INTERVAL '1 hour 30'"), SqlwinSyntaxError, "Cannot read the interval '1 hour 30'", 1, 56, None),
        (T.format("INTERVAL 30 30 MINUTES"), SqlwinValidationError, "Cannot read the interval", 1, 47, None),
        (T.format("INTERVAL 1 SECNDS"), SqlwinValidationError, "did you mean SECONDS?", 1, 47, None),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(ms), 1e308)", SqlwinValidationError, "is too long", 1, 47, "1e308"),
        ("SELECT * FROM TUMBLE(TABLE t, DESCRIPTOR(), INTERVAL 1 HOUR)", SqlwinSyntaxError,
         "Expected the time column inside DESCRIPTOR", 1, 42, ")"),
        ("SELECT * FROM FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)", SqlwinSyntaxError, "FROM twice", 1, 15,
         "FROM"),
        ("SELECT * FROM t ORDER BY , 4", SqlwinSyntaxError, "Expected an expression before ','", 1, 26, ","),
        ("SELECT k, , ts FROM t", SqlwinSyntaxError, "Expected an expression after ','", 1, 11, ","),
        ("SELECT * FROM COUNT_WINDOW(TABLE t ORDER BY , pos, 3)", SqlwinSyntaxError, "in the ORDER BY list", 1, 45,
         ","),
        ("SELECT * FROM TUMBLE(TABLE t PARTITION BY , DESCRIPTOR(ts), INTERVAL 1 HOUR)", SqlwinSyntaxError,
         "in the PARTITION BY list", 1, 43, ","),
        ("SELECT * FROM TUMBLE(TABLE t WITH (lateness_rule = , idle_clock = 'event_time'), DESCRIPTOR(ts), "
         "INTERVAL 1 HOUR)", SqlwinSyntaxError, "Expected a value after lateness_rule =", 1, 52, ","),
        ("SELECT * FROM COUNT_WINDOW(TABLE t ORDER BY pos, SIZE => 6, SLIDE => )", SqlwinSyntaxError,
         "Expected a value after SLIDE =>", 1, 70, ")"),
        ("SELECT * FROM TUMBLE(TABLE t WATERMARK ts DELAY OF INTERVAL -5 SECONDS, DESCRIPTOR(ts), INTERVAL 1 HOUR)",
         SqlwinValidationError, "DELAY must be zero or positive, got INTERVAL -5 SECONDS", 1, 52,
         "INTERVAL -5 SECONDS"),
        ("SELECT * FROM TUMBLE(TABLE t WITH (idle_timeout = INTERVAL 1e20 MINUTES), DESCRIPTOR(ms), INTERVAL 1 HOUR)",
         SqlwinValidationError, "idle_timeout INTERVAL 1e20 MINUTES is too long", 1, 51, None),
        (AGG.format("EMIT EARLY EVERY 1e308 ROWS"), SqlwinValidationError, "positive whole number of rows", 1, 171,
         "1e308"),
        (AGG.format("EMIT ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1.5 ROWS"), SqlwinValidationError,
         "positive whole number of rows", 1, 203, "1.5"),
        ("SELECT * FROM COUNT_WINDOW(TABLE t ORDER BY pos, 99999999999)", SqlwinValidationError, "too large", 1, 50,
         None),
        # Unterminated strings and comments, the empty query, a second statement: placed too.
        ("SELECT k,\n  'abc FROM t", SqlwinSyntaxError, "Unterminated string literal", 2, 3, "'abc FROM t"),
        ("SELECT `k FROM t", SqlwinSyntaxError, "Unterminated quoted name", 1, 8, None),
        ("SELECT k FROM t\n/* GROUP BY k", SqlwinSyntaxError, "Unterminated comment", 2, 1, "/* GROUP BY k"),
        ("SELECT k FROM t /* a /* nested */ comment", SqlwinSyntaxError, "Unterminated comment", 1, 17, None),
        ("  -- nothing but a comment", SqlwinSyntaxError, "The query is empty", 1, 1, None),
        ("SELECT 1;\nSELECT 2", SqlwinSyntaxError, "Expected one statement, found 2", 2, 1, "SELECT"),
        # Misspelled keywords read as what they are.
        ("SELEC * FROM ev", SqlwinSyntaxError, "'SELEC' cannot start a statement: did you mean SELECT?", 1, 1,
         "SELEC"),
        ("SELEC", SqlwinSyntaxError, "'SELEC' cannot start a statement: did you mean SELECT?", 1, 1, "SELEC"),
        ("SELECT * FORM ev", SqlwinSyntaxError, "did you mean FROM instead of 'FORM'?", 1, 15, "ev"),
        ("SELECT * FROM TUMBEL(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)", SqlwinSyntaxError,
         "did you mean TUMBLE instead of 'TUMBEL'?", 1, 28, None),
        ("SELECT k FROM t WHERE", SqlwinSyntaxError, "WHERE is incomplete, found the end of the query", 1, 17, None),
    ],
)
def test_each_crash_class_is_a_positioned_error(sql, error, message, line, column, text):
    with pytest.raises(error) as caught:
        build_plan(sql, EXPLICIT_SCHEMA.get)
    err = caught.value
    assert message in err.message
    assert (err.position.line, err.position.column) == (line, column), str(err)
    if text is not None:
        assert err.position.text == text
    assert err.hint and not getattr(err, "internal", None)
    assert "Required keyword" not in str(err) and "<class" not in str(err) and "<Token" not in str(err)


def test_durations_up_to_64_bit_microseconds_are_exact():
    from sqlwin.sql.plan import MAX_MICROS, Tumble

    days = MAX_MICROS // 86_400_000_000
    assert build_plan(T.format(f"INTERVAL {days} DAYS"), EXPLICIT_SCHEMA.get).windows[0].windower == \
        Tumble(days * 86_400_000_000)
    assert build_plan(T.format("INTERVAL 9007199254740993 MICROSECONDS"),
                      EXPLICIT_SCHEMA.get).windows[0].windower == Tumble(9007199254740993)  # beyond a float's 2**53
    # An alignment instant is read to the microsecond (no float in between).
    offset = build_plan(T.format("INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00.000001'"),
                        EXPLICIT_SCHEMA.get).windows[0].windower.offset
    assert offset == 1


# --------------------------------------------------------------------------- the fuzz


def test_the_corpus_parses():
    assert len(QUERIES) >= 80
    for query in QUERIES:
        assert outcome(query)[0] in ("ok", "error"), query


@settings(max_examples=EXAMPLES, derandomize=not os.environ.get("SQLWIN_FUZZ_SEED"), database=None, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(query=st.sampled_from(QUERIES), data=st.data())
def test_mutated_queries_fail_only_with_a_positioned_sqlwin_error(query, data):
    sql = mutate(query, _HypothesisDraw(data))
    result, seconds = outcome(sql)
    assert result in ("ok", "error"), f"{result}\nquery:\n{sql}"
    assert seconds < SLOWEST_ALLOWED, f"{seconds:.2f} s for\n{sql}"


@pytest.mark.skipif(not LONG_RUN, reason="long run: SQLWIN_FUZZ_EXAMPLES=N")
def test_census_of_mutated_queries():
    rng = random.Random(int(os.environ.get("SQLWIN_FUZZ_SEED") or 0))
    draw = _RandomDraw(rng)
    counts: collections.Counter[str] = collections.Counter()
    crashes: collections.Counter[str] = collections.Counter()
    samples: dict[str, str] = {}
    slowest = (0.0, "")
    for _ in range(LONG_RUN):
        sql = mutate(rng.choice(QUERIES), draw)
        result, seconds = outcome(sql)
        slowest = max(slowest, (seconds, sql))
        counts["ok" if result == "ok" else "error" if result == "error" else "crash"] += 1
        if result not in ("ok", "error"):
            crashes[_crash_class(result)] += 1
            samples.setdefault(_crash_class(result), sql)
    print(f"\n{LONG_RUN} mutated queries: {counts['ok']} planned, {counts['error']} positioned SqlwinErrors, "
          f"{counts['crash']} crashes; slowest call {slowest[0]:.3f} s")
    for crash, n in crashes.most_common():
        print(f"  {n:5d}  {crash}\n         e.g. {samples[crash]!r}")
    assert slowest[0] < SLOWEST_ALLOWED, slowest[1]
    assert not crashes

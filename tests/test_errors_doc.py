"""docs/errors.md is checked: every entry's trigger runs and fails with the message the page shows.

The page's form (its "How this page is checked" section says the same for its readers):

- An entry is a `### ` heading and what follows it up to the next heading.
- Its trigger is its first fenced block marked `sql`, `python` or `console`:
  - `sql`: statements separated by `;`; all but the last run with `spark.sql` (CREATE TEMP VIEW ...),
    the last through `sqlwin.attach(spark).sql(...)` (and `.collect()` when that returns). The next
    block marked `text` is what the user sees: `ClassName: message`, as Python prints an uncaught
    exception. A sqlwin error raised while planning must come out of `.explain(...)` too, the same.
  - `python`: run with `spark`, `sw` (= sqlwin.attach(spark)), `sqlwin` and `tmp` (an empty
    directory) in scope; it must raise. The next `text` block as for `sql`.
  - `console`: a shell transcript run in a scratch directory holding a copy of `sql_examples/`.
    `$ sqlwin ...` runs `sqlwin.cli.main([...])` in this process (a heredoc becomes its standard
    input), and the lines up to the next `$ ` are its standard error; `$ echo $?` is followed by
    the exit status; any other `$ ` command (with its heredoc) runs in bash, to prepare files.
    A line "Raised as `ClassName`." names the exception behind the message.
- A `text` line ending in `...` is the start of the actual line; a line `...` alone stands for any
  number of lines. Every other line must be the actual one. `{tmp}` in a `python` entry's message stands for
  its `tmp` directory.
- An entry with a line "Checked by `tests/FILE.py::test_name`" needs a running stream or a
  cluster: its trigger does not run here, and the named test must exist.

Every message must also be clean: no Python traceback, no JVM stack, no internal `__` name.
The tables every `sql` and `python` entry can use come from the `sql` block of the section
"The tables the examples use"; they live in a Spark session of their own (spark.newSession()).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shlex
import shutil
import subprocess
import sys
import typing as t
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "errors.md"
SETUP_SECTION = "The tables the examples use"
RUNNABLE = ("sql", "python", "console")

UNCLEAN = [
    (re.compile(r"Traceback \(most recent call last\)"), "a Python traceback"),
    (re.compile(r"JVM stacktrace|^\s+at [\w$.]+\(.*\)$|\bat org\.apache\.spark\.", re.M), "a JVM stack"),
    (re.compile(r"(?<![\w`'\"])__[A-Za-z]\w*"), "an internal __ name"),
    (re.compile(r"\bsqlglot\b|<class '"), "sqlwin's insides"),
]


# --------------------------------------------------------------------------- the page


@dataclass
class Block:
    lang: str
    text: str
    line: int  # of the opening fence, 1-based


@dataclass
class Entry:
    title: str
    section: str
    line: int
    blocks: list[Block] = field(default_factory=list)
    prose: list[str] = field(default_factory=list)

    @property
    def trigger(self) -> Block | None:
        return next((b for b in self.blocks if b.lang in RUNNABLE), None)

    @property
    def expected(self) -> Block | None:
        trigger = self.trigger
        after = self.blocks[self.blocks.index(trigger) + 1:] if trigger else self.blocks
        return next((b for b in after if b.lang == "text"), None)

    @property
    def checked_by(self) -> tuple[str, str] | None:
        for line in self.prose:
            match = re.search(r"Checked by `(tests/[\w/]+\.py)::(\w+)`", line)
            if match:
                return match.group(1), match.group(2)
        return None

    @property
    def raised_as(self) -> str | None:
        for line in self.prose:
            match = re.search(r"Raised as `(\w+)`", line)
            if match:
                return match.group(1)
        return None

    @property
    def id(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")


def parse(text: str) -> tuple[str, list[Entry]]:
    """The setup SQL and the entries of the page."""
    setup, entries = "", []
    section, entry = "", None
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^(```+)\s*(\w*)", line)
        if fence:
            ticks, lang = fence.group(1), fence.group(2)
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(ticks))
            block = Block(lang, "\n".join(lines[i + 1:end]), i + 1)
            if entry is not None:
                entry.blocks.append(block)
            elif section == SETUP_SECTION and lang == "sql" and not setup:
                setup = block.text
            i = end + 1
            continue
        if line.startswith("### "):
            entry = Entry(line[4:].strip(), section, i + 1)
            entries.append(entry)
        elif line.startswith(("# ", "## ")):
            section, entry = line.lstrip("#").strip(), None
        elif entry is not None:
            entry.prose.append(line)
        i += 1
    return setup, entries


def statements(sql: str) -> list[str]:
    """`;`-separated statements (a `;` ends a statement only at the end of a line)."""
    parts, current = [], []
    for line in sql.splitlines():
        current.append(line)
        if line.rstrip().endswith(";"):
            parts.append("\n".join(current).rstrip().rstrip(";"))
            current = []
    if "\n".join(current).strip():
        parts.append("\n".join(current))
    return [p.strip("\n") for p in parts if p.strip()]


def expected_lines(block: Block) -> list[str]:
    return block.text.splitlines()


def mismatch(expected: list[str], actual: str) -> str | None:
    """Why `actual` is not what the page shows (None when it is). A line `...` stands for any lines."""
    lines = [line.rstrip() for line in actual.rstrip("\n").splitlines()]

    def same(want: str, got: str) -> bool:
        return got.startswith(want[:-3]) if want.endswith("...") else got == want.rstrip()

    def match(i: int, j: int) -> str | None:
        while i < len(expected):
            if expected[i] == "...":
                if i + 1 == len(expected):
                    return None
                tries = [match(i + 1, k) for k in range(j, len(lines)) if same(expected[i + 1], lines[k])]
                return None if None in tries else f"nothing after line {j} matches {expected[i + 1]!r}"
            if j >= len(lines):
                return f"the message has {len(lines)} lines, the page shows more: {expected[i]!r}"
            if not same(expected[i], lines[j]):
                return f"line {j + 1}:\n  page:   {expected[i]!r}\n  actual: {lines[j]!r}"
            i, j = i + 1, j + 1
        if j < len(lines):
            return f"the message has {len(lines)} lines, the page shows {j} (a last line ... shows fewer)"
        return None

    return match(0, 0)


def unclean(message: str) -> list[str]:
    return [what for pattern, what in UNCLEAN if pattern.search(message)]


# --------------------------------------------------------------------------- running an entry


@dataclass
class Outcome:
    kind: str | None  # the exception's class name (None: nothing raised)
    message: str  # what the user sees
    code: int | None = None  # the command's exit status (console)
    explain: tuple[str, str] | None = None  # (class, message) of .explain(...) when it was asked
    stdout: str = ""  # what the command printed on standard output (console)


def run_api(entry: Entry, sw, spark, tmp: Path) -> Outcome:
    trigger = entry.trigger
    if trigger.lang == "sql":
        *setup, query = statements(trigger.text)
        for statement in setup:
            spark.sql(statement)
        planned = False
        try:
            result = sw.sql(query)
            planned = True
            result.collect()
        except Exception as err:  # noqa: BLE001 - the entry's error is what we look at
            from sqlwin.errors import SqlwinError

            outcome = Outcome(type(err).__name__, f"{type(err).__name__}: {err}")
            if not planned and isinstance(err, SqlwinError) and not err.message.startswith("Spark cannot run"):
                try:
                    sw.explain(query)
                    outcome.explain = ("(nothing raised)", "")
                except Exception as again:  # noqa: BLE001
                    outcome.explain = (type(again).__name__, f"{type(again).__name__}: {again}")
            return outcome
        return Outcome(None, "")
    import sqlwin

    scope = {"spark": spark, "sw": sw, "sqlwin": sqlwin, "tmp": str(tmp)}
    try:
        exec(compile(trigger.text, f"docs/errors.md:{trigger.line}", "exec"), scope)
    except Exception as err:  # noqa: BLE001
        return Outcome(type(err).__name__, f"{type(err).__name__}: {err}")
    return Outcome(None, "")


@dataclass
class Step:
    command: str  # the command line, without its heredoc
    stdin: str | None  # its heredoc
    output: list[str]  # the lines the page shows after it


def transcript(text: str) -> list[Step]:
    steps: list[Step] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            if not steps:
                raise ValueError(f"console block: output before any command: {line!r}")
            steps[-1].output.append(line)
            i += 1
            continue
        command, stdin = line[2:], None
        heredoc = re.search(r"<<-?\s*'?(\w+)'?", command)
        if heredoc:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == heredoc.group(1))
            stdin = "\n".join(lines[i + 1:end]) + "\n"
            command = command[:heredoc.start()].rstrip()
            i = end
        steps.append(Step(command, stdin, []))
        i += 1
    return steps


def run_console(entry: Entry, scratch: Path, captured: t.Callable[[], tuple[str, str]],
                raised: list[type]) -> list[tuple[Step, Outcome]]:
    """Every `sqlwin` step of the transcript with what it did; the `echo $?` steps give their status."""
    from sqlwin.cli import main

    results: list[tuple[Step, Outcome]] = []
    last: Outcome | None = None
    for step in transcript(entry.trigger.text):
        if step.command.strip() == "echo $?":
            results.append((step, Outcome(None, "", last.code if last else None)))
            continue
        if not step.command.startswith("sqlwin "):
            done = subprocess.run(["bash", "-c", step.command], input=step.stdin, cwd=scratch, text=True,
                                  capture_output=True, timeout=60)
            assert done.returncode == 0, f"{entry.title}: `{step.command}` failed: {done.stderr}"
            continue
        argv = shlex.split(step.command)[1:]
        raised.clear()
        captured()
        stdin = sys.stdin
        sys.stdin = io.StringIO(step.stdin or "")
        try:
            code = main(argv)
        except SystemExit as exit_:  # argparse refuses the command line
            code = exit_.code
        finally:
            sys.stdin = stdin
        out, err = captured()
        kind = raised[0].__name__ if raised else None
        last = Outcome(kind, err, code, stdout=out)
        results.append((step, last))
    return results


@contextlib.contextmanager
def recording_cli_errors(raised: list[type]):
    """Record the class of the error the command reports (sqlwin.cli._report prints it)."""
    import sqlwin.cli as cli
    from sqlwin.errors import SqlwinError, SqlwinRuntimeError

    report = cli._report

    def recording(err, debug=False):
        raised.append(type(err) if isinstance(err, SqlwinError) else SqlwinRuntimeError)
        return report(err, debug)

    cli._report = recording
    try:
        yield
    finally:
        cli._report = report


def scratch_directory(base: Path) -> Path:
    scratch = base / "scratch"
    scratch.mkdir()
    shutil.copytree(ROOT / "sql_examples", scratch / "sql_examples")
    return scratch


# --------------------------------------------------------------------------- the tests

SETUP, ENTRIES = parse(DOC.read_text())


def test_the_page_has_entries_in_every_group():
    sections = {e.section for e in ENTRIES}
    assert SETUP, f"no sql block under '{SETUP_SECTION}'"
    assert len(ENTRIES) >= 60 and len(sections) >= 6, (len(ENTRIES), sections)
    titles = [e.title for e in ENTRIES]
    assert len(titles) == len(set(titles)), "two entries share a title"
    for entry in ENTRIES:
        assert entry.trigger or entry.checked_by, f"{entry.title}: no trigger and no 'Checked by'"
        assert entry.expected or entry.trigger.lang == "console", f"{entry.title}: no text block with the message"
        assert any(line.startswith("What to do:") for line in entry.prose), f"{entry.title}: no 'What to do:'"


@pytest.fixture(scope="module")
def doc_session(spark):
    """A session of its own: the page's temp views never meet another test's."""
    import sqlwin

    session = spark.newSession()
    for statement in statements(SETUP):
        session.sql(statement)
    return session, sqlwin.attach(session)


def _assert_clean(title: str, message: str) -> None:
    problems = unclean(message)
    assert not problems, f"{title}: the user sees {', '.join(problems)}:\n{message}"


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.trigger and e.trigger.lang in ("sql", "python")
                                   and not e.checked_by], ids=lambda e: e.id)
def test_an_api_entry_fails_as_the_page_says(entry, doc_session, tmp_path):
    session, sw = doc_session
    outcome = run_api(entry, sw, session, tmp_path)
    assert outcome.kind is not None, f"{entry.title}: nothing was raised"
    problem = mismatch(expected_lines(entry.expected), outcome.message.replace(str(tmp_path), "{tmp}"))
    assert problem is None, f"{entry.title} (docs/errors.md:{entry.line}): {problem}\nactual:\n{outcome.message}"
    _assert_clean(entry.title, outcome.message)
    if outcome.explain is not None:
        assert outcome.explain[1] == outcome.message, \
            f"{entry.title}: explain raised otherwise than sql:\n{outcome.explain[1] or outcome.explain[0]}"


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.trigger and e.trigger.lang == "console"
                                   and not e.checked_by], ids=lambda e: e.id)
def test_a_command_line_entry_fails_as_the_page_says(entry, spark, tmp_path, capsys, monkeypatch):
    scratch = scratch_directory(tmp_path)
    monkeypatch.chdir(scratch)
    raised: list[type] = []
    with recording_cli_errors(raised):
        results = run_console(entry, scratch, capsys.readouterr, raised)
    assert results, f"{entry.title}: the transcript runs no sqlwin command"
    for step, outcome in results:
        if step.command.strip() == "echo $?":
            assert step.output and step.output[0].strip() == str(outcome.code), \
                f"{entry.title}: exit status {outcome.code}, the page says {step.output}"
            continue
        problem = mismatch(step.output, outcome.message)
        assert problem is None, f"{entry.title} (docs/errors.md:{entry.line}): {problem}\nactual:\n{outcome.message}"
        assert outcome.stdout == "", f"{entry.title}: printed on standard output: {outcome.stdout!r}"
        if "--debug" not in shlex.split(step.command):
            _assert_clean(entry.title, outcome.message)
    if entry.raised_as:
        kinds = [o.kind for s, o in results if o.kind]
        assert kinds and kinds[-1] == entry.raised_as, f"{entry.title}: raised {kinds}, the page says {entry.raised_as}"


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.checked_by], ids=lambda e: e.id)
def test_an_entry_checked_elsewhere_names_a_test_that_exists(entry):
    path, name = entry.checked_by
    source = (ROOT / path).read_text()
    functions = {n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)}
    assert name in functions, f"{entry.title}: {path} has no test {name}"
    assert re.match(r"\w+(Error|Exception): ", entry.expected.text), f"{entry.title}: the message names no class"


def test_debug_prints_the_traceback_and_sparks_jvm_stack(spark, tmp_path, capsys, monkeypatch):
    """Without --debug a message and no traceback; with it the Python traceback and Spark's JVM stack."""
    from sqlwin.cli import main

    query = tmp_path / "q.sql"
    query.write_text("SELECT user_id, window_start, count(*) AS n\n"
                     "FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 10 MINUTES)\n"
                     "GROUP BY user_id, window_start, window_end HAVING nn > 1\n")
    clicks = f"clicks={ROOT / 'sql_examples' / 'data' / 'clicks.csv'}"
    capsys.readouterr()
    assert main(["run", str(query), "--table", clicks]) == 2
    plain = capsys.readouterr().err
    assert plain.startswith("sqlwin: Spark cannot run the query: [UNRESOLVED_COLUMN") and not unclean(plain), plain
    assert main(["run", str(query), "--table", clicks, "--debug"]) == 2
    debug = capsys.readouterr().err
    assert debug.startswith(plain), debug[:2000]
    assert "Traceback (most recent call last)" in debug and "sqlwin.errors.SqlwinValidationError" in debug
    assert "AnalysisException" in debug and "\tat org.apache.spark." in debug, debug[:3000]
    # A failure while Spark runs (exit 1) keeps its original exception for the report too.
    monkeypatch.chdir(tmp_path)
    script = "SELECT CAST('x' AS INT);"
    assert main(["sql", "-e", script]) == 1
    plain = capsys.readouterr().err
    assert "Spark failed while running the query: [CAST_INVALID_INPUT]" in plain and not unclean(plain), plain
    assert main(["sql", "-e", script, "--debug"]) == 1
    debug = capsys.readouterr().err
    assert debug.startswith(plain) and "NumberFormatException" in debug and "\tat org.apache.spark." in debug, debug[:3000]

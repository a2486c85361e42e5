"""`sqlwin sql`: a shell for spark-sql users, in sqlwin's dialect.

    sqlwin sql -e "SELECT ...; SELECT ..."       statements given on the command line
    sqlwin sql -f script.sql                     statements in a file
    sqlwin sql                                   an interactive prompt (a terminal) or a script on stdin

Statements end at `;` (outside quotes, backquotes and comments) and run one after the other
through `sqlwin.attach(spark).sql(...)`: window table functions, WATERMARK and EMIT where a query
has them, and plain Spark SQL (SET, CREATE TEMP VIEW ... USING parquet, SHOW TABLES, ...) passed
to Spark as it is. Results print as spark-sql prints them: one line per row, values separated by
tabs, NULL as NULL, nested values as JSON (header line with `spark.sql.cli.print.header=true`),
then `Time taken: ... seconds, Fetched N row(s)` on standard error.

Ctrl-C while a statement runs cancels its Spark jobs (a job tag of its own) and returns to the
prompt; -i FILE runs first; -v prints each statement before its result. Both forms of the window
functions run: sqlwin's own, and Spark's registered table functions' (registered at start).

A script stops at its first failing statement (exit 2 for a wrong statement, 1 when Spark fails
while running one); the interactive prompt prints the error and goes on. An error's line and
column are those of the script or of the lines typed at the prompt, not of the statement alone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
import typing as t
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlwin.cli_errors import print_debug, runtime_error
from sqlwin.errors import Position, SqlwinError
from sqlwin.sql import scan

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.api import Sqlwin

PROMPT = "sqlwin> "
CONTINUATION = "     > "
HISTORY_LENGTH = 1000
EXIT_COMMANDS = {"exit", "quit"}


# --------------------------------------------------------------------------- statements


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its text (no leading whitespace or comments, no `;`) and where
    its first character is in the script (1-based line and column)."""

    text: str
    line: int
    column: int


def split_statements(script: str) -> list[Statement]:
    """The statements of `script`, split at each `;` that is not inside a quoted string, a
    backquoted name or a comment (`-- ...`, `/* ... */`, nested as Spark nests them). The text
    after the last `;` is a statement too, as spark-sql runs it."""
    found = []
    for start, end in scan.statements(script):
        line = script.count("\n", 0, start) + 1
        column = start - (script.rfind("\n", 0, start) + 1) + 1
        found.append(Statement(script[start:end].rstrip(), line, column))
    return found


def statement_complete(text: str) -> bool:
    """Whether the lines typed so far end a statement: a `;` outside quotes and comments, and
    nothing but whitespace or comments after it."""
    return scan.ends_statement(text)


def one_line(text: str) -> str:
    """A statement typed over several lines as one history entry: line comments dropped, lines
    joined with a space, so recalling it gives a runnable line."""
    if "\n" not in text:
        return text
    out: list[str] = []
    for span in scan.spans(text):
        piece = text[span.start:span.end]
        if span.kind == scan.COMMENT and piece.startswith("--"):
            continue
        out.append(piece if span.kind in (scan.STRING, scan.IDENTIFIER) else piece.replace("\n", " "))
    return "".join(out).strip()


# --------------------------------------------------------------------------- results as text


def string_rows(frame: "DataFrame", limit: int | None = None) -> tuple[list[str], list[list[str | None]], bool]:
    """(column names, rows of text, whether there were more than `limit`) of a DataFrame.

    Spark turns each value into text, as spark-sql shows it: numbers, booleans, dates and
    timestamps (in the session time zone) as Spark casts them to STRING; arrays, maps and structs
    as JSON; NULL as None. Columns are addressed by position, so duplicate names are fine.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, MapType, StructType

    columns = list(frame.columns)
    if not columns:
        return [], [], False
    fields = frame.schema.fields
    positional = frame.toDF(*[f"c{i}" for i in range(len(columns))])
    texts = []
    for i, field in enumerate(fields):
        column = F.col(f"c{i}")
        nested = isinstance(field.dataType, (ArrayType, MapType, StructType))
        texts.append((F.to_json(column) if nested else column.cast("string")).alias(f"c{i}"))
    projected = positional.select(*texts)
    if limit is not None:
        projected = projected.limit(limit + 1)
    rows = [list(row) for row in projected.collect()]
    more = limit is not None and len(rows) > limit
    return columns, rows[:limit] if more else rows, more


# --------------------------------------------------------------------------- running


class Shell:
    """Runs statements against one sqlwin-attached SparkSession, printing as spark-sql does."""

    def __init__(self, sw: "Sqlwin", silent: bool = False, out: t.TextIO | None = None,
                 err: t.TextIO | None = None, debug: bool = False, verbose: bool = False):
        self.sw = sw
        self.silent = silent
        self.verbose = verbose  # -v: each statement printed before its result, as spark-sql -v
        self.debug = debug  # --debug: after each error at the prompt, how it came about
        self.out = out or sys.stdout
        self.err = err or sys.stderr

    def execute(self, statement: str) -> int:
        """Run one statement and print its rows; the number of rows. Ctrl-C while it runs cancels
        its Spark jobs and raises KeyboardInterrupt (see `cancellable`)."""
        if self.verbose:
            print(statement, file=self.out, flush=True)
        started = time.monotonic()
        columns, rows = cancellable(self.sw.spark, lambda: self._fetch(statement))
        count = 0
        if columns and self._print_header():
            print("\t".join(columns), file=self.out)
        for row in rows:
            print("\t".join("NULL" if v is None else v for v in row), file=self.out)
            count += 1
        self.out.flush()
        if not self.silent:
            taken = f"Time taken: {time.monotonic() - started:.3f} seconds"
            print(taken + (f", Fetched {count} row(s)" if count else ""), file=self.err)
            self.err.flush()
        return count

    def _fetch(self, statement: str) -> tuple[list[str], list[list[str | None]]]:
        frame = self.sw.sql(statement)  # Spark SQL without sqlwin's windows runs as written
        try:
            columns, rows, _ = string_rows(frame)
        except SqlwinError:
            raise
        except Exception as err:  # noqa: BLE001 - Spark failed while running a valid statement
            raise runtime_error(err) from None
        return columns, rows

    def _print_header(self) -> bool:
        try:
            value = self.sw.spark.conf.get("spark.sql.cli.print.header", "false")
        except Exception:  # noqa: BLE001 - a conf the session cannot read is not set
            return False
        return str(value).strip().lower() == "true"

    def run_script(self, script: str) -> None:
        """Run every statement of `script`, stopping at the first error (raised, placed in `script`)."""
        for statement in split_statements(script):
            self.run_statement(statement, script)

    def run_statement(self, statement: Statement, script: str) -> int:
        try:
            return self.execute(statement.text)
        except SqlwinError as err:
            raise place(err, statement, script) from None

    # -- the prompt --------------------------------------------------------------

    def interactive(self, history: Path) -> int:
        """Read statements at a prompt until `exit;`, `quit;` or end of input (Ctrl-D)."""
        readline = _readline(history)
        lines: list[str] = []
        try:
            while True:
                try:
                    if self._read_and_run(lines, readline, history) == "exit":
                        return 0
                except EOFError:
                    print(file=self.out)
                    return 0
                except KeyboardInterrupt:  # Ctrl-C drops what was typed (a statement's own is caught in _run_typed)
                    print(file=self.out)
                    lines.clear()
        finally:
            if readline:
                _save_history(readline, history)

    def _read_and_run(self, lines: list[str], readline, history: Path) -> str | None:
        """Read a line at the prompt; run the statements it completes. `lines`: typed so far."""
        line = input(CONTINUATION if lines else PROMPT)
        if not lines and line.strip().rstrip(";").strip().lower() in EXIT_COMMANDS:
            return "exit"
        lines.append(line)
        text = "\n".join(lines)
        if not scan.statements(text) and scan.unclosed(text) is None:
            lines.clear()  # only blank lines or comments so far
            return None
        if not scan.ends_statement(text):
            return None
        lines.clear()
        if readline:
            readline.add_history(one_line(text.strip()))
            _save_history(readline, history)
        return self._run_typed(text)

    def _run_typed(self, text: str) -> str | None:
        """Run the statements of what was typed; an error is printed, the rest skipped."""
        for statement in split_statements(text):
            if statement.text.strip().lower() in EXIT_COMMANDS:
                return "exit"
            try:
                self.run_statement(statement, text)
            except KeyboardInterrupt:
                print("sqlwin: interrupted; the statement's Spark jobs are cancelled", file=self.err)
                return None
            except Exception as err:  # noqa: BLE001 - the prompt survives any failure
                shown = err if isinstance(err, SqlwinError) else runtime_error(err)
                print(f"sqlwin: {shown}", file=self.err)
                if self.debug:
                    print_debug(err, self.err)
                return None
            finally:
                self.err.flush()
        return None


# --------------------------------------------------------------------------- Ctrl-C

CANCEL_WAIT_S = 3.0  # after Ctrl-C: how long the prompt waits at most for the statement's thread to end
_CANCEL_EVERY_S = 0.25  # Spark is asked again at this pace until it has (a job may start after the first request)


def cancellable(spark, work: t.Callable[[], t.Any]) -> t.Any:
    """`work()` -- a statement's planning and Spark jobs -- in a thread of its own with its jobs
    tagged, while this thread only waits: a Ctrl-C (KeyboardInterrupt) never lands inside a py4j
    call. (It used to: py4j's connection was left mid-answer, 45 lines of py4j tracebacks, and the
    job ran on in the JVM for minutes.) On Ctrl-C the tag's jobs are cancelled
    (SparkContext.cancelJobsWithTag; over Spark Connect SparkSession.interruptTag), the thread is given
    CANCEL_WAIT_S to end, and KeyboardInterrupt is raised. Off the main thread (no signal reaches
    it) `work` runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        return work()
    tag = f"sqlwin-shell-{uuid.uuid4().hex[:12]}"
    add_tag, remove_tag, cancel = _job_tags(spark)
    outcome: dict[str, t.Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            add_tag(tag)  # the tags are this thread's: only the statement's jobs carry it
            try:
                outcome["value"] = work()
            finally:
                remove_tag(tag)
        except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = err
        finally:
            done.set()

    threading.Thread(target=run, name="sqlwin-statement", daemon=True).start()
    try:
        # A signal interrupts this wait, never a py4j call. (Not Thread.join: a KeyboardInterrupt in
        # it marks a running thread as ended, Python 3.11's bpo-45274 handling.)
        while not done.wait(0.1):
            pass
    except KeyboardInterrupt:
        _cancel(cancel, tag, done)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _job_tags(spark) -> tuple[t.Callable[[str], None], t.Callable[[str], None], t.Callable[[str], t.Any]]:
    """How to tag the calling thread's Spark jobs, untag them, and cancel the jobs of a tag.
    Classic Spark: the SparkContext's job tags, tasks interrupted on cancel (a task blocked in a
    sleep or a read ends too). SparkSession.addTag / interruptTag cancel nothing there (measured
    on Spark 4: interruptTag found no operation, the job ran on); over Spark Connect they do."""
    from sqlwin.spark.connect import is_connect

    if is_connect(spark):
        return spark.addTag, spark.removeTag, spark.interruptTag
    context = spark.sparkContext

    def add(tag: str) -> None:
        context.addJobTag(tag)
        context.setInterruptOnCancel(True)  # a property of this thread, which runs one statement

    return add, context.removeJobTag, context.cancelJobsWithTag


def _cancel(cancel: t.Callable[[str], t.Any], tag: str, done: threading.Event) -> None:
    """Cancel the tag's jobs until the statement is `done`. The prompt waits CANCEL_WAIT_S at most
    (more Ctrl-C meanwhile are ignored, so the cancelling calls are not interrupted in turn); a
    thread of its own goes on cancelling after that, so a job the statement starts later -- its
    planning was under way at the Ctrl-C -- is cancelled too and does not hold Spark's cores."""

    def keep_cancelling() -> None:
        while not done.is_set():
            with contextlib.suppress(Exception):  # a session that is gone has no jobs to cancel
                cancel(tag)
            done.wait(_CANCEL_EVERY_S)

    with _sigint(signal.SIG_IGN):
        threading.Thread(target=keep_cancelling, name="sqlwin-cancel", daemon=True).start()
        done.wait(CANCEL_WAIT_S)


@contextlib.contextmanager
def _sigint(handler):
    """SIGINT handled by `handler` within the block (in the main thread; elsewhere nothing changes).
    The shell replaces PySpark's handler, which calls into the JVM from inside the signal handler --
    in the middle of whatever py4j call the main thread was making -- and hung the shell on a
    second Ctrl-C."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def place(err: SqlwinError, statement: Statement, script: str) -> SqlwinError:
    """The error with its position moved from the statement into the script it came from (a
    statement without a position: the statement's start), and the script's line shown."""
    position = err.position
    if position is None:
        first = statement.text.split(None, 1)[0] if statement.text.split() else ""
        moved = Position(statement.line, statement.column, first)
    else:
        column = position.column + (statement.column - 1 if position.line == 1 else 0)
        moved = Position(statement.line + position.line - 1, column, position.text)
    err.position = moved
    err.query = script
    err.args = (err._render(),)
    return err


def check_script(script: str) -> None:
    """Each statement checked as far as it can be without Spark (sqlwin.sql.check), placed in the script."""
    from sqlwin.sql.check import check_query

    for statement in split_statements(script):
        try:
            check_query(statement.text)
        except SqlwinError as err:
            raise place(err, statement, script) from None


def history_path() -> Path:
    """$SQLWIN_HISTORY, or ~/.sqlwin_history."""
    configured = os.environ.get("SQLWIN_HISTORY")
    return Path(configured).expanduser() if configured else Path.home() / ".sqlwin_history"


def _readline(history: Path):
    """GNU readline (or libedit) with the history file loaded, or None where there is none."""
    try:
        import readline
    except ImportError:
        return None
    if hasattr(readline, "set_auto_history"):
        readline.set_auto_history(False)  # one entry per statement, not per line typed
    readline.set_history_length(HISTORY_LENGTH)
    try:
        readline.read_history_file(str(history))
    except (FileNotFoundError, OSError):
        pass
    return readline


def _save_history(readline, history: Path) -> None:
    try:
        readline.write_history_file(str(history))
    except OSError:
        pass  # an unwritable history file must not stop the shell


def run(sw_factory: t.Callable[[], "Sqlwin"], execute: str | None, file: str | None, silent: bool,
        debug: bool = False, init: str | None = None, verbose: bool = False) -> int:
    """`sqlwin sql`: -e, -f, a script on standard input, or the interactive prompt in a terminal.

    Errors of a script are raised (the command's main() prints them and chooses the exit status);
    the script is read before Spark starts, so an unreadable file costs nothing.
    """
    from sqlwin.errors import SqlwinUsageError

    # sqlglot says when it hands a statement it does not model (SET, SHOW ...) to Spark as it is.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    script: str | None = None
    if execute is not None:
        script = execute
    elif file is not None:
        try:
            script = Path(file).read_text() if file != "-" else sys.stdin.read()
        except OSError as err:
            raise SqlwinUsageError(f"Cannot read the SQL file {file}: {err.strerror}",
                                   hint="a path to a file of statements separated by ;") from None
    elif not sys.stdin.isatty():
        script = sys.stdin.read()
    init_script = None
    if init is not None:  # spark-sql's -i: run first, a failing statement stops the command as a script's does
        try:
            init_script = Path(init).read_text()
        except OSError as err:
            raise SqlwinUsageError(f"Cannot read the initialization file {init}: {err.strerror}",
                                   hint="-i a path to a file of statements separated by ;") from None
    for text in (init_script, script):
        if text is not None:
            check_script(text)  # before Spark starts: a misspelt statement costs a tenth of a second
    shell = Shell(sw_factory(), silent=silent, debug=debug, verbose=verbose)
    from sqlwin.spark.functions import register

    # Both flavours of the window functions: sqlwin's own, TUMBLE(TABLE t, DESCRIPTOR(ts), ...), and
    # Spark's registered table functions, tumble(TABLE(t), 'ts', ...) -- as in a spark-sql shell over a
    # session that ran sqlwin.register(spark) (docs/functions.md).
    register(shell.sw.spark)
    with _sigint(signal.default_int_handler):  # Ctrl-C: KeyboardInterrupt, raised where the shell waits
        if init_script is not None:
            shell.run_script(init_script)
        if script is not None:
            shell.run_script(script)
            return 0
        return shell.interactive(history_path())

"""The `%%sqlwin` magic for IPython and Jupyter: `%load_ext sqlwin`, then

    %%sqlwin -o clicks_per_user --limit 20
    SELECT user_id, window_start, count(*) AS clicks
    FROM TUMBLE(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL {size})
    GROUP BY user_id, window_start, window_end

runs the cell's statements (separated by `;`) through `sqlwin.attach(spark).sql(...)` and shows
the last one's result as a table; `{name}` in the cell is the notebook variable `name` (written
as text: quote strings yourself; `{{name}}` is the text `{name}`), and `-o NAME` keeps the
DataFrame in `NAME`.

    %%sqlwin --stream --source clicks=incoming/ --sink out/results --checkpoint out/ckpt -o live
    SELECT ... EMIT FINAL

starts the query as a stream (`sw.stream`) and shows its progress -- rows/s, watermark, open
windows, results, late rows -- in one display that updates itself until the stream stops:
`%sqlwin --stop live` (the stream's name: `--name`, else `-o`'s), or `live.stop()`.

The SparkSession is the active one (`SparkSession.getActiveSession()`), else `sqlwin.session()`.
Needs IPython: `pip install 'sqlwin[jupyter]'`.
"""

from __future__ import annotations

import argparse
import html
import itertools
import re
import shlex
import threading
import typing as t
from dataclasses import dataclass

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from sqlwin.cli import add_source_format, source_format
from sqlwin.errors import SqlwinError, SqlwinUsageError
from sqlwin.shell import Statement, place, split_statements, string_rows

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.api import Sqlwin
    from sqlwin.spark.streaming import StreamingWindowQuery

DEFAULT_LIMIT = 50
REFRESH_SECONDS = 0.5
_VARIABLE = re.compile(r"\{\{([A-Za-z_][\w.]*)\}\}|\{([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\}")


# --------------------------------------------------------------------------- the magic


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> t.NoReturn:
        raise UsageError(f"%%sqlwin: {message}\n{self.format_usage()}")


def _parser() -> _Parser:
    parser = _Parser(prog="%%sqlwin", add_help=False,
                     description="Run the cell's SQL (sqlwin's dialect) and show the result, or start it as a stream.")
    parser.add_argument("-h", "--help", action="store_true", help="show this help")
    parser.add_argument("-o", "--output", metavar="NAME",
                        help="keep the result DataFrame (with --stream: the stream's handle) in the variable NAME")
    parser.add_argument("--limit", type=int, default=DEFAULT_LIMIT, metavar="N",
                        help=f"rows to show (default {DEFAULT_LIMIT}; 0 shows none)")
    parser.add_argument("--explain", action="store_true", help="show the plan sqlwin chose instead of running")
    stream = parser.add_argument_group("streams")
    stream.add_argument("--stream", action="store_true", help="start the query as a stream and show its progress")
    stream.add_argument("--source", action="append", default=[], metavar="NAME=DIR",
                        help="the query's table NAME reads the files of DIR as a stream (or a variable holding "
                             "a streaming DataFrame); repeatable")
    add_source_format(stream)
    stream.add_argument("--sink", metavar="DIR", help="results as parquet, one batch_id=N directory per micro-batch")
    stream.add_argument("--late-sink", metavar="DIR", help="late and rejected rows (with LATE ROWS INTO)")
    stream.add_argument("--checkpoint", metavar="DIR", help="the stream's checkpoint (restart from it)")
    stream.add_argument("--max-files-per-trigger", type=int, metavar="N", help="files per micro-batch")
    stream.add_argument("--name", help="the stream's name for --stop (default: -o's NAME, else stream1, ...)")
    stream.add_argument("--stop", metavar="NAME", help="stop the stream NAME started here")
    return parser


@magics_class
class SqlwinMagics(Magics):
    """`%%sqlwin` (a cell of SQL) and `%sqlwin` (one line: options, then SQL)."""

    @line_cell_magic
    def sqlwin(self, line: str, cell: str | None = None):
        """Run SQL in sqlwin's dialect and show the result; or start it as a stream with live progress.

            %%sqlwin [-o NAME] [--limit N] [--explain]
            SELECT ... {python_variable} ...

            %%sqlwin --stream --source NAME=DIR [--source ...] --sink DIR --checkpoint DIR
                     [--late-sink DIR] [--source-format parquet|csv|json] [-o NAME] [--name NAME]
            SELECT ...

            %sqlwin --stop NAME

        `%%sqlwin --help` lists every option.
        """
        parser = _parser()
        if cell is None:
            options, query = _split_line(parser, line)
        else:
            options, query = shlex.split(line), cell
        args = parser.parse_args(options)
        if args.help:
            print(parser.format_help())
            return None
        # Errors are placed in the cell as the notebook shows it: the %%sqlwin line is its line 1.
        where = _Cell(f"%%sqlwin {line}\n{cell}", 1) if cell is not None else _Cell(query, 0)
        try:
            return self._run(args, query, where)
        except SqlwinError as err:
            raise _briefly(err) from None

    def _run(self, args: argparse.Namespace, query: str, where: "_Cell"):
        if args.stop:
            stop(args.stop)
            return None
        if not query.strip():
            raise UsageError("%%sqlwin: no SQL: write the query in the cell, below the %%sqlwin line")
        if where.offset:  # a cell; IPython has already expanded {name} on the magic's own line
            try:
                query = substitute(query, self.shell.user_ns)
            except SqlwinError as err:
                raise where.place(err, Statement(query, 1, 1)) from None
            where = _Cell(where.text.partition("\n")[0] + "\n" + query, 1)
        sw = _attached()
        if args.stream:
            try:
                return self._start_stream(sw, args, query)
            except SqlwinError as err:
                raise (where.place(err, Statement(query, 1, 1)) if err.position else err) from None
        statements = split_statements(query)
        if not statements:
            raise UsageError("%%sqlwin: no SQL statement in the cell (only comments or ;)")
        if args.explain:
            if len(statements) > 1:
                raise UsageError("%%sqlwin --explain: one statement per cell")
            explanation = str(sw.explain(statements[0].text))
            display({"text/plain": explanation,
                     "text/html": f"<pre>{html.escape(explanation)}</pre>"}, raw=True)
            return None
        frame = None
        for statement in statements:
            try:
                frame = sw.sql(statement.text)
            except SqlwinError as err:
                raise where.place(err, statement) from None
        if args.output:
            self.shell.user_ns[args.output] = frame
        if args.limit > 0 and frame is not None and frame.columns:
            try:
                columns, rows, more = string_rows(frame, args.limit)
            except SqlwinError:
                raise
            except Exception as err:  # noqa: BLE001 - Spark failed running a valid query
                from sqlwin.cli_errors import runtime_error

                raise runtime_error(err) from err
            display(table_bundle(columns, rows, more), raw=True)
        return None

    def _start_stream(self, sw: "Sqlwin", args: argparse.Namespace, query: str):
        name = args.name or args.output or _next_name()
        if name in _STREAMS:
            raise UsageError(f"%%sqlwin: a stream named {name} is running: %sqlwin --stop {name} first, "
                             "or --name another")
        missing = [flag for flag, value in (("--source", args.source), ("--sink", args.sink),
                                            ("--checkpoint", args.checkpoint)) if not value]
        if missing:
            raise UsageError(f"%%sqlwin --stream needs {', '.join(missing)}")
        sources: dict[str, t.Any] = {}
        for spec in args.source:
            table, sep, where = spec.partition("=")
            if not sep or not table or not where:
                raise UsageError(f"%%sqlwin: --source {spec} is not NAME=DIR")
            value = self.shell.user_ns.get(where) if where.isidentifier() else None
            sources[table] = value if getattr(value, "isStreaming", False) else where
        options = {"maxFilesPerTrigger": str(args.max_files_per_trigger)} if args.max_files_per_trigger else {}
        handle = sw.stream(query, sources=sources, sink=args.sink, checkpoint=args.checkpoint,
                           late_sink=args.late_sink, source_format=source_format(args),
                           source_options=options)
        if args.output:
            self.shell.user_ns[args.output] = handle
        live = LiveStream(name, handle)
        _STREAMS[name] = live
        live.start()
        return None


@dataclass(frozen=True)
class _Cell:
    """The text errors are placed in, and how many lines come before the SQL (the %%sqlwin line)."""

    text: str
    offset: int

    def place(self, err: SqlwinError, statement: Statement) -> SqlwinError:
        """`statement` (placed in the SQL) as placed in the cell."""
        moved = Statement(statement.text, statement.line + self.offset, statement.column)
        return place(err, moved, self.text)


def load_ipython_extension(ipython) -> None:
    ipython.register_magics(SqlwinMagics)


def _briefly(err: SqlwinError) -> SqlwinError:
    """The error as IPython shows it: sqlwin's message (what, where, what is accepted), no traceback.
    `%tb` still shows the traceback."""
    err._render_traceback_ = lambda: [f"{type(err).__name__}: {err}"]
    return err


def _split_line(parser: argparse.ArgumentParser, line: str) -> tuple[list[str], str]:
    """`%sqlwin` on one line: the options first, then the SQL (the first word not an option)."""
    token = re.compile(r"\s*('[^']*'|\"[^\"]*\"|\S+)")
    options: list[str] = []
    position = 0
    while True:
        found = token.match(line, position)
        if not found or not found.group(1).startswith("-"):
            break
        option = found.group(1)
        options.append(option)
        position = found.end()
        action = parser._option_string_actions.get(option.split("=", 1)[0])  # noqa: SLF001
        if action is not None and action.nargs != 0 and "=" not in option:
            value = token.match(line, position)
            if value:
                options.extend(shlex.split(value.group(1)) or [""])
                position = value.end()
    return options, line[position:]


def substitute(query: str, namespace: dict[str, t.Any]) -> str:
    """`{name}` (or `{name.attribute}`) replaced by the variable's text; `{{name}}` is the text `{name}`."""
    def value(match: re.Match) -> str:
        if match.group(1):
            return "{" + match.group(1) + "}"
        path = match.group(2)
        first, *attributes = path.split(".")
        if first not in namespace:
            line = query.count("\n", 0, match.start()) + 1
            column = match.start() - (query.rfind("\n", 0, match.start()) + 1) + 1
            from sqlwin.errors import Position

            raise SqlwinUsageError(f"No notebook variable {first} for {{{path}}}",
                                   Position(line, column, match.group(0)),
                                   hint=f"a variable defined in the notebook, or {{{{{path}}}}} for the text {{{path}}}",
                                   query=query)
        found = namespace[first]
        for attribute in attributes:
            found = getattr(found, attribute)
        return str(found)

    return _VARIABLE.sub(value, query)


def _attached() -> "Sqlwin":
    """sqlwin on the active SparkSession, or on sqlwin.session() when there is none."""
    import sqlwin
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    return sqlwin.attach(spark if spark is not None else sqlwin.session())


# --------------------------------------------------------------------------- tables


def table_bundle(columns: list[str], rows: list[list[str | None]], more: bool) -> dict[str, str]:
    """A result as an HTML table (and a text one for terminals)."""
    count = f"first {len(rows)} rows shown (more not shown: --limit N)" if more else \
        f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join('<td class="sqlwin-null">NULL</td>' if v is None else f"<td>{html.escape(v)}</td>"
                         for v in row) + "</tr>"
        for row in rows)
    markup = (f'<table class="sqlwin-result"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
              f"<p>{count}</p>")
    cells = [["NULL" if v is None else v for v in row] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in cells]
    lines.append(f"({count})")
    return {"text/html": markup, "text/plain": "\n".join(lines)}


# --------------------------------------------------------------------------- streams


_STREAMS: dict[str, "LiveStream"] = {}
_NUMBERS = itertools.count(1)
_FIGURES = [("batch", "batch"), ("input_rows", "rows in"), ("rows_per_second", "rows/s"),
            ("watermark", "watermark"), ("open_windows", "open windows"), ("results", "results"),
            ("late_rows", "late rows"), ("rejected_rows", "rejected rows")]


def _next_name() -> str:
    while True:
        name = f"stream{next(_NUMBERS)}"
        if name not in _STREAMS:
            return name


def stop(name: str) -> None:
    """Stop the stream `name` started by %%sqlwin --stream; its display shows it stopped."""
    live = _STREAMS.get(name)
    if live is None:
        running = ", ".join(sorted(_STREAMS)) or "none"
        raise UsageError(f"%sqlwin --stop: no running stream named {name} (running: {running})")
    live.stop()


class LiveStream:
    """A stream and the one display of its progress, refreshed by a thread until the stream stops."""

    def __init__(self, name: str, handle: "StreamingWindowQuery", refresh: float = REFRESH_SECONDS):
        self.name = name
        self.handle = handle
        self.refresh = refresh
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._watch, name=f"sqlwin-{name}", daemon=True)
        self.display = display(self._bundle("starting", None), raw=True, display_id=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 60) -> None:
        self.handle.stop()
        self._stopping.set()
        self._thread.join(timeout)

    def _watch(self) -> None:
        state = "stopped"
        try:
            while self.handle.is_active and not self._stopping.is_set():
                self.display.update(self._bundle("running", self._status()), raw=True)
                self._stopping.wait(self.refresh)
            failure = self.handle.query.exception() if not self.handle.is_active else None
            if failure:
                state = f"failed: {_first_line(failure)}"
        except Exception as err:  # noqa: BLE001 - Spark unreachable (a Connect server gone): say so, end
            state = f"unknown: {_first_line(err)}"
        finally:
            if _STREAMS.get(self.name) is self:
                del _STREAMS[self.name]
            self.display.update(self._bundle(state, self._status()), raw=True)

    def _status(self) -> dict | None:
        try:
            return self.handle.status()
        except Exception:  # noqa: BLE001 - a figure missing for a moment must not end the display
            return None

    def _bundle(self, state: str, status: dict | None) -> dict[str, str]:
        figures = [(label, _figure(key, status)) for key, label in _FIGURES]
        text = f"{self.name}: {state}; " + ", ".join(f"{label} {value}" for label, value in figures)
        head = "".join(f"<th>{html.escape(label)}</th>" for label, _ in figures)
        cells = "".join(f"<td>{html.escape(value)}</td>" for _, value in figures)
        markup = (f'<div class="sqlwin-stream"><b>{html.escape(self.name)}</b>: {html.escape(state)} '
                  f"(sink {html.escape(str(self.handle.sink))})"
                  f"<table><thead><tr>{head}</tr></thead><tbody><tr>{cells}</tr></tbody></table></div>")
        return {"text/plain": text, "text/html": markup}


def _figure(key: str, status: dict | None) -> str:
    if not status:
        return "-"
    if key == "watermark":
        return str(status.get("key_watermarks") or status.get("watermark") or "-")
    value = status.get(key)
    if value is None:
        return "-"
    if key == "rows_per_second":
        return f"{value:.0f}"
    return str(value)


def _first_line(err: BaseException) -> str:
    text = str(getattr(err, "desc", None) or err).strip()
    return text.splitlines()[0] if text else type(err).__name__

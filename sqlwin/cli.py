"""The `sqlwin` command.

    sqlwin run QUERY.sql --table NAME=PATH [--table ...] [--out PATH [--overwrite]] [--rejected PATH] [--limit N]
    sqlwin explain QUERY.sql --table NAME=PATH [--table ...] [--stream] [--timeline PICTURE.png]
    sqlwin stream QUERY.sql --source NAME=DIR [--source-format parquet|csv|json] --checkpoint DIR --sink DIR
                  [--late-sink DIR] [--once] [--max-files-per-trigger N]
    sqlwin sql [-e "STATEMENTS" | -f FILE.sql] [-i INIT.sql] [-S] [-v] [--name NAME] [--driver-memory MEM]
               [--jars A.jar,B.jar]                   (a spark-sql style shell; see sqlwin/shell.py)
    sqlwin thriftserver [--port 10000] [--host H] [--table NAME=PATH ...]   (JDBC clients; sqlwin/thriftserver.py)
    sqlwin --version

Each also takes --master URL or --remote sc://HOST:PORT (Spark Connect), and --conf KEY=VALUE
(repeatable): where Spark runs and how it is configured.

A query file may name its own inputs in comments, relative to the file, so a shipped
example runs with no flags: `-- sqlwin:table clicks=data/clicks.csv`. --table wins.

Inputs and outputs by extension: .csv (with a header; timestamps parsed), .json /
.jsonl (one object per line), .parquet (a file or a directory). Exit status: 0 on
success, 2 when the query or the command line is wrong (a message, no traceback),
1 when Spark fails while running a valid query. --debug adds the Python traceback and a
Spark error's JVM stack to the message, for a bug report (docs/errors.md).

Here: the parser and the commands. Beside it: cli_session.py (Spark's session from --master,
--remote and --conf; the checks before Spark starts), cli_files.py (the query file, --table
inputs, --out results) and cli_errors.py (errors in one line, --debug's chain).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
import typing as t
from pathlib import Path

from sqlwin.cli_errors import print_debug, runtime_error
from sqlwin.cli_files import (declared_tables, format_of, parse_tables, print_table, read_query, register_tables,
                              write_result)
from sqlwin.cli_session import attach_session, check_before_spark, session_options
from sqlwin.errors import SqlwinError, SqlwinUsageError
from sqlwin.outputs import check_out, check_stream_outputs
from sqlwin.shell import run as run_shell
from sqlwin.thriftserver import add_command as add_thriftserver


def main(argv: t.Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        return _report(err, args.debug)


def _report(err: Exception, debug: bool = False) -> int:
    """Print an error as one message (with --debug, how it came about too); the exit status."""
    shown = err if isinstance(err, SqlwinError) else runtime_error(err)  # Spark failed: say what, not how deep
    print(f"sqlwin: {shown}", file=sys.stderr)
    if debug:
        print_debug(err)
    return shown.exit_code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sqlwin", description="Streaming windows for Spark SQL.")
    parser.add_argument("--version", action="version", version=_versions(), help="print sqlwin's and Spark's versions")
    commands = parser.add_subparsers(dest="command", required=True)

    run = commands.add_parser("run", help="run a query over finished tables and print or write the result")
    _add_query_arguments(run)
    run.add_argument("--out", help="write the result here (.csv, .json, .jsonl, .parquet) instead of printing it")
    run.add_argument("--overwrite", action="store_true",
                     help="replace --out if it exists (a directory only if it holds a previous result)")
    run.add_argument("--limit", type=int, default=1000, help="rows to print when there is no --out (default 1000)")
    run.add_argument("--rejected", metavar="PATH",
                     help="write the input rows no window takes (a NULL key or time; column reason) here")
    _add_session_arguments(run)
    run.set_defaults(handler=_run)

    stream = commands.add_parser("stream", help="run a query as a Structured Streaming query over directories")
    stream.add_argument("query", help="a file with the SQL query (or - for standard input)")
    stream.add_argument("--source", action="append", default=[], metavar="NAME=DIR", required=True,
                        help="a directory of files the stream reads as table NAME (new files are new rows)")
    add_source_format(stream)
    stream.add_argument("--checkpoint", required=True, help="checkpoint directory (restart from it after a stop)")
    stream.add_argument("--sink", required=True, help="results as parquet, one batch_id=N directory per micro-batch")
    stream.add_argument("--late-sink", help="late and rejected rows (with LATE ROWS INTO), as parquet")
    stream.add_argument("--once", action="store_true",
                        help="process the files present now, then stop (windows stay open in the checkpoint)")
    stream.add_argument("--end-input", action="store_true",
                        help="with --once: the input has ended, close every window before stopping")
    stream.add_argument("--max-files-per-trigger", type=int, help="files per micro-batch")
    _add_session_arguments(stream)
    stream.set_defaults(handler=_stream)

    explain = commands.add_parser("explain", help="show the plan sqlwin chose for a query, and why")
    _add_query_arguments(explain)
    explain.add_argument("--stream", action="store_true",
                         help="explain the query as `sqlwin stream` runs it (each --table stands for its source)")
    explain.add_argument("--timeline", metavar="PICTURE",
                         help="also draw the windows, rows, watermark, late rows and firings per key (.png, .svg, "
                              ".pdf; needs pip install 'sqlwin[timeline]', see docs/timeline.md)")
    _add_session_arguments(explain)
    explain.set_defaults(handler=_explain)

    sql = commands.add_parser(
        "sql", help="a spark-sql style shell in sqlwin's dialect: -e, -f, or an interactive prompt",
        description="Run SQL statements (separated by ;) as spark-sql does, in sqlwin's dialect: window "
                    "table functions, WATERMARK and EMIT, and plain Spark SQL (SET, CREATE TEMP VIEW ...). "
                    "Rows print tab-separated; 'Time taken' goes to standard error. Without -e or -f: "
                    "an interactive prompt in a terminal (history in $SQLWIN_HISTORY or ~/.sqlwin_history), "
                    "else the statements on standard input.")
    source = sql.add_mutually_exclusive_group()
    source.add_argument("-e", dest="execute", metavar="STATEMENTS", help="run these statements, then exit")
    source.add_argument("-f", dest="file", metavar="FILE", help="run the statements in FILE (- for standard input)")
    sql.add_argument("-i", dest="init", metavar="FILE", help="run the statements in FILE first (an initialization "
                                                             "file, as spark-sql's -i), then -e, -f or the prompt")
    sql.add_argument("-S", "--silent", action="store_true", help="no 'Time taken' lines")
    sql.add_argument("-v", "--verbose", action="store_true", help="print each statement before its result")
    sql.add_argument("--name", help="the application's name in the Spark UI (default sqlwin-sql)")
    sql.add_argument("--driver-memory", metavar="MEM", help="the driver's memory, e.g. 2g (spark.driver.memory)")
    sql.add_argument("--jars", metavar="JARS", help="comma-separated jars for the driver and executors (spark.jars)")
    sql.add_argument("--version", action="version", version=_versions(), help="print sqlwin's and Spark's versions")
    _add_session_arguments(sql)
    sql.set_defaults(handler=_sql)
    add_thriftserver(commands)  # its own --debug
    for command in (run, stream, explain, sql):
        command.add_argument("--debug", action="store_true",
                             help="on an error, also print the Python traceback and Spark's JVM stack (for a bug report)")
    return parser


SOURCE_FORMATS = ("parquet", "csv", "json")


def add_source_format(parser) -> None:
    """--source-format, the name sw.stream gives it (source_format); --format, its first name, still works."""
    parser.add_argument("--source-format", choices=SOURCE_FORMATS,
                        help="the source files' format (default parquet; sw.stream's source_format)")
    parser.add_argument("--format", dest="deprecated_format", choices=SOURCE_FORMATS,
                        help="deprecated: the same as --source-format")


def source_format(args: argparse.Namespace) -> str:
    """The source files' format from --source-format or the deprecated --format (which says so on stderr)."""
    if args.deprecated_format is not None:
        if args.source_format not in (None, args.deprecated_format):
            raise SqlwinUsageError(f"--format {args.deprecated_format} and --source-format {args.source_format} "
                                   "disagree", hint="--source-format alone (--format is its deprecated name)")
        print(f"sqlwin: --format is deprecated; say --source-format {args.deprecated_format}", file=sys.stderr)
    return args.source_format or args.deprecated_format or "parquet"


def _versions() -> str:
    """`sqlwin --version`: sqlwin's and PySpark's versions, read without starting Spark."""
    from importlib.metadata import PackageNotFoundError, version

    from sqlwin.version import __version__

    try:
        spark = version("pyspark")
    except PackageNotFoundError:
        spark = "not installed"
    return f"sqlwin {__version__}, Spark {spark}, Python {sys.version.split()[0]}"


def _add_query_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="a file with the SQL query (or - for standard input)")
    parser.add_argument("--table", action="append", default=[], metavar="NAME=PATH",
                        help="make the file or directory PATH available to the query as table NAME")


def _add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--master", metavar="URL",
                        help="where Spark runs: local[N], spark://HOST:7077, ... (default: sqlwin.session()'s)")
    parser.add_argument("--remote", metavar="sc://HOST:PORT", help="a Spark Connect server instead of a local Spark")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                        help="a Spark configuration property, as spark-submit's --conf (repeatable)")


def _run(args: argparse.Namespace) -> int:
    query = read_query(args.query)
    tables = parse_tables(declared_tables(query, args.query) + args.table)
    check_before_spark(query, args, tables)
    for out in (args.out, args.rejected):  # before Spark starts: refused outputs cost nothing
        if out:
            check_out(Path(out), args.overwrite, tables)
            if Path(out).suffix:
                format_of(Path(out))  # an extension sqlwin does not write (result.txt)
    sw = attach_session(args)
    register_tables(sw.spark, tables)
    result = sw.sql(query)
    try:
        if args.out:
            write_result(result, Path(args.out))
            print(f"wrote {args.out}", file=sys.stderr)
        else:
            print_table(result, args.limit)
        _report_rejected(sw, query, args.rejected)
    except SqlwinError:
        raise
    except Exception as err:
        raise runtime_error(err) from None
    return 0


def _report_rejected(sw, query: str, path: str | None) -> None:
    """What the query left out of every window, and why (a NULL key, a NULL time): counted on
    standard error, the rows written to --rejected PATH. Nothing is dropped without a word."""
    rejected = sw.rejected(query)
    if rejected is None:
        return
    counts = {r["reason"]: r["n"] for r in rejected.groupBy("reason").agg({"*": "count"})
              .withColumnRenamed("count(1)", "n").collect()}
    total = sum(counts.values())
    if not total:
        return
    words = {"null_key": "a NULL key", "null_time": "a NULL time"}
    parts = ", ".join(f"{counts[r]} with {words.get(r, r)}" for r in sorted(counts))
    where = f"written to {path}" if path else "--rejected PATH writes them"
    print(f"sqlwin: {total} input row{'' if total == 1 else 's'} joined no window ({parts}); {where}",
          file=sys.stderr)
    if path:
        write_result(rejected, Path(path))


def _stream(args: argparse.Namespace) -> int:
    """Start the stream and print a line per micro-batch as the sink writer finishes it, until the
    stream stops (or Ctrl-C); with --once, as it processes the files present now."""
    query = read_query(args.query)
    sources = parse_tables(args.source, "--source")
    fmt = source_format(args)
    check_before_spark(query, args, sources)
    options = {"maxFilesPerTrigger": str(args.max_files_per_trigger)} if args.max_files_per_trigger else {}
    # Before Spark starts (refusals cost nothing): the sinks' owners, directories that cannot be written,
    # a checkpoint a running stream holds. sw.stream asks again, and takes the checkpoint's lock.
    check_stream_outputs(args.checkpoint, {"sink": args.sink, "late sink": args.late_sink}, sources)
    print("sqlwin: starting Spark ...", file=sys.stderr, flush=True)  # 20-40 s with nothing else to show
    sw = attach_session(args)
    handle = sw.stream(query, sources={name: str(path) for name, path in sources.items()}, sink=args.sink,
                       checkpoint=args.checkpoint, late_sink=args.late_sink, source_format=fmt,
                       source_options=options)
    print(f"streaming into {args.sink} (checkpoint {args.checkpoint}; named \"{handle.query.name}\" in the Spark UI); "
          "Ctrl-C stops", file=sys.stderr)
    for note in _watermark_notes(query):
        print(f"sqlwin: {note}", file=sys.stderr)
    shown, noted, seen = -1, 0, {}

    def report(ending: bool = False, last: bool = False) -> None:  # a line per batch written since the last
        nonlocal shown, noted
        restarts = handle.supervisor.restarts if handle.supervisor is not None else []
        for note in restarts[noted:]:  # the stream started again (a Python worker did not connect back)
            print(f"sqlwin: {note}", file=sys.stderr)
        noted = len(restarts)
        spark_reports = {p.get("batchId"): p for p in handle.query.recentProgress or []}
        for batch in handle.batch_progress(shown):
            # Spark reports a batch (its duration, its state's size) once it has committed it, just after
            # the sink writer is done: the line waits for it a moment, then goes without.
            spark_report = spark_reports.get(batch["batch"])
            first_seen = seen.setdefault(batch["batch"], time.monotonic())
            if spark_report is None and not last and time.monotonic() - first_seen < SPARK_REPORT_WAIT_S:
                return
            shown = batch["batch"]
            print(_progress_line(batch, spark_report, ending), file=sys.stderr, flush=True)

    try:
        if args.once:
            _polling(handle.process_all_available, report)
            report(last=True)
            if args.end_input:
                _polling(handle.end_input, lambda: report(ending=True))
                report(ending=True, last=True)
        else:
            while handle.is_active:
                report()
                time.sleep(POLL_S)
            report(last=True)
            handle.await_termination()  # raises the query's failure
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()
    return 0


def _watermark_notes(query: str) -> list[str]:
    """What watermark a window function without WATERMARK gets (sqlwin.sql.plan.default_watermark_notes)."""
    from sqlwin.sql.plan import build_plan, default_watermark_notes

    try:
        return default_watermark_notes(build_plan(query))  # names only: no schema needed
    except SqlwinError:
        return []


POLL_S = 0.25  # how often `sqlwin stream` looks for micro-batches written
SPARK_REPORT_WAIT_S = 2.0  # how long a batch's line waits for Spark's report of the batch


def _polling(work: t.Callable[[], None], poll: t.Callable[[], None]) -> None:
    """Run `work` (it blocks in the JVM while the stream runs batches) in a thread of its own and
    `poll()` here every POLL_S meanwhile and once after: progress lines as the batches are written,
    not all at the end. Raises what `work` raised."""
    done = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        try:
            work()
        except BaseException as err:  # noqa: BLE001 - raised in the calling thread
            failure.append(err)
        finally:
            done.set()

    threading.Thread(target=run, name="sqlwin-stream-wait", daemon=True).start()
    while not done.wait(POLL_S):
        poll()
    if failure:
        raise failure[0]


def _progress_line(batch: dict, spark_report: dict | None = None, ending: bool = False) -> str:
    """One line per micro-batch, with the batch's own figures (StreamingWindowQuery.batch_progress):
    rows it took in, results it wrote, its late and rejected rows (NULL key or time, malformed), and
    the watermark, keys and open windows after it; from Spark's report of the batch, when there is
    one, how long it took and the state's size after it. `ending`: the batch that ended the input
    (its one row is the end-of-input signal), which closed every window."""
    figures = f"{batch['results']} results, {batch['late_rows']} late, {batch['rejected_rows']} rejected"
    if ending:
        return f"batch {batch['batch']}: end of input, every open window closed: {figures}"
    line = (f"batch {batch['batch']}: {batch['rows_in']} rows in, {figures}; after it: watermark "
            f"{batch['watermark'] or '-'}, {batch['keys']} keys, {batch['open_windows']} open windows")
    if spark_report:
        seconds = ((spark_report.get("durationMs") or {}).get("triggerExecution") or 0) / 1000
        state = (spark_report.get("stateOperators") or [{}])[0].get("memoryUsedBytes") or 0
        line += f", state {state / 1e6:.1f} MB" + (f"; took {seconds:.1f} s" if seconds else "")
    return line


def _explain(args: argparse.Namespace) -> int:
    query = read_query(args.query)
    tables = parse_tables(declared_tables(query, args.query) + args.table)
    check_before_spark(query, args, tables)
    sw = attach_session(args)
    register_tables(sw.spark, tables)
    print(sw.explain(query, stream=args.stream))
    if args.timeline:
        from sqlwin.timeline import write_timeline

        print(f"drew {write_timeline(sw, query, Path(args.timeline))}", file=sys.stderr)
    return 0


def _sql(args: argparse.Namespace) -> int:
    options = session_options(args)  # a bad --conf is refused before the script is read or Spark starts
    # spark-submit's flags, as spark-sql takes them; an explicit --conf of the same property wins.
    submitted = {"spark.driver.memory": args.driver_memory, "spark.jars": _jars(args.jars)}
    options["conf"] = {**{k: v for k, v in submitted.items() if v}, **options["conf"]}
    return run_shell(lambda: attach_session(args, options, app_name=args.name or "sqlwin-sql"), args.execute,
                     args.file, args.silent, debug=args.debug, init=args.init, verbose=args.verbose)


def _jars(jars: str | None) -> str | None:
    """--jars A.jar,B.jar as spark.jars, each checked before Spark starts (Spark would only log a missing one)."""
    if not jars:
        return None
    paths = [part.strip() for part in jars.split(",") if part.strip()]
    for path in paths:
        if "://" not in path and not Path(path).is_file():
            raise SqlwinUsageError(f"--jars: no such file {path}", hint="--jars path/to/a.jar,path/to/b.jar")
    return ",".join(path if "://" in path else str(Path(path).resolve()) for path in paths)


if __name__ == "__main__":
    sys.exit(main())

"""Errors as the sqlwin commands print them (sqlwin run / explain / stream, sqlwin sql, sqlwin
thriftserver, the %%sqlwin magic): Spark's error in one line, in sqlwin's words where it knows them,
and --debug's chain of exceptions behind a message, with Python tracebacks and the JVM stack."""

from __future__ import annotations

import re
import sys
import typing as t

from sqlwin.errors import SqlwinRuntimeError


def print_debug(err: BaseException, file: t.TextIO | None = None) -> None:
    """--debug, for a bug report: after the message, the whole chain of exceptions behind it with their
    Python tracebacks (those sqlwin put in its own words too) and a Spark error's JVM stack."""
    import traceback

    chain: list[BaseException] = []
    while err is not None and all(err is not seen for seen in chain):
        chain.append(err)
        err = err.__cause__ or err.__context__
    shown = ["\nsqlwin --debug: what happened, first cause first"]
    for number, exc in enumerate(reversed(chain)):
        if number:
            shown.append("\nwhich was then raised as:")
        shown.append("".join(traceback.format_exception(type(exc), exc, exc.__traceback__, chain=False)).rstrip())
        stack = _jvm_stack(exc)
        if stack and stack.strip().splitlines()[-1] not in "\n".join(shown):  # py4j's error already held it
            shown.append(f"JVM stacktrace:\n{stack.rstrip()}")
    print("\n".join(shown), file=file or sys.stderr)


def _jvm_stack(err: BaseException) -> str | None:
    """A Spark error's JVM (or Spark Connect server) stack, when PySpark kept one."""
    getter = getattr(err, "getStackTrace", None)  # Spark Connect: the server's, if it sent it
    try:
        stack = getter() if callable(getter) else getattr(err, "_stackTrace", None)  # classic PySpark
    except Exception:  # noqa: BLE001 - the debug output must not fail on an odd exception
        stack = None
    return stack if isinstance(stack, str) and stack.strip() else None


def first_line(err: Exception) -> str:
    """The error's message in one line. A Py4J error's own first line only names the JVM call
    ("An error occurred while calling o45.load."): the Java exception's message follows it."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    if lines[0].startswith("An error occurred while calling") and len(lines) > 1:
        cause = re.sub(r"^:?\s*[\w.$]+(Exception|Error): ", "", lines[1])
        cause = _without_sqlstate(cause)
        if cause:
            return cause
    return lines[0]


# Spark's error classes that only wrap another: a failing stream's own error is inside them.
_WRAPPERS = ("STREAM_FAILED", "FOREACH_BATCH_USER_FUNCTION_ERROR", "PYTHON_EXCEPTION")
_ERROR_CLASS = re.compile(r"\[([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)\] ([^\n]*)")


def _without_sqlstate(message: str) -> str:
    return re.sub(r"\s*SQLSTATE: \w+\.?$", "", message).strip()


def runtime_error(err: Exception) -> SqlwinRuntimeError:
    """Spark's error in one line: the innermost error class a wrapper carries (a stream's
    failure holds the batch's error inside STREAM_FAILED and FOREACH_BATCH_USER_FUNCTION_ERROR),
    without its SQLSTATE; for a file a stream cannot read, what to do."""
    from sqlwin.spark.supervision import stream_failure

    known = stream_failure(err)  # a stream's failure sqlwin says in its own words
    if known is not None:
        return known
    found = [m for m in _ERROR_CLASS.finditer(str(err)) if m.group(1) not in _WRAPPERS]
    if not found:
        return SqlwinRuntimeError(f"Spark failed while running the query: {first_line(err)}")
    condition, text = found[0].group(1), _without_sqlstate(found[0].group(2))
    hint = None
    if condition.startswith("FAILED_READ_FILE"):
        hint = ("files whose columns fit the stream's (those of its first files); the checkpoint is unchanged: "
                "restart with --conf spark.sql.files.ignoreCorruptFiles=true and the batch runs again without the "
                "file Spark cannot read")
    return SqlwinRuntimeError(f"Spark failed while running the query: [{condition}] {text}", hint=hint)

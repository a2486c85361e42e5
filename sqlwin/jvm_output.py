"""The JVM's output when sqlwin starts Spark: on the process's stderr, without a Python worker's
debugging noise, so a command's or a job's stdout holds only its own output (sqlwin.session()
starts the JVM inside `jvm_output_to_stderr`)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading

# What PySpark's planning worker for transformWithStateInPandas prints on every stream start
# (pyspark/sql/streaming/transform_with_state_driver_worker.py): its own debugging, four
# paragraphs of it, through the JVM's output; and the JVM's note, at every start, that Spark
# uses an incubating Java module. Neither is for a user.
_WORKER_NOISE = ("Starting Streaming TransformWithStateInPandas Python worker",
                 "Streaming TransformWithStateInPandas Python worker ",
                 "WARNING: Using incubator modules:")


_redirecting = False  # inside the block (a command's session() call starts the JVM in it)


@contextlib.contextmanager
def jvm_output_to_stderr():
    """Start the JVM (if this block starts it) with its stdout and stderr on a pipe that a thread
    copies to sqlwin's stderr, without the worker noise above: the command's stdout holds only
    its results, and the user sees Spark's warnings and errors as before."""
    global _redirecting
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None or SparkContext._gateway is not None or _redirecting:
        yield  # the JVM runs already (a test calling main, a notebook), or this block's outer one starts it
        return
    try:
        saved = {fd: os.dup(fd) for fd in (1, 2)}
    except OSError:  # no descriptors to redirect (a GUI host)
        yield
        return
    _redirecting = True
    read_end, write_end = os.pipe()
    threading.Thread(target=_copy_without_noise, args=(read_end, saved[2]), daemon=True,
                     name="sqlwin-jvm-output").start()  # reading from the start: a full pipe would stall the JVM
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        for fd in (1, 2):
            os.dup2(write_end, fd)  # inherited by the JVM that starts in this block
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            if fd == 1:
                os.close(copy)
        os.close(write_end)
        _redirecting = False


def _copy_without_noise(read_end: int, out: int) -> None:
    dropped = False
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        for line in iter(pipe.readline, b""):
            text = line.decode(errors="replace")
            if text.startswith(_WORKER_NOISE) or (dropped and not text.strip()):
                dropped = True
                continue
            dropped = False
            try:
                os.write(out, line)
            except OSError:
                return

"""A stream's start and life under guard (issue 21): one writer per checkpoint, a start made again
when Spark's Python worker did not connect back, and a stream's failures in sqlwin's words.

- `begin`: before anything is written, the directories are checked (outputs.check_stream_outputs:
  the sinks' owners, that each can be written, that no running stream holds the checkpoint) and the
  checkpoint's lock is taken (sqlwin.checkpoint_lock).
- `Supervisor`: while the stream runs, a thread refreshes the lock every HEARTBEAT_S seconds and
  releases it once the query has ended; a query that ended because Spark's Python worker did not
  connect back (Spark waits a fixed 10 s for the worker that plans transformWithStateInPandas; on a
  loaded machine it may not make it) is started again, up to `spark.sqlwin.stream.startAttempts`
  attempts in all (default 3). The handle's own methods do the same when they meet the failure.
- `guard_writer`: each micro-batch's sink writer refreshes the lock too, stops the stream if
  another stream took the checkpoint over, and when a write fails because a directory cannot be
  written any more, says which. Spark carries the writer's exception as text inside its own
  (FOREACH_BATCH_USER_FUNCTION_ERROR, with Python and JVM traces): a tag marks sqlwin's message in it.
- `stream_failure`: a stream's exception as a SqlwinRuntimeError in one message (None when it is
  none of these): what `sqlwin stream` prints, what the handle raises.
"""

from __future__ import annotations

import re
import threading
import typing as t
from pathlib import Path

from sqlwin.checkpoint_lock import HEARTBEAT_S, CheckpointLock, acquire, heartbeat
from sqlwin.errors import SqlwinRuntimeError, SqlwinUsageError
from sqlwin.outputs import check_stream_outputs, unwritable

START_ATTEMPTS = "spark.sqlwin.stream.startAttempts"  # a session setting: how often a stream is started
DEFAULT_START_ATTEMPTS = 3
CONNECT_BACK = ("Python worker failed to connect back", "Timed out while waiting for the Python worker to connect back")
CONNECT_WAIT_S = 10  # PythonWorkerFactory's fixed wait for a worker to connect back (Spark 4.x, no setting)
NOT_WRITABLE_TAG = "SQLWIN_DIRECTORY_NOT_WRITABLE"
TAKEN_OVER_TAG = "SQLWIN_CHECKPOINT_TAKEN_OVER"
_TAGGED = re.compile(r"\[(SQLWIN_[A-Z_]+)\] ([^\n]*)")


class DirectoryNotWritable(Exception):
    """Raised by the sink writer: a write failed and a directory of the stream cannot be written."""


class CheckpointTakenOver(Exception):
    """Raised by the sink writer: another stream holds the checkpoint's lock now."""


# --------------------------------------------------------------------------- the start


class Start:
    """A stream's start under its checkpoint's lock: `abandon` if the start fails, else `supervise`."""

    def __init__(self, lock: CheckpointLock, created: list[Path]):
        self.lock, self.created = lock, created

    def abandon(self) -> None:
        """The start failed: the lock released, and the checkpoint directories it created, if empty, removed."""
        self.lock.release()
        for directory in self.created:  # deepest first
            try:
                directory.rmdir()
            except OSError:
                break

    def supervise(self, handle, spark) -> t.Any:
        attempts = start_attempts(spark)
        handle.supervisor = Supervisor(handle, self.lock, attempts)
        handle.supervisor.begin()
        return handle


def begin(checkpoint: str, sinks: t.Mapping[str, str | None], inputs: t.Mapping[str, t.Any], run_id: str,
          driver: str) -> Start:
    """Check a stream's directories and take its checkpoint's lock (see the module's docstring)."""
    check_stream_outputs(checkpoint, sinks, inputs)
    created = []
    missing = Path(checkpoint).absolute()
    while not missing.exists():
        created.append(missing)
        missing = missing.parent
    lock = acquire(checkpoint, run_id, shown=checkpoint, driver=driver)
    return Start(lock, created)


def start_attempts(spark) -> int:
    try:
        value = int(spark.conf.get(START_ATTEMPTS, str(DEFAULT_START_ATTEMPTS)))
    except (TypeError, ValueError):
        raise SqlwinUsageError(f"{START_ATTEMPTS} is not a whole number: {spark.conf.get(START_ATTEMPTS)}",
                               hint=f"{START_ATTEMPTS}={DEFAULT_START_ATTEMPTS}") from None
    return max(1, value)


# --------------------------------------------------------------------------- while it runs


class Supervisor:
    """Keeps a running stream's lock fresh, starts it again after a Python worker's failed connection
    (bounded), releases the lock when the stream has ended."""

    def __init__(self, handle, lock: CheckpointLock, attempts: int, interval_s: float = HEARTBEAT_S):
        self.handle, self.lock, self.attempts, self.interval_s = handle, lock, attempts, interval_s
        self.restarts: list[str] = []  # what each restart was for, in words (`sqlwin stream` prints them)
        self.taken_over = None  # the holder that took the checkpoint over, if one did
        self._stopped = threading.Event()
        self._ended = False  # the query ended for good: the lock is released, no restart follows
        self._guard = threading.RLock()
        lock.running = self.running

    def begin(self) -> None:
        threading.Thread(target=self._watch, daemon=True, name=f"sqlwin-stream-{self.lock.holder.run_id[:8]}").start()

    def running(self) -> bool:
        if self._stopped.is_set():
            return False
        query = self.handle.query
        try:
            return query is not None and (query.isActive or self._restartable(query))
        except Exception:  # noqa: BLE001 - the JVM is gone (the process exits): nothing runs
            return False

    def _restartable(self, query) -> bool:
        failure = query.exception()
        return failure is not None and is_connect_back(failure) and 1 + len(self.restarts) < self.attempts

    def keep_running(self) -> bool:
        """If the query ended because Spark's Python worker did not connect back, and attempts are
        left, start it again. Whether it did."""
        with self._guard:
            query = self.handle.query
            if self._ended or self._stopped.is_set() or query is None or query.isActive \
                    or not self._restartable(query):
                return False
            self.restarts.append(
                f"Spark's Python worker did not connect back in time (a busy machine): the stream starts again, "
                f"attempt {len(self.restarts) + 2} of {self.attempts}")
            self.handle.query = self.handle.restart()
            return True

    def _watch(self) -> None:
        while not self._stopped.wait(self.interval_s):
            try:
                with self._guard:  # no restart between the verdict and the release
                    self.keep_running()
                    query = self.handle.query
                    if not query.isActive and not self._restartable(query):
                        self._ended = True
                        break
                other = self.lock.refresh()
                if other is not None:  # judged stale and taken (this process stalled beyond the bound): the
                    self.taken_over = other  # next batch's writer stops the stream, saying so (guard_writer)
                    return
            except Exception:  # noqa: BLE001 - the JVM is gone (the process exits): so is the stream
                with self._guard:
                    self._ended = True
                break
        if not self._stopped.is_set():
            self.lock.release()

    def stop(self) -> None:
        self._stopped.set()
        self.lock.release()


def is_connect_back(failure) -> bool:
    text = str(failure)
    return any(marker in text for marker in CONNECT_BACK)


# --------------------------------------------------------------------------- each micro-batch


def guard_writer(write: t.Callable, handle) -> t.Callable:
    """The sink writer `write` under guard: it refreshes the checkpoint's lock, refuses to write when
    another stream holds the checkpoint now, and names a directory that cannot be written any more.
    Runs where Spark runs foreachBatch (this process, or a Spark Connect server): plain values only."""
    checkpoint, run_id = handle.checkpoint, handle.run_id
    directories = (("sink", handle.sink), ("late sink", handle.late_sink), ("checkpoint", handle.checkpoint))

    def guarded(records_df, batch_id: int) -> None:
        other = heartbeat(checkpoint, run_id)
        if other is not None:
            raise CheckpointTakenOver(
                f"[{TAKEN_OVER_TAG}] The stream stopped before batch {batch_id}: another stream holds its checkpoint "
                f"{checkpoint} now (host {other.host}, pid {other.pid}, since {other.since}), which found this "
                "stream's lock stale")
        try:
            write(records_df, batch_id)
        except Exception as err:
            for label, path in directories:
                problem = unwritable(Path(path)) if path else None
                if problem:
                    raise DirectoryNotWritable(
                        f"[{NOT_WRITABLE_TAG}] The stream stopped at batch {batch_id}: its {label} {path} is not "
                        f"writable any more ({problem}); the batch was not committed") from err
            raise

    return guarded


# --------------------------------------------------------------------------- failures in words


def stream_failure(err: BaseException, attempts: int | None = None) -> SqlwinRuntimeError | None:
    """A stream's failure that sqlwin can say in its own words, as a SqlwinRuntimeError; else None."""
    text = str(err)
    for tag, message in _TAGGED.findall(text):
        if tag == NOT_WRITABLE_TAG:
            return SqlwinRuntimeError(
                message, hint="the directory made writable again (its permissions, room on its disk, a mount that is "
                              "not read-only), then the stream restarted on the same checkpoint: the batch runs "
                              "again and is written once")
        if tag == TAKEN_OVER_TAG:
            return SqlwinRuntimeError(
                message, hint="one stream per checkpoint: stop the other stream, then restart this one (nothing it "
                              "committed is lost)")
    if is_connect_back(err):
        tries = f", {attempts} times" if attempts and attempts > 1 else ""
        return SqlwinRuntimeError(
            f"The stream stopped as it started: Spark's Python worker for the window operator did not connect back "
            f"within Spark's {CONNECT_WAIT_S} s{tries} (a machine too busy to start a Python process in time)",
            hint=f"start it again when the machine is less busy (nothing is lost: the checkpoint runs the batch "
                 f"again); --conf {START_ATTEMPTS}=N tries N times")
    return None

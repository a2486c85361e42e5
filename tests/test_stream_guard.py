"""Issue 21, items 4 and 5: one writer per checkpoint, and every failure of a stream's start or run in
sqlwin's words -- each as a user runs it, through `sqlwin stream` (a real second process where the
reproduction had one) and through `sw.stream`.

Reproduced before: a second `sqlwin stream --once` on a running stream's checkpoint exited 0 after
writing a batch; a read-only sink exited 1 with `[Errno 1] Operation not permitted: .../._sqlwin_sink.json...tmp`,
and failing mid-run printed a FOREACH_BATCH_USER_FUNCTION_ERROR and a JVM stack; an empty marker
said "Expecting value: line 1 column 1"; a Python worker that did not connect back in Spark's 10 s
killed the stream at its start with a JVM NullPointerException stack printed without --debug.

Tests run as root here, and permission bits do not stop root: a directory that cannot be written is
made by a path under a regular file (`file/sink`: ENOTDIR, for anyone), or by the immutable
attribute (`chattr +i`: EPERM even for root, the reproduction's errno; skipped where chattr is not
permitted). A Python worker that does not connect back is a real one: PYSPARK_PYTHON (or the session's
pythonExec) is a script that starts the worker which plans transformWithStateInPandas 12 s late --
past Spark's fixed 10 s -- the first N times.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.crash_harness import JAVA_OPTIONS, SQLWIN, StreamProcess

ROOT = Path(__file__).resolve().parent.parent
CLICKS = ROOT / "sql_examples" / "data" / "clicks.csv"  # user_id, id, ts: 2023-12-14 00:00 .. 01:30
QUERY = """SELECT user_id, window_start, window_end, count(*) AS clicks
FROM TUMBLE(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
GROUP BY user_id, window_start, window_end
"""
JVM_STACK = re.compile(r"^\s+at [\w$.]+\(|Exception in thread|NullPointerException|Traceback", re.M)


class Dirs:
    """A stream's directories under `root`: a CSV source holding clicks.csv, a query file, a checkpoint, sinks."""

    def __init__(self, root: Path):
        self.root = root
        self.source, self.checkpoint, self.sink = root / "incoming", root / "state", root / "results"
        self.source.mkdir(parents=True, exist_ok=True)
        shutil.copy(CLICKS, self.source / "clicks-0.csv")
        self.query = root / "q.sql"
        self.query.write_text(QUERY)
        self.added = 0

    def add_file(self) -> None:
        self.added += 1
        hidden = self.source / f".clicks-{self.added}.tmp"
        shutil.copy(CLICKS, hidden)
        hidden.rename(self.source / f"clicks-{self.added}.csv")

    def args(self, *more: str, sink: Path | None = None) -> list[str]:
        return ["stream", str(self.query), "--source", f"clicks={self.source}", "--source-format", "csv",
                "--checkpoint", str(self.checkpoint), "--sink", str(sink or self.sink), *more]

    def frame(self, spark):
        return spark.readStream.schema("user_id STRING, id STRING, ts TIMESTAMP").option("header", "true") \
            .csv(str(self.source))

    @property
    def lock(self) -> Path:
        return self.checkpoint / "sqlwin.lock"


def _env(python: str | None = None) -> dict[str, str]:
    env = {**os.environ, "PYSPARK_PYTHON": python or str(ROOT / ".venv" / "bin" / "python"),
           "PYSPARK_DRIVER_PYTHON": str(ROOT / ".venv" / "bin" / "python")}
    env.pop("SQLWIN_REMOTE", None)
    env.pop("SQLWIN_MASTER", None)
    return env


def _sqlwin(args: list[str], env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """`sqlwin ARGS` in a process of its own (its JVM's output is its own: what a user sees)."""
    java = ["--conf", f"spark.driver.defaultJavaOptions={JAVA_OPTIONS}"] if JAVA_OPTIONS and args[0] == "stream" else []
    return subprocess.run([str(SQLWIN), *args, *java], capture_output=True, text=True, env=env or _env(),
                          timeout=timeout, cwd=str(ROOT))


def _wait_for(condition, what: str, process: StreamProcess | None = None, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if process is not None and not process.running:
            raise AssertionError(f"the stream exited ({process.proc.returncode}) before {what}:\n"
                                 f"{process.output()[-4000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not reached in {timeout_s} s" + (f"\n{process.output()[-3000:]}"
                                                                          if process else ""))
        time.sleep(0.1)


def _batches(sink: Path) -> list[str]:
    return sorted(p.name for p in sink.glob("batch_id=*")) if sink.is_dir() else []


# --------------------------------------------------------------------------- 4. one writer per checkpoint


def test_a_second_stream_on_a_running_checkpoint_is_refused_and_a_killed_ones_lock_does_not_block(
        sw, spark, tmp_path, capsys):
    """A `sqlwin stream` runs in a process of its own. A second `sqlwin stream --once` on its checkpoint
    exits 2 before Spark starts, naming the running one (host, pid, since); `sw.stream` here is
    refused the same way. The first is then SIGKILLed (its JVM and workers too): its lock stays, and
    a restart notices that its pid is dead, takes the lock over, runs, and releases it at the end."""
    from sqlwin.cli import main
    from sqlwin.errors import SqlwinUsageError

    dirs = Dirs(tmp_path)
    first_args = dirs.args()
    if JAVA_OPTIONS:
        first_args += ["--conf", f"spark.driver.defaultJavaOptions={JAVA_OPTIONS}"]
    first = StreamProcess([str(SQLWIN), *first_args], tmp_path / "first.log", _env())
    try:
        _wait_for(dirs.lock.exists, "the first stream took its checkpoint", first)  # then it plans, starts, runs
        holder = json.loads(dirs.lock.read_text())
        assert holder["pid"] == first.proc.pid and holder["host"] == socket.gethostname(), holder

        began = time.monotonic()
        second = _sqlwin(dirs.args("--once"))
        assert second.returncode == 2, second.stderr
        message = (f"sqlwin: The checkpoint {dirs.checkpoint} is in use by a running stream (host "
                   f"{socket.gethostname()}, pid {first.proc.pid}, since {holder['since']}): a second stream would "
                   "write into the same state and sinks\n")
        assert second.stderr.startswith(message), second.stderr
        assert "Accepted: stop that stream first" in second.stderr and not JVM_STACK.search(second.stderr)
        assert "batch" not in second.stderr and time.monotonic() - began < 30, second.stderr  # before Spark starts

        with pytest.raises(SqlwinUsageError) as refused:  # the Python API, in this process
            sw.stream(QUERY, sources={"clicks": dirs.frame(spark)}, sink=str(dirs.sink),
                      checkpoint=str(dirs.checkpoint))
        assert f"is in use by a running stream (host {socket.gethostname()}, pid {first.proc.pid}," \
            in refused.value.message
        assert json.loads(dirs.lock.read_text()) == holder  # the refusals left the lock as it was
    finally:
        first.kill()
    assert json.loads(dirs.lock.read_text())["pid"] == first.proc.pid  # a killed stream's lock stays...

    dirs.add_file()
    capsys.readouterr()
    assert main(dirs.args("--once")) == 0  # ...and does not block the restart
    err = capsys.readouterr().err
    assert re.search(r"^batch \d+: ", err, re.M), err
    assert not dirs.lock.exists()  # --once released it
    assert _batches(dirs.sink)


def test_a_lock_judged_stale_by_what_it_records_is_taken_over(tmp_path):
    """The lock's holder, judged without asking the user to delete anything: a dead pid, or a pid
    reused by another process (its start time differs), or another host's lock whose heartbeat
    stopped; a live holder, or another host's lock refreshed lately, is refused."""
    from sqlwin import checkpoint_lock as cl
    from sqlwin.errors import SqlwinUsageError

    checkpoint = tmp_path / "ck"
    checkpoint.mkdir()
    me = cl.Holder.me(str(checkpoint), "me")

    def lock_of(age_s: float = 0.0, **fields) -> None:
        holder = {**me.__dict__, "run_id": "other", **fields}
        (checkpoint / cl.LOCK).write_text(json.dumps(holder))
        stamp = time.time() - age_s
        os.utime(checkpoint / cl.LOCK, (stamp, stamp))

    def takes(run: str) -> bool:
        try:
            cl.acquire(checkpoint, run).release()
        except SqlwinUsageError:
            return False
        assert not (checkpoint / cl.LOCK).exists()
        return True

    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        started = cl.process_start(sleeper.pid)
        lock_of(pid=sleeper.pid, pid_start=started)
        with pytest.raises(SqlwinUsageError) as refused:
            cl.acquire(checkpoint, "a")
        assert f"(host {me.host}, pid {sleeper.pid}, since {me.since})" in refused.value.message
        lock_of(pid=sleeper.pid, pid_start=started + 1)  # the pid now names another process
        assert takes("b")
    finally:
        sleeper.kill()
        sleeper.wait()
    lock_of(pid=sleeper.pid, pid_start=started)  # the holder is dead
    assert takes("c")
    lock_of(host="elsewhere", age_s=5)
    with pytest.raises(SqlwinUsageError) as refused:
        cl.acquire(checkpoint, "d")
    assert re.search(r"\(host elsewhere, pid \d+, since .*, last heartbeat \d+ s ago\)", refused.value.message)
    lock_of(host="elsewhere", age_s=cl.STALE_AFTER_S + 60)  # its heartbeat stopped long ago
    assert takes("e")
    lock_of(age_s=cl.STALE_AFTER_S + 60, boot_id="another-boot")  # this host's name, another kernel: heartbeat
    assert takes("f")
    (checkpoint / cl.LOCK).write_text("")  # a lock cut short long ago
    os.utime(checkpoint / cl.LOCK, (time.time() - 600, time.time() - 600))
    assert takes("g")


def test_stop_and_once_release_the_checkpoint_and_this_process_cannot_run_two_streams_on_it(
        sw, spark, tmp_path, capsys):
    from sqlwin.cli import main
    from sqlwin.errors import SqlwinUsageError

    dirs = Dirs(tmp_path)
    # The directory read as `sqlwin stream --source-format csv` reads it (its rows and its malformed
    # rows: two Spark sources), so the command below can take the checkpoint over.
    as_the_command = dict(sources={"clicks": str(dirs.source)}, source_format="csv")
    handle = sw.stream(QUERY, sink=str(dirs.sink), checkpoint=str(dirs.checkpoint), **as_the_command)
    try:
        assert json.loads(dirs.lock.read_text())["run_id"] == handle.run_id
        with pytest.raises(SqlwinUsageError) as refused:
            sw.stream(QUERY, sink=str(dirs.sink), checkpoint=str(dirs.checkpoint), **as_the_command)
        assert f"in use by a running stream (this process, pid {os.getpid()}," in refused.value.message
        assert "stream.stop()" in refused.value.hint
    finally:
        handle.stop()
    assert not dirs.lock.exists()
    capsys.readouterr()
    assert main(dirs.args("--once")) == 0
    assert not dirs.lock.exists()
    # A start refused after the lock was taken (the query does not fit the checkpoint) leaves it free.
    with pytest.raises(SqlwinUsageError):
        sw.stream(QUERY.replace("30 MINUTES", "1 HOUR"), sources={"clicks": dirs.frame(spark)},
                  sink=str(dirs.sink), checkpoint=str(dirs.checkpoint))
    assert not dirs.lock.exists()


def test_a_restart_that_reads_other_sources_than_the_checkpoints_is_refused_in_sqlwins_words(sw, spark, tmp_path,
                                                                                             capsys):
    """A stream started over a DataFrame, restarted as `sqlwin stream --source-format csv` (which reads
    the directory twice: its rows and its malformed rows): Spark would fail the first batch with "There
    are [2] sources in the checkpoint offsets and now there are [3]"; sqlwin refuses before it starts."""
    from sqlwin.cli import main

    dirs = Dirs(tmp_path)
    handle = sw.stream(QUERY, sources={"clicks": dirs.frame(spark)}, sink=str(dirs.sink),
                       checkpoint=str(dirs.checkpoint))
    try:
        handle.process_all_available()  # Spark's offsets name two sources: the file source, the control rows
    finally:
        handle.stop()
    capsys.readouterr()
    assert main(dirs.args("--once")) == 2
    said = capsys.readouterr().err
    assert "belongs to a stream that read 2 streaming sources, and this start reads 3" in said, said
    assert "Traceback" not in said and "assertion failed" not in said
    assert not dirs.lock.exists()


def test_a_stream_whose_checkpoint_was_taken_over_stops_at_its_next_batch(sw, spark, tmp_path):
    """A stream stalled past the heartbeat's bound (a frozen machine, a lost share) may wake to find that
    another stream judged its lock stale and took the checkpoint: its next batch stops it, naming the
    other, instead of writing beside it; the other's lock stays."""
    from sqlwin.errors import SqlwinRuntimeError

    dirs = Dirs(tmp_path)
    handle = sw.stream(QUERY, sources={"clicks": dirs.frame(spark)}, sink=str(dirs.sink),
                       checkpoint=str(dirs.checkpoint))
    try:
        handle.process_all_available()
        taken = {**json.loads(dirs.lock.read_text()), "host": "elsewhere", "pid": 4242, "run_id": "another run",
                 "since": "2026-11-26 10:00:00 UTC"}
        dirs.lock.write_text(json.dumps(taken))
        dirs.add_file()
        with pytest.raises(SqlwinRuntimeError) as failed:
            handle.process_all_available()
    finally:
        handle.stop()
    assert failed.value.message == (
        f"The stream stopped before batch 1: another stream holds its checkpoint {dirs.checkpoint} now (host "
        "elsewhere, pid 4242, since 2026-11-26 10:00:00 UTC), which found this stream's lock stale")
    assert _batches(dirs.sink) == ["batch_id=0"] and json.loads(dirs.lock.read_text()) == taken


# --------------------------------------------------------------------------- 5. failures in sqlwin's words


def _chattr(path: Path, flag: str) -> bool:
    if not shutil.which("chattr"):
        return False
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_a_sink_that_cannot_be_created_or_written_is_refused_before_the_start(sw, spark, tmp_path, capsys):
    from sqlwin.cli import main
    from sqlwin.errors import SqlwinUsageError

    dirs = Dirs(tmp_path)
    (tmp_path / "afile").write_text("not a directory")
    capsys.readouterr()
    assert main(dirs.args("--once", sink=tmp_path / "afile" / "results")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sqlwin: The sink {tmp_path}/afile/results cannot be created ({tmp_path}/afile is a "
                          "file, not a directory): the stream writes into it from its first batch on\n"), err
    with pytest.raises(SqlwinUsageError) as refused:
        sw.stream(QUERY, sources={"clicks": dirs.frame(spark)}, sink=str(dirs.sink), checkpoint=str(dirs.checkpoint),
                  late_sink=str(tmp_path / "afile" / "late"))
    assert refused.value.message.startswith(f"The late sink {tmp_path}/afile/late cannot be created")
    assert not dirs.checkpoint.exists() and not dirs.sink.exists()  # nothing written

    dirs.sink.mkdir()
    if not _chattr(dirs.sink, "+i"):
        pytest.skip("chattr +i is not permitted here: the immutable case is not checked")
    try:
        assert main(dirs.args("--once")) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"sqlwin: The sink {dirs.sink} is not writable (Operation not permitted): "), err
        assert not dirs.checkpoint.exists()
    finally:
        _chattr(dirs.sink, "-i")


def test_a_sink_that_stops_being_writable_stops_the_stream_with_one_message(sw, spark, tmp_path, capsys):
    """The sink is replaced by a file while the stream runs: the next batch's write fails. `sqlwin
    stream` (a process of its own, so that what its JVM prints is seen) exits 1 with one message
    naming the sink, no JVM stack; the lock is released. Made writable again, the stream restarts and
    runs the batch. `sw.stream` raises the same message as a SqlwinRuntimeError."""
    from sqlwin.cli import main
    from sqlwin.errors import SqlwinRuntimeError

    dirs = Dirs(tmp_path / "cli")
    args = dirs.args()
    if JAVA_OPTIONS:
        args += ["--conf", f"spark.driver.defaultJavaOptions={JAVA_OPTIONS}"]
    stream = StreamProcess([str(SQLWIN), *args], tmp_path / "stream.log", _env())
    try:
        _wait_for(lambda: re.search(r"^batch 0: ", stream.output(), re.M), "batch 0 written", stream)
        dirs.sink.rename(dirs.root / "results.moved")
        dirs.sink.write_text("not a directory any more")
        dirs.add_file()
        assert stream.wait(240) == 1
    finally:
        stream.kill()
    out = stream.output()
    message = (f"sqlwin: The stream stopped at batch 1: its sink {dirs.sink} is not writable any more "
               f"({dirs.sink} is a file, not a directory); the batch was not committed\n"
               "Accepted: the directory made writable again")
    assert message in out and not JVM_STACK.search(out), out
    assert "FOREACH_BATCH_USER_FUNCTION_ERROR" not in out and " ERROR " not in out, out
    assert not dirs.lock.exists()
    dirs.sink.unlink()
    (dirs.root / "results.moved").rename(dirs.sink)
    capsys.readouterr()
    assert main(dirs.args("--once")) == 0
    assert re.search(r"^batch 1: ", capsys.readouterr().err, re.M)

    api = Dirs(tmp_path / "api")
    handle = sw.stream(QUERY, sources={"clicks": api.frame(spark)}, sink=str(api.sink), checkpoint=str(api.checkpoint))
    try:
        handle.process_all_available()
        api.sink.rename(api.root / "results.moved")
        api.sink.write_text("not a directory any more")
        api.add_file()
        with pytest.raises(SqlwinRuntimeError) as failed:
            handle.process_all_available()
    finally:
        handle.stop()
    assert failed.value.message.startswith(f"The stream stopped at batch 1: its sink {api.sink} is not writable")
    assert not api.lock.exists()


def test_a_damaged_sink_marker_or_checkpoint_record_is_named_with_what_to_do(sw, spark, tmp_path, capsys):
    """An empty `_sqlwin_sink.json` is named, with the command that writes it again for this
    checkpoint; done, the stream restarts. A damaged sqlwin.json is named too."""
    from sqlwin.cli import main

    dirs = Dirs(tmp_path)
    assert main(dirs.args("--once")) == 0
    marker = dirs.sink / "_sqlwin_sink.json"
    owner = json.loads(marker.read_text())
    marker.write_text("")
    capsys.readouterr()
    assert main(dirs.args("--once")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sqlwin: The sink's marker {marker} is damaged (empty): it names the checkpoint that "
                          f"wrote into {dirs.sink}, and sqlwin writes into a sink only for that checkpoint\n"), err
    command = re.search(r"naming it: (echo '.*' > \S+); else another sink directory$", err, re.M)
    assert command, err
    subprocess.run(["bash", "-c", command.group(1)], check=True)
    assert json.loads(marker.read_text()) == owner
    dirs.add_file()
    assert main(dirs.args("--once")) == 0

    record = dirs.checkpoint / "sqlwin.json"
    record.write_text(record.read_text()[:20])
    capsys.readouterr()
    assert main(dirs.args("--once")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sqlwin: The checkpoint's record {record} is damaged (not JSON: "), err
    assert f"Accepted: {record} restored from a copy of the checkpoint" in err, err


SLOW_PYTHON = """#!/bin/bash
# PYSPARK_PYTHON for a test: the worker that plans transformWithStateInPandas starts 12 s late (Spark
# waits 10 s for it to connect back) while COUNTER holds a number above 0, which each late start lowers.
case "$*" in
  *transform_with_state_driver_worker*)
    n=$(cat {counter} 2>/dev/null || echo 0)
    if [ "$n" -gt 0 ]; then echo $((n - 1)) > {counter}; sleep 12; fi ;;
esac
exec {python} "$@"
"""


def _slow_python(tmp_path: Path, late_starts: int) -> Path:
    counter = tmp_path / "late-starts"
    counter.write_text(str(late_starts))
    script = tmp_path / "slow-python"
    script.write_text(SLOW_PYTHON.replace("{counter}", str(counter)).replace("{python}", sys.executable))
    script.chmod(0o755)
    return script


def _late_worker_run(root: Path) -> tuple[Dirs, subprocess.CompletedProcess]:
    dirs = Dirs(root)
    python = _slow_python(root, 1)
    return dirs, _sqlwin(dirs.args("--once"), env=_env(str(python)))


LATE_WORKER = "stream guard: a Python worker that does not connect back"


def start_in_background(items, submit) -> None:
    """The late worker's `sqlwin stream` from the start of the run (tests/support/background.py): ~25 s,
    mostly Spark's 10 s wait and the worker's 12 s sleep."""
    import tempfile

    if any(item.originalname == "test_a_python_worker_that_does_not_connect_back_is_started_again" for item in items):
        submit(LATE_WORKER, lambda: _late_worker_run(Path(tempfile.mkdtemp(prefix="sqlwin-late-worker-"))))


def test_a_python_worker_that_does_not_connect_back_is_started_again(tmp_path):
    """The reproduction: `sqlwin stream` whose planning worker misses Spark's 10 s once. The stream is
    started again (a line says so), runs, and exits 0; no JVM stack is printed."""
    from tests.support import background

    dirs, done = background.take(LATE_WORKER) or _late_worker_run(tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (dirs.root / "late-starts").read_text().strip() == "0"  # the late start happened
    assert "sqlwin: Spark's Python worker did not connect back in time (a busy machine): the stream starts " \
           "again, attempt 2 of 3\n" in done.stderr, done.stderr
    assert re.search(r"^batch 0: ", done.stderr, re.M) and not JVM_STACK.search(done.stderr), done.stderr
    assert " ERROR " not in done.stderr, done.stderr
    assert not dirs.lock.exists() and _batches(dirs.sink)


def test_a_python_worker_that_never_connects_back_stops_the_stream_with_one_message(sw, spark, tmp_path,
                                                                                     monkeypatch):
    """With every attempt used (here one: spark.sqlwin.stream.startAttempts=1), `sw.stream` raises one
    SqlwinRuntimeError saying what happened and what to do; the checkpoint is released."""
    from sqlwin.errors import SqlwinRuntimeError

    dirs = Dirs(tmp_path)
    monkeypatch.setattr(spark.sparkContext, "pythonExec", str(_slow_python(tmp_path, 5)))
    spark.conf.set("spark.sqlwin.stream.startAttempts", "1")
    try:
        handle = sw.stream(QUERY, sources={"clicks": dirs.frame(spark)}, sink=str(dirs.sink),
                           checkpoint=str(dirs.checkpoint))
        try:
            with pytest.raises(SqlwinRuntimeError) as failed:
                handle.process_all_available()
        finally:
            handle.stop()
    finally:
        spark.conf.unset("spark.sqlwin.stream.startAttempts")
    assert str(failed.value) == (
        "The stream stopped as it started: Spark's Python worker for the window operator did not connect back "
        "within Spark's 10 s (a machine too busy to start a Python process in time)\n"
        "Accepted: start it again when the machine is less busy (nothing is lost: the checkpoint runs the batch "
        "again); --conf spark.sqlwin.stream.startAttempts=N tries N times")
    assert "Python worker failed to connect back" in str(failed.value.__cause__)  # --debug shows Spark's error
    assert not dirs.lock.exists()


# --------------------------------------------------------------------------- on a standalone cluster


@pytest.mark.deploy
def test_on_a_standalone_cluster_one_stream_per_checkpoint_and_a_killed_ones_lock_is_taken_over(
        standalone_cluster, tmp_path):
    """The same as the first test with the streams' drivers on a standalone cluster (the run's, from
    tests/support/deploy.py; one executor: spark.cores.max=1): the lock is the driver's, the executors
    write the state under the checkpoint."""
    master = ["--master", standalone_cluster()["url"], "--conf", "spark.cores.max=1"]
    dirs = Dirs(tmp_path / "stream")
    args = dirs.args(*master)
    if JAVA_OPTIONS:
        args += ["--conf", f"spark.driver.defaultJavaOptions={JAVA_OPTIONS}"]
    first = StreamProcess([str(SQLWIN), *args], tmp_path / "first.log", _env())
    try:
        _wait_for(lambda: re.search(r"^batch 0: ", first.output(), re.M), "batch 0 on the cluster", first,
                  timeout_s=400)
        second = _sqlwin(dirs.args("--once", *master))
        assert second.returncode == 2, second.stderr
        assert f"is in use by a running stream (host {socket.gethostname()}, pid {first.proc.pid}," \
            in second.stderr, second.stderr
    finally:
        first.kill()
    assert dirs.lock.exists()
    dirs.add_file()
    third = _sqlwin(dirs.args("--once", *master), timeout=400)
    assert third.returncode == 0, third.stderr[-4000:]
    assert re.search(r"^batch 1: ", third.stderr, re.M), third.stderr
    assert not dirs.lock.exists()

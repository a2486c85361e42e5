"""Kill `sqlwin stream` with SIGKILL at chosen points, restart it, and compare its sinks.

The pieces tests/test_crash.py puts together (also usable from a script):

- `QUERIES`: the streaming queries under test, each over the source table `events`
  (k STRING, ts BIGINT epoch ms, v INT, seq BIGINT) with LATE ROWS INTO: windowed aggregations,
  a windowed self-join and a chain of two windowed aggregations.
- `make_batches(seed, n)`: a deterministic input of `n` micro-batches with on-time rows,
  rows out of order, late rows, and rows with a NULL key or a NULL time.
- `Run`: one stream's directories (source, checkpoint, sink, late sink) and its `sqlwin stream`
  processes. Files are fed as Spark's file source wants them: written under a hidden name,
  given a modification time that orders them (the source takes files oldest first, one per
  micro-batch with --max-files-per-trigger 1, so file i is batch i in every run), then renamed.
- `KILL_POINTS`: where a kill aims, as a condition on the checkpoint and sink directories
  that a poller (every few milliseconds) waits for before sending SIGKILL to the process
  group and every process it started (the JVM and Spark's Python workers included).
  `Run.landed(batch)` says afterwards what the kill actually interrupted.
- `reference_runs(sw, ...)`: the same input through `sw.stream` in the test session's own
  Spark, uninterrupted: the reference the crashed runs are compared with.
- `expected_tumble_final`, `expected_count_windows`: what two of the queries must give,
  computed from the input alone (the first also gives the join's and the chain's windows).
- `state_figures`, `rss_bytes`, `jvm_heap_after_gc`: what a long stream keeps.
- `compare(reference, crashed)`: rows lost, duplicated and moved to another batch, per window.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import typing as t
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SQLWIN = ROOT / ".venv" / "bin" / "sqlwin"
SOURCE = "events"
# The JVM of every `sqlwin stream` process compiles with C1 only and collects with the serial
# GC: for processes that live seconds this halves their CPU (measured: 36 -> 22 CPU s from start
# to four batches), and what a kill leaves on disk does not depend on it. Prepended to sqlwin's
# own java options (spark.driver.defaultJavaOptions). SQLWIN_CRASH_JAVA_OPTIONS="" runs the
# JVM's defaults.
JAVA_OPTIONS = os.environ.get("SQLWIN_CRASH_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
STARTED = "Ctrl-C stops"  # the end of `sqlwin stream`'s first line: the query has started
SIZE_MS, DELAY_MS, GAP_MS, COUNT = 10_000, 2_000, 3_000, 3  # the queries' window size, delay, gap, count

_WATERMARK = f"PARTITION BY k WATERMARK ts DELAY OF INTERVAL {DELAY_MS // 1000} SECONDS"
QUERIES: dict[str, str] = {
    # The vectorised fixed-window runtime, a clock per key.
    "final": f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total
FROM TUMBLE(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {SIZE_MS // 1000} SECONDS)
GROUP BY k, window_start, window_end
EMIT FINAL
LATE ROWS INTO late_{SOURCE}
""",
    # The general runtime: a result after every row of a window.
    "changes": f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, max(seq) AS last_seq
FROM TUMBLE(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {SIZE_MS // 1000} SECONDS)
GROUP BY k, window_start, window_end
EMIT CHANGES
LATE ROWS INTO late_{SOURCE}
""",
    # The general runtime's changelog: -U/+U pairs, and -D for sessions merged away.
    "retracting": f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total
FROM SESSION(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {GAP_MS // 1000} SECONDS)
GROUP BY k, window_start, window_end
EMIT CHANGES RETRACTING
LATE ROWS INTO late_{SOURCE}
""",
    # The vectorised session runtime.
    "session": f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, min(seq) AS first_seq
FROM SESSION(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {GAP_MS // 1000} SECONDS)
GROUP BY k, window_start, window_end
EMIT FINAL
LATE ROWS INTO late_{SOURCE}
""",
    # The vectorised count runtime: each key's rows in arrival order (seq within a batch).
    "count": f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, min(seq) AS first_seq
FROM COUNT_WINDOW(TABLE {SOURCE} PARTITION BY k ORDER BY seq, DESCRIPTOR(ts), {COUNT})
GROUP BY k, window_start, window_end
LATE ROWS INTO late_{SOURCE}
""",
    # A windowed join: the stream with itself (one source directory read by both sides), every
    # pair of a key's rows in a window. Its late rows carry the side and the row as a struct
    # (side, l, r, late_by, window_start, window_end, reason): each late input row twice.
    "join": f"""
SELECT l.k, l.window_start, l.window_end, l.v AS lv, l.seq AS lseq, r.v AS rv, r.seq AS rseq
FROM TUMBLE(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {SIZE_MS // 1000} SECONDS) l
FULL JOIN TUMBLE(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {SIZE_MS // 1000} SECONDS) r
ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end
LATE ROWS INTO late_{SOURCE}
""",
    # Two chained windowed aggregations in one streaming query: per key and window, then a total
    # per window over the first stage's window_time (the downstream follows the upstream's
    # firings). Its late sink has the first stage's rows (stage 1) and an upstream_row struct
    # for the second stage's.
    "chain": f"""
WITH per_key AS (
  SELECT k, window_start, window_end, window_time, count(*) AS n, sum(v) AS total
  FROM TUMBLE(TABLE {SOURCE} {_WATERMARK}, DESCRIPTOR(ts), INTERVAL {SIZE_MS // 1000} SECONDS)
  GROUP BY k, window_start, window_end, window_time)
SELECT window_start, window_end, sum(n) AS n, sum(total) AS total, count(*) AS keys
FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), INTERVAL {SIZE_MS // 1000} SECONDS)
GROUP BY window_start, window_end
LATE ROWS INTO late_{SOURCE}
""",
}

Row = tuple  # (k, ts, v, seq); k or ts may be None


def make_batches(seed: int, batches: int, keys: t.Sequence[str] = ("a", "b", "c", "d"),
                 rows_per_batch: tuple[int, int] = (4, 8)) -> list[list[Row]]:
    """A stream whose time moves 4 s a batch. Most rows are near the stream's time (up to 3 s
    behind it: out of order, still on time); about one in five is 15-30 s behind, late for
    every key that has been seen lately; every third batch has a row with a NULL key, every
    fourth one with a NULL time (rejected to the late sink)."""
    rng = random.Random(seed)
    out, seq, now = [], 0, 100_000
    for i in range(batches):
        now += 4_000
        rows = []
        for _ in range(rng.randint(*rows_per_batch)):
            late = rng.random() < 0.2
            ts = now - rng.randint(15_000, 30_000) if late else now + rng.randint(-3_000, 1_000)
            rows.append([rng.choice(keys), ts, rng.randint(1, 9)])
        if i % 3 == 1:
            rows.append([None, now, rng.randint(1, 9)])
        if i % 4 == 2:
            rows.append([rng.choice(keys), None, rng.randint(1, 9)])
        rng.shuffle(rows)
        batch = []
        for row in rows:
            batch.append((*row, seq))
            seq += 1
        out.append(batch)
    return out


def write_batch(source: Path, index: int, rows: t.Sequence[Row], mtime_base: float) -> Path:
    """File `index` of the stream, atomically: the file source skips hidden files, so it sees the
    whole file or nothing. Its modification time is `mtime_base + index` seconds: the source
    takes the oldest new file first."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    k, ts, v, seq = (list(c) for c in zip(*rows)) if rows else ([], [], [], [])
    table = pa.table({"k": pa.array(k, pa.string()), "ts": pa.array(ts, pa.int64()),
                      "v": pa.array(v, pa.int32()), "seq": pa.array(seq, pa.int64())})
    tmp = source / f".batch-{index:05d}.parquet.tmp"
    pq.write_table(table, tmp)
    stamp = int((mtime_base + index) * 1e9)
    os.utime(tmp, ns=(stamp, stamp))
    final = source / f"batch-{index:05d}.parquet"
    os.rename(tmp, final)
    return final


# --------------------------------------------------------------------------- sinks


class SinkRows(dict):
    """{batch_id: rows} of a sink; `schemas`: the distinct schemas of its files (names, types, nullability)."""

    schemas: set


def read_sink(sink: Path) -> SinkRows:
    """{batch_id: rows} of a sink, each row a tuple in the file's column order (lists as tuples)."""
    import pyarrow.parquet as pq

    out = SinkRows()
    out.schemas = set()
    if not sink.is_dir():
        return out
    for path in sink.glob("batch_id=*"):
        batch = int(path.name.split("=", 1)[1])
        rows = []
        for part in sorted(path.glob("part-*.parquet")):
            table = pq.read_table(part)
            out.schemas.add(table.schema.remove_metadata().to_string(show_field_metadata=False))
            names = table.column_names
            for record in table.to_pylist():
                rows.append(tuple(_hashable(record[n]) for n in names))
        out[batch] = rows
    return out


def sink_columns(sink: Path) -> list[str] | None:
    import pyarrow.parquet as pq

    for part in sorted(sink.glob("batch_id=*/part-*.parquet")):
        return pq.read_schema(part).names
    return None


def stray_files(sink: Path) -> list[str]:
    """What a reader of the sink should never see: a batch directory without _SUCCESS, or a
    leftover of an interrupted write (_temporary, hidden temporary files)."""
    out = []
    for path in sorted(sink.glob("batch_id=*")):
        names = {p.name for p in path.iterdir()}
        if "_SUCCESS" not in names or "_temporary" in names:
            out.append(f"{path.name}: {sorted(names)}")
    return out


def _hashable(value):
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


@dataclasses.dataclass
class Comparison:
    lost: list[tuple]  # (batch, row) of the reference missing from the crashed run
    duplicated: list[tuple]  # (batch, row) the crashed run has more often than the reference
    moved: list[tuple]  # rows present as often, but in another batch
    rows: int  # rows of the reference

    @property
    def equal(self) -> bool:
        return not (self.lost or self.duplicated or self.moved)

    def report(self, columns: list[str] | None, what: str) -> str:
        if self.equal:
            return f"{what}: {self.rows} rows, identical"
        lines = [f"{what}: {len(self.lost)} rows lost, {len(self.duplicated)} duplicated, "
                 f"{len(self.moved)} in another batch (of {self.rows}); columns {columns}"]
        for label, rows in (("lost", self.lost), ("duplicated", self.duplicated), ("moved", self.moved)):
            by_window = collections.defaultdict(list)
            for batch, row in rows:
                by_window[_window_of(row, columns)].append((batch, row))
            for window, items in sorted(by_window.items(), key=repr)[:12]:
                lines.append(f"  {label} {window}: " + "; ".join(f"batch {b}: {r}" for b, r in items[:4]))
        return "\n".join(lines)


def _window_of(row: tuple, columns: list[str] | None) -> tuple:
    if not columns:
        return row[:3]
    pick = [c for c in ("k", "window_start", "window_end") if c in columns]
    return tuple(row[columns.index(c)] for c in pick)


def compare(reference: dict[int, list[tuple]], crashed: dict[int, list[tuple]]) -> Comparison:
    """Multisets of rows per batch: what the crashed run lacks, has twice, or has elsewhere."""
    ref_all = collections.Counter(r for rows in reference.values() for r in rows)
    got_all = collections.Counter(r for rows in crashed.values() for r in rows)
    lost_rows, dup_rows = ref_all - got_all, got_all - ref_all
    lost, dup, moved = [], [], []
    for batch in sorted(set(reference) | set(crashed)):
        ref, got = collections.Counter(reference.get(batch, [])), collections.Counter(crashed.get(batch, []))
        for row, n in (ref - got).items():
            for _ in range(n):
                if lost_rows[row] > 0:
                    lost_rows[row] -= 1
                    lost.append((batch, row))
                else:
                    moved.append((batch, row))
        for row, n in (got - ref).items():
            for _ in range(n):
                if dup_rows[row] > 0:
                    dup_rows[row] -= 1
                    dup.append((batch, row))
    return Comparison(lost, dup, moved, sum(ref_all.values()))


# --------------------------------------------------------------------------- processes


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        tree[ppid].append(int(entry))
    return tree


def descendants(pid: int) -> set[int]:
    tree, out, todo = _children(), set(), [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            if child not in out:
                out.add(child)
                todo.append(child)
    return out


def cpu_seconds(pid: int, children: bool = False) -> float | None:
    """utime + stime of a process (with `children`, also of the children it has reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    ticks = int(fields[11]) + int(fields[12]) + (int(fields[13]) + int(fields[14]) if children else 0)
    return ticks / os.sysconf("SC_CLK_TCK")


def parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except OSError:
        return None


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot), or None when it is gone or a zombie.

    A pid alone names a process only while it lives: pids are reused, and on a busy machine
    soon. (pid, start time) names one process for good, so a kill never reaches another one.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == b"Z" else int(fields[19])


def alive(pid: int, started: int | None = None) -> bool:
    """The process lives (not a zombie) and, given `started`, is the one that started then."""
    now = start_time(pid)
    return now is not None and (started is None or now == started)


def _signal(pid: int, started: int) -> None:
    """SIGKILL the process (pid, started) if it is still that process."""
    if alive(pid, started):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


# Run in the child before it becomes `sqlwin stream` (execv keeps the pid): if the test process
# dies, even by SIGKILL, the kernel sends SIGKILL to the driver (PR_SET_PDEATHSIG), and its JVM
# and workers follow as their input closes. No stream outlives an interrupted test run.
_ORPHAN_GUARD = """
import ctypes, os, signal, sys
ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if os.getppid() == 1:
    sys.exit(1)
os.execv(sys.argv[1], sys.argv[1:])
"""
_LIVE: "set[StreamProcess]" = set()  # killed at exit if still running (an interrupted test run)


@atexit.register
def _kill_live() -> None:
    for process in list(_LIVE):
        process.kill()


class StreamProcess:
    """One `sqlwin stream` process in a process group of its own; its output goes to a log file.

    A watcher thread keeps the set of processes it started (the JVM, Spark's Python daemon and
    workers, which put themselves in groups of their own) up to date, so a kill reaches them
    all even after their parent died."""

    def __init__(self, args: list[str], log: Path, env: dict[str, str]):
        self.args, self.log_path = args, log
        self.log = open(log, "ab")
        self.started = time.monotonic()
        self.proc = subprocess.Popen([sys.executable, "-c", _ORPHAN_GUARD, *args], stdout=self.log,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=str(ROOT))
        self.family: dict[int, int] = {}  # {pid: start time} of every process it started
        self.cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        self.killed_at: float | None = None
        _LIVE.add(self)

    def _watch(self) -> None:
        while not self._stop.wait(0.25):
            if self.proc.poll() is not None:
                return
            self._note_family()
            for pid in [self.proc.pid, *(p for p, s in self.family.items() if alive(p, s))]:
                seconds = cpu_seconds(pid)
                if seconds is not None:
                    self.cpu[pid] = seconds

    def _note_family(self) -> None:
        """Add the live descendants of the driver, each with its start time (see `start_time`)."""
        if self.proc.poll() is not None:
            return  # its children now hang from init: the ones noted so far are all it had
        for pid in descendants(self.proc.pid):
            if pid not in self.family or not alive(pid, self.family[pid]):
                started = start_time(pid)
                if started is not None:
                    self.family[pid] = started

    @property
    def cpu_s(self) -> float:
        """CPU seconds its processes used (sampled every 0.25 s): what it costs on a quiet machine."""
        return sum(self.cpu.values())

    @property
    def running(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the group (the sqlwin driver and its JVM stop at once), then every process it started."""
        if self.killed_at is None and self.running:
            self.killed_at = time.monotonic()
        self._note_family()
        if self.proc.returncode is None:
            # Not reaped yet, so the group id (the driver's pid) cannot belong to anyone else.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._stop.set()
        for pid, started in self.family.items():
            _signal(pid, started)
        try:
            self.proc.wait(timeout=30)
        finally:
            self.log.close()
            _LIVE.discard(self)

    def wait(self, timeout: float) -> int:
        try:
            code = self.proc.wait(timeout=timeout)
            _LIVE.discard(self)
            return code
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"`{' '.join(self.args)}` still running after {timeout:.0f} s; "
                               f"its output:\n{self.output()[-3000:]}") from None
        finally:
            self._stop.set()

    def reap(self, grace_s: float = 30.0) -> None:
        """After the driver exited: give its JVM and workers `grace_s` to follow, then kill them."""
        deadline = time.monotonic() + grace_s
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid, started in self.family.items():
            _signal(pid, started)

    def leftovers(self) -> list[int]:
        """Processes of this run still alive (none may be, once it was killed or ended)."""
        live = [pid for pid, started in self.family.items() if alive(pid, started)]
        return ([self.proc.pid] if self.proc.poll() is None else []) + live

    def output(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""


# --------------------------------------------------------------------------- a run


@dataclasses.dataclass
class Kill:
    point: str
    batch: int  # the micro-batch the kill aims at
    aimed: str  # what it aims at, in words
    landed: str = ""  # what it interrupted, read from the directories afterwards
    after_s: float = 0.0  # seconds from the process start to the kill


class Run:
    """A stream's directories and the `sqlwin stream` processes run over them."""

    def __init__(self, root: Path, query: str, batches: list[list[Row]], *, poll_s: float = 0.003,
                 timeout_s: float = 240.0):
        self.root, self.query, self.batches = root, query, batches
        self.source, self.checkpoint, self.sink, self.late = (root / n for n in ("source", "ckpt", "sink", "late"))
        self.source.mkdir(parents=True, exist_ok=True)
        self.query_file = root / "query.sql"
        self.query_file.write_text(QUERIES.get(query, query))
        self.fed = 0
        self.mtime_base = time.time() - 3600  # files oldest first, an hour ago and on
        self.poll_s, self.timeout_s = poll_s, timeout_s
        self.processes: list[StreamProcess] = []
        self.kills: list[Kill] = []
        # Each `sqlwin stream` chooses its workers' Python as sqlwin.session() does for a user (this
        # interpreter, through the launcher of sqlwin/worker_python.py on a local master).
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SQLWIN_REMOTE", "SQLWIN_MASTER")}

    # -- feeding and processes --------------------------------------------------------

    def feed(self, upto: int) -> None:
        """Rename files in until batches [0, upto) are in the source directory."""
        while self.fed < min(upto, len(self.batches)):
            write_batch(self.source, self.fed, self.batches[self.fed], self.mtime_base)
            self.fed += 1

    def start(self, once: bool = False, end_input: bool = False) -> StreamProcess:
        args = [str(SQLWIN), "stream", str(self.query_file), "--source", f"{SOURCE}={self.source}",
                "--checkpoint", str(self.checkpoint), "--sink", str(self.sink), "--late-sink", str(self.late),
                "--max-files-per-trigger", "1"]
        if JAVA_OPTIONS:
            args += ["--conf", f"spark.driver.defaultJavaOptions={JAVA_OPTIONS}"]
        if once:
            args.append("--once")
        if end_input:
            args.append("--end-input")
        process = StreamProcess(args, self.root / f"process-{len(self.processes)}.log", self.env)
        self.processes.append(process)
        return process

    def finish(self) -> StreamProcess:
        """The restart that ends the stream: every file in, `--once --end-input`, to its exit."""
        self.feed(len(self.batches))
        process = self.start(once=True, end_input=True)
        code = process.wait(self.timeout_s)
        process.reap()
        if code != 0:
            raise AssertionError(f"`sqlwin stream --once --end-input` exited {code}:\n{process.output()[-4000:]}")
        return process

    def stop_all(self) -> None:
        """Kill whatever still runs; the processes' JVMs and workers get a few seconds to exit."""
        for process in self.processes:
            if process.running:
                process.kill()
            process._stop.set()
        deadline = time.monotonic() + 20
        while self.leftovers() and time.monotonic() < deadline:
            time.sleep(0.1)

    def leftovers(self) -> list[int]:
        return [pid for p in self.processes for pid in p.leftovers()]

    # -- what the directories say -----------------------------------------------------

    def planned(self, n: int) -> bool:
        return (self.checkpoint / "spark" / "offsets" / str(n)).exists()

    def committed(self, n: int) -> bool:
        return (self.checkpoint / "spark" / "commits" / str(n)).exists()

    def sink_dir(self, n: int, late: bool = False) -> Path:
        return (self.late if late else self.sink) / f"batch_id={n}"

    def sink_writing(self, n: int) -> bool:
        return (self.sink_dir(n) / "_temporary").exists()

    def sink_done(self, n: int) -> bool:
        return (self.sink_dir(n) / "_SUCCESS").exists()

    def recorded(self, n: int) -> bool:
        """The sink writer's last step for batch n (the batch record), before Spark commits it."""
        folder = self.checkpoint / "sqlwin-batches"
        return folder.exists() and any(folder.glob(f"*-{n:012d}.json"))

    def end_requested(self) -> bool:
        folder = self.checkpoint / "sqlwin-control"
        return folder.exists() and any(p.suffix == ".json" and not p.name.startswith(".") for p in folder.iterdir())

    def last_planned(self) -> int:
        folder = self.checkpoint / "spark" / "offsets"
        ids = [int(p.name) for p in folder.iterdir() if p.name.isdigit()] if folder.exists() else []
        return max(ids, default=-1)

    def landed(self, n: int) -> str:
        """What batch n had done when the process died."""
        if not (self.checkpoint / "sqlwin.json").exists():
            return "before the checkpoint existed"
        if not self.planned(n):
            return f"batch {n} not planned yet (last planned {self.last_planned()})"
        parts = [f"batch {n} planned"]
        for late in (False, True):
            d = self.sink_dir(n, late)
            name = "late sink" if late else "sink"
            if (d / "_SUCCESS").exists():
                parts.append(f"{name} written")
            elif (d / "_temporary").exists() or d.exists():
                parts.append(f"{name} being written")
        if self.recorded(n):
            parts.append("batch recorded")
        parts.append("committed" if self.committed(n) else "not committed")
        if self.planned(n + 1):
            parts.append(f"batch {n + 1} planned")
        return ", ".join(parts)

    # -- killing ----------------------------------------------------------------------

    def wait_for(self, process: StreamProcess, condition: t.Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.timeout_s
        while not condition():
            if not process.running:
                raise AssertionError(f"the stream exited ({process.proc.returncode}) before {what}:\n"
                                     f"{process.output()[-4000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not reached in {self.timeout_s:.0f} s\n{process.output()[-3000:]}")
            time.sleep(self.poll_s)

    def kill_at(self, point: str, batch: int, delay_s: float | None = None) -> Kill:
        """Run the stream up to `point` of `batch` and SIGKILL it there (see KILL_POINTS)."""
        spec = KILL_POINTS[point]
        if spec.end_input:
            batch = len(self.batches)  # the end of input is the batch after the data
        kill = Kill(point, batch, spec.aim.format(n=batch, d=delay_s))
        if spec.end_input:
            self.feed(len(self.batches))
            process = self.start(once=True, end_input=True)
        else:
            self.feed(max(batch, 1))  # a first start needs a file to read the schema from
            process = self.start()
        try:
            if batch > 0 and not spec.end_input:
                # The query has started (its line is printed) and caught up: the file arrives
                # at a running stream, as a live feed's would.
                self.wait_for(process, lambda: STARTED in process.output(), "the query started")
                self.wait_for(process, lambda: self.committed(batch - 1), f"batch {batch - 1} committed")
                self.feed(batch + 1)
            fed_at = time.monotonic()
            if delay_s is not None:
                self.wait_for(process, lambda: time.monotonic() - fed_at >= delay_s, f"{delay_s} s after the file")
            else:
                self.wait_for(process, lambda: spec.condition(self, batch), kill.aimed)
            process.kill()
        finally:
            if process.running:
                process.kill()
        kill.after_s = (process.killed_at or time.monotonic()) - process.started
        kill.landed = self.landed(batch)
        self.kills.append(kill)
        return kill

    def results(self) -> tuple[dict, dict]:
        return read_sink(self.sink), read_sink(self.late)


@dataclasses.dataclass(frozen=True)
class KillPoint:
    aim: str
    condition: t.Callable[[Run, int], bool]
    end_input: bool = False  # the killed process is `--once --end-input` after every file


KILL_POINTS: dict[str, KillPoint] = {
    # A new stream has claimed its sinks (sqlwin.json and the sink markers are written) and
    # Spark is starting the query: nothing is committed yet.
    "before_first_commit": KillPoint("the sinks claimed (their markers written), no batch committed yet",
                                     lambda r, n: (r.late / "_sqlwin_sink.json").exists()),
    # The operator is running the batch: planned, nothing in the sink yet.
    "mid_batch": KillPoint("batch {n} planned, its sink not started",
                           lambda r, n: r.planned(n)),
    # foreachBatch is writing the batch's results: the sink's _temporary directory is there.
    "sink_write": KillPoint("batch {n}'s sink being written (_temporary)",
                            lambda r, n: r.sink_writing(n) or r.sink_done(n) or r.recorded(n)),
    # The results (and late rows) are written, Spark has not committed the batch: the rerun
    # after the restart must replace them, not add to them.
    "before_commit": KillPoint("batch {n} written and recorded, not committed",
                               lambda r, n: r.recorded(n)),
    # Between batches: batch n is committed and no file for the next one is there yet.
    "between_batches": KillPoint("batch {n} committed, before the next file",
                                 lambda r, n: r.committed(n)),
    # ... and the late sink's (after the results, before the batch record).
    "late_sink_write": KillPoint("batch {n}'s late sink being written (_temporary)",
                                 lambda r, n: (r.sink_dir(n, late=True) / "_temporary").exists()
                                 or (r.sink_dir(n, late=True) / "_SUCCESS").exists() or r.recorded(n)),
    # Right after a window closed: the sink holds the batch that emitted it; the kill comes
    # as soon as it is complete, before the late sink and the commit.
    "window_closed": KillPoint("batch {n}'s closed windows in the sink, not committed",
                               lambda r, n: r.sink_done(n) or r.recorded(n)),
    # Timed: `d` seconds after batch n's file was renamed in, wherever that is.
    "delay": KillPoint("{d} s after batch {n}'s file was renamed in", lambda r, n: False),
    # `--once --end-input`: the end-of-input request (a control file) is written ...
    "end_input_requested": KillPoint("end of input requested (control file written)",
                                     lambda r, n: r.end_requested(), end_input=True),
    # ... and its batch (the one after the data) is being written.
    "end_input_sink": KillPoint("the end-of-input batch {n}'s sink being written",
                                lambda r, n: r.end_requested() and (r.sink_writing(n) or r.sink_done(n)
                                                                    or r.recorded(n)),
                                end_input=True),
}


# --------------------------------------------------------------------------- the reference


def reference_runs(sw, root: Path, queries: t.Sequence[str], batches: list[list[Row]]) -> dict[str, tuple[dict, dict]]:
    """{query: (sink, late sink)} of each query over every file, then end of input, through
    `sw.stream` in this process's Spark: the same directories, options and session settings as
    `sqlwin stream` (local, two shuffle partitions, one file per micro-batch), never stopped
    until the input has ended. One stream at a time: PySpark's transformWithStateInPandas
    streams started side by side in one driver fail to plan (the driver-side Python worker of
    one times out connecting back: CANNOT_OPEN_SOCKET)."""
    out = {}
    for query in queries:
        run = Run(root / query, query, batches)
        run.feed(len(batches))
        handle = sw.stream(run.query_file.read_text(), sources={SOURCE: str(run.source)}, sink=str(run.sink),
                           checkpoint=str(run.checkpoint), late_sink=str(run.late),
                           source_options={"maxFilesPerTrigger": "1"})
        try:
            handle.process_all_available()
            handle.end_input()
        finally:
            handle.stop()
        out[query] = run.results()
    return out


# --------------------------------------------------------------------------- independent checks


def expected_tumble_final(batches: list[list[Row]]) -> tuple[dict[tuple, tuple[int, int, int]], int]:
    """The `final` query computed from the input alone: {(k, start, end): (batch, count, sum)} of
    the on-time rows, with the batch that emits the window (len(batches): the end of input), and
    how many rows go to the late sink (late, NULL key, NULL time).

    A clock per key moves at the end of each batch to its newest time - delay, and every window
    of the key whose end it reached closes in that batch; a row is late when its window has
    closed under the clock as it stood before its batch."""
    watermark: dict[str, int] = {}
    windows: dict[tuple, list[int]] = {}
    late = 0
    for batch, rows in enumerate(batches):
        newest: dict[str, int] = {}
        for k, ts, v, _ in rows:
            if k is None or ts is None:
                late += 1
                continue
            start = ts - ts % SIZE_MS
            if k in watermark and watermark[k] >= start + SIZE_MS:
                late += 1
                continue
            window = windows.setdefault((k, start, start + SIZE_MS), [-1, 0, 0])
            window[1] += 1
            window[2] += v
            newest[k] = max(newest.get(k, ts), ts)
        for k, ts in newest.items():
            watermark[k] = max(watermark.get(k, ts - DELAY_MS), ts - DELAY_MS)
        for (k, start, end), window in windows.items():
            if window[0] < 0 and k in watermark and watermark[k] >= end:
                window[0] = batch
    return {w: (b if b >= 0 else len(batches), c, s) for w, (b, c, s) in windows.items()}, late


def expected_count_windows(batches: list[list[Row]]) -> tuple[dict[tuple, tuple[int, int]], int]:
    """The `count` query from the input alone: {(k, first_seq): (batch, sum(v))} of each complete
    window of COUNT rows of a key in arrival order, with the batch its last row arrives in, and
    how many rows are rejected (NULL key or time)."""
    pending: dict[str, list[Row]] = collections.defaultdict(list)
    out: dict[tuple, tuple[int, int]] = {}
    rejected = 0
    for batch, rows in enumerate(batches):
        for row in sorted(rows, key=lambda r: r[3]):
            k, ts, v, seq = row
            if k is None or ts is None:
                rejected += 1
                continue
            pending[k].append(row)
            if len(pending[k]) == COUNT:
                out[(k, pending[k][0][3])] = (batch, sum(r[2] for r in pending[k]))
                pending[k] = []
    return out, rejected


def closing_batches(query: str, batches: list[list[Row]]) -> set[int] | None:
    """The batches in which `query` emits closed windows, from the input alone (None: no model)."""
    if query in ("final", "join"):  # the self-join emits a window's pairs when EMIT FINAL closes it
        return {b for b, _, _ in expected_tumble_final(batches)[0].values()}
    if query == "count":
        return {b for b, _ in expected_count_windows(batches)[0].values()}
    return None


def state_figures(checkpoint: Path) -> dict[str, int]:
    """The newest state-store version's live size, summed over partitions: keys and SST bytes
    (RocksDB's own metadata in each version's zip)."""
    import zipfile

    keys = sst = partitions = 0
    for partition in sorted((checkpoint / "spark" / "state" / "0").glob("[0-9]*")):
        versions = [p for p in partition.glob("*.zip") if p.stem.isdigit()]
        if not versions:
            continue
        newest = max(versions, key=lambda p: int(p.stem))
        with zipfile.ZipFile(newest) as z:
            text = z.read("metadata").decode()
        meta = json.loads(text.split("\n", 1)[1])
        keys += int(meta.get("numKeys") or 0)
        sst += sum(int(f["sizeBytes"]) for f in meta.get("sstFiles", []))
        partitions += 1
    return {"state_keys": keys, "state_sst_bytes": sst, "partitions": partitions}


def directory_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def rss_bytes(pids: t.Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def jvm_heap_after_gc(pid: int) -> int | None:
    """The JVM's used heap right after a full GC (jcmd), in bytes: what the driver really keeps."""
    jcmd = Path(os.path.realpath("/usr/bin/java")).parent / "jcmd"
    if not jcmd.exists():
        return None
    try:
        subprocess.run([str(jcmd), str(pid), "GC.run"], capture_output=True, timeout=60, check=True)
        out = subprocess.run([str(jcmd), str(pid), "GC.heap_info"], capture_output=True, timeout=60,
                             check=True, text=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None
    import re

    match = re.search(r"used (\d+)K", out)
    return int(match.group(1)) * 1024 if match else None


if __name__ == "__main__":  # a quick look at an input
    for i, rows in enumerate(make_batches(int(sys.argv[1]) if len(sys.argv) > 1 else 0, 8)):
        print(i, rows)

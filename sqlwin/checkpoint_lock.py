"""One writer per checkpoint: a lock file in the checkpoint, held for the stream's life (issue 21).

Two streams on one checkpoint would both write its state, its offsets and its sinks; Spark refuses
a second query on a checkpoint only inside one SparkSession. So the process that starts a stream
(where `sw.stream` / `sqlwin stream` runs: the driver, or a Spark Connect client) creates
`<checkpoint>/sqlwin.lock` before it writes anything into the checkpoint, and removes it when the
stream stops. The lock names its holder: host, pid and the process's start time, when it was
taken, the run.

Why a file created atomically and not an fcntl / flock lock held open: a lock a process holds
open dies with it, which is what a killed stream needs, but NFS-like shares implement such locks
badly or not at all (lockd, SMB and FUSE mounts), and a Spark Connect stream runs on after the
client that holds a descriptor. A file made visible by `link()` (atomic on NFS too; O_CREAT|O_EXCL
where a filesystem has no hard links) works on every filesystem a checkpoint can live on, and
its staleness is judged from what it records:

- same host, same kernel (boot id) and same pid namespace: the holder lives iff its pid runs and
  started when the lock says (a pid reused by another process does not keep a lock);
- otherwise (another host, a container, a Spark Connect stream): the holder refreshes the lock's
  modification time every HEARTBEAT_S seconds, and each micro-batch's sink writer does too;
  a lock not refreshed for STALE_AFTER_S is a stopped stream's. Its age is measured against a
  file created on the same filesystem (the file server's clock, not this machine's).

A stale lock is taken over (never deleted by hand): under a short-lived takeover file, so two
processes that both find it stale do not both take it. The refusal is a SqlwinUsageError naming
the holder.
"""

from __future__ import annotations

import atexit
import datetime as dt
import json
import os
import socket
import threading
import time
import typing as t
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

from sqlwin.errors import SqlwinUsageError

LOCK = "sqlwin.lock"
TAKEOVER = ".sqlwin.lock.takeover"
HEARTBEAT_S = 10.0  # how often a running stream refreshes its lock
STALE_AFTER_S = 90.0  # a lock not refreshed this long, whose pid cannot be checked, is a stopped stream's


@dataclass
class Holder:
    """Who holds a checkpoint's lock, as the lock file records it."""

    host: str
    pid: int
    pid_start: int | None  # the process's start time (clock ticks since boot), /proc/<pid>/stat
    boot_id: str | None  # the kernel's boot id: the same host name on another machine or after a reboot differs
    pid_ns: str | None  # the pid namespace: a pid means the same process only within one
    since: str  # when the lock was taken, UTC
    run_id: str
    checkpoint: str
    driver: str = "here"  # 'here' (this process runs the stream), or 'spark connect' (a server runs it)
    heartbeat_s: float = HEARTBEAT_S

    @classmethod
    def me(cls, checkpoint: str, run_id: str, driver: str = "here") -> "Holder":
        now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return cls(socket.gethostname(), os.getpid(), process_start(os.getpid()), _boot_id(), _pid_ns(), now,
                   run_id, str(Path(checkpoint).resolve()), driver)

    def same_machine(self) -> bool:
        """Its pid can be checked from here: this host, kernel and pid namespace."""
        return (self.host == socket.gethostname() and self.boot_id == _boot_id() and self.pid_ns == _pid_ns())

    def is_me(self) -> bool:
        return self.same_machine() and self.pid == os.getpid() and self.pid_start == process_start(os.getpid())

    def describe(self, age_s: float | None = None) -> str:
        who = "this process, pid" if self.is_me() else f"host {self.host}, pid"
        seen = f", last heartbeat {age_s:.0f} s ago" if age_s is not None else ""
        via = ", through Spark Connect" if self.driver != "here" else ""
        return f"{who} {self.pid}{via}, since {self.since}{seen}"


def process_start(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot); None when it is gone, a zombie, or
    there is no /proc to tell."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in (b"Z", b"X") else int(fields[19])


def _pid_runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def _boot_id() -> str | None:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None


def _pid_ns() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


# --------------------------------------------------------------------------- reading a lock


@dataclass
class Found:
    """A lock file as read: its holder (None: unreadable), when it was last refreshed."""

    holder: Holder | None
    mtime: float
    raw: bytes
    directory: Path
    _age_s: float | None = None

    @property
    def age_s(self) -> float:
        """Seconds since its last refresh, by the clock of the filesystem that stamped it."""
        if self._age_s is None:
            self._age_s = max(0.0, _filesystem_now(self.directory) - self.mtime)
        return self._age_s


def _read(path: Path) -> Found | None:
    """The lock at `path`, opened (an NFS client then revalidates its attributes), or None."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        raw = os.read(fd, 65536)
        mtime = os.fstat(fd).st_mtime
    finally:
        os.close(fd)
    try:
        holder = Holder(**{k: v for k, v in json.loads(raw).items() if k in Holder.__dataclass_fields__})
    except (ValueError, TypeError):
        holder = None
    return Found(holder, mtime, raw, path.parent)


def _filesystem_now(directory: Path) -> float:
    """Now, by the clock that stamps files in `directory` (a file server's, on a share)."""
    try:
        fd, name = _temp_file(directory, ".sqlwin-clock-")
    except OSError:
        return time.time()
    try:
        return os.fstat(fd).st_mtime
    finally:
        os.close(fd)
        os.unlink(name)


def _temp_file(directory: Path, prefix: str) -> tuple[int, str]:
    name = str(directory / f"{prefix}{uuid.uuid4().hex[:12]}")
    return os.open(name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644), name


def alive(found: Found) -> bool:
    """Whether the stream that holds this lock may still run (see the module's docstring)."""
    holder = found.holder
    if holder is None:  # being written (O_EXCL), or damaged: judged by its age alone
        return found.age_s < STALE_AFTER_S
    if holder.is_me():
        return _held_here(holder)
    if holder.driver == "here" and holder.same_machine():
        if holder.pid_start is not None:
            return process_start(holder.pid) == holder.pid_start
        return _pid_runs(holder.pid)
    return found.age_s < max(STALE_AFTER_S, 6 * float(holder.heartbeat_s or HEARTBEAT_S))


# --------------------------------------------------------------------------- this process's locks

_HELD: dict[str, "CheckpointLock"] = {}  # lock path -> the lock this process holds there
_HELD_GUARD = threading.Lock()


@atexit.register
def _release_at_exit() -> None:
    """A process that ends without stopping its streams ends them (its JVM goes with it): their
    locks go too. A Spark Connect stream runs on in its server: its lock stays, judged by heartbeat."""
    with _HELD_GUARD:
        held = list(_HELD.values())
    for lock in held:
        if lock.holder.driver == "here":
            try:
                lock.release()
            except OSError:
                pass


def _held_here(holder: Holder) -> bool:
    """A lock of this very process: held while the stream that took it runs."""
    with _HELD_GUARD:
        lock = next((held for held in _HELD.values() if held.holder.run_id == holder.run_id), None)
    return lock is not None and lock.running()


# --------------------------------------------------------------------------- taking and releasing


class CheckpointLock:
    """The lock a stream holds on its checkpoint. `running`: whether the stream still runs (a lock
    whose stream stopped without `release`, in this process, is free)."""

    def __init__(self, path: Path, holder: Holder, running: t.Callable[[], bool] = lambda: True):
        self.path, self.holder, self.running = path, holder, running
        self.released = False

    def owned(self) -> bool:
        """The lock file is still this lock's (not released, not taken over)."""
        found = _read(self.path)
        return found is not None and found.holder is not None and found.holder.run_id == self.holder.run_id

    def refresh(self) -> Holder | None:
        """The heartbeat: touch the lock if it is still ours. The holder that took it over, if one did."""
        return heartbeat(self.path.parent, self.holder.run_id)

    def release(self) -> None:
        """Remove the lock, if it is still ours (a lock another process took over stays)."""
        if self.released:
            return
        self.released = True
        with _HELD_GUARD:
            if _HELD.get(str(self.path)) is self:
                del _HELD[str(self.path)]
        if self.owned():
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass


def heartbeat(checkpoint: str | os.PathLike, run_id: str) -> Holder | None:
    """Touch the lock of run `run_id` in `checkpoint`. Returns the holder of another run when one
    took the checkpoint over (this run's lock was judged stale), else None. Called by the stream's
    supervisor and by each micro-batch's sink writer, wherever it runs (a Spark Connect server)."""
    path = Path(checkpoint) / LOCK
    found = _read(path)
    if found is None or found.holder is None:
        return None
    if found.holder.run_id != run_id:
        return found.holder
    try:
        os.utime(path)  # no time given: the filesystem's own (an NFS server's, on a share)
    except OSError:
        pass
    return None


def current_holder(checkpoint: str | os.PathLike) -> Found | None:
    """The lock of `checkpoint` when a live stream holds it, else None (no lock, or a stale one)."""
    found = _read(Path(checkpoint) / LOCK)
    return found if found is not None and alive(found) else None


def check_free(checkpoint: str | os.PathLike, shown: str | None = None) -> None:
    """Refuse, without taking anything, a checkpoint a running stream holds (the command line
    asks this before it starts Spark; `acquire` decides)."""
    found = current_holder(checkpoint)
    if found is not None:
        raise in_use(shown or str(checkpoint), found)


def in_use(shown: str, found: Found) -> SqlwinUsageError:
    holder = found.holder
    if holder is None:
        who = f"a lock being written {found.age_s:.0f} s ago"
    else:  # its heartbeat's age only where the pid cannot tell (asking the age writes a probe file)
        who = holder.describe(None if holder.same_machine() and holder.driver == "here" else found.age_s)
    if holder is not None and holder.is_me():
        hint = "stop the stream this process runs on it first (stream.stop()), or another checkpoint"
    else:
        hint = ("stop that stream first (Ctrl-C, or stream.stop()), or another checkpoint; a lock left by a "
                "stream that was killed is noticed and taken over: there is nothing to delete")
    return SqlwinUsageError(f"The checkpoint {shown} is in use by a running stream ({who}): a second stream "
                            "would write into the same state and sinks", hint=hint)


def acquire(checkpoint: str | os.PathLike, run_id: str, shown: str | None = None, driver: str = "here",
            running: t.Callable[[], bool] = lambda: True) -> CheckpointLock:
    """Take `checkpoint`'s lock for run `run_id` (creating the directory), or raise a
    SqlwinUsageError naming the running stream that holds it. A stale lock is taken over."""
    directory = Path(checkpoint)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / LOCK
    holder = Holder.me(str(directory), run_id, driver)
    content = json.dumps(asdict(holder), indent=2).encode()
    for _ in range(20):
        if _create(path, content):
            lock = CheckpointLock(path, holder, running)
            with _HELD_GUARD:
                _HELD[str(path)] = lock
            return lock
        found = _read(path)
        if found is None:
            continue  # released meanwhile
        if alive(found):
            raise in_use(shown or str(checkpoint), found)
        _take_over(path, found)
    raise in_use(shown or str(checkpoint), _read(path) or Found(None, time.time(), b"", path.parent))


def _create(path: Path, content: bytes) -> bool:
    """Make the lock file appear whole, atomically; False if one exists."""
    fd, tmp = _temp_file(path.parent, ".sqlwin.lock.")
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # atomic, NFS included; the file appears with its content
        return True
    except FileExistsError:
        return False
    except OSError:  # no hard links on this filesystem: O_CREAT|O_EXCL, then the content
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        return True
    finally:
        os.unlink(tmp)


def _take_over(path: Path, stale: Found) -> None:
    """Remove a stale lock, unless another process did, or took the checkpoint, meanwhile: the
    lock is removed only while holding the takeover file and only if it is still the stale one."""
    mutex = path.parent / TAKEOVER
    try:
        fd = os.open(mutex, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        # Another process is taking it over (microseconds); a takeover file older than a heartbeat
        # was left by a process killed right then.
        try:
            if time.time() - mutex.stat().st_mtime > HEARTBEAT_S:
                mutex.unlink()
        except FileNotFoundError:
            pass
        time.sleep(0.05)
        return
    os.close(fd)
    try:
        now = _read(path)
        if now is not None and now.raw == stale.raw:
            path.unlink()
    finally:
        mutex.unlink()

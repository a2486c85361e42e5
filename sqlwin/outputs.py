"""Where sqlwin writes: never over an input, never over what it did not write (issue 13).

- `sqlwin run --out PATH` refuses a PATH that exists unless --overwrite is given, and even
  then replaces a directory only when it holds nothing but a previous result (Spark's
  part-*, _SUCCESS and .crc files). It never writes over an input, --overwrite or not.
- A stream's sink and late sink belong to one checkpoint. The checkpoint's `sqlwin.json`
  holds its identity (a uuid); each sink holds a marker (`_sqlwin_sink.json`, which Spark's
  readers skip) naming it. A sink marked by another checkpoint, or holding `batch_id=N`
  results without a marker when the checkpoint is new, is refused before the query starts:
  its old batches would otherwise be mixed with, or replaced by, the new stream's.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import typing as t
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlwin.errors import SqlwinUsageError

SINK_MARKER = "_sqlwin_sink.json"
METADATA = "sqlwin.json"  # in a checkpoint: its identity, query, buckets (sqlwin.spark.streaming)
_SPARK_OUTPUT_FILE = re.compile(r"part-.*|_SUCCESS|\..*\.crc")


def refuse_inputs(target: str | os.PathLike, what: str, inputs: t.Mapping[str, str | os.PathLike],
                  replaced: bool = True) -> None:
    """Refuse a write target that is an input or lies inside an input directory; and, when the
    target is `replaced` as a whole (--out), one that contains an input."""
    out = Path(target).resolve()
    for name, source in inputs.items():
        given = Path(source).resolve()
        if out == given or out.is_relative_to(given) or (replaced and given.is_relative_to(out)):
            relation = ("is" if out == given else "is inside" if out.is_relative_to(given) else "contains")
            raise SqlwinUsageError(
                f"The {what} {target} {relation} the input {source} (table {name}): "
                "sqlwin never writes over its input",
                hint=f"a {what.removesuffix(' path')} path outside every input")


def looks_like_spark_output(directory: Path) -> bool:
    """Only files a Spark write leaves (part-*, _SUCCESS, their .crc): a previous result."""
    return all(entry.is_file() and _SPARK_OUTPUT_FILE.fullmatch(entry.name) for entry in directory.iterdir())


def check_out(out: Path, overwrite: bool, inputs: t.Mapping[str, str | os.PathLike]) -> None:
    """`sqlwin run --out`: may the result be written at `out`? Raises SqlwinUsageError if not."""
    refuse_inputs(out, "--out path", inputs)
    if not (out.exists() or out.is_symlink()):
        return
    kind = "a directory" if out.is_dir() else "a file"
    if not overwrite:
        raise SqlwinUsageError(f"--out {out} exists ({kind}); sqlwin does not replace it unless told to",
                               hint="--overwrite to replace it, or another --out path")
    if out.is_dir() and not looks_like_spark_output(out):
        others = sorted(e.name for e in out.iterdir() if not (e.is_file() and _SPARK_OUTPUT_FILE.fullmatch(e.name)))
        shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
        raise SqlwinUsageError(
            f"--out {out} is a directory holding more than a previous result ({shown}); "
            "--overwrite replaces only a directory of part-*, _SUCCESS and .crc files",
            hint="another --out path, or move that directory's content away yourself")


# --------------------------------------------------------------------------- stream sinks


@dataclass
class SinkClaim:
    """The checks passed: `commit` records the checkpoint's identity and marks the sinks with it."""

    metadata: Path  # the checkpoint's sqlwin.json
    checkpoint: str
    identity: str
    sinks: list[Path]

    def commit(self) -> None:
        stored = read_metadata(self.metadata, self.checkpoint)
        if stored.get("id") != self.identity:
            stored["id"] = self.identity
            self.metadata.parent.mkdir(parents=True, exist_ok=True)
            write_json(self.metadata, stored)
        for sink in self.sinks:
            marker = sink / SINK_MARKER
            if not marker.exists():
                sink.mkdir(parents=True, exist_ok=True)
                write_json(marker, {"checkpoint_id": self.identity, "checkpoint": str(Path(self.checkpoint).resolve())})


def claim_sinks(metadata: Path, checkpoint: str, sinks: t.Mapping[str, str | None],
                inputs: t.Mapping[str, str | os.PathLike]) -> SinkClaim:
    """Check, before anything is written, that the sinks are this checkpoint's to write into.

    `metadata`: the checkpoint's sqlwin.json (absent: a new checkpoint). `sinks`: {label: path or
    None}. `inputs`: source directories, which no sink and no checkpoint may overlap.
    """
    stored = read_metadata(metadata, checkpoint) if metadata.exists() else None
    fresh = stored is None
    identity = (stored or {}).get("id")  # None: a new checkpoint, or one older than sink markers
    given = {label: Path(path) for label, path in sinks.items() if path}
    for label, path in [*given.items(), ("checkpoint", Path(checkpoint))]:
        refuse_inputs(path, label, inputs, replaced=False)
    paths = list(given.values())
    if len({p.resolve() for p in paths}) < len(paths):
        raise SqlwinUsageError(f"The sink and the late sink are the same directory ({paths[0]}): "
                               "their batch_id=N directories would replace each other",
                               hint="two different directories")
    for label, path in given.items():
        marker = path / SINK_MARKER
        if marker.exists():
            owner = _read_json_object(marker, lambda why: _damaged_marker(marker, label, path, checkpoint, identity, why))
            if owner.get("checkpoint_id") != identity:
                raise SqlwinUsageError(
                    f"The {label} {path} holds results written under another checkpoint "
                    f"({owner.get('checkpoint')}), not {checkpoint}",
                    hint=f"the checkpoint that wrote them ({owner.get('checkpoint')}), or another {label} directory")
        elif (fresh or identity is not None) and _batches(path):
            batches = _batches(path)
            shown = ", ".join(batches[:3]) + (", ..." if len(batches) > 3 else "")
            state = "a new checkpoint" if fresh else "a checkpoint that did not write them"
            raise SqlwinUsageError(
                f"The {label} {path} already holds results ({shown}) and {checkpoint} is {state}: "
                "the new stream's batches would mix with or replace them",
                hint=f"another (empty) {label} directory, or the checkpoint that wrote them")
    return SinkClaim(metadata, checkpoint, identity or uuid.uuid4().hex, paths)


def _batches(sink: Path) -> list[str]:
    if not sink.is_dir():
        return []
    return sorted((e.name for e in sink.iterdir() if e.name.startswith("batch_id=")),
                  key=lambda n: int(n.split("=", 1)[1]) if n.split("=", 1)[1].isdigit() else -1)


def write_json(path: Path, value: dict) -> None:
    """Replace `path` atomically and durably: written aside, flushed to disk, renamed, the rename
    flushed. Without the flushes a machine that loses power soon after can leave the file empty
    (ext4's delayed allocation): an empty `_sqlwin_sink.json` or `sqlwin.json` (issue 21)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w") as out:
        out.write(json.dumps(value, indent=2))
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)
    _fsync_directory(path.parent)


def _fsync_directory(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # a filesystem that cannot flush a directory (some shares): the rename stands
        pass
    finally:
        os.close(fd)


# --------------------------------------------------------------------------- damaged records


def read_metadata(metadata: Path, checkpoint: str) -> dict:
    """A checkpoint's sqlwin.json ({} when there is none), or a SqlwinUsageError naming it when it
    is damaged (empty, cut short, not a JSON object)."""
    if not metadata.exists():
        return {}
    return _read_json_object(metadata, lambda why: SqlwinUsageError(
        f"The checkpoint's record {metadata} is damaged ({why}): it holds the stream's query, its buckets and "
        f"the identity its sinks are marked with, and {checkpoint} cannot restart without it",
        hint=f"{metadata} restored from a copy of the checkpoint (the whole directory, as it was), or a fresh "
             "checkpoint and a fresh sink directory"))


def _read_json_object(path: Path, damaged: t.Callable[[str], SqlwinUsageError]) -> dict:
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise damaged(getattr(err, "strerror", None) or str(err)) from None
    if not text.strip():
        raise damaged("empty")
    try:
        value = json.loads(text)
    except ValueError as err:
        raise damaged(f"not JSON: {err}") from None
    if not isinstance(value, dict):
        raise damaged(f"not a JSON object: {text.strip()[:40]}")
    return value


def _damaged_marker(marker: Path, label: str, sink: Path, checkpoint: str, identity: str | None,
                    why: str) -> SqlwinUsageError:
    """A sink marker sqlwin cannot read: it cannot tell whose results the sink holds. The way out is
    to write it again, naming the checkpoint that wrote them -- which only the user can know."""
    if identity is not None:
        restore = json.dumps({"checkpoint_id": identity, "checkpoint": str(Path(checkpoint).resolve())})
        hint = (f"if {checkpoint} wrote into {sink}, the marker written again naming it: "
                f"echo '{restore}' > {marker}; else another {label} directory")
    else:
        hint = (f"another (empty) {label} directory; or restart with the checkpoint that wrote into {sink}, "
                "after writing the marker again from that checkpoint's sqlwin.json (its \"id\"): "
                f"echo '{{\"checkpoint_id\": \"<id>\", \"checkpoint\": \"<its path>\"}}' > {marker}")
    return SqlwinUsageError(
        f"The {label}'s marker {marker} is damaged ({why}): it names the checkpoint that wrote into {sink}, "
        "and sqlwin writes into a sink only for that checkpoint", hint=hint)


# --------------------------------------------------------------------------- writable directories


def unwritable(path: Path) -> str | None:
    """Why sqlwin could not write into the directory `path` (creating it if missing), or None.

    Asked of the filesystem, not of permission bits: a file is created in the directory (or a
    directory in the deepest existing parent) and removed again, so an immutable directory, a
    read-only mount, a full inode table or an ACL refuse it as they would refuse the stream's
    writes -- for root too, whom permission bits do not stop."""
    if "://" in str(path):  # a URL (hdfs://, s3a://): Spark's to write, not checked from here
        return None
    existing = path
    while not (existing.exists() or existing.is_symlink()):
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        if existing == path:
            return f"{path} is {'a broken link' if path.is_symlink() else 'a file'}, not a directory"
        return f"{existing} is a file, not a directory"
    try:
        if existing == path:
            fd, name = tempfile.mkstemp(prefix=".sqlwin-probe-", dir=path)
            os.close(fd)
            os.unlink(name)
        else:
            os.rmdir(tempfile.mkdtemp(prefix=".sqlwin-probe-", dir=existing))
    except OSError as err:
        reason = err.strerror or str(err)
        return reason if existing == path else f"{reason}, in {existing}"
    return None


def check_writable(directories: t.Mapping[str, str | os.PathLike | None]) -> None:
    """Refuse, before a stream starts, a sink, late sink or checkpoint sqlwin could not write."""
    for label, given in directories.items():
        if given is None:
            continue
        problem = unwritable(Path(given))
        if problem is None:
            continue
        path = Path(given)
        created = not (path.exists() or path.is_symlink())
        raise SqlwinUsageError(
            f"The {label} {given} {'cannot be created' if created else 'is not writable'} ({problem}): "
            "the stream writes into it from its first batch on",
            hint=f"a {label} directory this process can {'create and ' if created else ''}write into (its "
                 "permissions, a read-only mount, the immutable attribute: lsattr -d), or another path")


def check_stream_outputs(checkpoint: str, sinks: t.Mapping[str, str | None],
                         inputs: t.Mapping[str, str | os.PathLike]) -> None:
    """Everything a stream's start refuses about its directories, asked without Spark and without
    writing anything: the sinks' owners and overlaps (claim_sinks), that each directory can be
    written, and that no running stream holds the checkpoint. `sqlwin stream` asks it before
    Spark starts; the start itself asks again, and takes the checkpoint's lock."""
    from sqlwin.checkpoint_lock import check_free

    claim_sinks(Path(checkpoint) / METADATA, checkpoint, sinks, inputs)
    check_writable({**sinks, "checkpoint": checkpoint})
    check_free(checkpoint)

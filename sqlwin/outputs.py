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
import typing as t
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlwin.errors import SqlwinUsageError

SINK_MARKER = "_sqlwin_sink.json"
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
        stored = json.loads(self.metadata.read_text()) if self.metadata.exists() else {}
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
    stored = json.loads(metadata.read_text()) if metadata.exists() else None
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
            owner = json.loads(marker.read_text())
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
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    tmp.write_text(json.dumps(value, indent=2))
    os.replace(tmp, path)

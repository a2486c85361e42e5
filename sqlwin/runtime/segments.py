"""A vectorised runtime's state kept in segments, so that a micro-batch reads and writes only the
keys it touches (and, with one clock for the stream, the windows that clock closes).

A stream remembers every key it has seen (its clock is the semantics of a per-key watermark),
so a state that is read and rewritten whole each batch costs in proportion to every key ever
seen. Here the state of a bucket is in three parts, each a separate entry of a key-value store
(Spark's state store in streaming; a dict in tests):

* segments: the keys in the order they were first seen, in runs of at most `segment_keys`
  keys; each segment holds its keys' clocks, open windows, accumulators and purged sessions,
  as columns (`FixedFinalRuntime.key_piece`). New keys join the newest ("open") segment, so
  keys that never come back stay in segments no later batch reads.
* an index from each key's 64-bit hash to its segment, in parts by the hash's leading bits
  (extendible hashing: a part that grows past `index_part_keys` entries splits in two), so
  finding the segments of a batch's keys reads only the parts their hashes fall in, 12 bytes
  a key. Two keys may share a hash: every segment a hash names is read, and the keys
  themselves decide.
* a directory (small): the stream's sequences and counts, and per segment its size, the
  earliest end of its open windows and the range of its clocks -- enough to know which
  segments a clock of scope 'stream' closes windows in, and for progress reports.

A batch: hash its keys, read the index parts they fall in, read the segments they name (plus
the open segment, and with a clock of scope 'stream' every segment with a window the new
watermark may close), assemble a runtime over those keys (`from_pieces`), run the batch, and
write back those segments, the new keys' index entries and the directory. The runtime sees
exactly the keys whose state the batch can change; emissions are ordered by each key's
stream-wide first-seen sequence (kept per key), so the result is the same as over the whole
state, in the same order with the same seq (tests/runtime/test_segments.py checks this).
End of input reads everything, as it must close every window.
"""

from __future__ import annotations

import typing as t

import numpy as np
import pandas as pd

from sqlwin.runtime.model import BatchResult, RuntimeConfigError
from sqlwin.runtime.snapshots import check_restored_config, seal, unseal

SEGMENT, INDEX = "segment", "index"
_KINDS = {SEGMENT: "SegmentPiece", INDEX: "IndexPart"}  # what a Store's blobs are sealed as
_MIX = np.uint64(0x9E3779B97F4A7C15)


class Store(t.Protocol):
    """Where the pieces live: one directory value, and two maps of blobs by integer id."""

    def get_directory(self) -> bytes | None: ...
    def put_directory(self, blob: bytes) -> None: ...
    def get(self, kind: str, ident: int) -> bytes | None: ...
    def put(self, kind: str, ident: int, blob: bytes) -> None: ...
    def delete(self, kind: str, ident: int) -> None: ...


class MemoryStore:
    """A Store in a dict (tests; and the reference for what a Spark-backed store must do)."""

    def __init__(self):
        self.directory: bytes | None = None
        self.maps: dict[str, dict[int, bytes]] = {SEGMENT: {}, INDEX: {}}
        self.reads = {SEGMENT: 0, INDEX: 0}  # how many pieces were read: tests check what a batch touches

    def get_directory(self) -> bytes | None:
        return self.directory

    def put_directory(self, blob: bytes) -> None:
        self.directory = blob

    def get(self, kind: str, ident: int) -> bytes | None:
        self.reads[kind] += 1
        return self.maps[kind].get(ident)

    def put(self, kind: str, ident: int, blob: bytes) -> None:
        self.maps[kind][ident] = blob

    def delete(self, kind: str, ident: int) -> None:
        self.maps[kind].pop(ident, None)


def key_hashes(keys: t.Sequence[tuple]) -> np.ndarray:
    """A 64-bit hash of each key tuple, the same in every process (not Python's hash())."""
    n = len(keys)
    if not n or not len(keys[0]):
        return np.zeros(n, np.uint64)
    out = np.zeros(n, np.uint64)
    for part in zip(*keys):
        column = np.empty(n, object)
        column[:] = part
        with np.errstate(over="ignore"):
            out = out * _MIX ^ pd.util.hash_array(column, categorize=False)
    return out


class SegmentedState:
    """One bucket's vectorised runtime state in a Store; `process` / `end_of_input` as the runtime's."""

    def __init__(self, runtime_class, config: tuple, store: Store, segment_keys: int | None = None,
                 index_part_keys: int = 262_144, carry_on: type | None = None):
        """`carry_on`: a class whose stored state is continued with that class instead (the general
        runtime's, where the query is now vectorised: it computes the same, from the state it has)."""
        blob = store.get_directory()
        if blob is not None:
            sealed = unseal(blob, "SegmentDirectory")
            if carry_on is not None and sealed.state["runtime"] == carry_on.__name__:
                runtime_class = carry_on
        self.runtime_class = runtime_class
        self.config = tuple(config)
        self.store = store
        self.segment_keys = segment_keys or getattr(runtime_class, "SEGMENT_KEYS", 65_536)
        self.index_part_keys = index_part_keys
        self._parts_read: dict[int, t.Any] = {}
        self.columnar = False  # emissions as EmissionBlocks (the runtime's `columnar`), not objects
        self.fresh = blob is None  # nothing stored yet
        if blob is None:
            self.dir = self._empty_directory()
        else:
            self.dir = dict(sealed.state, config=sealed.config)
            if self.dir["runtime"] != runtime_class.__name__:
                raise RuntimeConfigError(f"The state holds a {self.dir['runtime']} runtime, not a "
                                         f"{runtime_class.__name__}")
            check_restored_config(self.dir["config"], self.config)

    def _empty_directory(self) -> dict:
        """The directory's state (snapshots.py: SegmentDirectory), with the runtime's config."""
        fresh = self.runtime_class(*self.config)
        return {"runtime": self.runtime_class.__name__, "config": fresh.config(),
                "globals": fresh.globals_state(), "segments": {}, "open": None, "next_segment": 0,
                "depth": 0, "parts_of": np.zeros(1, np.int64), "parts": {0: 0}, "next_part": 1}

    @classmethod
    def from_runtime(cls, runtime, store: Store, **sizes) -> "SegmentedState":
        """The state of a whole runtime (a checkpoint of the earlier one-blob layout), in segments."""
        state = cls(type(runtime), runtime.config(), store, **sizes)
        state.dir["globals"] = runtime.globals_state()
        state._save(runtime, np.empty(0, np.int64), [], key_hashes(runtime.key_list()))
        return state

    # -- the runtime's API ------------------------------------------------------------------

    def process_columns(self, cols, batch_time_us: int = 0, stream_bounds=None) -> BatchResult:
        """`stream_bounds`: the whole stream's batch extremes when its one clock is spread over
        buckets (the batch then comes with or without rows of this bucket)."""
        if cols.n == 0 and not stream_bounds:
            return BatchResult()
        self._parts_read = {}
        hashes = key_hashes(cols.keys)
        found = self._lookup(hashes)
        wanted = set(np.concatenate(found).tolist()) if found else set()
        if self.dir["open"] is not None:
            wanted.add(self.dir["open"])
        wanted |= self._due_segments(cols, stream_bounds)
        loaded = sorted(wanted)
        runtime, owner = self._assemble(loaded)
        known = len(runtime.key_list())
        out = runtime.process_columns(cols, batch_time_us, stream_bounds)
        new_hashes = np.empty(0, np.uint64)
        if len(runtime.key_list()) > known:
            hash_of = dict(zip(cols.keys, hashes.tolist()))
            new_hashes = np.array([hash_of[k] for k in runtime.key_list()[known:]], np.uint64)
        self._save(runtime, owner, loaded, new_hashes)
        return out

    def process_batch(self, rows, batch_time_us: int, stream_bounds=None) -> BatchResult:
        """Row tuples, as the runtime's process_batch takes them (read as its `batch_of` says)."""
        batch = self.runtime_class(*self.config).batch_of(rows)
        return self.process_columns(batch, batch_time_us, stream_bounds)

    def end_of_input(self) -> BatchResult:
        runtime, _ = self._assemble(sorted(self.dir["segments"]))
        out = runtime.end_of_input()
        # An ended stream is over: a new one starts afresh (as BucketState does for every
        # runtime), its counts going on from the ended one's (figures over the stream's life).
        for segment in self.dir["segments"]:
            self.store.delete(SEGMENT, segment)
        for part in self.dir["parts"]:
            self.store.delete(INDEX, part)
        self.dir = self._empty_directory()
        self.dir["globals"]["counts"] = dict(runtime.counts)
        self._put_directory()
        return out

    def advance_processing_time(self, now_us: int) -> BatchResult:
        return BatchResult()  # the vectorised runtimes keep event time only

    # -- progress ------------------------------------------------------------------------------

    @property
    def counts(self) -> dict[str, int]:
        return dict(self.dir["globals"]["counts"])

    @property
    def open_window_count(self) -> int:
        return sum(s["windows"] for s in self.dir["segments"].values())

    @property
    def key_count(self) -> int:
        return sum(s["keys"] for s in self.dir["segments"].values())

    def key_watermarks(self) -> list[int]:
        delay = self.config[1].delay
        if self.config[1].scope == "stream":
            raw = self.runtime_class.stream_raw(self.dir["globals"])
            return [] if raw is None else [int(raw) - delay]
        ranges = [s["raw"] for s in self.dir["segments"].values() if s["raw"] is not None]
        if not ranges:
            return []
        return [min(r[0] for r in ranges) - delay, max(r[1] for r in ranges) - delay]

    # -- reading -------------------------------------------------------------------------------

    def _lookup(self, hashes: np.ndarray) -> list[np.ndarray]:
        """The segments each hash's keys may be in, as one array per index part read."""
        if not len(hashes):
            return []
        part_of = self.dir["parts_of"][self._prefix(hashes)]
        found = []
        for part in np.unique(part_of).tolist():
            index = self._index_part(part)
            if index is None:
                continue
            stored, segments = index
            mine = hashes[part_of == part]
            lo = np.searchsorted(stored, mine, "left")
            hi = np.searchsorted(stored, mine, "right")
            hit = hi > lo
            if not hit.any():
                continue
            lo, hi = lo[hit], hi[hit]
            if (hi - lo == 1).all():
                found.append(segments[lo])
            else:  # a hash shared by keys in several segments: all of them
                found.append(np.concatenate([segments[a:b] for a, b in zip(lo.tolist(), hi.tolist())]))
        return found

    def _due_segments(self, cols, stream_bounds=None) -> set[int]:
        """With one clock for the stream: segments holding a window the batch's clock may close."""
        if self.config[1].scope != "stream":
            return set()
        raw = self.runtime_class.stream_raw(self.dir["globals"])
        times = cols.time[~cols.time_null & ~cols.key_null]
        candidates = [raw] if raw is not None else []
        if len(times):
            candidates.append(int(times.max()))
        if stream_bounds:
            candidates.append(max(int(high) for _, high in stream_bounds.values()))
        if not candidates:
            return set()
        mark = max(candidates) - self.config[1].delay
        return {s for s, info in self.dir["segments"].items()
                if info["min_end"] is not None and info["min_end"] <= mark}

    def _assemble(self, segments: list[int]):
        """A runtime over the keys of `segments`, and the segment of each of its keys."""
        pieces = []
        for segment in segments:
            piece = self._get(SEGMENT, segment)
            if piece is None:
                raise RuntimeConfigError(f"Segment {segment} of the state is missing")
            pieces.append(piece)
        runtime = self.runtime_class.from_pieces(self.config, self.dir["globals"], pieces)
        runtime.columnar = self.columnar
        owner = np.repeat(np.array(segments, np.int64), [len(p["keys"]) for p in pieces]) \
            if pieces else np.empty(0, np.int64)
        return runtime, owner

    def _index_part(self, part: int):
        """An index part (sorted hashes, their segments), read once a batch."""
        if part not in self._parts_read:
            self._parts_read[part] = self._get(INDEX, part)
        return self._parts_read[part]

    def _prefix(self, hashes: np.ndarray) -> np.ndarray:
        depth = self.dir["depth"]
        if depth == 0:
            return np.zeros(len(hashes), np.int64)
        return (hashes >> np.uint64(64 - depth)).astype(np.int64)

    def _get(self, kind: str, ident: int):
        """A segment's piece or an index part, None if the store has none."""
        blob = self.store.get(kind, ident)
        return None if blob is None else unseal(blob, _KINDS[kind]).state

    # -- writing ------------------------------------------------------------------------------

    def _put(self, kind: str, ident: int, value) -> None:
        self.store.put(kind, ident, seal(_KINDS[kind], value))

    def _put_directory(self) -> None:
        state = {name: value for name, value in self.dir.items() if name != "config"}
        self.store.put_directory(seal("SegmentDirectory", state, self.dir["config"]))

    def _save(self, runtime, owner: np.ndarray, loaded: list[int], new_hashes: np.ndarray) -> None:
        """Write back the loaded segments (new keys into the open one, then fresh ones), the new
        keys' index entries, and the directory."""
        d = self.dir
        total = len(runtime._keys)
        owner = np.concatenate([owner, np.full(total - len(owner), -1, np.int64)])
        new = np.flatnonzero(owner == -1)
        placed = []
        if len(new):
            open_ = d["open"]
            room = 0 if open_ is None else self.segment_keys - d["segments"][open_]["keys"]
            start = 0
            if room > 0:
                owner[new[:room]] = open_
                placed.append((open_, new[:room]))
                start = room
            while start < len(new):
                segment = d["next_segment"]
                d["next_segment"] += 1
                chunk = new[start:start + self.segment_keys]
                owner[chunk] = segment
                placed.append((segment, chunk))
                d["open"] = segment
                start += len(chunk)
        for segment in sorted(set(loaded) | {s for s, _ in placed}):
            positions = np.flatnonzero(owner == segment)
            if not len(positions):
                self.store.delete(SEGMENT, segment)
                d["segments"].pop(segment, None)
                if d["open"] == segment:
                    d["open"] = None
                continue
            piece = runtime.key_piece(positions, owner, segment)
            self._put(SEGMENT, segment, piece)
            d["segments"][segment] = runtime.piece_summary(piece)
        if placed:
            positions = np.concatenate([p for _, p in placed])
            self._index_add(new_hashes[positions - (total - len(new_hashes))], owner[positions])
        d["globals"] = runtime.globals_state()
        self._put_directory()

    def _index_add(self, hashes: np.ndarray, segments: np.ndarray) -> None:
        d = self.dir
        part_of = d["parts_of"][self._prefix(hashes)]
        for part in np.unique(part_of).tolist():
            mine = part_of == part
            index = self._index_part(part)
            stored, owners = index if index is not None else (np.empty(0, np.uint64), np.empty(0, np.int64))
            stored = np.concatenate([stored, hashes[mine]])
            owners = np.concatenate([owners, segments[mine]])
            order = np.argsort(stored, kind="stable")
            stored, owners = stored[order], owners[order]
            self._parts_read.pop(part, None)
            if len(stored) > self.index_part_keys:
                self._split(part, stored, owners)
            else:
                self._put(INDEX, part, (stored, owners))
                self._parts_read[part] = (stored, owners)

    def _split(self, part: int, stored: np.ndarray, owners: np.ndarray) -> None:
        """Split an index part by the next bit of the hash, doubling the prefix table if needed."""
        d = self.dir
        depth = d["parts"][part]
        if depth >= 63:  # every entry shares 63 leading bits: keep the part whole
            self._put(INDEX, part, (stored, owners))
            return
        if depth == d["depth"]:
            d["parts_of"] = np.repeat(d["parts_of"], 2)
            d["depth"] += 1
        sibling = d["next_part"]
        d["next_part"] += 1
        d["parts"][part] = d["parts"][sibling] = depth + 1
        entries = np.flatnonzero(d["parts_of"] == part)  # a run of prefixes; its upper half moves
        d["parts_of"][entries[len(entries) // 2:]] = sibling
        high = ((stored >> np.uint64(63 - depth)) & np.uint64(1)).astype(bool)
        for target, mask in ((part, ~high), (sibling, high)):
            if mask.sum() > self.index_part_keys:
                self._split(target, stored[mask], owners[mask])
            else:
                self._put(INDEX, target, (stored[mask], owners[mask]))

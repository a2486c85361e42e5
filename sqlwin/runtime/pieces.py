"""The state of a vectorised runtime in pieces of keys, and a runtime assembled from pieces.

segments.py keeps a runtime's streaming state this way, so that a micro-batch reads and writes
only the keys it touches: `key_piece` cuts the state of some keys out (their clocks, windows,
accumulators and purged sessions), `globals_state` holds what belongs to the whole stream, and
`from_pieces` puts a runtime back together. `KeyPieces` is a base of FixedFinalRuntime
(fixed_final.py), whose field lists (_KEY_FIELDS, _WINDOW_FIELDS, _TOMB_FIELDS, _GLOBAL_FIELDS)
say what goes where.
"""

from __future__ import annotations

import typing as t

import numpy as np

from sqlwin.runtime.columns import NONE


class KeyPieces:
    """The pieces API of the vectorised runtimes (a base class: the state is the runtime's)."""

    CLOCK_CLOSES = True  # windows close when a clock reaches their end (count windows: on rows)

    def config(self) -> tuple:
        return (self.windower, self.watermark_spec, self.emit, self.aggregate_specs, False)

    def key_list(self) -> list[tuple]:
        """The keys in state order: positions index this list."""
        return self._keys

    @classmethod
    def stream_raw(cls, globals_state: dict) -> int | None:
        """The stream's clock (scope 'stream') as the globals hold it; None before any row."""
        raw = globals_state["_stream_raw"]
        return None if raw == NONE else int(raw)

    def globals_state(self) -> dict:
        """What belongs to the whole stream, not to a key: clocks of scope 'stream', sequences, counts."""
        return {name: getattr(self, name) for name in self._GLOBAL_FIELDS}

    def key_piece(self, positions: np.ndarray, owner: np.ndarray | None = None, label: int = 0) -> dict:
        """The state of the keys at `positions` (in that order): their clocks, windows and purged
        sessions, with window and tombstone key positions renumbered into the piece.

        `owner` (optional): the label of every key's piece, to pick this piece's windows with one
        comparison; else they are found from `positions`.
        """
        positions = np.asarray(positions, np.int64)
        renumber = np.full(len(self._keys), -1, np.int64)
        renumber[positions] = np.arange(len(positions), dtype=np.int64)
        mine = (owner[self._wk] == label) if owner is not None else renumber[self._wk] >= 0
        piece = {"keys": [self._keys[i] for i in positions.tolist()], "_wk": renumber[self._wk[mine]],
                 "_acc": [[array[mine] for array in state] for state in self._acc]}
        for name in self._KEY_FIELDS:
            piece[name] = getattr(self, name)[positions]
        for name in self._WINDOW_FIELDS:
            piece[name] = getattr(self, name)[mine]
        if self._TOMB_FIELDS:
            tomb = (owner[self._tk] == label) if owner is not None else renumber[self._tk] >= 0
            piece["_tk"] = renumber[self._tk[tomb]]
            for name in self._TOMB_FIELDS:
                piece[name] = getattr(self, name)[tomb]
        return piece

    @classmethod
    def piece_summary(cls, piece: dict) -> dict:
        """What a directory keeps of a piece: sizes, the earliest window end (what a clock of
        scope 'stream' must reach to close one), the clocks' range."""
        raw = piece["_raw"][piece["_raw"] != NONE]
        closes = cls.CLOCK_CLOSES and len(piece["_we"])  # count windows close on rows
        return {"keys": len(piece["keys"]), "windows": len(piece["_wk"]),
                "min_end": int(piece["_we"].min()) if closes else None,
                "raw": (int(raw.min()), int(raw.max())) if len(raw) else None}

    @classmethod
    def from_pieces(cls, config: tuple, globals_state: dict, pieces: t.Sequence[dict]) -> "KeyPieces":
        """A runtime over the keys of `pieces` (their keys in piece order), with the stream's globals."""
        runtime = cls(*config)
        for name, value in globals_state.items():
            setattr(runtime, name, value)
        if not pieces:
            return runtime
        offsets = np.cumsum([0] + [len(p["keys"]) for p in pieces])
        runtime._keys = [key for p in pieces for key in p["keys"]]
        runtime._index = {key: i for i, key in enumerate(runtime._keys)}
        for name in cls._KEY_FIELDS:
            setattr(runtime, name, np.concatenate([p[name] for p in pieces]))
        windowed = [(p, o) for p, o in zip(pieces, offsets) if len(p["_wk"])]
        if windowed:
            runtime._wk = np.concatenate([p["_wk"] + o for p, o in windowed])
            for name in cls._WINDOW_FIELDS:
                setattr(runtime, name, np.concatenate([p[name] for p, _ in windowed]))
            runtime._acc = [[np.concatenate([p["_acc"][a][i] for p, _ in windowed]) for i in range(len(state))]
                            for a, state in enumerate(windowed[0][0]["_acc"])]
        if cls._TOMB_FIELDS:
            tombed = [(p, o) for p, o in zip(pieces, offsets) if len(p["_tk"])]
            if tombed:
                runtime._tk = np.concatenate([p["_tk"] + o for p, o in tombed])
                for name in cls._TOMB_FIELDS:
                    setattr(runtime, name, np.concatenate([p[name] for p, _ in tombed]))
        return runtime

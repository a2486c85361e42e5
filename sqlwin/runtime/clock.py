"""Event-time clocks: one per key (scope 'key') or one for the stream (scope 'stream').

`raw` is the watermark before the delay is taken off; None means no row has been seen
(minus infinity). It only moves forward, and only when a batch commits, except for the
'bytewax' strategy, where it also ages with system (processing) time.
"""

from __future__ import annotations

from sqlwin.ir import WatermarkSpec


class Clock:
    __slots__ = ("raw", "ref_time", "ref_system")

    def __init__(self) -> None:
        self.raw: int | None = None
        # Bytewax: the timestamp that last pushed the watermark, and the system time it did.
        self.ref_time: int | None = None
        self.ref_system: int | None = None

    def __getstate__(self):
        return (self.raw, self.ref_time, self.ref_system)

    def __setstate__(self, state):
        self.raw, self.ref_time, self.ref_system = state

    def effective(self, spec: WatermarkSpec) -> int | None:
        return None if self.raw is None else self.raw - spec.delay

    def age(self, now: int) -> None:
        """Bytewax: the watermark advances with system time since its last push."""
        if self.ref_time is not None:
            self._raise_to(self.ref_time + (now - self.ref_system))

    def commit(self, spec: WatermarkSpec, batch_min: int, batch_max: int, now: int) -> None:
        """Move the watermark once a batch is applied (VS-16: rows are checked before this)."""
        if spec.strategy == "min_event_time":
            self._raise_to(batch_min)
        elif spec.strategy == "bytewax":
            # Bytewax's EventClock: a timestamp becomes the new reference only when it would
            # push the watermark forward, so the clock never goes backwards.
            self.age(now)
            if self.raw is None or batch_max > self.raw:
                self.ref_time, self.ref_system = batch_max, now
                self._raise_to(batch_max)
        else:
            self._raise_to(batch_max)

    def jump(self, target: int, now: int | None) -> None:
        """Idle timeout: move far enough that every open window closes."""
        self._raise_to(target)
        if self.ref_time is not None and self.raw == target:
            self.ref_time, self.ref_system = target, now if now is not None else self.ref_system

    def _raise_to(self, value: int) -> None:
        if self.raw is None or value > self.raw:
            self.raw = value

"""Event-time clocks: one per key (scope 'key') or one for the stream (scope 'stream').

`raw` is the watermark before the delay is taken off; None means no row has been seen
(minus infinity). It only moves forward, and only when a batch commits, except for the
'bytewax' strategy, where it also ages with system (processing) time, and 'ingestion_time'
(Apex's watermark a fixed delay behind ingestion time, AP-06), where it is the processing time.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlwin.ir import IdleClock, LatenessRule, WatermarkScope, WatermarkSpec, WatermarkStrategy
from sqlwin.runtime.model import RuntimeConfigError


@dataclass(slots=True, eq=False)
class Clock:
    raw: int | None = None
    # Bytewax: the timestamp that last pushed the watermark, and the system time it did.
    ref_time: int | None = None
    ref_system: int | None = None

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
        elif spec.strategy == "ingestion_time":
            self._raise_to(now)
        elif spec.strategy == "upstream":
            # AP-11: rows that are windows an upstream aggregation fired, timed by window_time (the
            # end - 1 us): that window's end had been reached upstream, so the watermark is there.
            self._raise_to(batch_max + 1)
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

    def snapshot(self) -> dict:
        return {"raw": self.raw, "ref_time": self.ref_time, "ref_system": self.ref_system}

    @classmethod
    def restore(cls, state: dict) -> "Clock":
        return cls(**{name: state[name] for name in ("raw", "ref_time", "ref_system") if name in state})


@dataclass(slots=True, eq=False)
class SideClocks:
    """The clocks of a windowed join's inputs under one owner: the watermark is the earliest of
    the sides' (a side that has not seen a row holds it at minus infinity)."""

    sides: list[Clock]

    def effective(self, spec: WatermarkSpec) -> int | None:
        marks = [clock.effective(spec) for clock in self.sides]
        return None if any(m is None for m in marks) else min(marks)

    def age(self, now: int) -> None:
        for clock in self.sides:
            clock.age(now)

    def jump(self, target: int, now: int | None) -> None:
        for clock in self.sides:
            clock.jump(target, now)

    def _raise_to(self, value: int) -> None:
        for clock in self.sides:
            clock._raise_to(value)

    def snapshot(self) -> dict:
        return {"sides": [clock.snapshot() for clock in self.sides]}


def restore_clock(state: dict) -> Clock | SideClocks:
    """A clock from its snapshot: one Clock, or SideClocks (a join's one clock per side)."""
    if "sides" in state:
        return SideClocks([Clock.restore(side) for side in state["sides"]])
    return Clock.restore(state)


class Clocks:
    """The clocks of a runtime as its watermark scope wants them: one per key (in the order the
    keys first committed a row), or one for the whole stream. A key's clock *owner* is the key
    itself, or () for the stream."""

    def __init__(self, spec: WatermarkSpec):
        self.spec = spec
        self.per_key = spec.scope != "stream"
        self.sides = getattr(spec, "sides", 1)
        self.by_key: dict[tuple, Clock | SideClocks] = {}  # scope 'key'
        self.stream = self._new()  # scope 'stream'

    def _new(self) -> Clock | SideClocks:
        return Clock() if self.sides == 1 else SideClocks([Clock() for _ in range(self.sides)])

    def owner(self, key: tuple) -> tuple:
        return key if self.per_key else ()

    def effective(self, key: tuple) -> int | None:
        """The effective watermark of `key`'s clock; None before it saw a row."""
        clock = self.by_key.get(key) if self.per_key else self.stream
        return None if clock is None else clock.effective(self.spec)

    def of(self, owner: tuple) -> Clock | SideClocks:
        """The clock of an owner, made when it first needs one."""
        if not self.per_key:
            return self.stream
        clock = self.by_key.get(owner)
        if clock is None:
            clock = self.by_key[owner] = self._new()
        return clock

    def commit(self, owner: tuple, low: int, high: int, now: int, side: int = 0) -> None:
        clock = self.of(owner)
        (clock.sides[side] if self.sides > 1 else clock).commit(self.spec, low, high, now)

    def age(self, now: int) -> None:
        """Processing time passed: Bytewax's clocks advance with it; ingestion-time clocks are it."""
        ingestion = self.spec.strategy == "ingestion_time"
        for clock in ([self.stream] if not self.per_key else list(self.by_key.values())):
            if ingestion:
                clock._raise_to(now)
            else:
                clock.age(now)

    def snapshot(self) -> dict:
        return {"keys": [(key, clock.snapshot()) for key, clock in self.by_key.items()],
                "stream": self.stream.snapshot()}

    def restore(self, state: dict) -> None:
        self.by_key = {key: restore_clock(clock) for key, clock in state["keys"]}
        self.stream = restore_clock(state["stream"])


def check_watermark(spec: WatermarkSpec, processing_time: bool) -> None:
    """A WatermarkSpec the runtime can honour, else RuntimeConfigError."""
    if not isinstance(spec, WatermarkSpec):
        raise RuntimeConfigError(f"watermark must be a WatermarkSpec, got {spec!r}")
    choices = {
        "strategy": t.get_args(WatermarkStrategy),
        "scope": t.get_args(WatermarkScope),
        "idle_clock": t.get_args(IdleClock),
        "lateness_rule": t.get_args(LatenessRule),
    }
    for name, allowed in choices.items():
        if getattr(spec, name) not in allowed:
            raise RuntimeConfigError(f"Watermark {name} cannot be {getattr(spec, name)!r}", hint=" | ".join(allowed))
    if not isinstance(spec.delay, int) or spec.delay < 0:
        raise RuntimeConfigError(f"Watermark delay must be >= 0 microseconds, got {spec.delay!r}")
    if not isinstance(spec.sides, int) or spec.sides < 1:
        raise RuntimeConfigError(f"A watermark merges one or more inputs' clocks, got sides={spec.sides!r}")
    if spec.idle_timeout is not None and spec.idle_timeout <= 0:
        raise RuntimeConfigError(f"idle_timeout must be positive, got {spec.idle_timeout!r}")
    if (spec.idle_timeout is not None and spec.idle_clock == "event_time" and spec.scope == "stream"
            and not processing_time):
        raise RuntimeConfigError(
            "An event-time idle timeout needs keys: a whole stream is never silent by its own event time",
            hint="idle_clock = 'processing_time', or watermark_scope = 'key'")

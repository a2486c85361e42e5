"""sqlwin's IR of a window: windowers, watermark and emit specs. Plain dataclasses, no sqlglot.

The SQL layer (`sqlwin.sql.plan`) builds them from a query; the runtime (`sqlwin.runtime`) and the
Spark workers read them, so a Python worker never loads the parser. All durations are integer
microseconds, the resolution of Spark's TIMESTAMP.
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass


@dataclass(frozen=True)
class Tumble:
    size: int
    offset: int = 0
    # Whether which windows exist depends on the rows (SESSION, SLIDE, COUNT_WINDOW): such windows
    # are formed per key -- PARTITION BY, and under a windowed aggregation its GROUP BY keys too
    # (docs/semantics.md, "Which rows form a window"). Fixed windows are the same for every key.
    data_dependent: t.ClassVar[bool] = False

    @property
    def slide(self) -> int:
        return self.size


@dataclass(frozen=True)
class Hop:
    """Fixed-size windows starting every `slide`; overlapping (slide < size) or with gaps (slide > size)."""

    size: int
    slide: int
    offset: int = 0
    data_dependent: t.ClassVar[bool] = False


@dataclass(frozen=True)
class Cumulate:
    """Windows that grow by `step` from the start of each `max_size` period (Flink's CUMULATE)."""

    step: int
    max_size: int
    offset: int = 0
    data_dependent: t.ClassVar[bool] = False


@dataclass(frozen=True)
class Session:
    """Rows less than `gap` apart share a session; a session is [first row, last row + gap)."""

    gap: int
    data_dependent: t.ClassVar[bool] = True


@dataclass(frozen=True)
class Slide:
    """One window per distinct row time: [ts - size, ts], both ends inclusive (Quix sliding windows)."""

    size: int
    data_dependent: t.ClassVar[bool] = True


@dataclass(frozen=True)
class CountWindow:
    """Windows of `size` rows starting every `slide` rows, in the ORDER BY (or arrival) order.

    `timed`: the query names a time column (DESCRIPTOR(ts)); a row whose time is NULL then joins
    no window and is rejected ('null_time'), as in every other kind of window. Without one, rows
    have no time and every row counts.
    """

    size: int
    slide: int
    timed: bool = False
    data_dependent: t.ClassVar[bool] = True


@dataclass(frozen=True)
class GlobalWindow:
    """One window holding every row of a key. `timed`: as CountWindow's."""

    timed: bool = False
    data_dependent: t.ClassVar[bool] = False


Windower = t.Union[Tumble, Hop, Cumulate, Session, Slide, CountWindow, GlobalWindow]


@dataclass(frozen=True)
class WatermarkSpec:
    """How event time advances and when a row is late. See docs/semantics.md."""

    column: str | None = None
    delay: int = 0  # micros; None-like infinity is represented by UNBOUNDED
    strategy: str = "max_event_time"  # | 'min_event_time' | 'bytewax'
    scope: str = "key"  # | 'stream'
    idle_timeout: int | None = None
    idle_clock: str = "processing_time"  # | 'event_time'
    lateness_rule: str = "window_closed"  # | 'before_watermark'
    # Inputs merged into this watermark (a windowed join's sides): each side has its own clock and
    # the watermark is the earliest of theirs (Apex's WindowedMergeOperator, AP-12). With more than
    # one side, a row's first value is its side's index.
    sides: int = 1


UNBOUNDED = 2**62  # a delay no stream ever exceeds (Bytewax's timedelta.max)


@dataclass(frozen=True)
class EmitSpec:
    """When results leave a window and what each firing carries."""

    final: bool = True  # the on-time firing when the window closes
    changes: bool = False  # a result after every input row (Quix current())
    early_interval: int | None = None
    early_rows: int | None = None
    allowed_lateness: int = 0
    late_interval: int | None = None
    late_rows: int | None = None
    accumulation: str = "ACCUMULATING"  # | 'DISCARDING' | 'RETRACTING'
    only_updated: bool = False

    @property
    def is_final_only(self) -> bool:
        return (
            self.final
            and not self.changes
            and self.early_interval is None
            and self.early_rows is None
            and self.late_interval is None
            and self.late_rows is None
            and self.accumulation == "ACCUMULATING"
        )

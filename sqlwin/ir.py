"""sqlwin's IR of a window: windowers, watermark and emit specs. Plain dataclasses, no sqlglot.

The SQL layer (`sqlwin.sql.plan`) builds them from a query; the runtime (`sqlwin.runtime`) and the
Spark workers read them, so a Python worker never loads the parser. All durations are integer
microseconds, the resolution of Spark's TIMESTAMP.

Each windower class is the one home of its kind (`WindowKind`): its SQL name, arguments and usage,
its parameter checks (`check`, `from_arguments`), its formula (the docstring), its boundary rule
(`inclusive_end`) and its words for explain and the timeline (`describe`). Other modules read
these facts, or dispatch through one table per layer keyed by the class (as sqlglot's generator
does), rather than asking isinstance. The options are Literal types, their values written once.
"""

from __future__ import annotations

import math
import typing as t
from dataclasses import dataclass


WINDOW_COLUMNS = ("window_start", "window_end", "window_time", "window_index")  # what a window function adds


class WindowerError(ValueError):
    """A windower's parameters make no windows. `param`: the field at fault. Each layer words it for
    its users (the plan with the argument's position, the runtime as a RuntimeConfigError)."""

    def __init__(self, message: str, param: str):
        super().__init__(message)
        self.message, self.param = message, param


class WindowArguments(t.Protocol):
    """A window function's value arguments as one layer reads them (the plan from the SQL text, the
    registered Spark functions from Spark's), by lower-case parameter name; each reader checks and
    words its own errors."""

    timed: bool  # the rows carry a time of their own (a named time column)

    def duration(self, name: str) -> int:  # a positive duration in microseconds
        ...

    def offset(self, period: int) -> int:  # OFFSET modulo `period`, in microseconds (0 without one)
        ...

    def rows(self, name: str) -> int:  # a positive number of rows
        ...

    def __contains__(self, name: str) -> bool:  # whether the call gives `name`
        ...


class WindowKind:
    """The facts of one kind of window, as class attributes: everything outside a windower's class
    reads them (or dispatches through a table keyed by the class) rather than naming the kind."""

    sql_name: t.ClassVar[str]  # the window function: TUMBLE, HOP, ...
    # SQL arguments after TABLE and DESCRIPTOR, how many are required, and the usage errors show.
    sql_parameters: t.ClassVar[tuple[str, ...]]
    sql_required: t.ClassVar[int]
    sql_usage: t.ClassVar[str]
    # Its windows count rows in an order: it takes ORDER BY in its TABLE argument, its bounds are
    # row positions when it has no time, and window_index numbers its windows.
    ordered: t.ClassVar[bool] = False
    time_optional: t.ClassVar[bool] = False  # DESCRIPTOR(ts) may be left out
    positive: t.ClassVar[tuple[str, ...]]  # the fields that must be positive integers
    # Whether which windows exist depends on the rows (SESSION, SLIDE, COUNT_WINDOW): such windows
    # are formed per key -- PARTITION BY, and under a windowed aggregation its GROUP BY keys too
    # (docs/semantics.md, "Which rows form a window"). Fixed windows are the same for every key.
    data_dependent: t.ClassVar[bool]
    aligned: t.ClassVar[bool] = False  # a row's windows follow from its time alone, as it arrives
    inclusive_end: t.ClassVar[bool] = False  # [start, end]: a row at `end` is inside (else [start, end))
    # Whether its windows close before the input ends (by time, or when full); GLOBAL_WINDOW's one
    # window closes only at the end of the input.
    closes: t.ClassVar[bool] = True
    trailing_gap: t.ClassVar[bool] = False  # its end lies a gap past its last row (drawn shaded)
    durations: t.ClassVar[tuple[str, ...]] = ()  # the fields that are durations (microseconds)
    # the fields the SQL arguments set, in their order (by default its durations)
    argument_fields: t.ClassVar[tuple[str, ...]]

    def __init_subclass__(cls, **kwargs) -> None:
        """Defaults from the kind's other facts: its whole-number fields are durations, and its
        arguments, each but an offset positive and required."""
        super().__init_subclass__(**kwargs)
        if "durations" not in cls.__dict__:  # its whole-number fields, as microseconds
            cls.durations = tuple(name for name, kind in cls.__dict__.get("__annotations__", {}).items()
                                  if kind in ("int", int))
        if "argument_fields" not in cls.__dict__:
            cls.argument_fields = cls.durations
        if "positive" not in cls.__dict__:
            cls.positive = tuple(field for field in cls.durations if field != "offset")
        if "sql_required" not in cls.__dict__:
            cls.sql_required = sum(parameter != "OFFSET" for parameter in cls.sql_parameters)
        if "sql_usage" not in cls.__dict__:
            cls.sql_usage = _usage(cls)

    @property
    def pane(self) -> tuple[int, int] | None:
        """(length, offset) of the panes: intervals [offset + n * length, offset + (n + 1) * length)
        whose rows all belong to the same windows, so a pane's rows can be aggregated before they
        reach a window (partial aggregation). None where a row's windows depend on other rows."""
        return None

    def check(self) -> None:
        """Raise WindowerError unless the parameters make windows."""
        for attr in self.positive:
            value = getattr(self, attr)
            if not isinstance(value, int) or value <= 0:
                # VS-17 / BX-10: a session needs a positive gap, every size must be positive.
                raise WindowerError(f"{type(self).__name__} {attr} must be a positive integer, got {value!r}", attr)

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> t.Any:
        """The windower a call's arguments describe (raises WindowerError where check() would). By
        default a kind whose fields are its durations, each an argument of the field's name."""
        return cls(*(args.duration(field) for field in cls.durations))

    def describe(self, interval: t.Callable[[int], str]) -> str:
        """The windows in words, for explain and the timeline; `interval` writes a duration."""
        raise NotImplementedError


def _usage(kind: type[WindowKind]) -> str:
    """How a kind's call is written, for errors: `TUMBLE(TABLE t [PARTITION BY k], DESCRIPTOR(ts), size [, offset])`."""
    required, optional = kind.argument_fields[:kind.sql_required], kind.argument_fields[kind.sql_required:]
    arguments = ", ".join(required) + "".join(f" [, {name}]" for name in optional)
    table = "TABLE t [PARTITION BY k]" + (" ORDER BY col" if kind.ordered else "")
    if not kind.time_optional:
        return f"{kind.sql_name}({table}, DESCRIPTOR(ts), {arguments})"
    if arguments:
        return f"{kind.sql_name}({table}, [DESCRIPTOR(ts),] {arguments})"
    return f"{kind.sql_name}({table} [, DESCRIPTOR(ts)])"


def _offset_text(micros: int, interval: t.Callable[[int], str]) -> str:
    return f", offset {interval(micros)}" if micros else ""


def _rows_text(n: int) -> str:
    return f"{n} row{'' if n == 1 else 's'}"


@dataclass(frozen=True)
class Tumble(WindowKind):
    """Back-to-back windows of `size`: [offset + n * size, offset + (n + 1) * size)."""

    size: int
    offset: int = 0
    sql_name = "TUMBLE"
    sql_parameters = ("SIZE", "OFFSET")
    data_dependent = False
    aligned = True

    @property
    def slide(self) -> int:
        return self.size

    @property
    def pane(self) -> tuple[int, int]:
        return self.size, self.offset

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> Tumble:
        size = args.duration("size")
        return cls(size, args.offset(size))

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return f"TUMBLE size {interval(self.size)}{_offset_text(self.offset, interval)}"


@dataclass(frozen=True)
class Hop(WindowKind):
    """Fixed-size windows starting every `slide`; overlapping (slide < size) or with gaps (slide > size):
    [offset + n * slide, offset + n * slide + size)."""

    size: int
    slide: int
    offset: int = 0
    sql_name = "HOP"
    sql_parameters = ("SLIDE", "SIZE", "OFFSET")
    argument_fields = ("slide", "size", "offset")
    data_dependent = False
    aligned = True

    @property
    def pane(self) -> tuple[int, int]:
        """Window starts and ends both fall on multiples of gcd(size, slide) past the offset."""
        length = math.gcd(self.size, self.slide)
        return length, self.offset % length

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> Hop:
        size, slide = args.duration("size"), args.duration("slide")
        return cls(size, slide, args.offset(slide))

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return f"HOP slide {interval(self.slide)}, size {interval(self.size)}{_offset_text(self.offset, interval)}"


@dataclass(frozen=True)
class Cumulate(WindowKind):
    """Windows that grow by `step` from the start of each `max_size` period (Flink's CUMULATE):
    [p, p + k * step) for k = 1 .. max_size / step, p = offset + n * max_size. `step` divides `max_size`."""

    step: int
    max_size: int
    offset: int = 0
    sql_name = "CUMULATE"
    sql_parameters = ("STEP", "SIZE", "OFFSET")
    data_dependent = False
    aligned = True

    def check(self) -> None:
        super().check()
        if self.max_size % self.step:
            raise WindowerError("Cumulate step must divide its max_size", "step")

    @property
    def pane(self) -> tuple[int, int]:
        """Every bound is a multiple of `step` past the offset (`step` divides `max_size`)."""
        return self.step, self.offset % self.step

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> Cumulate:
        step, max_size = args.duration("step"), args.duration("size")
        cls(step, max_size).check()  # before the offset is read
        return cls(step, max_size, args.offset(max_size))

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return (f"CUMULATE step {interval(self.step)}, max size {interval(self.max_size)}"
                f"{_offset_text(self.offset, interval)}")


@dataclass(frozen=True)
class Session(WindowKind):
    """Rows less than `gap` apart share a session; a session is [first row, last row + gap)."""

    gap: int
    sql_name = "SESSION"
    sql_parameters = ("GAP",)
    trailing_gap = True
    data_dependent = True

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return f"SESSION gap {interval(self.gap)}"


@dataclass(frozen=True)
class Slide(WindowKind):
    """One window per distinct row time: [ts - size, ts], both ends inclusive (Quix sliding windows)."""

    size: int
    sql_name = "SLIDE"
    sql_parameters = ("SIZE",)
    data_dependent = True
    inclusive_end = True

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return f"SLIDE size {interval(self.size)} (one window per row time, both ends inclusive)"


@dataclass(frozen=True)
class CountWindow(WindowKind):
    """Windows of `size` rows starting every `slide` rows, in the ORDER BY (or arrival) order: rows
    [n * slide, n * slide + size), bounded by their first and last row's time, both inclusive.

    `timed`: the query names a time column (DESCRIPTOR(ts)); a row whose time is NULL then joins
    no window and is rejected ('null_time'), as in every other kind of window. Without one, rows
    have no time and every row counts.
    """

    size: int
    slide: int
    timed: bool = False
    sql_name = "COUNT_WINDOW"
    sql_parameters = ("SIZE", "SLIDE")
    sql_required = 1
    ordered = True
    time_optional = True
    durations = ()  # its sizes count rows
    positive = ("size", "slide")
    argument_fields = ("size", "slide")
    data_dependent = True
    inclusive_end = True

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> CountWindow:
        size = args.rows("size")
        return cls(size, args.rows("slide") if "slide" in args else size, timed=args.timed)

    def describe(self, interval: t.Callable[[int], str]) -> str:
        slide = f", slide {_rows_text(self.slide)}" if self.slide != self.size else ""
        return f"COUNT_WINDOW size {_rows_text(self.size)}{slide}"


@dataclass(frozen=True)
class GlobalWindow(WindowKind):
    """One window holding every row of a key: no bounds, so no row is outside it. `timed`: as CountWindow's."""

    timed: bool = False
    sql_name = "GLOBAL_WINDOW"
    sql_parameters = ()
    time_optional = True
    data_dependent = False
    inclusive_end = True
    closes = False

    @classmethod
    def from_arguments(cls, args: WindowArguments) -> GlobalWindow:
        return cls(timed=args.timed)

    def describe(self, interval: t.Callable[[int], str]) -> str:
        return "GLOBAL_WINDOW (one window per key)"


Windower = t.Union[Tumble, Hop, Cumulate, Session, Slide, CountWindow, GlobalWindow]
WINDOWERS: tuple[type[WindowKind], ...] = (Tumble, Hop, Cumulate, Session, Slide, CountWindow, GlobalWindow)
BY_SQL_NAME: dict[str, type[WindowKind]] = {kind.sql_name: kind for kind in WINDOWERS}


# The options' values, written once: the plan accepts them, the runtime checks them (t.get_args).
WatermarkStrategy = t.Literal["max_event_time", "min_event_time", "bytewax", "ingestion_time", "upstream"]
WatermarkScope = t.Literal["key", "stream"]  # one clock per key, or one for the stream
IdleClock = t.Literal["processing_time", "event_time"]
LatenessRule = t.Literal["window_closed", "before_watermark"]
Accumulation = t.Literal["ACCUMULATING", "DISCARDING", "RETRACTING"]


@dataclass(frozen=True)
class WatermarkSpec:
    """How event time advances and when a row is late. See docs/semantics.md."""

    column: str | None = None
    delay: int = 0  # micros; None-like infinity is represented by UNBOUNDED
    strategy: WatermarkStrategy = "max_event_time"
    scope: WatermarkScope = "key"
    idle_timeout: int | None = None
    idle_clock: IdleClock = "processing_time"
    lateness_rule: LatenessRule = "window_closed"
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
    accumulation: Accumulation = "ACCUMULATING"
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

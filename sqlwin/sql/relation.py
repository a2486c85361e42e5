"""One window table function of a query, bound: its input, time column, windower and watermark.

`WindowRelation` is what the plan holds per window function (sqlwin/sql/binding.py builds it);
`TimeColumn` says where a row's time comes from. Data only: the lowering writes the Spark SQL
that reads them (sqlwin/spark/time_sql.py).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlwin.errors import Position
from sqlwin.ir import WINDOW_COLUMNS, WatermarkSpec, Windower  # noqa: F401 (WINDOW_COLUMNS re-exported)
from sqlwin.sql.ast_nodes import WindowTVF


@dataclass(frozen=True)
class TimeColumn:
    """Where a row's time comes from. kind: 'timestamp', 'epoch_ms' (LONG milliseconds) or 'processing_time'.

    `rounded`: an epoch-ms column of a fractional type (DOUBLE, FLOAT, DECIMAL), whose times are
    rounded to the closest millisecond (halves away from zero) before any window sees them (QX-20).
    """

    name: str | None
    kind: str
    rounded: bool = False
    # A TIMESTAMP_NTZ column: a wall-clock time in no zone. Its epoch microseconds are read as if it
    # were UTC, whatever the session time zone, and window columns are TIMESTAMP_NTZ again.
    ntz: bool = False

    @property
    def unit_micros(self) -> int:
        return 1_000 if self.kind == "epoch_ms" else 1


@dataclass
class WindowRelation:
    """One window table function in the query: its input, time, windower and watermark."""

    node: WindowTVF  # where it sits in the AST (lowering replaces it)
    function: str
    source: str
    source_alias: str | None
    columns: dict[str, str]  # the input's columns and their Spark type names ({} when unknown)
    partition_by: tuple[str, ...]  # Spark SQL expressions
    order_by: tuple[str, ...]  # Spark SQL ordering terms (COUNT_WINDOW)
    time: TimeColumn | None
    windower: Windower
    watermark: WatermarkSpec
    options: dict[str, t.Any]
    position: Position
    alias: str | None = None

    @property
    def processing_time(self) -> bool:
        """Windows of processing time (DESCRIPTOR(PROCTIME())): a row's time is when it arrives."""
        return self.time is not None and self.time.kind == "processing_time"

"""What every complete-input lowering writes with (complete.py and the modules it lowers through):
`RawRelation`, a relation given as ready Spark SQL text, and the dialect that prints it
(`LoweringDialect`); arithmetic on a time column in its own unit (`TimeSql`); the input's
columns without the lowering's temporaries (`star_except`); and the names a lowering gives its
relation and its key columns.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.spark.time_sql import epoch_ms_sql, time_from_micros_sql, time_micros_sql
from sqlwin.sql.dialect import SqlwinDialect, SqlwinGenerator
from sqlwin.sql.plan import WINDOW_COLUMNS, TimeColumn, WindowRelation
from sqlwin.sql.text import identifier_name, quote_identifier


class RawRelation(exp.Expression):
    """A relation given as ready Spark SQL text (a lowered window function)."""

    arg_types = {"this": True, "alias": False}


class _LoweringGenerator(SqlwinGenerator):
    TRANSFORMS = {
        **SqlwinGenerator.TRANSFORMS,
        RawRelation: lambda gen, e: (f"({e.this}) AS {quote_identifier(e.args['alias'])}" if e.args.get("alias")
                                     else f"({e.this})"),
    }


class LoweringDialect(SqlwinDialect):
    Generator = _LoweringGenerator


def strip_modifiers(ast: exp.Expr) -> None:
    """EMIT / LATE ROWS INTO / WATERMARK have no meaning to Spark over complete input."""
    for select in ast.find_all(exp.Select):
        select.set("emit", None)
        select.set("late_into", None)
    for table in ast.find_all(exp.Table):
        table.set("watermark", None)


def relation_alias(relation: WindowRelation) -> str:
    # Without an alias of its own the window relation answers to its input's name, so
    # `t.k` keeps working in `SELECT t.k FROM TUMBLE(TABLE t, ...)`.
    # A plain name (RawRelation quotes it); relation.source is SQL text, `db`.`t a` -> t a.
    return relation.alias or relation.source_alias or identifier_name(relation.source) or relation.source


def key_column(expression: str) -> str:
    """A plain column name standing for a key expression, one per expression: `a b` and `a-b` differ."""
    return "__k_" + "".join(ch if ch.isascii() and ch.isalnum() else f"_{ord(ch):x}_" for ch in expression)


class TimeSql:
    """Arithmetic on a time column in its own unit: microseconds for TIMESTAMP, ms for epoch-ms LONG
    (a DOUBLE / DECIMAL epoch-ms column rounded to the closest millisecond first)."""

    def __init__(self, time: TimeColumn):
        self.time = time
        if time.kind == "processing_time":
            # A finished table has no processing time (require_final_only refuses it before a run), but
            # the schema of a CTE whose windows follow it (a chain's first stage, api._SchemaResolver)
            # comes from this lowering all the same: no row has a time, the window columns are TIMESTAMP.
            self.column, self.epoch_ms, self._value, self.present = "CAST(NULL AS TIMESTAMP)", False, "NULL", "false"
            return
        self.column = quote_identifier(time.name)
        self.epoch_ms = time.kind == "epoch_ms"
        self._value = epoch_ms_sql(time) if self.epoch_ms else time_micros_sql(time)
        # Rows without a time join no window (a rounded time is also NULL for NaN and infinities).
        self.present = f"{self._value} IS NOT NULL" if time.rounded else f"{self.column} IS NOT NULL"

    @property
    def value(self) -> str:
        """The row's time as a number in the column's unit."""
        return self._value

    def duration(self, micros: int) -> int:
        return micros // 1_000 if self.epoch_ms else micros

    def to_time(self, number_sql: str) -> str:
        """A number in the column's unit back to the column's kind (LONG stays LONG, TIMESTAMP_NTZ
        stays TIMESTAMP_NTZ)."""
        return f"({number_sql})" if self.epoch_ms else time_from_micros_sql(self.time, number_sql)

    def window_columns(self, start: str, end: str, inclusive_end: bool = False) -> str:
        """`window_start, window_end, window_time` from numbers; window_time is the last instant inside."""
        last = end if inclusive_end else f"{end} - 1"
        return (
            f"{self.to_time(start)} AS window_start, {self.to_time(end)} AS window_end, "
            f"{self.to_time(last)} AS window_time"
        )


def star_except(relation: WindowRelation, *temporaries: str) -> str:
    """`* EXCEPT (...)` dropping our temporaries and any window columns the input already has.

    A window over a window's output (e.g. DESCRIPTOR(window_time)) gets fresh window
    columns; the input's are shadowed, as a user chaining windows expects.
    """
    shadowed = [c for c in relation.columns if c.lower() in WINDOW_COLUMNS]
    dropped = [*temporaries, *(quote_identifier(c) for c in shadowed)]
    return f"* EXCEPT ({', '.join(dropped)})" if dropped else "*"


def partition_clause(keys: t.Sequence[str], extra: str = "") -> str:
    keys = [*keys, *([extra] if extra else [])]
    return f"PARTITION BY {', '.join(keys)} " if keys else ""


def timestamp_type(relation: WindowRelation) -> str:
    """The type of a TIMESTAMP time column's window columns: its own (TIMESTAMP or TIMESTAMP_NTZ)."""
    return "TIMESTAMP_NTZ" if relation.time is not None and relation.time.ntz else "TIMESTAMP"

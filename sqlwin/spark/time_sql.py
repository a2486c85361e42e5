"""Spark SQL for a row's time: epoch microseconds from its column, and back.

The plan says where a row's time comes from (sqlwin.sql.relation.TimeColumn: a TIMESTAMP or
TIMESTAMP_NTZ column, or epoch milliseconds, perhaps rounded); the lowerings write the Spark SQL
that reads it with these. A TIMESTAMP_NTZ is a wall-clock time in no zone: its epoch microseconds
are read as if it were UTC, whatever the session time zone.
"""

from __future__ import annotations

from sqlwin.sql.relation import TimeColumn
from sqlwin.sql.text import quote_identifier

_NTZ_EPOCH = "TIMESTAMP_NTZ '1970-01-01 00:00:00'"


def timestamp_micros_sql(sql: str, ntz: bool) -> str:
    """Epoch microseconds of a TIMESTAMP value (`unix_micros`), or of a TIMESTAMP_NTZ one read as UTC.

    A TIMESTAMP_NTZ's fields are taken as a UTC time: `unix_micros` would first cast it to TIMESTAMP in
    the session time zone, moving every time by the zone's offset, and Spark's `timestampdiff` between
    two TIMESTAMP_NTZ values also goes through the session zone (a wall time in the hour a daylight
    saving change skips comes out an hour later)."""
    if not ntz:
        return f"unix_micros({sql})"
    fields = ", ".join(f"{part}({sql})" for part in ("year", "month", "day", "hour", "minute"))
    return f"unix_micros(make_timestamp({fields}, date_part('SECOND', {sql}), 'UTC'))"


def micros_timestamp_sql(micros: str, ntz: bool) -> str:
    """Epoch microseconds as a TIMESTAMP (`timestamp_micros`), or as a TIMESTAMP_NTZ read as UTC
    (`timestampadd` of microseconds to a TIMESTAMP_NTZ adds them to its fields, in no zone)."""
    return f"timestampadd(MICROSECOND, {micros}, {_NTZ_EPOCH})" if ntz else f"timestamp_micros({micros})"


def time_micros_sql(time: TimeColumn) -> str:
    """Spark SQL for a TIMESTAMP (or TIMESTAMP_NTZ) row time as epoch microseconds."""
    return timestamp_micros_sql(quote_identifier(time.name), time.ntz)


def time_from_micros_sql(time: TimeColumn, micros: str) -> str:
    """Epoch microseconds back to the time column's type (TIMESTAMP or TIMESTAMP_NTZ)."""
    return micros_timestamp_sql(micros, time.ntz)


def epoch_ms_sql(time: TimeColumn) -> str:
    """Spark SQL for an epoch-ms row time as whole milliseconds (NULL for NaN, infinities, overflow)."""
    column = quote_identifier(time.name)
    return f"TRY_CAST(round({column}) AS BIGINT)" if time.rounded else column

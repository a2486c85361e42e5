"""Reading Gherkin table cells as typed values, and comparing them with Spark's results.

A header cell may carry a Spark type, `ts:timestamp`; without one the type is inferred
from the column's cells: whole numbers are BIGINT, decimals DOUBLE, ISO date-times
TIMESTAMP, `true`/`false` BOOLEAN, `[a, b]` an ARRAY, anything else STRING. `NULL`
(or an empty cell) is NULL.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import typing as t

NULLS = ("NULL", "")
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?(\d+\.\d*|\d*\.\d+)([eE]-?\d+)?$")
_TS = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d{1,6})?)?$")


def split_header(cell: str) -> tuple[str, str | None]:
    name, _, type_name = cell.partition(":")
    return name.strip(), (type_name.strip().lower() or None)


def infer_type(cells: t.Iterable[str]) -> str:
    values = [c for c in cells if c not in NULLS]
    if not values:
        return "string"
    for type_name, pattern in (("bigint", _INT), ("double", _FLOAT), ("timestamp", _TS)):
        if all(pattern.match(v) or (type_name == "double" and _INT.match(v)) for v in values):
            return type_name
    if all(v.lower() in ("true", "false") for v in values):
        return "boolean"
    if all(v.startswith("[") and v.endswith("]") for v in values):
        return "array<string>"
    return "string"


def parse_cell(cell: str, type_name: str) -> t.Any:
    if cell in NULLS:
        return None
    if type_name in ("bigint", "int", "long", "smallint", "tinyint"):
        return int(cell)
    if type_name in ("double", "float") or type_name.startswith("decimal"):
        return float(cell)
    if type_name in ("timestamp", "timestamp_ntz"):
        return parse_timestamp(cell)
    if type_name == "boolean":
        return cell.lower() == "true"
    if type_name.startswith("array"):
        inner = type_name[len("array<"):-1] if type_name.startswith("array<") else "string"
        body = cell[1:-1].strip()
        return [parse_cell(v.strip(), inner) for v in body.split(",")] if body else []
    return cell


def parse_timestamp(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("T", " "))


def spark_type_name(type_name: str) -> str:
    return {"long": "bigint", "string": "string"}.get(type_name, type_name)


def normalise(value: t.Any) -> t.Any:
    """A Spark result value in the same shape parse_cell produces (naive UTC datetimes, lists)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc).replace(tzinfo=None)
    if isinstance(value, dt.timedelta):  # an INTERVAL DAY TO SECOND, compared in seconds (late_by:double)
        return value.total_seconds()
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    if hasattr(value, "asDict"):
        return {k: normalise(v) for k, v in value.asDict().items()}
    return value


def same(expected: t.Any, actual: t.Any) -> bool:
    if isinstance(expected, float) or isinstance(actual, float):
        if expected is None or actual is None:
            return expected is actual
        return math.isclose(float(expected), float(actual), rel_tol=1e-9, abs_tol=1e-9)
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(same(e, a) for e, a in zip(expected, actual))
    return expected == actual


def show(value: t.Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, dt.datetime):
        text = value.isoformat(sep=" ")
        return text
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)

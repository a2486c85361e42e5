"""Durations and instants as a query writes them, in integer microseconds (Spark TIMESTAMP's unit).

`duration_micros` reads an INTERVAL (`INTERVAL 90 MINUTES`, `INTERVAL '1' HOUR`, `INTERVAL '1 hour
30 minutes'`, sums and negations of them; a bare number of milliseconds beside an epoch-ms time
column) with every range check; `offset_micros` reads an OFFSET, an interval or an alignment instant
(`TIMESTAMP '2023-12-14 00:00:00'`) read in the session time zone; `interval_text` writes a duration
back as a user would (explain).
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from sqlwin.ir import UNBOUNDED
from sqlwin.sql.places import fail, node_position, user_text
from sqlwin.sql.relation import TimeColumn
from sqlwin.sql.syntax_errors import edit_distance

MICROS = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}
MAX_MICROS = 2**63 - 1  # a duration must fit a signed 64-bit count of microseconds (Spark's TIMESTAMP, LONG)


def duration_micros(value: exp.Expr, time: TimeColumn | None, what: str, allow_zero: bool = False,
                    allow_negative: bool = False) -> int:
    """An INTERVAL (or, for an epoch-ms time column, a number of milliseconds) in microseconds.

    Range-checked: a duration fits a signed 64-bit count of microseconds (what Spark's TIMESTAMP
    arithmetic and the runtime hold), is positive unless zero or negative are allowed.
    """
    micros = _interval_micros(value, time, what, value)
    if abs(micros) > MAX_MICROS:
        fail(f"{what} {user_text(value)} is too long: a duration must fit in 64-bit microseconds "
             f"(at most {MAX_MICROS // MICROS['DAY']:,} days)", value,
             f"a duration up to INTERVAL {MAX_MICROS // MICROS['DAY']} DAYS")
    if micros < 0 and not allow_negative or micros == 0 and not allow_zero:
        sign = "positive" if not allow_zero else "zero or positive"
        fail(f"{what} must be {sign}, got {user_text(value)}", value,
             f"a {sign} interval, e.g. INTERVAL 10 SECONDS")  # what fits where the caret is
    if time is not None and time.kind == "epoch_ms" and micros % 1_000:
        fail(f"{what} is finer than a millisecond, the unit of the time column {time.name}", value,
             "a whole number of milliseconds")
    return micros


def _interval_micros(value: exp.Expr, time: TimeColumn | None, what: str, where: exp.Expr) -> int:
    """`where`: the whole argument, which errors point at when a part of it has no position of its own."""
    if isinstance(value, exp.Paren):
        return _interval_micros(value.this, time, what, where)
    if isinstance(value, exp.Neg):
        return -_interval_micros(value.this, time, what, where)
    if isinstance(value, exp.Add):
        return _interval_micros(value.this, time, what, where) + _interval_micros(value.expression, time, what, where)
    if isinstance(value, exp.Interval):
        return _interval_literal_micros(value, what, _placed(value, where))
    if isinstance(value, exp.Literal) and not value.is_string:
        if time is not None and time.kind == "epoch_ms":
            return _scaled(_number(value.this, what, _placed(value, where)), 1_000, what, _placed(value, where))
        fail(f"{what} needs a unit: {value.this} of what?", _placed(value, where),
             f"INTERVAL {value.this} SECONDS (a bare number means milliseconds only with a LONG epoch-ms time column)")
    fail(f"{what} must be an interval", _placed(value, where),
         "INTERVAL 10 SECONDS, INTERVAL '1' HOUR, INTERVAL '1 hour 30 minutes'")


def _placed(node: exp.Expr | None, where: exp.Expr) -> exp.Expr:
    """`node` if errors can point at it, else the larger expression around it."""
    return node if node is not None and node_position(node) is not None else where


_UNIT_PAIR = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_INTERVAL_HINT = "INTERVAL 90 MINUTES, INTERVAL '1' HOUR or INTERVAL '1 hour 30 minutes'"


def _interval_literal_micros(interval: exp.Interval, what: str, where: exp.Expr) -> int:
    amount = interval.this
    unit = interval.args.get("unit")
    if not isinstance(amount, exp.Literal):
        fail(f"Cannot read the interval {user_text(interval)}: its amount must be a number",
             where, _INTERVAL_HINT)
    text = amount.name
    if isinstance(unit, exp.IntervalSpan):
        fail("Interval ranges (DAY TO SECOND) are not supported", where, "INTERVAL '1 hour 30 minutes'")
    if unit is not None:
        try:
            number = Decimal(text.strip())
        except InvalidOperation:
            # INTERVAL '1 hour 30' MINUTES is no duration; INTERVAL '90' MINUTES is.
            fail(f"Cannot read the interval {user_text(interval)}", where, _INTERVAL_HINT)
        return _unit_micros(number, unit.name, where, what)
    # INTERVAL '1 hour 30 minutes': number-unit pairs, and nothing else.
    pairs, at = [], 0
    while at < len(text.rstrip()):
        match = _UNIT_PAIR.match(text, at)
        if match is None:
            fail(f"Cannot read the interval {user_text(interval)}", where, _INTERVAL_HINT)
        pairs.append(match.groups())
        at = match.end()
    if not pairs:
        fail(f"Cannot read the interval {user_text(interval)}", where, _INTERVAL_HINT)
    return sum(_unit_micros(Decimal(n), u, where, what) for n, u in pairs)


def _unit_micros(number: Decimal, unit: str, node: exp.Expr, what: str) -> int:
    name = unit.upper().rstrip("S") if unit.upper() not in ("MS", "US") else unit.upper()
    name = {"MS": "MILLISECOND", "US": "MICROSECOND", "SEC": "SECOND", "MIN": "MINUTE", "H": "HOUR"}.get(name, name)
    if name in ("MONTH", "YEAR", "QUARTER"):
        fail(f"{what} of a {name.lower()} has no fixed length", node,
             "an interval of fixed length: WEEKS, DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS")
    if name not in MICROS:
        close = [u for u in MICROS if _one_typo(name, u)]
        fail(f"Unknown interval unit {unit}" + (f": did you mean {close[0]}S?" if close else ""), node,
             "WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND")
    return _scaled(number, MICROS[name], what, node)


def _one_typo(word: str, unit: str) -> bool:
    return len(word) >= 3 and edit_distance(word, unit) <= 1


def _number(text: str, what: str, node: exp.Expr) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        fail(f"{what} must be a number, got {text}", node, "a number, e.g. 1000")


def _scaled(number: Decimal, unit_micros: int, what: str, node: exp.Expr) -> int:
    """number × unit in whole microseconds, refused when it is no finite number or does not fit 64 bits."""
    if not number.is_finite():
        fail(f"{what} must be a finite number, got {user_text(node)}", node, "INTERVAL 10 SECONDS")
    micros = number * unit_micros
    if abs(micros) > MAX_MICROS:
        fail(f"{what} {user_text(node)} is too long: a duration must fit in 64-bit microseconds "
             f"(at most {MAX_MICROS // MICROS['DAY']:,} days)", node,
             f"a duration up to INTERVAL {MAX_MICROS // MICROS['DAY']} DAYS")
    return round(micros)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_FIXED_ZONE = re.compile(r"(?:UTC|GMT|Z)?\s*([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def _zone(name: str, where: exp.Expr) -> dt.tzinfo:
    """A Spark session time zone (a region such as America/New_York, UTC, or an offset +05:30) as a tzinfo."""
    import zoneinfo

    text = (name or "UTC").strip()
    if text.upper() in ("UTC", "Z", "GMT", "UT"):
        return dt.timezone.utc
    fixed = _FIXED_ZONE.fullmatch(text)
    if fixed:
        sign, hours, minutes, seconds = fixed.groups()
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        return dt.timezone(-delta if sign == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        fail(f"Cannot read the alignment instant {user_text(where)} in the session time zone {text}", where,
             "an instant with its own offset, e.g. TIMESTAMP '2023-12-14 00:00:00+01:00'")


def offset_micros(value: exp.Expr, time: TimeColumn | None, time_zone: str = "UTC") -> int:
    """OFFSET is an interval, or an instant the windows are aligned to (Bytewax's align_to).

    An instant without a zone of its own is read in the session time zone, as Spark reads a
    TIMESTAMP literal; the windows are then fixed lengths of absolute time from that instant,
    as Spark's window() with the equivalent offset (a daylight saving change does not move them).
    """
    if isinstance(value, (exp.Cast, exp.TsOrDsToTimestamp)) or (
        isinstance(value, exp.Literal) and value.is_string
    ):
        text = value.name if isinstance(value, exp.Literal) else value.this.name
        try:
            instant = dt.datetime.fromisoformat(text.replace(" ", "T"))
        except ValueError:
            fail(f"Cannot read the alignment instant {user_text(value)}", value,
                 "OFFSET => INTERVAL 30 MINUTES, or an instant TIMESTAMP '2023-12-14 00:00:00'")
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=_zone(time_zone, value))
        return (instant - _EPOCH) // dt.timedelta(microseconds=1)  # exact: no float in between
    return duration_micros(value, time, "OFFSET", allow_zero=True, allow_negative=True)


_UNITS = (("day", MICROS["DAY"]), ("hour", MICROS["HOUR"]), ("minute", MICROS["MINUTE"]),
          ("second", MICROS["SECOND"]), ("millisecond", MICROS["MILLISECOND"]), ("microsecond", 1))


def interval_text(micros: int) -> str:
    """A duration as a user writes it: 3600000000 -> '1 hour', 5400000000 -> '1 hour 30 minutes'."""
    if micros == 0:
        return "0 seconds"
    if micros >= UNBOUNDED:
        return "UNBOUNDED"
    sign, rest, parts = ("-" if micros < 0 else ""), abs(micros), []
    for unit, size in _UNITS:
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount} {unit}{'' if amount == 1 else 's'}")
    return sign + " ".join(parts)

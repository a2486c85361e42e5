"""The words and numbers of a timeline picture: times (event time as a clock or epoch
milliseconds, in the query's time zone), durations, a window function and its EMIT clause in
one line, a firing's values shortened to fit beside its bar."""

from __future__ import annotations

import datetime as dt
import typing as t
from zoneinfo import ZoneInfo


def short(value, width: int = 10) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def values_text(pairs: list[tuple[str, t.Any]], time_column) -> str:
    def show(value) -> str:
        if isinstance(value, (list, tuple)):
            return "[" + ", ".join(show(v) for v in value) + "]"
        if isinstance(value, float):
            return f"{value:.4g}"
        if isinstance(value, dt.datetime):
            return value.strftime("%H:%M:%S") if value.second else value.strftime("%H:%M")
        return "NULL" if value is None else str(value)

    text = ", ".join(f"{name}={show(value)}" for name, value in pairs)
    return text if len(text) <= 64 else text[:63] + "…"


EPOCH_MS_AS_DATE = 10**14  # µs (10**11 ms, March 1973): epoch milliseconds from then on are shown as dates
UNITS = ((3_600_000_000, "h"), (60_000_000, "min"), (1_000_000, "s"), (1_000, "ms"), (1, "µs"))


def duration_text(micros: int | None) -> str:
    """`10 s`, `1 h`, `56 min 40 s`: at most two units, the smaller one rounded."""
    if micros is None:
        return "?"
    if micros == 0:
        return "0 s"
    sign, micros = ("-" if micros < 0 else ""), abs(micros)
    for i, (size, unit) in enumerate(UNITS):
        if micros >= size:
            whole, rest = divmod(micros, size)
            text = f"{whole} {unit}"
            if rest and i + 1 < len(UNITS):
                smaller, name = UNITS[i + 1]
                text += f" {rest / smaller:.3g} {name}"
            return sign + text
    return f"{sign}{micros} µs"


def time_text(micros: int | None, kind: str, zone: str, with_date: bool = False) -> str:
    if micros is None:
        return "—"
    if kind == "epoch_ms" and abs(micros) < EPOCH_MS_AS_DATE:
        if micros % 1_000_000 == 0:
            return f"{micros // 1_000_000} s"
        return f"{micros / 1_000_000:.6f}".rstrip("0") + " s"  # 3600.001 s
    try:
        tz = ZoneInfo(zone)
    except Exception:  # an offset Spark reads and zoneinfo does not: show UTC
        tz = dt.timezone.utc
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=micros)
    when = when.astimezone(tz)
    text = when.strftime("%H:%M:%S" if when.second or when.microsecond else "%H:%M")
    if when.microsecond:
        text += f".{when.microsecond:06d}".rstrip("0")
    return f"{when:%Y-%m-%d} {text}" if with_date else text


def windower_text(function: str, w) -> str:
    args = []
    for attr in getattr(w, "argument_fields", ()):
        value = getattr(w, attr)
        if attr == "offset" and not value:
            continue
        word = attr.replace("_", " ")
        args.append(f"{word} {value} rows" if w.ordered else f"{word} {duration_text(value)}")
    return f"{function.upper()}({', '.join(args)})"


def emit_text(emit) -> str:
    parts = []
    if emit.changes:
        parts.append("CHANGES")
    else:
        if emit.early_rows:
            parts.append(f"EARLY EVERY {emit.early_rows} ROWS")
        if emit.early_interval:
            parts.append(f"EARLY EVERY {duration_text(emit.early_interval)}")
        parts.append("FINAL")
    if emit.allowed_lateness:
        parts.append(f"ALLOWED LATENESS {duration_text(emit.allowed_lateness)}")
    if emit.accumulation != "ACCUMULATING":
        parts.append(emit.accumulation)
    return " ".join(parts)

"""The native lowering against a plain-Python reference, on random data.

Each test runs one Spark query over a few hundred random keys; every key is an
independent random case (times before and after the epoch, duplicates, offsets, hop
gaps, exact-gap sessions), so one query checks many cases. The reference below is
written from the definitions in docs/semantics.md, not from the lowering.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter

import pytest

EPOCH = dt.datetime(1970, 1, 1)


def random_rows(seed: int, keys: int = 300, unit: int = 60_000):
    rng = random.Random(seed)
    rows = []
    for key in range(keys):
        base = rng.randint(-50, 50) * unit * 10
        for pos in range(rng.randint(1, 12)):
            rows.append((f"k{key}", pos, base + rng.randint(0, 40) * unit, rng.randint(1, 9)))
    return rows


def fixed_windows(t: int, size: int, slide: int, offset: int):
    start = t - (t - offset) % slide
    while start + size > t:
        yield start, start + size
        start -= slide


def cumulate_windows(t: int, step: int, max_size: int, offset: int):
    base = t - (t - offset) % max_size
    for j in range(1, max_size // step + 1):
        if base + j * step > t:
            yield base, base + j * step


def by_key(rows):
    keyed: dict[str, list] = {}
    for key, pos, t, v in rows:
        keyed.setdefault(key, []).append((pos, t, v))
    return keyed


def reference_sessions(rows, gap: int):
    out = Counter()
    for key, items in by_key(rows).items():
        times = sorted((t, v) for _, t, v in items)
        session = [times[0]]
        for t, v in times[1:]:
            if t - session[-1][0] >= gap:
                out[(key, session[0][0], session[-1][0] + gap, len(session), sum(x for _, x in session))] += 1
                session = []
            session.append((t, v))
        out[(key, session[0][0], session[-1][0] + gap, len(session), sum(x for _, x in session))] += 1
    return out


def reference_assigned(rows, windows_of):
    agg: dict[tuple, list] = {}
    for key, _, t, v in rows:
        for start, end in windows_of(t):
            agg.setdefault((key, start, end), []).append(v)
    return Counter((k, s, e, len(vs), sum(vs)) for (k, s, e), vs in agg.items())


def reference_slide(rows, size: int):
    out = Counter()
    for key, items in by_key(rows).items():
        for end in {t for _, t, _ in items}:
            inside = [v for _, t, v in items if end - size <= t <= end]
            out[(key, end - size, end, len(inside), sum(inside))] += 1
    return out


def reference_count(rows, size: int, slide: int):
    out = Counter()
    for key, items in by_key(rows).items():
        ordered = sorted(items)
        for first in range(0, len(ordered) - size + 1, slide):
            window = ordered[first:first + size]
            out[(key, window[0][1], window[-1][1], size, sum(v for _, _, v in window))] += 1
    return out


@pytest.fixture(scope="module")
def random_events(spark):
    rows = random_rows(seed=7)
    frame = spark.createDataFrame(rows, "k string, pos bigint, ms bigint, v bigint")
    frame.createOrReplaceTempView("random_ms")
    frame.selectExpr("k", "pos", "timestamp_millis(ms) AS ts", "v").createOrReplaceTempView("random_ts")
    return rows


def run(sw, sql: str, timestamp: bool = False) -> Counter:
    result = Counter()
    for row in sw.sql(sql).collect():
        start, end = row["window_start"], row["window_end"]
        if timestamp:
            start, end = (int((x - EPOCH).total_seconds() * 1000) for x in (start, end))
        result[(row["k"], start, end, row["n"], row["total"])] += 1
    return result


AGG = "k, window_start, window_end, count(*) AS n, sum(v) AS total"
GROUP = "GROUP BY k, window_start, window_end"
MIN = 60_000


@pytest.mark.parametrize("size, slide, offset", [(10, 10, 0), (10, 10, 3), (10, 4, 1), (10, 15, 2), (7, 3, 0)])
def test_fixed_windows_match_the_reference(sw, random_events, size, slide, offset):
    expected = reference_assigned(random_events, lambda t: fixed_windows(t, size * MIN, slide * MIN, offset * MIN))
    hop = f"HOP(TABLE {{table}} PARTITION BY k, DESCRIPTOR({{col}}), INTERVAL {slide} MINUTES, INTERVAL {size} MINUTES, INTERVAL {offset} MINUTES)"
    assert run(sw, f"SELECT {AGG} FROM {hop.format(table='random_ms', col='ms')} {GROUP}") == expected
    assert run(sw, f"SELECT {AGG} FROM {hop.format(table='random_ts', col='ts')} {GROUP}", timestamp=True) == expected


def test_cumulate_matches_the_reference(sw, random_events):
    expected = reference_assigned(random_events, lambda t: cumulate_windows(t, 5 * MIN, 20 * MIN, 2 * MIN))
    sql = (f"SELECT {AGG} FROM CUMULATE(TABLE random_ts PARTITION BY k, DESCRIPTOR(ts), INTERVAL 5 MINUTES, "
           f"INTERVAL 20 MINUTES, INTERVAL 2 MINUTES) {GROUP}")
    assert run(sw, sql, timestamp=True) == expected


@pytest.mark.parametrize("where", ["", "WHERE v IS NOT NULL"], ids=["session_window", "window-frames"])
def test_sessions_match_the_reference(sw, random_events, where):
    expected = reference_sessions(random_events, 3 * MIN)
    for table, col, ts in (("random_ms", "ms", False), ("random_ts", "ts", True)):
        sql = (f"SELECT {AGG} FROM SESSION(TABLE {table} PARTITION BY k, DESCRIPTOR({col}), INTERVAL 3 MINUTES) "
               f"{where} {GROUP}")
        assert run(sw, sql, timestamp=ts) == expected


def test_slide_matches_the_reference(sw, random_events):
    expected = reference_slide(random_events, 5 * MIN)
    sql = f"SELECT {AGG} FROM SLIDE(TABLE random_ms PARTITION BY k, DESCRIPTOR(ms), INTERVAL 5 MINUTES) {GROUP}"
    assert run(sw, sql) == expected


@pytest.mark.parametrize("size, slide", [(3, 3), (4, 2), (3, 1), (2, 5)])
@pytest.mark.parametrize("where", ["", "WHERE v IS NOT NULL"], ids=["grouped", "annotated"])
def test_count_windows_match_the_reference(sw, random_events, size, slide, where):
    expected = reference_count(random_events, size, slide)
    sql = (f"SELECT {AGG} FROM COUNT_WINDOW(TABLE random_ms PARTITION BY k ORDER BY pos, DESCRIPTOR(ms), "
           f"{size}, {slide}) {where} {GROUP}")
    assert run(sw, sql) == expected

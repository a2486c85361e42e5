"""The random input streams of the differential tests: one generator, each test its own shape.

A stream is a clock moving forward by a random step per row; each row is on time (at the clock,
or a little behind it: `jitter_s`), behind it (`late` of the rows, `behind_s` seconds back: late
for a watermark closer than that), or bad (`null_time`, `far_past` / `far_future`: times at the
ends of the calendar). Keys are drawn from `keys` (`null_key` of them NULL; a None among the keys
works too); `twins` rows repeat another row's values with an id of their own. Arrival is the
generation order (or shuffled: `shuffle`), cut into micro-batches of `batch_size` rows or, with
`new_batch`, a new batch before a row with that probability; `at` is each row's arrival time,
`arrival_gap_s` apart, with `pause_s` more from batch `pause_after_batch` + 1 on.

Rows: (id, k, ts, v, arrival, batch, at) -- `columns()` picks and orders them for a table.
With the defaults it is tests/test_conservation.py's stream (out of order, late, NULL keys and
times, the calendar's ends, duplicates, random batches); tests/test_stream_clock_spread.py and
tests/test_changelog.py give their own figures. tests/crash_harness.py's batches (a time per
micro-batch in ms, NULL keys and times on fixed batches its kill plans aim at) and
tests/test_around.py's events (sorted uniform times) keep their own shapes.
"""

from __future__ import annotations

import datetime as dt
import random

START = dt.datetime(2024, 1, 1, 10, 0)
FAR_PAST = dt.datetime(1, 1, 3)  # day 3: Python reads its windows in any zone
FAR_FUTURE = dt.datetime(9999, 12, 30, 23, 0)
FIELDS = ("id", "k", "ts", "v", "arrival", "batch", "at")


def random_stream(seed: int | random.Random, n: int, *, keys=("a", "b", "c"), start: dt.datetime = START,
                  step_s: tuple[int, int] = (0, 40), late: float = 0.14, behind_s: tuple[int, int] = (200, 1200),
                  jitter_s: tuple[int, int] | None = None, null_time: float = 0.06, far_past: float = 0.03,
                  far_future: float = 0.02, null_key: float = 0.06, value: tuple[int, int] = (0, 100),
                  twins: int | None = None, shuffle: bool = True, batch_size: int | None = None,
                  new_batch: float = 0.12, arrival_gap_s: int = 40, pause_s: int = 0, pause_after_batch: int = 0,
                  first_id: int = 0) -> list[tuple]:
    """(id, k, ts, v, arrival, batch, at) rows; ranges are [low, high). `seed` may be a Random (a
    test drawing two streams from one)."""
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    rows, clock = [], 0
    for i in range(n):
        clock += rng.randrange(*step_s)
        roll = rng.random()
        if roll < null_time:
            ts = None
        elif roll < null_time + far_past:
            ts = FAR_PAST.replace(second=rng.randrange(60))
        elif roll < null_time + far_past + far_future:
            ts = FAR_FUTURE.replace(second=rng.randrange(60))
        elif roll < null_time + far_past + far_future + late:
            ts = start + dt.timedelta(seconds=max(0, clock - rng.randrange(*behind_s)))
        else:
            ts = start + dt.timedelta(seconds=clock - (rng.randrange(*jitter_s) if jitter_s else 0))
        k = None if rng.random() < null_key else rng.choice(keys)
        rows.append([first_id + i, k, ts, rng.randrange(*value)])
    for _ in range(n // 15 if twins is None else twins):  # the same values, an id of its own
        twin = list(rng.choice(rows))
        twin[0] = first_id + len(rows)
        rows.append(twin)
    if shuffle:
        rng.shuffle(rows)
    batch = 0
    out = []
    for arrival, row in enumerate(rows):
        if batch_size:
            batch = arrival // batch_size
        elif arrival and rng.random() < new_batch:
            batch += 1
        at = start + dt.timedelta(seconds=arrival_gap_s * arrival + (pause_s if batch > pause_after_batch else 0))
        out.append((*row, arrival, batch, at))
    return out


def columns(rows: list[tuple], *names: str) -> list[tuple]:
    """The rows with the fields `names` (of FIELDS), in that order."""
    index = [FIELDS.index(name) for name in names]
    return [tuple(row[i] for i in index) for row in rows]


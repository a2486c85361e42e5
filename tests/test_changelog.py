"""sw.apply_changelog (issue 12 part 2): a replay's changelog, applied, leaves the EMIT FINAL result.

The property itself is tested on the window runtime over hundreds of random streams
(tests/runtime/test_runtime_properties.py::test_applied_changelogs_leave_the_emit_final_result);
here the Spark side of the same rule runs on replays of a random recorded stream -- out of order,
with late rows and several keys -- for TUMBLE and SESSION.
"""

from __future__ import annotations

import datetime as dt

import pytest

from sqlwin.errors import SqlwinUsageError
from tests.support.random_streams import columns, random_stream

T0 = dt.datetime(2024, 1, 1)


@pytest.fixture(scope="module")
def recorded(spark):
    # 160 rows, the clock 0-3 s a row, on time up to 4 s behind it, 15 % 10-40 s behind (late)
    rows = columns(random_stream(12, 160, keys=tuple("abcd"), start=T0, step_s=(0, 4), late=0.15, behind_s=(10, 41),
                                 jitter_s=(0, 5), null_time=0, far_past=0, far_future=0, null_key=0, value=(1, 10),
                                 twins=0, shuffle=False, batch_size=160), "k", "ts", "v", "arrival")
    spark.createDataFrame(rows, "k string, ts timestamp, v int, off bigint").createOrReplaceTempView("cl_events")
    return rows


WINDOWS = {
    "tumble": "TUMBLE(TABLE cl_events WITH (arrival_order = off) PARTITION BY k WATERMARK ts DELAY OF INTERVAL 5 "
              "SECONDS, DESCRIPTOR(ts), INTERVAL 10 SECONDS)",
    "session": "SESSION(TABLE cl_events WITH (arrival_order = off) PARTITION BY k WATERMARK ts DELAY OF INTERVAL 5 "
               "SECONDS, DESCRIPTOR(ts), INTERVAL 4 SECONDS)",
}
KEYS = ["k", "window_start", "window_end"]


def _query(window: str, emit: str) -> str:
    return (f"SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s FROM {WINDOWS[window]} "
            f"GROUP BY k, window_start, window_end EMIT {emit}")


def _rows(frame) -> list[tuple]:
    return sorted(tuple(r) for r in frame.select(*KEYS, "n", "s").collect())


@pytest.mark.parametrize("window", list(WINDOWS))
def test_applied_changelogs_equal_emit_final(sw, recorded, window):
    final = sw.sql(_query(window, "FINAL ALLOWED LATENESS INTERVAL 10 SECONDS RETRACTING"))
    want = _rows(sw.apply_changelog(final, KEYS))
    assert len(want) >= 20
    changelogs = ["CHANGES ALLOWED LATENESS INTERVAL 10 SECONDS RETRACTING", "EARLY EVERY 2 ROWS ALLOWED LATENESS INTERVAL 10 SECONDS RETRACTING"]
    if window == "tumble":  # an upsert cannot delete a session merged away (RETRACTING's -D does)
        changelogs.append("EARLY EVERY 2 ROWS ALLOWED LATENESS INTERVAL 10 SECONDS ACCUMULATING")
    for emit in changelogs:
        changes = sw.sql(_query(window, emit))
        ops = {r.op for r in changes.select("op").distinct().collect()}
        assert len(ops) > 1, f"{emit}: no changelog to apply ({ops})"  # the test must fold something
        assert _rows(sw.apply_changelog(changes, KEYS)) == want, emit
        if window == "session" and emit.startswith("CHANGES"):
            assert "-D" in ops  # sessions merged: the deletes were exercised


def test_apply_changelog_names_missing_columns(sw, recorded):
    plain = sw.spark.table("cl_events")
    with pytest.raises(SqlwinUsageError, match="op, emit_seq"):
        sw.apply_changelog(plain, KEYS)

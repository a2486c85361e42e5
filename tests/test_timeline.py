"""sw.timeline / write_timeline: the facts a timeline picture is drawn from, and the picture.

The three document examples drawn in docs/timeline/ are defined here, each with its scenario's own
data and query (features/bytewax_concepts.feature @BW-04 and @BW-07, features/voltsp.feature
@VS-06). Regenerate the pictures with

    .venv/bin/python -m tests.test_timeline docs/timeline
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sqlwin.errors import SqlwinUsageError

S = 1_000_000  # microseconds in a second: every time of a Timeline is in epoch microseconds
MIN = 60 * S
MIDNIGHT = 1_702_512_000 * S  # 2023-12-14 00:00:00 UTC

EXAMPLES = {
    # BW-04: one-hour windows every 30 minutes, aligned to midnight: a row at 00:45 is in two windows.
    "bw04_hop": (
        """CREATE OR REPLACE TEMP VIEW events AS SELECT * FROM VALUES
             ('a', TIMESTAMP '2023-12-14 00:45:00'),
             ('b', TIMESTAMP '2023-12-14 01:15:00') AS t(id, ts)""",
        """SELECT window_start, window_end, count(*) AS rows_in_window
           FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR,
                    TIMESTAMP '2023-12-14 00:00:00')
           GROUP BY window_start, window_end""",
    ),
    # BW-07: sessions with a 30-minute gap; 3A comes exactly one gap after 2B and starts a new session.
    "bw07_session": (
        """CREATE OR REPLACE TEMP VIEW events AS SELECT * FROM VALUES
             ('1A', 'u', TIMESTAMP '2023-12-14 00:00:00'),
             ('1B', 'u', TIMESTAMP '2023-12-14 00:10:00'),
             ('1C', 'u', TIMESTAMP '2023-12-14 00:15:00'),
             ('2A', 'u', TIMESTAMP '2023-12-14 00:50:00'),
             ('2B', 'u', TIMESTAMP '2023-12-14 01:00:00'),
             ('3A', 'u', TIMESTAMP '2023-12-14 01:30:00') AS t(id, user, ts)""",
        """SELECT user, window_start, window_end, min(ts) AS first_row, max(ts) AS last_row,
                  array_sort(collect_list(id)) AS ids
           FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
           GROUP BY user, window_start, window_end""",
    ),
    # VS-06: VoltSP's scenario 1, e1 2 s, e2 5 s | e4 12 s | e3 8 s | e5 25 s, watermark 2, 12, 12, 25.
    "vs06_late": (
        """CREATE OR REPLACE TEMP VIEW events AS SELECT * FROM VALUES
             ('u1', 'e1', CAST(2000 AS BIGINT), 1, CAST(7000 AS BIGINT), 1),
             ('u1', 'e2', CAST(5000 AS BIGINT), 1, CAST(7000 AS BIGINT), 2),
             ('u1', 'e4', CAST(12000 AS BIGINT), 2, CAST(8000 AS BIGINT), 3),
             ('u1', 'e3', CAST(8000 AS BIGINT), 3, CAST(9000 AS BIGINT), 4),
             ('u1', 'e5', CAST(25000 AS BIGINT), 4, CAST(10000 AS BIGINT), 5)
           AS t(user, event, ts, batch, proc, arrival)""",
        """SELECT user, window_start, window_end, collect_list(event) AS events
           FROM TUMBLE(TABLE events PARTITION BY user
                         WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                         WITH (watermark_strategy = 'min_event_time',
                               arrival_order = arrival, arrival_batch = batch),
                       DESCRIPTOR(ts), INTERVAL 10 SECONDS)
           GROUP BY user, window_start, window_end
           LATE ROWS INTO late_events""",
    ),
}


def example(spark, name: str) -> str:
    """Create the example's table; its query."""
    table, query = EXAMPLES[name]
    spark.sql(table)
    return query


@pytest.fixture(scope="module")
def vs06(spark, sw):
    from sqlwin.timeline import build_timeline

    return build_timeline(sw, example(spark, "vs06_late"))


def test_vs06_lanes_windows_and_rows(vs06):
    # The document's scenario 1: one key, 10 s windows, e1 2 s and e2 5 s in batch 1, e4 12 s in
    # batch 2, e3 8 s in batch 3, e5 25 s in batch 4.
    lane = ("u1",)
    assert vs06.mode == "replay" and vs06.lanes == [lane]
    assert [(w.start, w.end) for w in vs06.windows_of(lane)] == [(0, 10 * S), (10 * S, 20 * S), (20 * S, 30 * S)]
    rows = {p.label: p for p in vs06.points_of(lane)}
    assert {name: (p.time, p.batch) for name, p in rows.items()} == {
        "e1": (2 * S, 1), "e2": (5 * S, 1), "e4": (12 * S, 2), "e3": (8 * S, 3), "e5": (25 * S, 4)}
    assert [(w.start, w.end) for w in rows["e1"].windows] == [(0, 10 * S)]
    assert [(w.start, w.end) for w in rows["e4"].windows] == [(10 * S, 20 * S)]


def test_vs06_the_late_row_and_the_window_it_missed(vs06):
    # "[0,10) emits {e1,e2} after batch 2; e3 is late": checked against watermark 12 s, 4 s late.
    lane = ("u1",)
    late = [p for p in vs06.points_of(lane) if p.late]
    assert [p.label for p in late] == ["e3"]
    e3 = late[0]
    assert [(w.start, w.end) for w in e3.missed] == [(0, 10 * S)]
    assert e3.late_by == 4 * S and e3.fully_late and e3.windows == ()
    assert vs06.watermark_before(lane, 3) == 12 * S
    assert vs06.closed_after(e3.missed[0]) == 2


def test_vs06_watermark_and_firings(vs06):
    lane = ("u1",)
    # Watermark 2, 12, 12, 25 (MIN_EVENT_TIME, no delay): it does not move in batch 3.
    assert [vs06.watermark_before(lane, b + 1) for b in (1, 2, 3, 4)] == [2 * S, 12 * S, 12 * S, 25 * S]
    assert vs06.watermark_before(lane, 1) is None
    assert [(f.window.start, f.window.end, f.firing, f.op, f.batch, f.values) for f in vs06.firings_of(lane)] == [
        (0, 10 * S, "on_time", "+I", 2, "events=[e1, e2]"),
        (10 * S, 20 * S, "on_time", "+I", 4, "events=[e4]"),
        (20 * S, 30 * S, "final", "+I", None, "events=[e5]"),  # [20 s, 30 s) closes at the end of input
    ]
    assert vs06.notes == []  # the recomputed watermark explains every on-time firing


def test_vs06_figure_is_a_png(vs06):
    figure = vs06.figure()
    png = figure._repr_png_()  # what Jupyter shows
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000
    lane_axes = [ax for ax in figure.axes if ax.get_title(loc="left")]
    assert [ax.get_title(loc="left") for ax in lane_axes] == ["user = u1"]
    labels = [t.get_text() for t in lane_axes[0].get_yticklabels()]
    assert labels == ["windows", "batch 1", "batch 2", "batch 3", "batch 4", "end of input"]


def test_write_timeline_of_complete_input(spark, sw, tmp_path, monkeypatch):
    # BW-07: three sessions [00:00, 00:45), [00:50, 01:30), [01:30, 02:00); no arrival, no watermark.
    import sqlwin.timeline as timelines

    built = []
    build = timelines.build_timeline
    monkeypatch.setattr(timelines, "build_timeline", lambda *a, **k: built.append(build(*a, **k)) or built[-1])
    path = timelines.write_timeline(sw, example(spark, "bw07_session"), tmp_path / "sessions.png")
    assert path == tmp_path / "sessions.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    timeline, = built  # the facts that picture was drawn from
    assert timeline.mode == "complete input" and timeline.lanes == [("u",)] and timeline.watermarks == {}
    sessions = [(w.start - MIDNIGHT, w.end - MIDNIGHT) for w in timeline.windows_of(("u",))]
    assert sessions == [(0, 45 * MIN), (50 * MIN, 90 * MIN), (90 * MIN, 120 * MIN)]
    members = {p.label: [(w.start - MIDNIGHT) // MIN for w in p.windows] for p in timeline.points}
    assert members == {"1A": [0], "1B": [0], "1C": [0], "2A": [50], "2B": [50], "3A": [90]}
    assert not any(p.late for p in timeline.points)


def test_without_matplotlib_a_clear_error(sw, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now raises ImportError
    with pytest.raises(SqlwinUsageError, match=r"pip install 'sqlwin\[timeline\]'"):
        sw.timeline("SELECT 1")


def test_sqlwin_imports_without_matplotlib():
    import subprocess

    code = "import sys; sys.modules['matplotlib'] = None; import sqlwin, sqlwin.timeline; print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


if __name__ == "__main__":  # python -m tests.test_timeline docs/timeline: the pictures in the docs
    import sqlwin
    from sqlwin.timeline import write_timeline

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/timeline")
    session = sqlwin.session(app_name="sqlwin-timeline-docs")
    for name in EXAMPLES:
        print(write_timeline(sqlwin.attach(session), example(session, name), target / f"{name}.png"))
    session.stop()

"""Issue 21, item 6: one answer in every mode.

Each reproduction of the issue, as a test whose expected rows are worked out from the data here
(pandas, or by hand on a few rows), never copied from sqlwin's output:

* SESSION / COUNT_WINDOW / SLIDE under a GROUP BY key and no PARTITION BY (or GROUP BY keys beyond
  PARTITION BY): windows per GROUP BY key over a finished table as in a replay (docs/semantics.md,
  "Which rows form a window"); without an aggregation, windows per PARTITION BY;
* a TIMESTAMP_NTZ time column in a session time zone with daylight saving: TIMESTAMP_NTZ windows, not
  moved by the zone, in every mode (a stream too);
* FILTER (WHERE ...) on every aggregate the runtime computes, over a finished table and in a replay;
* `sw.stream(q, sources={"ev": ...})` leaves the user's temp view `ev` as it was.
"""

from __future__ import annotations

import datetime as dt
import random

import pandas as pd
import pytest

T0 = dt.datetime(2024, 1, 1)
GAP = dt.timedelta(minutes=10)
SLIDE_SIZE = dt.timedelta(minutes=15)
COUNT_SIZE, COUNT_SLIDE = 3, 2


@pytest.fixture(scope="module")
def clicks(spark) -> pd.DataFrame:
    """Three users (k) on two devices (g) over two hours; arrival (off) in time order, so a replay
    has no late row and answers as a finished table does."""
    rng = random.Random(21)
    data = []
    for _ in range(90):
        data.append((rng.choice("abc"), rng.choice("xy"), T0 + dt.timedelta(minutes=rng.randrange(120)),
                     rng.randrange(10)))
    data.sort(key=lambda r: r[2])
    rows = [(k, g, ts, v, off) for off, (k, g, ts, v) in enumerate(data)]
    spark.createDataFrame(rows, "k STRING, g STRING, ts TIMESTAMP, v INT, off INT") \
        .createOrReplaceTempView("one_clicks")
    return pd.DataFrame(rows, columns=["k", "g", "ts", "v", "off"])


def _groups(frame: pd.DataFrame, keys: list[str]):
    if not keys:
        yield (), frame
        return
    for key, rows in frame.groupby(keys, sort=True):
        yield (key if isinstance(key, tuple) else (key,)), rows


def sessions(frame, keys):
    """(key, start, end, rows) per session of a key: a row a full gap (or more) after the previous one
    starts a new session."""
    for key, rows in _groups(frame, keys):
        rows = rows.sort_values(["ts", "off"])
        new = rows["ts"].diff().fillna(GAP) >= GAP
        for _, session in rows.groupby(new.cumsum()):
            yield key, session["ts"].min(), session["ts"].max() + GAP, session


def count_windows(frame, keys):
    """Full windows of COUNT_SIZE consecutive rows (arrival order) of a key, one every COUNT_SLIDE rows."""
    for key, rows in _groups(frame, keys):
        rows = rows.sort_values("off").reset_index(drop=True)
        for first in range(0, len(rows) - COUNT_SIZE + 1, COUNT_SLIDE):
            window = rows.iloc[first:first + COUNT_SIZE]
            yield key, window["ts"].iloc[0], window["ts"].iloc[-1], window


def slides(frame, keys):
    """One window [e - size, e] per distinct row time e of a key, holding its rows in it."""
    for key, rows in _groups(frame, keys):
        for end in sorted(set(rows["ts"])):
            yield key, end - SLIDE_SIZE, end, rows[(rows["ts"] >= end - SLIDE_SIZE) & (rows["ts"] <= end)]


def expected(windows, frame, keys):
    """(keys, start, end, count, sum of v) per window formed per `keys`."""
    return {(*key, _py(start), _py(end), len(rows), int(rows["v"].sum())) for key, start, end, rows in windows(frame, keys)}


def flink_reading(windows, frame, partition, keys):
    """The other reading, which every mode now refuses: windows formed over the PARTITION BY rows, each
    window's rows then grouped by the GROUP BY keys."""
    out = set()
    for _, start, end, rows in windows(frame, partition):
        for key, part in _groups(rows, keys):
            out.add((*key, _py(start), _py(end), len(part), int(part["v"].sum())))
    return out


def _py(time) -> dt.datetime:
    return pd.Timestamp(time).to_pydatetime()


FUNCTIONS = {
    "SESSION": ("SESSION(TABLE one_clicks{partition}{arrival}, DESCRIPTOR(ts), INTERVAL 10 MINUTES)", sessions),
    "COUNT_WINDOW": ("COUNT_WINDOW(TABLE one_clicks{partition}{order}{arrival}, DESCRIPTOR(ts), 3, 2)",
                     count_windows),
    "SLIDE": ("SLIDE(TABLE one_clicks{partition}{arrival}, DESCRIPTOR(ts), INTERVAL 15 MINUTES)", slides),
}


def _window_sql(function: str, partition: str, replay: bool) -> str:
    template = FUNCTIONS[function][0]
    return template.format(partition=f" PARTITION BY {partition}" if partition else "",
                           order="" if replay else " ORDER BY off",
                           arrival=" WITH (arrival_order = off)" if replay else "")


@pytest.mark.parametrize("replay", [False, True], ids=["complete", "replay"])
@pytest.mark.parametrize("partition, group", [("", ["k"]), ("k", ["k", "g"])],
                         ids=["group-by-without-partition-by", "group-by-beyond-partition-by"])
@pytest.mark.parametrize("function", list(FUNCTIONS))
def test_data_dependent_windows_are_formed_per_group_by_key(sw, clicks, function, partition, group, replay):
    keys = ", ".join(group)
    query = (f"SELECT {keys}, window_start, window_end, count(*) AS n, sum(v) AS s "
             f"FROM {_window_sql(function, partition, replay)} GROUP BY {keys}, window_start, window_end")
    got = {tuple(r)[:len(group) + 4] for r in sw.sql(query).collect()}
    windows = FUNCTIONS[function][1]
    want = expected(windows, clicks, group)
    assert got == want
    # The data tells the two readings apart (else this test would prove nothing).
    assert flink_reading(windows, clicks, [partition] if partition else [], group) != want


def test_a_qualified_group_by_key_forms_the_same_windows(sw, clicks):
    plain = sw.sql("SELECT k, window_start, window_end, count(*) AS n FROM SESSION(TABLE one_clicks, DESCRIPTOR(ts), "
                   "INTERVAL 10 MINUTES) GROUP BY k, window_start, window_end").collect()
    qualified = sw.sql("SELECT w.k, w.window_start, w.window_end, count(*) AS n FROM SESSION(TABLE one_clicks, "
                       "DESCRIPTOR(ts), INTERVAL 10 MINUTES) AS w GROUP BY w.k, w.window_start, w.window_end").collect()
    assert sorted(map(tuple, plain)) == sorted(map(tuple, qualified))
    assert {tuple(r) for r in plain} == {w[:4] for w in expected(sessions, clicks, ["k"])}


def test_without_an_aggregation_windows_follow_partition_by(sw, clicks):
    """SELECT * FROM SESSION(...): no GROUP BY to form windows by; PARTITION BY (or the whole table)."""
    whole = sw.sql("SELECT DISTINCT window_start, window_end FROM SESSION(TABLE one_clicks, DESCRIPTOR(ts), "
                   "INTERVAL 10 MINUTES)").collect()
    assert {tuple(r) for r in whole} == {w[:2] for w in expected(sessions, clicks, [])}
    per_k = sw.sql("SELECT DISTINCT k, window_start, window_end FROM SESSION(TABLE one_clicks PARTITION BY k, "
                   "DESCRIPTOR(ts), INTERVAL 10 MINUTES)").collect()
    assert {tuple(r) for r in per_k} == {w[:3] for w in expected(sessions, clicks, ["k"])}


def test_explain_says_which_keys_form_the_windows(sw, clicks):
    text = str(sw.explain("SELECT k, window_start, window_end, count(*) FROM SESSION(TABLE one_clicks, "
                          "DESCRIPTOR(ts), INTERVAL 10 MINUTES) GROUP BY k, window_start, window_end"))
    assert "windows formed per: k (" in text and "PARTITION BY names the clocks" in text
    tumble = str(sw.explain("SELECT k, window_start, window_end, count(*) FROM TUMBLE(TABLE one_clicks, "
                            "DESCRIPTOR(ts), INTERVAL 10 MINUTES) GROUP BY k, window_start, window_end"))
    assert "windows formed per" not in tumble  # fixed windows are the same for every key


# --------------------------------------------------------------------------- TIMESTAMP_NTZ

ZONE = "America/Los_Angeles"  # 2024-03-10 02:00 does not exist there: clocks jump to 03:00
DST_DAY = dt.datetime(2024, 3, 10)


def _at(hours: int, minutes: int) -> dt.datetime:
    return DST_DAY + dt.timedelta(hours=hours, minutes=minutes)


# (k, ts, v, off, batch): a@01:30 and a@03:10 are 1 h 40 min apart on the wall clock (two sessions of
# a 1-hour gap), 40 minutes apart as Los Angeles instants; b@02:30 is a wall time Los Angeles skips.
# a@01:00 arrives after a's watermark passed 02:00: late for [01:00, 02:00).
NTZ_ROWS = [("a", _at(1, 30), 1, 0, 0), ("a", _at(3, 10), 2, 1, 0), ("b", _at(2, 30), 3, 2, 1),
            ("a", _at(3, 40), 4, 3, 1), ("a", _at(1, 0), 5, 4, 2)]


@pytest.fixture
def los_angeles(spark):
    spark.conf.set("spark.sql.session.timeZone", ZONE)
    try:
        yield ZONE
    finally:
        spark.conf.set("spark.sql.session.timeZone", "UTC")


@pytest.fixture(scope="module")
def ntz_table(spark):
    table = spark.createDataFrame(NTZ_ROWS, "k STRING, ts TIMESTAMP_NTZ, v INT, off INT, batch INT")
    table.createOrReplaceTempView("one_ntz")
    return table


def _types(df, *names):
    return [df.schema[name].dataType.simpleString() for name in names]


SESSION_NTZ = ("SELECT k, window_start, window_end, window_time, count(*) AS n FROM SESSION(TABLE one_ntz "
               "PARTITION BY k{arrival}, DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end")


@pytest.mark.parametrize("replay", [False, True], ids=["complete", "replay"])
def test_timestamp_ntz_sessions_keep_the_wall_clock_across_daylight_saving(sw, ntz_table, los_angeles, replay):
    arrival = " WITH (arrival_order = off, arrival_batch = batch)" if replay else ""
    result = sw.sql(SESSION_NTZ.format(arrival=arrival))
    assert _types(result, "window_start", "window_end", "window_time") == ["timestamp_ntz"] * 3
    micro = dt.timedelta(microseconds=1)
    got = {tuple(r)[:5] for r in result.collect()}
    b = ("b", _at(2, 30), _at(3, 30), _at(3, 30) - micro, 1)
    if replay:  # a@01:00 came after [01:30, 02:30) closed: late (LATE ROWS INTO would list it)
        want = {("a", _at(1, 30), _at(2, 30), _at(2, 30) - micro, 1),
                ("a", _at(3, 10), _at(4, 40), _at(4, 40) - micro, 2), b}
    else:  # a finished table: every row on time, a@01:00 opens a's first session
        want = {("a", _at(1, 0), _at(2, 30), _at(2, 30) - micro, 2),
                ("a", _at(3, 10), _at(4, 40), _at(4, 40) - micro, 2), b}
    assert got == want


TUMBLE_NTZ = ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s FROM TUMBLE(TABLE {table} "
              "PARTITION BY k WITH (arrival_order = off, arrival_batch = batch), DESCRIPTOR(ts), INTERVAL 1 HOUR) "
              "GROUP BY k, window_start, window_end LATE ROWS INTO {late}")
TUMBLE_NTZ_WANT = {("a", _at(1, 0), _at(2, 0), 1, 1), ("a", _at(3, 0), _at(4, 0), 2, 6),
                   ("b", _at(2, 0), _at(3, 0), 1, 3)}
# a's watermark is 03:40 after batch 1: a@01:00 is 2 h 40 min behind it, late for [01:00, 02:00).
LATE_NTZ_WANT = [("a", _at(1, 0), 5, dt.timedelta(hours=2, minutes=40), _at(1, 0), _at(2, 0), "late")]


def test_timestamp_ntz_replay_keeps_its_type_in_results_and_late_rows(sw, spark, ntz_table, los_angeles):
    result = sw.sql(TUMBLE_NTZ.format(table="one_ntz", late="one_ntz_late"))
    assert _types(result, "window_start", "window_end") == ["timestamp_ntz"] * 2
    assert {tuple(r)[:5] for r in result.collect()} == TUMBLE_NTZ_WANT
    late = spark.table("one_ntz_late")
    assert _types(late, "ts", "window_start", "window_end") == ["timestamp_ntz"] * 3
    assert [(r["k"], r["ts"], r["v"], r["late_by"], r["window_start"], r["window_end"], r["reason"])
            for r in late.collect()] == LATE_NTZ_WANT


def test_a_stream_over_timestamp_ntz_keeps_it_and_leaves_the_users_view_alone(sw, spark, ntz_table, los_angeles,
                                                                             tmp_path):
    """One stream for two reproductions: TIMESTAMP_NTZ in a zone with daylight saving, and a source
    named like a temp view of the user's (`one_ntz_user`, the same rows finished), which sw.sql reads
    after the stream started exactly as before."""
    from sqlwin.testing import feed_stream

    ntz_table.createOrReplaceTempView("one_ntz_user")
    query = TUMBLE_NTZ.format(table="one_ntz_user", late="unused_late")
    fed = feed_stream(sw, query, ntz_table, "one_ntz_user", "batch", "off", workdir=str(tmp_path), late=True)
    names = [f.name for f in fed.schema.fields]
    assert [fed.schema[n].dataType.simpleString() for n in ("window_start", "window_end")] == ["timestamp_ntz"] * 2
    assert {tuple(dict(zip(names, r))[n] for n in ("k", "window_start", "window_end", "n", "s"))
            for r in fed.rows} == TUMBLE_NTZ_WANT
    late_names = [f.name for f in fed.late_schema.fields]
    assert [tuple(dict(zip(late_names, r))[n] for n in ("k", "ts", "v", "late_by", "window_start", "window_end",
                                                         "reason")) for r in fed.late_rows] == LATE_NTZ_WANT
    # The user's view is still the finished table: a batch query over it answers as before.
    assert not spark.table("one_ntz_user").isStreaming
    replayed = sw.sql(TUMBLE_NTZ.format(table="one_ntz_user", late="one_ntz_user_late"))
    assert {tuple(r)[:5] for r in replayed.collect()} == TUMBLE_NTZ_WANT


# --------------------------------------------------------------------------- FILTER on every aggregate


@pytest.fixture(scope="module")
def filtered(spark):
    # (off, k, ts, v); key a in time order: off0 (00:00, 1), off4 (00:10, 5), off1 (00:20, NULL), off2 (00:40, 3)
    data = [(0, "a", T0, 1), (1, "a", T0 + dt.timedelta(seconds=20), None), (2, "a", T0 + dt.timedelta(seconds=40), 3),
            (3, "b", T0 + dt.timedelta(seconds=50), 4), (4, "a", T0 + dt.timedelta(seconds=10), 5)]
    spark.createDataFrame(data, "off INT, k STRING, ts TIMESTAMP, v INT").createOrReplaceTempView("one_filter")


# Each aggregate with a FILTER, and its value for key a and key b, worked out by hand from the rows above.
FILTERED = [
    ("count(*) FILTER (WHERE v > 1)", 2, 1),
    ("count(*) FILTER (WHERE v IS NULL)", 1, 0),
    ("count(v) FILTER (WHERE off > 0)", 2, 1),
    ("count(DISTINCT v) FILTER (WHERE v > 1)", 2, 1),
    ("sum(v) FILTER (WHERE v > 1)", 8, 4),
    ("sum(v) FILTER (WHERE v > 100)", None, None),
    ("min(v) FILTER (WHERE v > 1)", 3, 4),
    ("max(v) FILTER (WHERE v < 5)", 3, 4),
    ("avg(v) FILTER (WHERE v > 1)", 4.0, 4.0),
    ("mean(v) FILTER (WHERE v > 1)", 4.0, 4.0),
    ("collect_list(v) FILTER (WHERE off > 0)", [5, 3], [4]),  # time order; NULLs are not collected
    ("collect_list(v) FILTER (WHERE v > 100)", [], []),
    ("array_agg(v ORDER BY off DESC) FILTER (WHERE off > 0)", [5, 3], [4]),
    ("min_by(v, off) FILTER (WHERE off > 0)", None, 4),  # off1's v is NULL
    ("max_by(off, v) FILTER (WHERE v < 5)", 2, 3),
]
# first / last are by event time in the runtime; Spark's own first / last over a finished table take
# whichever row comes first, so they are checked in a replay only.
ORDERED = [("first(v) FILTER (WHERE off > 0)", 5, 4), ("last(v) FILTER (WHERE off < 4)", 3, 4),
           ("first(v) FILTER (WHERE v IS NULL)", None, None)]


@pytest.mark.parametrize("window", [
    "TUMBLE(TABLE one_filter PARTITION BY k{arrival}, DESCRIPTOR(ts), INTERVAL 1 MINUTE)",
    "SESSION(TABLE one_filter PARTITION BY k{arrival}, DESCRIPTOR(ts), INTERVAL 1 MINUTE)",
], ids=["tumble", "session"])
@pytest.mark.parametrize("replay", [False, True], ids=["complete", "replay"])
def test_every_aggregate_takes_a_filter(sw, filtered, window, replay):
    aggregates = FILTERED + (ORDERED if replay else [])
    items = ", ".join(f"{sql} AS a{i}" for i, (sql, _, _) in enumerate(aggregates))
    source = window.format(arrival=" WITH (arrival_order = off)" if replay else "")
    rows = {r["k"]: r for r in sw.sql(f"SELECT k, {items} FROM {source} GROUP BY k, window_start, window_end")
            .collect()}
    assert set(rows) == {"a", "b"}
    for i, (sql, a, b) in enumerate(aggregates):
        assert (rows["a"][f"a{i}"], rows["b"][f"a{i}"]) == (a, b), sql


# -- WHERE around a data-dependent window ---------------------------------------------------------

WHERE_ROWS = [("a", 0, 1, 0), ("a", 20, None, 1), ("a", 40, 3, 2), ("b", 0, None, 3), ("b", 100, 5, 4),
              ("a", 200, None, 5)]


@pytest.mark.parametrize("function, expected", [
    # SQL's window function reads every row of its table, WHERE then keeps rows of its windows: a's
    # rows at 0 s, 20 s (v NULL) and 40 s are one session with a 25 s gap (the NULL row bridges
    # them), of which WHERE keeps two; b's session at 0 s and a's at 200 s keep no row: no group.
    # A replay used to filter first, and split a's session in two.
    ("SESSION(TABLE wv {opt}, DESCRIPTOR(ts), INTERVAL 25 SECONDS)",
     [("a", "00:00:00", "00:01:05", 2, 4), ("b", "00:01:40", "00:02:05", 1, 5)]),
    # Two rows a window in arrival order per key: a's (seq 0, 1) and (2, 5), b's (3, 4).
    ("COUNT_WINDOW(TABLE wv {opt} ORDER BY seq, 2)", [("a", "0", "1", 1, 1), ("a", "2", "5", 1, 3),
                                                      ("b", "3", "4", 1, 5)]),
])
def test_where_keeps_rows_of_the_windows_every_row_formed(sw, spark, function, expected):
    base = dt.datetime(2024, 1, 1)
    spark.createDataFrame([(k, base + dt.timedelta(seconds=s), v, seq) for k, s, v, seq in WHERE_ROWS],
                          "k STRING, ts TIMESTAMP, v INT, seq INT").createOrReplaceTempView("wv")
    query = ("SELECT k, CAST(window_start AS STRING) AS ws, CAST(window_end AS STRING) AS we, count(*) AS n, "
             f"sum(v) AS s FROM {function} WHERE v IS NOT NULL GROUP BY k, window_start, window_end")
    replay = "PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 HOUR WITH (arrival_order = seq)"
    for options in ("PARTITION BY k", replay):
        rows = sorted((r.k, r.ws[-8:], r.we[-8:], r.n, r.s) for r in sw.sql(query.format(opt=options)).collect())
        assert rows == expected, options


def test_a_join_over_timestamp_ntz_in_another_zone_is_the_same_in_replay_and_over_a_finished_table(sw, spark):
    """A windowed join read TIMESTAMP_NTZ values through the session time zone (unix_micros casts to
    TIMESTAMP first): in Los Angeles a wall time in the hour 2024-03-10's clocks skip came back an hour
    off. Both sides' NTZ values and window bounds now stay wall-clock times in every mode."""
    base = dt.datetime(2024, 3, 10, 1, 50)
    left = [("k", base + dt.timedelta(minutes=m), m, i) for i, m in enumerate((0, 15, 40, 70))]  # 02:05 .. 03:00
    right = [("k", base + dt.timedelta(minutes=m), m * 10, 10 + i) for i, m in enumerate((5, 45, 65))]
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        spark.createDataFrame(left, "k STRING, ts TIMESTAMP_NTZ, v INT, seq INT").createOrReplaceTempView("ntz_l")
        spark.createDataFrame(right, "k STRING, ts TIMESTAMP_NTZ, w INT, seq INT").createOrReplaceTempView("ntz_r")
        query = ("SELECT l.k, l.window_start, l.ts, l.v, r.ts AS rts, r.w FROM TUMBLE(TABLE ntz_l {o}, DESCRIPTOR(ts), "
                 "INTERVAL 30 MINUTES) l JOIN TUMBLE(TABLE ntz_r {o}, DESCRIPTOR(ts), INTERVAL 30 MINUTES) r "
                 "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end")
        complete = sw.sql(query.format(o=""))
        replay = sw.sql(query.format(o="WATERMARK ts DELAY OF INTERVAL 1 HOUR WITH (arrival_order = seq)"))
        assert [f.dataType.simpleString() for f in replay.schema.fields[1:3]] == ["timestamp_ntz"] * 2
        rows = sorted(tuple(r)[:6] for r in replay.collect())
        assert rows == sorted(tuple(r) for r in complete.collect())
        # Worked out from the wall times: [01:30, 02:00) holds l 01:50 and r 01:55; [02:00, 02:30) l 02:05
        # alone; [02:30, 03:00) l 02:30 with r 02:35 and r 02:55; [03:00, 03:30) l 03:00 alone.
        expected = [("k", dt.datetime(2024, 3, 10, 1, 30), base, 0, base + dt.timedelta(minutes=5), 50),
                    ("k", dt.datetime(2024, 3, 10, 2, 30), base + dt.timedelta(minutes=40), 40,
                     base + dt.timedelta(minutes=45), 450),
                    ("k", dt.datetime(2024, 3, 10, 2, 30), base + dt.timedelta(minutes=40), 40,
                     base + dt.timedelta(minutes=65), 650)]
        assert rows == expected
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)

"""Issue 23, item 1 and 2: SQL around the window functions in every mode.

A windowed stage in a subquery or CTE, and around it projections, CASE, filters on window columns,
a join to a static table, UNION ALL, a window Top-N / deduplication, an aggregation per window, a
join with each window's maximum (Nexmark q5 as Flink writes it). Over a finished table it is all
Spark SQL; in a replay and a stream the stage runs through the window runtime and the SQL around
it over the stage's results (per micro-batch in a stream).

* Differential: random queries of that grammar over random events. With every row on time,
  complete input = replay = stream; with late rows, replay = stream (results and late rows).
* Flink's documentation example of a window Top-N, with Flink's documented result.
* What a stream cannot compute per micro-batch is refused with a position and the reason.
"""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter

import pytest

from sqlwin.errors import SqlwinUnsupportedError

T0 = dt.datetime(2024, 1, 1)
KEYS = ("a", "b", "c", "d", "e")


def events(seed: int, rows: int, late: bool):
    """(k, ts, v, off, batch): arrival order `off`, 40 rows a batch. On time: arrival in time order
    (no row is late); else about one row in six arrives a few minutes behind the stream."""
    rng = random.Random(seed)
    data = sorted(((rng.choice(KEYS), T0 + dt.timedelta(seconds=rng.randrange(3600)), rng.randrange(1, 20))
                   for _ in range(rows)), key=lambda r: r[1])
    if late:
        order = sorted(range(len(data)), key=lambda i: i + (rng.randrange(15, 60) if rng.random() < 0.17 else 0))
        data = [data[i] for i in order]
    return [(k, ts, v, off, off // 40) for off, (k, ts, v) in enumerate(data)]


def window_function(window: str, arrival: bool) -> str:
    options = " WITH (arrival_order = off, arrival_batch = batch)" if arrival else ""
    return {
        "tumble": "TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL 10 MINUTES)",
        "hop": "HOP(TABLE {t}, DESCRIPTOR(ts), INTERVAL 5 MINUTES, INTERVAL 10 MINUTES)",
        "cumulate": "CUMULATE(TABLE {t}, DESCRIPTOR(ts), INTERVAL 5 MINUTES, INTERVAL 15 MINUTES)",
        "session": "SESSION(TABLE {t}, DESCRIPTOR(ts), INTERVAL 4 MINUTES)",
    }[window].format(t=f"ev WATERMARK ts DELAY OF INTERVAL 2 MINUTES{options}")


def stage(window: str, arrival: bool, having: bool, where: bool) -> str:
    function = window_function(window, arrival)
    return (f"SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s, max(v) AS mx FROM {function}"
            + (" WHERE v > 2" if where else "") + " GROUP BY k, window_start, window_end"
            + (" HAVING count(*) > 1" if having else ""))


AROUND = {
    "project": "SELECT k, window_start, window_end, n * 10 + 1 AS n10, CASE WHEN s > 30 THEN 'big' ELSE 'small' END "
               "AS size FROM ({stage}) w WHERE window_end > TIMESTAMP '2024-01-01 00:20:00' AND mx > 3",
    "top_n": "SELECT k, window_start, window_end, s FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, "
             "window_end ORDER BY s DESC, k) AS rn FROM ({stage}) w) WHERE rn <= 2",
    "dedup": "SELECT window_start, window_end, k AS first_key FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY "
             "window_start, window_end ORDER BY k) AS rn FROM ({stage}) w) WHERE rn = 1",
    "per_window": "SELECT window_start, window_end, count(*) AS keys, sum(n) AS total, max(s) AS top FROM ({stage}) w "
                  "GROUP BY window_start, window_end",
    "grouping_sets": "SELECT window_start, window_end, size, count(*) AS keys, sum(n) AS total FROM (SELECT *, "
                     "CASE WHEN n > 2 THEN 'many' ELSE 'few' END AS size FROM ({stage}) w) "
                     "GROUP BY window_start, window_end, GROUPING SETS ((size), ())",
    "dimension": "SELECT w.k, d.label, w.window_start, w.n FROM ({stage}) w LEFT JOIN around_dim d ON w.k = d.k",
    "union_all": "SELECT k, window_start, n, 'few' AS kind FROM ({stage}) a WHERE n < 3 "
                 "UNION ALL SELECT k, window_start, n, 'many' AS kind FROM ({stage}) b WHERE n >= 3",
    "max_join": "WITH w AS ({stage}) SELECT w.k, w.window_start, w.window_end, w.n FROM w JOIN (SELECT window_start "
                "AS ws, window_end AS we, max(n) AS top FROM w GROUP BY window_start, window_end) m "
                "ON w.window_start = m.ws AND w.window_end = m.we AND w.n = m.top",
    # GROUPING SETS on the windowed aggregation itself: merged from the finest grouping per window
    "stage_cube": "SELECT window_start, window_end, k, v % 2 AS parity, count(*) AS n, sum(v) AS s, avg(v) AS a, "
                  "max(v) AS mx, min(v) FILTER (WHERE v > 5) AS mn, grouping_id() AS gid FROM {function} "
                  "GROUP BY window_start, window_end, CUBE (k, v % 2)",
    # the same with the window columns inside every grouping set (the grouping GROUP BY window_start,
    # window_end, GROUPING SETS ((k), ()) gives)
    "stage_sets_inside": "SELECT window_start, window_end, k, count(*) AS n, sum(v) AS s FROM {function} "
                         "GROUP BY GROUPING SETS ((k, window_start, window_end), (window_start, window_end))",
    # a window function's rows (no GROUP BY): as they arrive, filtered; a Top-N and a deduplication
    # of each window's rows (Flink's window Top-N after a window TVF, window deduplication)
    "tvf_rows": "SELECT k, ts, v * 2 AS v2, window_start, window_end FROM {function} WHERE v > 3",
    "tvf_top_n": "SELECT * FROM (SELECT k, ts, v, window_start, window_end, ROW_NUMBER() OVER (PARTITION BY "
                 "window_start, window_end ORDER BY v DESC, ts, k) AS rownum FROM {function}) WHERE rownum <= 3",
    "tvf_dedup": "SELECT * FROM (SELECT k, ts, v, window_start, window_end, ROW_NUMBER() OVER (PARTITION BY "
                 "window_start, window_end, k ORDER BY ts DESC, v) AS rownum FROM {function}) WHERE rownum = 1",
    # aggregates the window runtime keeps no state for: the window's rows kept, Spark aggregates them
    "spark_aggregates": "SELECT k, window_start, window_end, percentile_approx(v, 0.5) AS med, "
                        "array_sort(collect_set(v)) AS vs, approx_count_distinct(v) AS d, count(*) AS n "
                        "FROM {function} GROUP BY k, window_start, window_end",
    # Nexmark q7 as Flink writes it, the bids read through the window function: each window's bids
    # joined with their maximum (the rows are the stage; the aggregation beside them is SQL around)
    "flink_q7": "SELECT B.k, B.v, B.ts, B.window_end FROM {function} B JOIN (SELECT max(v) AS maxv, window_start, "
                "window_end FROM {function} GROUP BY window_start, window_end) B1 ON B.v = B1.maxv "
                "AND B.window_start = B1.window_start AND B.window_end = B1.window_end",
    # a windowed join (the stream with itself, per key and window) followed by an aggregation per window
    "join_then_aggregate": "SELECT window_start, window_end, count(*) AS pairs, sum(av * bv) AS s FROM ("
                           "SELECT a.k, a.v AS av, b.v AS bv, a.window_start, a.window_end FROM {function} a "
                           "JOIN {function} b ON a.k = b.k AND a.window_start = b.window_start "
                           "AND a.window_end = b.window_end) j GROUP BY window_start, window_end",
    # Nexmark q5 exactly as Flink writes it: two copies of one windowed aggregation, selecting
    # different columns (one stage), joined on the windows with their maximum
    "flink_q5": "SELECT AuctionBids.k, AuctionBids.num FROM (SELECT k, count(*) AS num, window_start AS starttime, "
                "window_end AS endtime FROM {function} GROUP BY k, window_start, window_end) AS AuctionBids "
                "JOIN (SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime FROM ("
                "SELECT count(*) AS num, window_start AS starttime, window_end AS endtime FROM {function} "
                "GROUP BY k, window_start, window_end) AS CountBids GROUP BY CountBids.starttime, CountBids.endtime"
                ") AS MaxBids ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime "
                "AND AuctionBids.num >= MaxBids.maxn",
}


def query(shape: str, window: str, arrival: bool, having: bool = False, where: bool = False) -> str:
    return AROUND[shape].replace("{stage}", stage(window, arrival, having, where)) \
        .replace("{function}", window_function(window, arrival))


def cases(seed: int = 23, count: int | None = None):
    """Every shape once, each with a random window kind, HAVING and WHERE in the stage."""
    rng = random.Random(seed)
    shapes = list(AROUND)
    rng.shuffle(shapes)
    kinds = lambda shape: ["tumble", "hop", "cumulate"] + (  # noqa: E731
        [] if shape.startswith("tvf") or shape in ("flink_q7", "join_then_aggregate")
        else ["session"])
    return [(shape, rng.choice(kinds(shape)), rng.random() < 0.4, rng.random() < 0.3) for shape in shapes[:count]]


@pytest.fixture(scope="module")
def tables(spark):

    spark.createDataFrame([("a", "alpha"), ("b", "beta"), ("c", "gamma")], "k STRING, label STRING") \
        .createOrReplaceTempView("around_dim")
    schema = "k STRING, ts TIMESTAMP, v INT, off INT, batch INT"
    return {kind: spark.createDataFrame(events(7 if kind == "on_time" else 8, 160, kind == "late"), schema)
            for kind in ("on_time", "late")}


def hashable(row) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def rows(frame) -> Counter:
    return Counter(hashable(r) for r in frame.collect())


def fed_rows(fed) -> Counter:
    return Counter(hashable(r) for r in fed.rows)


@pytest.mark.parametrize("shape,window,having,where", cases())
def test_every_mode_gives_the_complete_answer(sw, spark, tables, ahead, request, shape, window, having, where):
    """Every row on time: complete input (Spark SQL over the whole statement) = replay = stream."""
    from sqlwin.testing import feed_stream

    streamed = ahead.stream(request, lambda p, workdir: feed_stream(
        sw, query(p["shape"], p["window"], False, p["having"], p["where"]), tables["on_time"], "ev", "batch", "off",
        workdir=workdir))
    tables["on_time"].createOrReplaceTempView("ev")
    complete = rows(sw.sql(query(shape, window, False, having, where)))
    assert complete, "the case must have results to compare"
    replay = rows(sw.sql(query(shape, window, True, having, where)))
    assert replay == complete, f"{shape}/{window}: replay differs from complete input"
    fed = streamed.result()
    assert fed_rows(fed) == complete, f"{shape}/{window}: the stream differs from complete input"
    if shape == "tvf_rows":  # a window function's rows come as they arrive: every batch gives some
        assert all(fed.per_batch[:-1]), [len(b) for b in fed.per_batch]


@pytest.mark.parametrize("shape,window", [("top_n", "tumble"), ("max_join", "hop"), ("per_window", "session"),
                                          ("tvf_rows", "hop"), ("tvf_top_n", "tumble")])
def test_late_rows_replay_equals_stream(sw, spark, tables, ahead, request, shape, window):
    """Rows arriving late: the replay and the stream agree on the results and on the late rows,
    which the stage routes (LATE ROWS INTO)."""
    from sqlwin.testing import feed_stream

    streamed = ahead.stream(request, lambda p, workdir: feed_stream(
        sw, query(p["shape"], p["window"], False) + " EMIT FINAL LATE ROWS INTO around_late", tables["late"], "ev",
        "batch", "off", workdir=workdir, late=True))
    tables["late"].createOrReplaceTempView("ev")
    text = query(shape, window, True) + " EMIT FINAL LATE ROWS INTO around_late"
    replay = rows(sw.sql(text))
    replay_late = Counter(tuple(r)[:3] for r in spark.table("around_late").collect())
    assert replay_late, "the case must have late rows"
    complete = rows(sw.sql(query(shape, window, False)))
    assert replay != complete, "late rows must change the answer, or the case tests nothing"
    fed = streamed.result()
    assert fed_rows(fed) == replay
    assert Counter(r[:3] for r in fed.late_rows) == replay_late


# -- the rows of windows formed from the rows together ---------------------------------------------

TOGETHER = {  # a window a row's neighbours decide: its rows come when it closes, whole
    "session": "SESSION(TABLE {t} PARTITION BY k, DESCRIPTOR(ts), INTERVAL 4 MINUTES)",
    "session_all_keys": "SESSION(TABLE {t}, DESCRIPTOR(ts), INTERVAL 90 SECONDS)",
    # a replay and a stream count a COUNT_WINDOW's rows in arrival order: ordered by it here too
    "count_window": "COUNT_WINDOW(TABLE {t} PARTITION BY k ORDER BY off, 3)",
    "slide": "SLIDE(TABLE {t} PARTITION BY k, DESCRIPTOR(ts), INTERVAL 3 MINUTES)",
}

TOGETHER_SHAPES = {
    "rows": "SELECT * FROM {function} WHERE v > 3",
    "top_n": "SELECT k, ts, v, window_start, window_end FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k, "
             "window_start, window_end ORDER BY v DESC, ts) AS rn FROM {function}) WHERE rn <= 2",
    "spark_aggregates": "SELECT k, window_start, window_end, percentile_approx(v, 0.5) AS med, "
                        "array_sort(collect_set(v)) AS vs, count(*) AS n FROM {function} "
                        "GROUP BY k, window_start, window_end",
}


def together(shape: str, window: str, arrival: bool) -> str:
    options = " WITH (arrival_order = off, arrival_batch = batch)" if arrival else ""
    function = TOGETHER[window].format(t=f"ev WATERMARK ts DELAY OF INTERVAL 2 MINUTES{options}")
    text = TOGETHER_SHAPES[shape].replace("{function}", function)
    if window == "session_all_keys":  # no PARTITION BY: one session stream over every key
        text = text.replace("PARTITION BY k, window_start", "PARTITION BY window_start").replace(
            "GROUP BY k, window_start", "GROUP BY window_start").replace("SELECT k, window_start", "SELECT window_start")
    return text


@pytest.mark.parametrize("shape,window", [("rows", "session"), ("rows", "count_window"), ("rows", "slide"),
                                          ("top_n", "session"), ("spark_aggregates", "session_all_keys")])
def test_rows_of_windows_formed_together_in_every_mode(sw, spark, tables, ahead, request, shape, window):
    """SESSION, COUNT_WINDOW and SLIDE rows (and any Spark aggregate over them): each window's rows
    when it closes, the same as over the finished table."""
    from sqlwin.testing import feed_stream

    streamed = ahead.stream(request, lambda p, workdir: feed_stream(
        sw, together(p["shape"], p["window"], False), tables["on_time"], "ev", "batch", "off", workdir=workdir))
    tables["on_time"].createOrReplaceTempView("ev")
    complete = rows(sw.sql(together(shape, window, False)))
    assert complete, "the case must have results to compare"
    if window.startswith("session"):  # sessions of several rows, or the case tests no merging
        merged = sw.sql(together("rows", window, False)).groupBy("window_start", "window_end").count()
        assert merged.where("count > 2").count() > 0
    assert rows(sw.sql(together(shape, window, True))) == complete, f"{shape}/{window}: replay"
    assert fed_rows(streamed.result()) == complete, f"{shape}/{window}: the stream differs from complete input"


def test_a_sessions_rows_with_late_rows_replay_equals_stream(sw, spark, tables, tmp_path):
    from sqlwin.testing import feed_stream

    tables["late"].createOrReplaceTempView("ev")
    text = together("rows", "session", True) + " LATE ROWS INTO together_late"
    replay = rows(sw.sql(text))
    replay_late = Counter(tuple(r)[:3] for r in spark.table("together_late").collect())
    assert replay_late, "the case must have late rows"
    assert replay != rows(sw.sql(together("rows", "session", False))), "late rows must change the answer"
    fed = feed_stream(sw, together("rows", "session", False) + " LATE ROWS INTO together_late",
                      tables["late"], "ev", "batch", "off", workdir=str(tmp_path), late=True)
    assert fed_rows(fed) == replay
    assert Counter(r[:3] for r in fed.late_rows) == replay_late


def test_a_sessions_rows_come_once_when_it_closes(sw, tables):
    tables["on_time"].createOrReplaceTempView("ev")
    with pytest.raises(SqlwinUnsupportedError) as err:
        sw.sql(together("rows", "session", True) + " EMIT CHANGES")
    assert "known when it closes" in err.value.message
    assert err.value.position is not None and err.value.position.text.startswith("EMIT")


# -- Flink's documentation: Window Top-N ---------------------------------------------------------

FLINK_BIDS = [  # docs/dev/table/sql/queries/window-topn.md, the Bid table
    ("2020-04-15 08:05", 4.00, "A", "supplier1"), ("2020-04-15 08:06", 4.00, "C", "supplier2"),
    ("2020-04-15 08:07", 2.00, "G", "supplier1"), ("2020-04-15 08:08", 2.00, "B", "supplier3"),
    ("2020-04-15 08:09", 5.00, "D", "supplier4"), ("2020-04-15 08:11", 2.00, "B", "supplier3"),
    ("2020-04-15 08:13", 1.00, "E", "supplier1"), ("2020-04-15 08:15", 3.00, "H", "supplier2"),
    ("2020-04-15 08:17", 6.00, "F", "supplier5"),
]

FLINK_TOP3 = [  # Flink's documented result: top 3 suppliers by price of each 10-minute window
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier1", 6.0, 2, 1),
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier4", 5.0, 1, 2),
    ("2020-04-15 08:00", "2020-04-15 08:10", "supplier2", 4.0, 1, 3),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier5", 6.0, 1, 1),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier2", 3.0, 1, 2),
    ("2020-04-15 08:10", "2020-04-15 08:20", "supplier3", 2.0, 1, 3),
]


def flink_top3(arrival: str) -> str:
    return f"""SELECT *
  FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) as rownum
    FROM (
      SELECT window_start, window_end, supplier_id, SUM(price) as price, COUNT(*) as cnt
      FROM TUMBLE(TABLE Bid{arrival}, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)
      GROUP BY window_start, window_end, supplier_id
    )
  ) WHERE rownum <= 3"""


def test_flink_window_top_n_in_every_mode(sw, spark, tmp_path):
    from sqlwin.testing import feed_stream

    parse = lambda s: dt.datetime.strptime(s, "%Y-%m-%d %H:%M")  # noqa: E731
    bids = spark.createDataFrame([(parse(t), p, i, s, n) for n, (t, p, i, s) in enumerate(FLINK_BIDS)],
                                 "bidtime TIMESTAMP, price DOUBLE, item STRING, supplier_id STRING, off INT")
    bids.createOrReplaceTempView("Bid")
    expected = sorted((parse(a), parse(b), s, p, c, r) for a, b, s, p, c, r in FLINK_TOP3)
    assert sorted(tuple(r) for r in sw.sql(flink_top3("")).collect()) == expected
    replayed = sw.sql(flink_top3(" WITH (arrival_order = off)"))
    assert sorted(tuple(r) for r in replayed.collect()) == expected
    fed = feed_stream(sw, flink_top3(""), bids, "Bid", None, "off", workdir=str(tmp_path))
    assert sorted(fed.rows) == expected
    assert [f.name for f in fed.schema.fields] == ["window_start", "window_end", "supplier_id", "price", "cnt",
                                                   "rownum"]


# -- what a stream cannot compute per micro-batch ------------------------------------------------

REFUSED = [
    ("SELECT k, sum(n) FROM ({stage}) w GROUP BY k", "not per window keeps state", "GROUP BY k"),
    ("SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY n) AS rn FROM ({stage}) w) WHERE rn = 1",
     "must be partitioned by their window", "ROW_NUMBER() OVER (PARTITION BY k ORDER BY n)"),
    ("SELECT DISTINCT k FROM ({stage}) w", "SELECT DISTINCT", "k"),
    ("SELECT * FROM ({stage}) w ORDER BY n", "ORDER BY / LIMIT", "ORDER BY n"),
    ("SELECT k FROM ({stage}) a UNION SELECT k FROM ({stage}) b", "UNION without ALL", None),
]


@pytest.mark.parametrize("text,message,caret", REFUSED)
def test_refused_with_the_reason(sw, tables, text, message, caret):
    tables["on_time"].createOrReplaceTempView("ev")
    statement = text.replace("{stage}", stage("tumble", True, False, False))
    with pytest.raises(SqlwinUnsupportedError) as err:
        sw.sql(statement)
    assert message in err.value.message
    if caret is not None:
        assert err.value.position is not None and err.value.position.text.startswith(caret.split()[0])
    sw.sql(text.replace("{stage}", stage("tumble", False, False, False))).collect()  # complete input runs it


def test_early_firings_and_a_clock_per_key_refused(sw, tables):
    tables["on_time"].createOrReplaceTempView("ev")
    early = query("project", "tumble", True) + " EMIT EARLY EVERY 2 ROWS"
    with pytest.raises(SqlwinUnsupportedError, match="final result"):
        sw.sql(early)
    per_key = query("top_n", "tumble", True).replace("TABLE ev WATERMARK", "TABLE ev PARTITION BY k WATERMARK")
    with pytest.raises(SqlwinUnsupportedError, match="clock per key") as err:
        sw.sql(per_key)
    assert err.value.position is not None
    # a projection over a clock per key is row by row: it runs
    sw.sql(query("project", "tumble", True).replace("TABLE ev WATERMARK", "TABLE ev PARTITION BY k WATERMARK")).collect()


# -- two (or more) different windowed stages in one statement ------------------------------------

BIDS = [  # (ts minute, v, off): each row its own micro-batch; the row at 00:02 arrives after the one at 00:12
    (1, 1, 0), (3, 2, 1), (6, 3, 2), (9, 4, 3), (12, 5, 4), (2, 6, 5), (16, 7, 6), (25, 8, 7)]


def spans(arrival: str) -> str:
    table = f"bids WATERMARK ts DELAY OF INTERVAL 1 MINUTE{arrival}"
    return (f"SELECT 'short' AS span, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE {table}, "
            "DESCRIPTOR(ts), INTERVAL 5 MINUTES) GROUP BY window_start, window_end\nUNION ALL\n"
            f"SELECT 'long', window_start, window_end, count(*) FROM TUMBLE(TABLE {table}, DESCRIPTOR(ts), "
            "INTERVAL 10 MINUTES) GROUP BY window_start, window_end")


def test_a_union_all_of_two_stages_by_hand(sw, spark, tmp_path):
    """The 5- and 10-minute counts of one table, a UNION ALL of two stages. Over the finished table
    every row counts. Replayed and streamed (a restart from the checkpoint after four batches), the
    row at 00:02 comes after the one at 00:12 (watermark 00:11): late for [00:00, 00:05) and for
    [00:00, 00:10), each stage judging it and listing it under its number."""
    from sqlwin.testing import feed_stream

    at = lambda m: T0 + dt.timedelta(minutes=m)  # noqa: E731
    bids = spark.createDataFrame([(at(m), v, off) for m, v, off in BIDS], "ts TIMESTAMP, v INT, off INT")
    bids.createOrReplaceTempView("bids")
    expected = {("short", 0, 5): 3, ("short", 5, 10): 2, ("short", 10, 15): 1, ("short", 15, 20): 1,
                ("short", 25, 30): 1, ("long", 0, 10): 5, ("long", 10, 20): 2, ("long", 20, 30): 1}
    as_rows = lambda d: sorted((s, at(a), at(b), n) for (s, a, b), n in d.items())  # noqa: E731
    assert sorted(tuple(r) for r in sw.sql(spans("")).collect()) == as_rows(expected)
    replayed = sw.sql(spans(" WITH (arrival_order = off)") + " LATE ROWS INTO bids_late")
    expected.update({("short", 0, 5): 2, ("long", 0, 10): 4})
    assert sorted(tuple(r) for r in replayed.collect()) == as_rows(expected)
    late = spark.table("bids_late")
    late_expected = [(at(2), 5, 1, at(0), at(5), "late"), (at(2), 5, 2, at(0), at(10), "late")]
    assert sorted((r.ts, r.off, r.stage, r.window_start, r.window_end, r.reason) for r in late.collect()) \
        == late_expected
    assert late.columns[:3] == ["ts", "v", "off"] and "stage" in late.columns
    fed = feed_stream(sw, spans("") + " LATE ROWS INTO bids_late", bids, "bids", None, "off",
                      workdir=str(tmp_path), late=True, restart_after=4)
    assert sorted(fed.rows) == as_rows(expected)
    names = [f.name for f in fed.late_schema.fields]
    assert sorted((r[0], r[2], r[names.index("stage")], r[4], r[5], r[6]) for r in fed.late_rows) == late_expected
    assert fed.status["stages"] == {1: {"late": 1, "rejected": 0}, 2: {"late": 1, "rejected": 0}}
    assert fed.status["rows"] == len(BIDS) and fed.status["late_rows"] == 2
    for text in (sw.explain(spans(" WITH (arrival_order = off)")), sw.explain(spans(""), stream=True)):
        assert "2 stateful stages" in str(text) and "-- stage 2" in str(text)


SYSTEM = ("op", "firing", "emit_seq")  # what a replay adds to a stage's results alone (not to the SQL around)

TWO_STAGES = {  # two different windowed stages, each in its subquery, CTE or UNION ALL branch
    "union": "SELECT 'one' AS which, k, window_start, window_end, n FROM ({s1}) a "
             "UNION ALL SELECT 'two', k, window_start, window_end, n FROM ({s2}) b WHERE n > 1",
    "branches": "{s1} UNION ALL {s2}",
    # a piece over both stages' rows of a window: the same table, WHERE, watermark and windows
    "join": "WITH a AS ({s1}), b AS ({s2}) SELECT a.k, a.window_start, a.window_end, a.n, b.s FROM a JOIN b "
            "ON a.k = b.k AND a.window_start = b.window_start AND a.window_end = b.window_end",
    "per_window": "SELECT window_start, window_end, sum(n) AS total, max(s) AS top FROM "
                  "(SELECT * FROM ({s1}) a UNION ALL SELECT * FROM ({s2}) b) GROUP BY window_start, window_end",
}

TWO_STAGE_CASES = [  # (shape, the first stage's window, the second's (with HAVING), restart after batch)
    ("union", "tumble", "hop", None), ("branches", "session", "cumulate", 2), ("join", "hop", "hop", 1),
    ("per_window", "tumble", "tumble", None)]


def two_stages(shape: str, first: str, second: str, arrival: bool) -> str:
    return TWO_STAGES[shape].replace("{s1}", stage(first, arrival, False, False)) \
        .replace("{s2}", stage(second, arrival, True, False))


@pytest.mark.parametrize("shape,first,second,restart", TWO_STAGE_CASES)
def test_two_stages_in_every_mode(sw, tables, ahead, request, shape, first, second, restart):
    """Every row on time: complete input = the replay of each stage and the SQL around them = one
    stream with a stateful branch per stage (restarted from its checkpoint in some)."""
    from sqlwin.testing import feed_stream

    streamed = ahead.stream(request, lambda p, workdir: feed_stream(
        sw, two_stages(p["shape"], p["first"], p["second"], False), tables["on_time"], "ev", "batch", "off",
        workdir=workdir, restart_after=p["restart"]))
    tables["on_time"].createOrReplaceTempView("ev")
    complete = rows(sw.sql(two_stages(shape, first, second, False)))
    assert complete, "the case must have results to compare"
    assert rows(sw.sql(two_stages(shape, first, second, True))) == complete
    fed = streamed.result()
    assert fed_rows(fed) == complete
    assert fed.status["rows"] == tables["on_time"].count()


@pytest.mark.parametrize("first,second", [("tumble", "hop"), ("session", "cumulate")])
def test_two_stages_late_rows_replay_equals_stream(sw, spark, tables, ahead, request, first, second):
    """Late rows: the statement's results are each stage's replayed alone, its late rows each stage's
    own late rows under its number, and a stream gives the same rows and late rows (per stage)."""
    from sqlwin.testing import feed_stream

    streamed = ahead.stream(request, lambda p, workdir: feed_stream(
        sw, two_stages("branches", p["first"], p["second"], False) + " LATE ROWS INTO two_late", tables["late"], "ev",
        "batch", "off", workdir=workdir, late=True))
    tables["late"].createOrReplaceTempView("ev")
    both = rows(sw.sql(two_stages("branches", first, second, True) + " LATE ROWS INTO two_late"))
    late = Counter((r.stage, r.k, r.ts, r.window_start, r.window_end) for r in spark.table("two_late").collect())
    alone, alone_late = Counter(), Counter()
    for number, one in ((1, stage(first, True, False, False)), (2, stage(second, True, True, False))):
        alone += rows(sw.sql(one + " LATE ROWS INTO one_late").drop(*SYSTEM))
        alone_late += Counter((number, r.k, r.ts, r.window_start, r.window_end)
                              for r in spark.table("one_late").collect())
    assert {s for s, *_ in late} == {1, 2}, "each stage must have late rows, or the case tests nothing"
    assert both == alone
    assert late == alone_late
    fed = streamed.result()
    assert fed_rows(fed) == both
    names = [f.name for f in fed.late_schema.fields]
    assert Counter((r[names.index("stage")], r[0], r[1], r[names.index("window_start")],
                    r[names.index("window_end")]) for r in fed.late_rows) == late
    assert fed.status["stages"] == {n: {"late": sum(c for (s, *_), c in late.items() if s == n), "rejected": 0}
                                    for n in (1, 2)}


ACROSS_REFUSED = [  # a piece over two stages' rows of a window, whose windows close in different micro-batches
    (("join", "tumble", "hop"), "their windows differ"),
    (("per_window", "tumble", "session"), "formed from their rows"),
]


@pytest.mark.parametrize("case,message", ACROSS_REFUSED)
def test_two_stages_combined_per_window_need_one_clock(sw, tables, case, message):
    tables["on_time"].createOrReplaceTempView("ev")
    for text in (two_stages(*case, True), two_stages(*case, False)):
        with pytest.raises(SqlwinUnsupportedError, match="combines the results of") as err:
            sw.explain(text, stream=True) if text == two_stages(*case, False) else sw.sql(text)
        assert message in err.value.message
        assert err.value.position is not None
    sw.sql(two_stages(*case, False)).collect()  # complete input runs it
    where = two_stages("join", "tumble", "tumble", True).replace(
        "GROUP BY k, window_start, window_end HAVING", "WHERE v > 2 GROUP BY k, window_start, window_end HAVING")
    with pytest.raises(SqlwinUnsupportedError, match="rows kept"):
        sw.sql(where)


def chain_beside(arrival: bool, chain_first: bool = True) -> tuple[str, str, str]:
    """A chain of two (10 minutes per key, then 20 minutes over every key) beside a HOP aggregation
    (a UNION ALL, the chain's branch first or second); the chain alone; the HOP alone."""
    table = f"ev WATERMARK ts DELAY OF INTERVAL 2 MINUTES{' WITH (arrival_order = off, arrival_batch = batch)' * arrival}"
    chain = (f"WITH per_k AS (SELECT k, window_start, window_end, window_time, count(*) AS n FROM TUMBLE(TABLE {table}, "
             "DESCRIPTOR(ts), INTERVAL 10 MINUTES) GROUP BY k, window_start, window_end, window_time), "
             "total AS (SELECT window_start, window_end, sum(n) AS n FROM TUMBLE(TABLE per_k, DESCRIPTOR(window_time), "
             "INTERVAL 20 MINUTES) GROUP BY window_start, window_end) ")
    hop = (f"SELECT window_start, window_end, count(*) AS n FROM HOP(TABLE {table}, DESCRIPTOR(ts), "
           "INTERVAL 5 MINUTES, INTERVAL 10 MINUTES) GROUP BY window_start, window_end")
    both = chain + "SELECT 'chain' AS which, window_start, window_end, n FROM total UNION ALL " + \
        hop.replace("SELECT window_start", "SELECT 'hop', window_start")
    if not chain_first:  # the HOP's CTE written first: stage 1 (stages are numbered as the text writes them)
        both = chain.replace("WITH per_k AS", f"WITH h AS ({hop}), per_k AS") + \
            "SELECT 'hop' AS which, window_start, window_end, n FROM h UNION ALL " \
            "SELECT 'chain', window_start, window_end, n FROM total"
    return both, chain + "SELECT * FROM total", hop


@pytest.mark.parametrize("chain_first", [True, False], ids=["chain, hop", "hop, chain"])
def test_a_chain_beside_a_stage_numbers_its_stages_first(sw, spark, tables, tmp_path, chain_first):
    """A chain of two beside a HOP aggregation: the first written takes the first numbers (chain first:
    stages 1 and 2, the HOP 3; HOP first: 1, the chain 2 and 3), and each one's late rows are those it
    gives alone. A stream (restarted after three micro-batches) runs the chain and the HOP as branches of
    one query and gives the replay's results, late rows and per-stage figures."""
    from sqlwin.testing import feed_stream

    tables["late"].createOrReplaceTempView("ev")
    both, chain, hop = chain_beside(True, chain_first)
    chain_at, hop_at = (1, 3) if chain_first else (2, 1)
    key = lambda r: (r.stage, r.window_start, r.window_end, r.reason)  # noqa: E731
    assert rows(sw.sql(chain_beside(False, chain_first)[0])) == Counter(
        ("chain", *r) for r in rows(sw.sql(chain_beside(False)[1]))) + Counter(
        ("hop", *r) for r in rows(sw.sql(chain_beside(False)[2])))
    result = rows(sw.sql(both + " LATE ROWS INTO beside_late"))
    late = Counter(key(r) for r in spark.table("beside_late").collect())
    chain_result = rows(sw.sql(chain + " LATE ROWS INTO beside_late").drop(*SYSTEM))
    chain_late = Counter((r.stage + chain_at - 1, *key(r)[1:]) for r in spark.table("beside_late").collect())
    hop_result = rows(sw.sql(hop + " LATE ROWS INTO beside_late").drop(*SYSTEM))
    hop_late = Counter((hop_at, r.window_start, r.window_end, r.reason) for r in spark.table("beside_late").collect())
    # (the chain's stage 2 has none: its watermark follows stage 1's firings)
    assert {s for s, *_ in late} == {chain_at, hop_at}, "the chain and the HOP must have late rows"
    assert late == chain_late + hop_late
    assert result == Counter(("chain", *r) for r in chain_result) + Counter(("hop", *r) for r in hop_result)
    text = chain_beside(False, chain_first)[0] + " LATE ROWS INTO beside_late"
    explained = str(sw.explain(text, stream=True))
    later = f"stage {chain_at + 1}: TUMBLE over stage {chain_at}'s results"  # numbered as the statement numbers them
    assert "stages: 2 stateful branches" in explained and later in explained, explained
    fed = feed_stream(sw, text, tables["late"], "ev", "batch", "off", workdir=str(tmp_path), late=True,
                      restart_after=3)
    assert fed_rows(fed) == result
    names = fed.late_schema.fieldNames()
    assert Counter((r[names.index("stage")], r[names.index("window_start")], r[names.index("window_end")],
                    r[names.index("reason")]) for r in fed.late_rows) == late
    assert fed.status["stages"] == {stage: {"late": sum(n for (s, *_, reason), n in late.items()
                                                        if s == stage and reason == "late"),
                                            "rejected": sum(n for (s, *_, reason), n in late.items()
                                                            if s == stage and reason != "late")}
                                    for stage in (1, 2, 3)}
    assert fed.status["rows"] == tables["late"].count()


def test_two_stages_reject_a_null_time_once_per_stage_in_every_mode(sw, spark):
    """A row with no time: each stage rejects it (`null_time`), over the finished table as in a replay."""
    at = lambda m: T0 + dt.timedelta(minutes=m)  # noqa: E731
    spark.createDataFrame([(at(1), 1, 0), (None, 2, 1), (at(7), 3, 2)], "ts TIMESTAMP, v INT, off INT") \
        .createOrReplaceTempView("bids")
    for arrival in ("", " WITH (arrival_order = off)"):
        sw.sql(spans(arrival) + " LATE ROWS INTO bids_rejected").collect()
        assert sorted((r.v, r.stage, r.reason) for r in spark.table("bids_rejected").collect()) == [
            (2, 1, "null_time"), (2, 2, "null_time")], arrival


def test_two_stages_over_two_tables_list_both_stages_rejected_rows_over_a_finished_table(sw, spark):
    """Stages over tables with different columns: each stage's rejected row, its own columns filled and
    the other table's NULL, with its stage -- before, only the first stage's were listed."""
    at = lambda m: T0 + dt.timedelta(minutes=m)  # noqa: E731
    spark.createDataFrame([(at(1), 1), (None, 2)], "ts TIMESTAMP, v INT").createOrReplaceTempView("bids")
    spark.createDataFrame([(at(2), "x"), (None, "y")], "at TIMESTAMP, name STRING").createOrReplaceTempView("asks")
    sw.sql("SELECT window_start, count(*) AS n FROM TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL 5 MINUTES) "
           "GROUP BY window_start, window_end\nUNION ALL\n"
           "SELECT window_start, count(*) FROM TUMBLE(TABLE asks, DESCRIPTOR(at), INTERVAL 5 MINUTES) "
           "GROUP BY window_start, window_end LATE ROWS INTO both_rejected").collect()
    rows = spark.table("both_rejected")
    assert rows.columns[:4] == ["ts", "v", "at", "name"], rows.columns
    assert sorted(((r.v, r.name, r.stage, r.reason) for r in rows.collect()), key=lambda r: r[2]) == [
        (2, None, 1, "null_time"), (None, "y", 2, "null_time")]


def test_two_stages_on_the_recorded_clock_in_a_stream_refused_before_the_checkpoint(sw, spark, tmp_path):
    """Two stages side by side that each read the recorded arrival times: Spark's one event-time watermark
    cannot be each one's clock. Refused at the second stage, before anything is written in the checkpoint."""
    from sqlwin.testing import feed_stream

    at = lambda m: T0 + dt.timedelta(minutes=m)  # noqa: E731
    bids = spark.createDataFrame([(at(m), v, off, at(off)) for m, v, off in BIDS],
                                 "ts TIMESTAMP, v INT, off INT, arrived TIMESTAMP")
    bids.createOrReplaceTempView("bids")
    text = spans(" WITH (arrival_order = off, arrival_time = arrived, watermark_strategy = 'ingestion_time')")
    with pytest.raises(SqlwinUnsupportedError, match="one may follow the recorded arrival times") as err:
        feed_stream(sw, text, bids, "bids", None, "off", workdir=str(tmp_path))
    assert err.value.position is not None and err.value.position.line == 3
    assert not (tmp_path / "checkpoint" / "sqlwin.json").exists()


def test_a_wall_clock_stage_beside_an_event_time_one_in_a_stream(sw, spark, tmp_path):
    """A stage in windows of the wall clock beside an event-time one: each stage's operator keeps its own
    timers. The event-time stage gives its replay's answer (test_a_union_all_of_two_stages_by_hand); the
    wall-clock one counts every row once, whichever windows the wall clock puts them in."""
    from sqlwin.testing import feed_stream

    at = lambda m: T0 + dt.timedelta(minutes=m)  # noqa: E731
    # two micro-batches of four rows: the row at 00:02 comes in the second, after 00:09 (watermark 00:08)
    bids = spark.createDataFrame([(at(m), v, off, off // 4) for m, v, off in BIDS],
                                 "ts TIMESTAMP, v INT, off INT, batch INT")
    bids.createOrReplaceTempView("bids")
    text = spans("").replace("TUMBLE(TABLE bids WATERMARK ts DELAY OF INTERVAL 1 MINUTE, DESCRIPTOR(ts), "
                             "INTERVAL 10 MINUTES)", "TUMBLE(TABLE bids, DESCRIPTOR(PROCTIME()), INTERVAL 1 HOUR)")
    assert "PROCTIME" in text
    fed = feed_stream(sw, text, bids, "bids", "batch", "off", workdir=str(tmp_path))
    span, start, end, n = (fed.schema.fieldNames().index(c) for c in ("span", "window_start", "window_end", "n"))
    short = sorted((r[start], r[end], r[n]) for r in fed.rows if r[span] == "short")
    # by hand: the 5-minute windows of BIDS, the row at 00:02 late ([00:00, 00:05) closed by 00:08)
    assert short == [(at(a), at(b), c) for a, b, c in ((0, 5, 2), (5, 10, 2), (10, 15, 1), (15, 20, 1), (25, 30, 1))]
    assert sum(r[n] for r in fed.rows if r[span] == "long") == len(BIDS)


@pytest.mark.parametrize("select,group", [
    ("percentile_approx(v, 0.5) AS med, count(*) AS n", "k, window_start, window_end"),
    ("v % 2 AS parity, count(*) AS n, sum(v) AS s", "k, window_start, window_end, ROLLUP (v % 2)"),
    ("v % 2 AS parity, count(*) AS n", "window_start, window_end, CUBE (k, v % 2)"),
])
def test_a_sessions_aggregation_over_its_rows_forms_the_sessions_complete_input_forms(sw, tables, select, group):
    """An aggregation run over a SESSION's rows (an aggregate Spark computes, GROUPING SETS no finest
    grouping gives) forms the sessions per GROUP BY key outside the sets, as complete input does: the
    replay gave 5 rows where complete input gives 20 (sessions of every key together)."""
    tables["on_time"].createOrReplaceTempView("ev")
    text = f"SELECT k, window_start, window_end, {select} FROM {{f}} GROUP BY {group}"
    complete = rows(sw.sql(text.replace("{f}", window_function("session", False))))
    replay = rows(sw.sql(text.replace("{f}", window_function("session", True))))
    assert len(complete) > 8 and replay == complete


def test_a_sessions_rows_per_every_key_with_a_clock_per_partition_key_are_refused(sw, tables):
    tables["on_time"].createOrReplaceTempView("ev")
    text = ("SELECT k, window_start, window_end, percentile_approx(v, 0.5) AS med FROM SESSION(TABLE ev PARTITION BY "
            "v % 3 WATERMARK ts DELAY OF INTERVAL 2 MINUTES WITH (arrival_order = off, arrival_batch = batch), "
            "DESCRIPTOR(ts), INTERVAL 4 MINUTES) GROUP BY v % 3, k, window_start, window_end")
    with pytest.raises(SqlwinUnsupportedError) as refused:
        sw.sql(text)
    assert "watermark_scope = 'stream'" in str(refused.value) and "line 1, column" in str(refused.value)

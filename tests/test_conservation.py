"""Nothing lost: every row of a stream is in a window, late, or rejected -- checked from the outputs alone.

Random recorded streams with bad rows among the good ones (NULL key, NULL time, years 1 and 9999,
rows behind the watermark, duplicated rows) run through each stream shape -- one windowed
aggregation in each EMIT mode, a windowed join of each kind, a chain of two aggregations -- as a
replay and as a stream restarted from its checkpoint in the middle. Each input row carries an id:
the ids the results hold (a window's `collect_list(id)`, a join's side ids, a chain's counts), the
late rows and the rejected rows (LATE ROWS INTO) must together be exactly the input's, each once
(a HOP row may sit in several windows, or be in some and late for others: there, at least once).
A stream's status() must count the same rows in, late and rejected.

Values that do not convert (a CSV line with `abc` in a number column, `yesterday` as a time) exist
only in files: `test_malformed_rows_of_every_shape_are_counted_and_kept` feeds CSV directories.

SQLWIN_CONSERVATION_SEEDS=n runs n seeds per shape (the CI run takes one, each shape its own) and
streams every shape; CI streams the shapes in STREAMED_IN_CI (each stream costs ~10 s) and replays all.
"""

from __future__ import annotations

import datetime as dt
import os
import random
from collections import Counter
from pathlib import Path

import pytest

from sqlwin.testing import feed_stream
from tests.support.random_streams import columns, random_stream

SEEDS = int(os.environ.get("SQLWIN_CONSERVATION_SEEDS", "1"))
ARRIVAL = "WITH (arrival_order = arrival, arrival_batch = batch)"


def _stream(rng: random.Random, n: int, keys=("a", "b", "c")) -> list[tuple]:
    """(id, k, ts, v, arrival, batch) rows: mostly in time, some behind (late), some bad, some twice
    (tests/support/random_streams.py's default stream)."""
    return columns(random_stream(rng, n, keys=keys), "id", "k", "ts", "v", "arrival", "batch")


SCHEMA = "id INT, k STRING, ts TIMESTAMP, v INT, arrival INT, batch INT"


def _table(spark, name: str, rows: list[tuple]):
    frame = spark.createDataFrame(rows, SCHEMA)
    frame.createOrReplaceTempView(name)
    return frame


def _outputs(sw, spark, query: str, table, source, mode: str, tmp_path, late_name: str):
    """(result rows as dicts, late / rejected rows as dicts, the stream's status or None)."""
    if mode == "replay":
        result = sw.sql(query)
        late = spark.table(late_name)
        return ([r.asDict(recursive=True) for r in result.collect()],
                [r.asDict(recursive=True) for r in late.collect()], None)
    fed = feed_stream(sw, query, table, source, "batch", "arrival", workdir=str(tmp_path / mode), late=True,
                      restart_after=2)
    names = fed.schema.fieldNames()
    late_names = fed.late_schema.fieldNames() if fed.late_schema is not None else []
    status = fed.status
    return ([_as_dict(dict(zip(names, r))) for r in fed.rows],
            [_as_dict(dict(zip(late_names, r))) for r in fed.late_rows], status)


def _both(sw, spark, streamed, query: str, source: str, mode: str, late_name: str):
    """_outputs of a test that replays (here, over the table it registered) and streams (ahead: the
    future `streamed`)."""
    if mode == "stream":
        return streamed.result()
    return _outputs(sw, spark, query, None, source, mode, None, late_name)


@pytest.fixture(scope="module")
def feeds(spark) -> dict:
    """Every stream of this module by its test's name, run ahead (tests/support/ahead.py), each in a
    SparkSession of its own (the tests meanwhile register tables of the same names in the run's)."""
    def feed(query: str, tables: dict[str, list[tuple]], late_name: str):
        def run(workdir: str):
            import sqlwin

            own = spark.newSession()
            frames = {name: own.createDataFrame(rows, SCHEMA) for name, rows in tables.items()}
            source = None if len(frames) > 1 else next(iter(frames))
            return _outputs(sqlwin.attach(own), own, query, frames if source is None else frames[source], source,
                            "stream", Path(workdir), late_name)
        return run

    feeds = {}
    for shape, mode, seed in CASES:
        if mode == "stream":
            rows, query = _one_aggregation(shape, seed)
            feeds[f"test_one_aggregation_accounts_for_every_row[{shape}-{mode}-{seed}]"] = \
                feed(query, {"cons_ev": rows}, "cons_late")
    for kind in JOINS:
        if "stream" in _modes(kind):
            left, right, query = _join(kind)
            feeds[f"test_a_join_accounts_for_every_row_of_each_side[{kind}-stream]"] = \
                feed(query, {"cons_l": left, "cons_r": right}, "cons_join_late")
    feeds["test_a_vectorised_stream_counts_every_row"] = \
        feed(VECTORISED, {"cons_vec": _stream(random.Random(5), 90)}, "cons_vec_late")
    feeds["test_a_chain_accounts_for_every_row_at_each_stage"] = \
        feed(CHAIN, {"cons_chain": _stream(random.Random(11), 80)}, "cons_chain_late")
    feeds["test_a_chain_of_three_accounts_for_every_row_at_each_stage"] = \
        feed(CHAIN_OF_THREE.format(arrival=ARRIVAL), {"cons_chain3": _stream(random.Random(12), 90)},
             "cons_chain3_late")
    feeds["test_two_stages_side_by_side_each_account_for_every_row"] = \
        feed(SIDE_BY_SIDE, {"cons_two": _stream(random.Random(23), 80)}, "cons_two_late")
    return feeds


def _as_dict(row: dict) -> dict:
    return {k: (v.asDict(recursive=True) if hasattr(v, "asDict") else v) for k, v in row.items()}


def _final_ids(results: list[dict], discarding: bool) -> Counter:
    """The ids each window finally holds: every firing's (DISCARDING), else the last firing's that is
    not a retraction (ACCUMULATING, RETRACTING, FINAL)."""
    if discarding:
        return Counter(i for r in results for i in r["ids"])
    last: dict = {}
    for r in sorted(results, key=lambda r: r["emit_seq"]):
        window = (r.get("k"), r["window_start"], r["window_end"])
        if r["op"] in ("-U", "-D"):
            last.pop(window, None) if r["op"] == "-D" else None
            continue
        last[window] = r["ids"]
    return Counter(i for ids in last.values() for i in ids)


def _check_accounted(rows: list[tuple], windowed: Counter, late: list[dict], exact: bool,
                     id_of=lambda r: r["id"]) -> None:
    ids = Counter(r[0] for r in rows)
    late_ids = Counter(id_of(r) for r in late if r["reason"] == "late")
    rejected = Counter(id_of(r) for r in late if r["reason"] != "late")
    assert rejected.keys().isdisjoint(windowed.keys()) and rejected.keys().isdisjoint(late_ids.keys())
    assert all(count == 1 for count in rejected.values())
    if exact:  # each row once: in one window, late, or rejected
        assert windowed + late_ids + rejected == ids
    else:  # a HOP row: in its windows and / or late for the others
        assert set(windowed) | set(late_ids) | set(rejected) == set(ids)
    expected_rejected = {r[0] for r in rows if r[1] is None or r[2] is None}
    assert set(rejected) == expected_rejected


SINGLE = {
    # name: (window function, PARTITION BY, EMIT, exact: each row in at most one window)
    "tumble_final": ("TUMBLE", "PARTITION BY k ", "EMIT FINAL", True),
    "tumble_stream_clock_accumulating": ("TUMBLE", "", "EMIT EARLY EVERY 2 ROWS ACCUMULATING", True),
    "tumble_discarding": ("TUMBLE", "PARTITION BY k ", "EMIT EARLY EVERY 3 ROWS DISCARDING", True),
    "tumble_retracting": ("TUMBLE", "PARTITION BY k ", "EMIT EARLY EVERY 2 ROWS RETRACTING", True),
    "tumble_changes": ("TUMBLE", "", "EMIT CHANGES", True),
    "session_final": ("SESSION", "PARTITION BY k ", "EMIT FINAL", True),
    "hop_final": ("HOP", "PARTITION BY k ", "EMIT FINAL", False),
}


def _single_query(shape: str, table: str, late: str) -> str:
    function, partition, emit, _ = SINGLE[shape]
    size = {"TUMBLE": "INTERVAL 5 MINUTES", "HOP": "INTERVAL 2 MINUTES, INTERVAL 5 MINUTES",
            "SESSION": "INTERVAL 3 MINUTES"}[function]
    return (f"SELECT k, window_start, window_end, count(*) AS n, collect_list(id) AS ids "
            f"FROM {function}(TABLE {table} {partition}WATERMARK ts DELAY OF INTERVAL 1 MINUTE {ARRIVAL}, "
            f"DESCRIPTOR(ts), {size}) GROUP BY k, window_start, window_end {emit} LATE ROWS INTO {late}")


# A stream each of: the general runtime's changelog, a merging window, a window per several rows.
STREAMED_IN_CI = {"tumble_retracting", "session_final", "FULL", "INNER"}  # HOP streams in test_stream_clock_spread


def _modes(shape: str) -> tuple[str, ...]:
    return ("replay", "stream") if SEEDS > 1 or shape in STREAMED_IN_CI else ("replay",)


CASES = [(shape, mode, 100 + i * 17 + seed) for i, shape in enumerate(SINGLE) for mode in _modes(shape)
         for seed in range(SEEDS)]


def _one_aggregation(shape: str, seed: int) -> tuple[list[tuple], str]:
    return _stream(random.Random(seed), 70), _single_query(shape, "cons_ev", "cons_late")


@pytest.mark.parametrize("shape, mode, seed", CASES)
def test_one_aggregation_accounts_for_every_row(sw, spark, ahead, request, feeds, shape, mode, seed):
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    rows, query = _one_aggregation(shape, seed)
    if mode == "stream":
        results, late, status = streamed.result()
    else:
        _table(spark, "cons_ev", rows)
        results, late, status = _outputs(sw, spark, query, None, "cons_ev", mode, None, "cons_late")
    assert results  # the stream windowed something
    discarding = "DISCARDING" in SINGLE[shape][2]
    _check_accounted(rows, _final_ids(results, discarding), late, exact=SINGLE[shape][3])
    if status is not None:
        assert status["rows"] == len(rows)
        assert status["rejected_rows"] == sum(1 for r in late if r["reason"] != "late")
        assert status["late_rows"] == sum(1 for r in late if r["reason"] == "late")


VECTORISED = ("SELECT k, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE cons_vec PARTITION BY k "
              f"WATERMARK ts DELAY OF INTERVAL 1 MINUTE {ARRIVAL}, DESCRIPTOR(ts), INTERVAL 5 MINUTES) "
              "GROUP BY k, window_start, window_end LATE ROWS INTO cons_vec_late")


def test_a_vectorised_stream_counts_every_row(sw, spark, ahead, request, feeds):
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    # count(*) only: the vectorised runtime (segments). Sum of the windows' counts + late + rejected = rows.
    rows, query = _stream(random.Random(5), 90), VECTORISED
    _table(spark, "cons_vec", rows)
    for mode in ("replay", "stream"):
        results, late, status = _both(sw, spark, streamed, query, "cons_vec", mode, "cons_vec_late")
        assert sum(r["n"] for r in results) + len(late) == len(rows), mode
        assert Counter(r["id"] for r in late) == Counter(r[0] for r in rows if r[0] in {x["id"] for x in late})
        if status is not None:
            assert (status["rows"], status["late_rows"] + status["rejected_rows"]) == (len(rows), len(late))


JOINS = ["FULL", "LEFT", "RIGHT", "INNER"]


def _join(kind: str) -> tuple[list[tuple], list[tuple], str]:
    rng = random.Random(hash(kind) % 1000)
    left, right = _stream(rng, 50, keys=("a", "b")), _stream(rng, 40, keys=("a", "b"))
    right = [(r[0] + 1000, *r[1:]) for r in right]  # ids apart from the left side's
    tvf = ("TUMBLE(TABLE {t} PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE " + ARRIVAL
           + ", DESCRIPTOR(ts), INTERVAL 5 MINUTES)")
    query = (f"SELECT l.id AS lid, r.id AS rid, coalesce(l.window_start, r.window_start) AS ws "
             f"FROM {tvf.format(t='cons_l')} l {kind} JOIN {tvf.format(t='cons_r')} r "
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end "
             "LATE ROWS INTO cons_join_late")
    return left, right, query


@pytest.mark.parametrize("kind, mode", [(kind, mode) for kind in JOINS for mode in _modes(kind)])
def test_a_join_accounts_for_every_row_of_each_side(sw, spark, ahead, request, feeds, kind, mode):
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    left, right, query = _join(kind)
    if mode == "replay":
        _table(spark, "cons_l", left), _table(spark, "cons_r", right)
        results, late, status = _outputs(sw, spark, query, None, None, mode, None, "cons_join_late")
    else:
        results, late, status = streamed.result()
    for side, rows, column in (("cons_l", left, "lid"), ("cons_r", right, "rid")):
        mine = [r for r in late if r["side"] == side.removeprefix("cons_")[0]]
        assert all(r[o] is None for r in mine for o in ("l", "r") if o != side[-1])  # the row on its side only
        joined = Counter({i: 1 for i in {r[column] for r in results if r[column] is not None}})
        preserved = kind == "FULL" or (kind == "LEFT" and column == "lid") or (kind == "RIGHT" and column == "rid")
        if preserved:  # every on-time row of a preserved side is in the result (matched or padded)
            _check_accounted(rows, joined, mine, exact=True, id_of=lambda r, s=side[-1]: r[s]["id"])
        else:  # a row of the other side may find no partner: in the result only if it did
            placed = Counter(r[side[-1]]["id"] for r in mine)
            assert set(joined).isdisjoint(placed) and (set(joined) | set(placed)) <= {r[0] for r in rows}
            assert all(count == 1 for count in placed.values())
            assert {r[side[-1]]["id"] for r in mine if r["reason"] != "late"} == \
                {r[0] for r in rows if r[1] is None or r[2] is None}
    if status is not None:
        assert status["rows"] == len(left) + len(right)
        assert status["late_rows"] + status["rejected_rows"] == len(late)


CHAIN = ("WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n "
         f"FROM TUMBLE(TABLE cons_chain PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE {ARRIVAL}, "
         "DESCRIPTOR(ts), INTERVAL 5 MINUTES) GROUP BY k, window_start, window_end, window_time) "
         "SELECT window_start, window_end, sum(n) AS total FROM TUMBLE(TABLE per_key, DESCRIPTOR(window_time), "
         "INTERVAL 10 MINUTES) GROUP BY window_start, window_end LATE ROWS INTO cons_chain_late")


def test_a_chain_accounts_for_every_row_at_each_stage(sw, spark, ahead, request, feeds):
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    rows, query = _stream(random.Random(11), 80), CHAIN
    _table(spark, "cons_chain", rows)
    for mode in ("replay", "stream"):
        results, late, status = _both(sw, spark, streamed, query, "cons_chain", mode, "cons_chain_late")
        first = [r for r in late if r["stage"] == 1]
        second = [r for r in late if r["stage"] == 2]
        assert all(r["upstream_row"] is None for r in first) and all(r["upstream_row"] for r in second)
        windowed = sum(r["total"] for r in results) + sum(r["upstream_row"]["n"] for r in second)
        assert windowed + len(first) == len(rows), mode
        assert Counter(r["id"] for r in first) <= Counter(r[0] for r in rows)
        assert {r["id"] for r in first if r["reason"] != "late"} == {r[0] for r in rows if r[1] is None or r[2] is None}
        if status is not None:
            assert status["rows"] == len(rows)
            assert status["stages"][1] == {"late": sum(1 for r in first if r["reason"] == "late"),
                                           "rejected": sum(1 for r in first if r["reason"] != "late")}


CHAIN_OF_THREE = (
    "WITH per_key AS (SELECT k, window_start, window_end, window_time, count(*) AS n "
    "FROM TUMBLE(TABLE cons_chain3 PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE {arrival}, "
    "DESCRIPTOR(ts), INTERVAL 5 MINUTES) GROUP BY k, window_start, window_end, window_time), "
    "per_key_10 AS (SELECT k, window_start, window_end, window_time, sum(n) AS n FROM TUMBLE(TABLE per_key "
    "PARTITION BY k, DESCRIPTOR(window_time), INTERVAL 10 MINUTES) GROUP BY k, window_start, window_end, window_time) "
    "SELECT window_start, window_end, sum(n) AS total, count(*) AS keys FROM HOP(TABLE per_key_10, "
    "DESCRIPTOR(window_time), INTERVAL 20 MINUTES, INTERVAL 40 MINUTES) GROUP BY window_start, window_end "
    "LATE ROWS INTO cons_chain3_late")


def test_a_chain_of_three_accounts_for_every_row_at_each_stage(sw, spark, ahead, request, feeds):
    """Three chained aggregations (5 min per key, 10 min per key, a 40 min HOP over all keys): every
    row in a window or late at its stage, each late row with its stage and the row it came as; with
    no row late, the answer is complete input's."""
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    rows = _stream(random.Random(12), 90)
    _table(spark, "cons_chain3", rows)
    for mode in ("replay", "stream"):
        results, late, status = _both(sw, spark, streamed, CHAIN_OF_THREE.format(arrival=ARRIVAL),
                                      "cons_chain3", mode, "cons_chain3_late")
        by_stage = {s: [r for r in late if r["stage"] == s] for s in (1, 2, 3)}
        assert len(late) == sum(map(len, by_stage.values())), "a stage number outside 1-3"
        assert by_stage[1], "the stream has late and bad rows"
        assert all(r["upstream_row"]["n"] for r in by_stage[2])
        assert all(r["upstream_row_2"]["n"] for r in by_stage[3])
        # a HOP counts each second-stage row in two windows: the windows' totals hold each input row twice
        windowed = (sum(r["total"] for r in results) / 2 + sum(r["upstream_row_2"]["n"] for r in by_stage[3])
                    + sum(r["upstream_row"]["n"] for r in by_stage[2]))
        assert windowed + len(by_stage[1]) == len(rows), mode
        assert {r["id"] for r in by_stage[1] if r["reason"] != "late"} == \
            {r[0] for r in rows if r[1] is None or r[2] is None}
        if status is not None:
            assert status["rows"] == len(rows)
            assert status["stages"] == {s: {"late": sum(1 for r in by_stage[s] if r["reason"] == "late"),
                                            "rejected": sum(1 for r in by_stage[s] if r["reason"] != "late")}
                                        for s in (1, 2, 3)}


def test_a_chain_of_three_gives_complete_inputs_answer(sw, spark):
    rows = [(i, k, dt.datetime(2024, 1, 1) + dt.timedelta(seconds=37 * i), i % 7, i, i // 20)
            for i, k in zip(range(200), "abcab" * 40)]
    _table(spark, "cons_chain3", rows)
    text = CHAIN_OF_THREE.replace(" LATE ROWS INTO cons_chain3_late", "")
    complete = sorted(tuple(r) for r in sw.sql(text.format(arrival="")).collect())
    # by hand: 200 rows 37 s apart span 00:00 - 02:02:43; the 10 min windows' window_times (00:09:59.999999
    # ... 02:09:59.999999) each fall in two 40 min HOPs: 8 windows starting 23:40 ... 02:00, every row twice
    assert len(complete) == 8 and sum(r[2] for r in complete) == 2 * 200, complete
    replayed = sorted(tuple(r)[:4] for r in sw.sql(text.format(arrival=ARRIVAL)).collect())
    assert replayed == complete


_SIDE = "{f}(TABLE cons_two PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 MINUTE " + ARRIVAL + ", DESCRIPTOR(ts), {size})"
SIDE_BY_SIDE = (f"SELECT 'tumble' AS which, k, window_start, window_end, collect_list(id) AS ids FROM "
                f"{_SIDE.format(f='TUMBLE', size='INTERVAL 5 MINUTES')} GROUP BY k, window_start, window_end "
                f"UNION ALL SELECT 'session', k, window_start, window_end, collect_list(id) FROM "
                f"{_SIDE.format(f='SESSION', size='INTERVAL 3 MINUTES')} GROUP BY k, window_start, window_end "
                "LATE ROWS INTO cons_two_late")


def test_two_stages_side_by_side_each_account_for_every_row(sw, spark, ahead, request, feeds):
    """A UNION ALL of a TUMBLE and a SESSION aggregation over one table (a clock per key): each stage
    on its own holds every row once -- in a window, late, or rejected (NULL key or time) -- under its
    `stage`; a stream counts the source's rows once and each stage's late and rejected rows apart."""
    streamed = ahead.named(request, feeds)  # the first test starts every stream of the module
    rows, query = _stream(random.Random(23), 80), SIDE_BY_SIDE
    _table(spark, "cons_two", rows)
    for mode in ("replay", "stream"):
        results, late, status = _both(sw, spark, streamed, query, "cons_two", mode, "cons_two_late")
        for number, which in ((1, "tumble"), (2, "session")):
            windowed = Counter(i for r in results if r["which"] == which for i in r["ids"])
            mine = [r for r in late if r["stage"] == number]
            _check_accounted(rows, windowed, mine, exact=True)
            if status is not None:
                assert status["stages"][number] == {"late": sum(1 for r in mine if r["reason"] == "late"),
                                                    "rejected": sum(1 for r in mine if r["reason"] != "late")}
        assert {r["stage"] for r in late} == {1, 2}, mode
        if status is not None:
            assert status["rows"] == len(rows)

"""COUNT_WINDOW in a live stream counts rows in the order they arrive.

A finished table needs an ORDER BY (or arrival_order) for a count window; a stream does not:
its rows come in an order. ORDER BY in a stream orders the rows of one micro-batch. Counts
carry across micro-batches (issue 3).
"""

from __future__ import annotations

import pytest

from sqlwin.errors import SqlwinValidationError
from sqlwin.testing import feed_stream

SOURCE = "count_clicks"
# (k, ts in epoch ms, v, micro-batch); inside a batch the rows arrive as listed.
ROWS = [
    ("a", 1000, 1, 0), ("b", 1500, 2, 0), ("a", 2000, 3, 0),
    ("a", 2500, 4, 1), ("a", 3000, 5, 1), ("b", 3500, 6, 1),
    ("b", 4000, 7, 2), ("a", 4500, 8, 2),
]


@pytest.fixture(scope="module")
def clicks(spark):
    spark.createDataFrame(ROWS, "k STRING, ts BIGINT, v INT, batch INT").createOrReplaceTempView(SOURCE)
    return spark.table(SOURCE)


def _query(order: str = "") -> str:
    return f"""
    SELECT k, window_start, window_end, collect_list(v) AS vs
    FROM COUNT_WINDOW(TABLE {SOURCE} PARTITION BY k {order}, DESCRIPTOR(ts), 3)
    GROUP BY k, window_start, window_end
    """


def _windows(fed):
    # per_batch rows are tuples in the result's column order: k, window_start, window_end, vs, op, ...
    return sorted((k, start, end, list(vs), b) for b, rows in enumerate(fed.per_batch)
                  for k, start, end, vs, *_ in rows)


def test_a_stream_counts_rows_as_they_arrive(sw, clicks, tmp_path):
    fed = feed_stream(sw, _query(), clicks, SOURCE, "batch", workdir=str(tmp_path), end_input=False)
    # a has rows 1, 3 in batch 0 and 4 in batch 1: its first window is full after batch 1 (the
    # count carries over); b's (2 | 6 | 7) after batch 2.
    assert _windows(fed) == [
        ("a", 1000, 2500, [1, 3, 4], 1),
        ("b", 1500, 4000, [2, 6, 7], 2),
    ]


def test_order_by_orders_the_rows_of_a_micro_batch(sw, spark, tmp_path):
    # One micro-batch whose file holds the rows newest first: ORDER BY ts counts them oldest first.
    newest_first = spark.createDataFrame([(k, ts, v, 0) for k, ts, v, _ in reversed(ROWS)],
                                         "k STRING, ts BIGINT, v INT, batch INT")
    fed = feed_stream(sw, _query("ORDER BY ts"), newest_first, SOURCE, "batch",
                      workdir=str(tmp_path), end_input=False)
    assert _windows(fed) == [("a", 1000, 2500, [1, 3, 4], 0), ("b", 1500, 4000, [2, 6, 7], 0)]


def test_replay_counts_in_arrival_order_only(sw, clicks):
    query = _query("ORDER BY v").replace(f"TABLE {SOURCE}", f"TABLE {SOURCE} WITH (arrival_order = ts)")
    with pytest.raises(SqlwinValidationError, match="counts rows in arrival order"):
        sw.sql(query)


def test_a_finished_table_still_needs_an_order(sw, clicks):
    with pytest.raises(SqlwinValidationError, match="needs an order"):
        sw.sql(_query())

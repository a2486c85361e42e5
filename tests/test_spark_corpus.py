"""Issue 10, part 4: a corpus of Spark's own SQL, and of windowed queries in the Flink documentation's style.

1. Ordinary Spark SQL (grouping analytics, window functions OVER, LATERAL VIEW, PIVOT, CTEs, set
   operations, hints, higher-order functions, ...): `sw.sql(q)` returns exactly what `spark.sql(q)`
   returns, schema and rows.
2. Windowed queries as the Flink documentation writes them (window TVFs with GROUPING SETS / ROLLUP /
   CUBE, window Top-N, window deduplication, cascaded windows, window joins) over the documentation's
   own Bid table, each checked against native Spark written by hand (`window()`, `explode`).
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def corpus(spark):
    spark.sql("""SELECT * FROM VALUES
        ('eng', 'ann', 120, DATE'2020-01-15', array('a', 'b'), map('x', 1), TIMESTAMP'2024-01-01 09:05:00'),
        ('eng', 'bob', 100, DATE'2021-03-01', array('b'), map('y', 2), TIMESTAMP'2024-01-01 09:40:00'),
        ('eng', 'cid', 100, DATE'2019-07-30', array(), map(), TIMESTAMP'2024-01-01 11:10:00'),
        ('ops', 'dan', 90, DATE'2022-02-02', array('c', 'a', 'c'), map('x', 3, 'z', 4), TIMESTAMP'2024-01-01 09:59:59'),
        ('ops', 'eve', NULL, DATE'2018-12-31', NULL, NULL, TIMESTAMP'2024-01-01 10:00:00'),
        ('hr', 'fay', 70, NULL, array('d'), map('x', 5), NULL),
        ('hr', 'gus', 75, DATE'2023-05-05', array('a'), map('y', 6), TIMESTAMP'2024-01-01 13:30:00')
        AS corpus_emp(dept, name, salary, hired, tags, props, ts)""").createOrReplaceTempView("corpus_emp")
    spark.sql("""SELECT * FROM VALUES
        (2023, 'q1', 'north', 10.5), (2023, 'q2', 'north', 11.0), (2023, 'q1', 'south', 7.25),
        (2024, 'q1', 'north', 12.0), (2024, 'q2', 'south', 8.0), (2024, 'q3', 'south', NULL), (2024, 'q3', 'east', 3.0)
        AS corpus_sales(year, quarter, region, amount)""").createOrReplaceTempView("corpus_sales")
    spark.sql("SELECT * FROM VALUES ('eng', 'Engineering'), ('ops', 'Operations'), ('fin', 'Finance') "
              "AS corpus_dept(dept, title)").createOrReplaceTempView("corpus_dept")


SPARK_QUERIES = [
    # grouping analytics
    "SELECT dept, count(*) AS n, sum(salary) AS s FROM corpus_emp GROUP BY GROUPING SETS ((dept), ())",
    "SELECT year, region, sum(amount), grouping_id() AS g FROM corpus_sales GROUP BY ROLLUP (year, region)",
    "SELECT year, quarter, sum(amount), grouping(year) AS gy FROM corpus_sales GROUP BY CUBE (year, quarter)",
    "SELECT year, region, sum(amount) FROM corpus_sales GROUP BY year, region WITH ROLLUP",
    "SELECT dept, max(salary) FROM corpus_emp GROUP BY dept HAVING max(salary) > 80 ORDER BY dept",
    "SELECT dept, count(*) FILTER (WHERE salary > 90) AS rich, sum(DISTINCT salary) AS ds FROM corpus_emp GROUP BY dept",
    "SELECT dept, avg(salary) FROM corpus_emp GROUP BY ALL",
    # window functions
    "SELECT name, dept, rank() OVER (PARTITION BY dept ORDER BY salary DESC NULLS LAST) AS r FROM corpus_emp",
    "SELECT name, dense_rank() OVER (ORDER BY salary) AS d, percent_rank() OVER (ORDER BY salary) AS p FROM corpus_emp",
    "SELECT name, lag(salary, 1, 0) OVER (PARTITION BY dept ORDER BY name) AS prev, "
    "lead(name) OVER (PARTITION BY dept ORDER BY name) AS nxt FROM corpus_emp",
    "SELECT name, sum(salary) OVER (PARTITION BY dept ORDER BY name ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) AS s "
    "FROM corpus_emp",
    "SELECT name, count(*) OVER w AS c, max(salary) OVER w AS m FROM corpus_emp WINDOW w AS (PARTITION BY dept)",
    "SELECT name, ntile(2) OVER (ORDER BY name) AS t, row_number() OVER (ORDER BY name) AS rn FROM corpus_emp",
    "SELECT name, salary, first_value(name) OVER (PARTITION BY dept ORDER BY salary "
    "RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS f FROM corpus_emp",
    # lateral views, generators
    "SELECT name, tag FROM corpus_emp LATERAL VIEW explode(tags) t AS tag",
    "SELECT name, pos, tag FROM corpus_emp LATERAL VIEW OUTER posexplode(tags) t AS pos, tag",
    "SELECT name, k, v FROM corpus_emp LATERAL VIEW explode(props) p AS k, v",
    "SELECT inline(array(named_struct('a', 1, 'b', 'x'), named_struct('a', 2, 'b', 'y')))",
    # PIVOT / UNPIVOT
    "SELECT * FROM (SELECT year, quarter, amount FROM corpus_sales) PIVOT (sum(amount) FOR quarter IN ('q1', 'q2', 'q3'))",
    "SELECT * FROM (SELECT region, year, amount FROM corpus_sales) "
    "PIVOT (sum(amount) AS s, count(amount) AS c FOR year IN (2023 AS y23, 2024 AS y24))",
    "SELECT * FROM (SELECT 1 AS id, 10 AS a, 20 AS b) UNPIVOT (val FOR col IN (a, b))",
    # CTEs and subqueries
    "WITH d AS (SELECT dept, avg(salary) AS a FROM corpus_emp GROUP BY dept), "
    "e AS (SELECT * FROM corpus_emp WHERE salary IS NOT NULL) SELECT e.name, d.a FROM e JOIN d USING (dept)",
    "WITH x AS (SELECT 1 AS n), y AS (SELECT n + 1 AS n FROM x) SELECT * FROM x UNION ALL SELECT * FROM y",
    "SELECT name FROM corpus_emp e WHERE salary > (SELECT avg(salary) FROM corpus_emp WHERE dept = e.dept)",
    "SELECT dept FROM corpus_dept d WHERE EXISTS (SELECT 1 FROM corpus_emp e WHERE e.dept = d.dept)",
    "SELECT name FROM corpus_emp WHERE dept IN (SELECT dept FROM corpus_dept WHERE title LIKE 'E%')",
    # joins
    "SELECT * FROM corpus_emp LEFT SEMI JOIN corpus_dept USING (dept)",
    "SELECT e.name FROM corpus_emp e LEFT ANTI JOIN corpus_dept d ON e.dept = d.dept",
    "SELECT e.name, d.title FROM corpus_emp e FULL OUTER JOIN corpus_dept d ON e.dept = d.dept",
    "SELECT count(*) FROM corpus_emp CROSS JOIN corpus_dept",
    "SELECT * FROM corpus_dept NATURAL JOIN (SELECT dept, count(*) AS n FROM corpus_emp GROUP BY dept)",
    # set operations
    "SELECT dept FROM corpus_emp UNION SELECT dept FROM corpus_dept",
    "SELECT dept FROM corpus_emp INTERSECT SELECT dept FROM corpus_dept",
    "SELECT dept FROM corpus_dept EXCEPT SELECT dept FROM corpus_emp",
    "SELECT dept FROM corpus_emp EXCEPT ALL SELECT dept FROM corpus_dept",
    # hints
    "SELECT /*+ BROADCAST(d) */ e.name, d.title FROM corpus_emp e JOIN corpus_dept d ON e.dept = d.dept",
    "SELECT /*+ REPARTITION(3, dept) */ dept, count(*) FROM corpus_emp GROUP BY dept",
    "SELECT /*+ COALESCE(1) */ * FROM corpus_sales",
    # higher-order functions, lambdas
    "SELECT name, transform(tags, t -> upper(t)) AS up, filter(tags, t -> t <> 'a') AS f FROM corpus_emp",
    "SELECT aggregate(array(1, 2, 3), 0, (acc, x) -> acc + x) AS s, exists(array(1, 2), x -> x > 1) AS e",
    "SELECT zip_with(array(1, 2), array(3, 4), (x, y) -> x * y) AS z, reduce(array(1, 2, 3), 0, (a, x) -> a + x, a -> a * 10) AS r",
    "SELECT name, map_filter(props, (k, v) -> v > 2) AS m, transform_values(props, (k, v) -> v + 1) AS t FROM corpus_emp",
    "SELECT array_sort(array(3, 1, 2), (l, r) -> r - l) AS d, forall(array(1, 2), x -> x > 0) AS a",
    # expressions
    "SELECT name, CASE WHEN salary >= 100 THEN 'hi' WHEN salary IS NULL THEN '?' ELSE 'lo' END AS b, "
    "coalesce(salary, -1) AS c, nullif(dept, 'hr') AS n, if(salary > 90, 1, 0) AS i FROM corpus_emp",
    "SELECT name, try_element_at(tags, 1) AS first_tag, element_at(props, 'x') AS x, size(tags) AS n, props['y'] AS y FROM corpus_emp",
    "SELECT named_struct('a', 1, 'b', array(1, 2)).b[1] AS v, struct(1 AS x).x AS y",
    "SELECT name, date_add(hired, 30) AS d, datediff(DATE'2024-01-01', hired) AS age, year(hired) AS y, "
    "date_format(hired, 'yyyy/MM') AS f FROM corpus_emp",
    "SELECT regexp_extract(name, '([a-z])([a-z]+)', 2) AS r, concat_ws('-', dept, name) AS c, "
    "format_string('%s:%05d', name, salary) AS f, substr(name, 2) AS s FROM corpus_emp",
    "SELECT ts + INTERVAL 90 MINUTES AS later, ts - INTERVAL '1' DAY AS before, CAST(ts AS DATE) AS d FROM corpus_emp",
    "SELECT DISTINCT dept FROM corpus_emp ORDER BY dept DESC NULLS LAST LIMIT 2",
    "SELECT name FROM corpus_emp ORDER BY name LIMIT 3 OFFSET 2",
    "SELECT percentile_approx(salary, 0.5) AS med, approx_count_distinct(dept) AS d, "
    "array_sort(collect_set(dept)) AS ds FROM corpus_emp",
    "SELECT max_by(name, salary) AS top, min_by(name, hired) AS oldest, count_if(salary > 90) AS rich FROM corpus_emp",
    "SELECT dept, sort_array(collect_list(name)) AS names, array_join(array_sort(collect_list(name)), ',') AS j "
    "FROM corpus_emp GROUP BY dept",
    "SELECT `dept` AS `the dept`, count(*) AS `n n` FROM corpus_emp GROUP BY `dept`",
    # Spark's own time windows
    "SELECT window.start, window.end, count(*) AS c FROM corpus_emp GROUP BY window(ts, '1 hour')",
    "SELECT window(ts, '30 minutes', '10 minutes').start AS s, count(*) FROM corpus_emp "
    "GROUP BY window(ts, '30 minutes', '10 minutes')",
    "SELECT session_window.start, session_window.end, count(*) FROM corpus_emp GROUP BY session_window(ts, '20 minutes')",
    "SELECT window_time(w) AS t, n FROM (SELECT window(ts, '1 hour') AS w, count(*) AS n FROM corpus_emp GROUP BY 1)",
    "SELECT dept, window.start FROM corpus_emp GROUP BY dept, window(ts, '2 hours', '1 hour', '15 minutes')",
]


@pytest.mark.parametrize("query", SPARK_QUERIES)
def test_spark_sql_runs_as_spark_runs_it(sw, spark, corpus, query):
    actual, expected = sw.sql(query), spark.sql(query)
    assert actual.schema == expected.schema
    got, want = actual.collect(), expected.collect()
    if "ORDER BY" in query.upper() and "OVER" not in query.upper():
        assert got == want
    else:
        assert sorted(map(repr, got)) == sorted(map(repr, want))


# --------------------------------------------------------------------------- Flink's window queries


@pytest.fixture(scope="module")
def bid(spark):
    """The Bid table of Flink's window TVF / aggregation / Top-N / deduplication pages."""
    spark.sql("""SELECT bidtime, CAST(price AS DECIMAL(10, 2)) AS price, item, supplier_id FROM VALUES
        (TIMESTAMP'2020-04-15 08:05:00', 4.00, 'C', 'supplier1'),
        (TIMESTAMP'2020-04-15 08:07:00', 2.00, 'A', 'supplier1'),
        (TIMESTAMP'2020-04-15 08:09:00', 5.00, 'D', 'supplier2'),
        (TIMESTAMP'2020-04-15 08:11:00', 3.00, 'B', 'supplier2'),
        (TIMESTAMP'2020-04-15 08:13:00', 1.00, 'E', 'supplier1'),
        (TIMESTAMP'2020-04-15 08:17:00', 6.00, 'F', 'supplier2')
        AS bid(bidtime, price, item, supplier_id)""").createOrReplaceTempView("Bid")
    spark.sql("""SELECT * FROM VALUES
        (TIMESTAMP'2020-04-15 12:02:00', 1, 'L1'), (TIMESTAMP'2020-04-15 12:06:00', 2, 'L2'),
        (TIMESTAMP'2020-04-15 12:03:00', 3, 'L3') AS l(row_time, num, id)""").createOrReplaceTempView("LeftTable")
    spark.sql("""SELECT * FROM VALUES
        (TIMESTAMP'2020-04-15 12:01:00', 2, 'R2'), (TIMESTAMP'2020-04-15 12:04:00', 3, 'R3'),
        (TIMESTAMP'2020-04-15 12:05:00', 4, 'R4') AS r(row_time, num, id)""").createOrReplaceTempView("RightTable")


NATIVE_TEN = "(SELECT *, window(bidtime, '10 minutes') AS w FROM Bid)"

FLINK_QUERIES = [
    # window aggregation with GROUPING SETS / ROLLUP / CUBE (Flink: Window Aggregation)
    ("""SELECT window_start, window_end, supplier_id, SUM(price) AS price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ())""",
     f"SELECT w.start, w.end, supplier_id, SUM(price) FROM {NATIVE_TEN} GROUP BY w, GROUPING SETS ((supplier_id), ())"),
    ("""SELECT window_start, window_end, supplier_id, SUM(price) AS price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end, ROLLUP (supplier_id)""",
     f"SELECT w.start, w.end, supplier_id, SUM(price) FROM {NATIVE_TEN} GROUP BY w, ROLLUP (supplier_id)"),
    ("""SELECT window_start, window_end, item, supplier_id, SUM(price) AS price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end, CUBE (supplier_id, item)""",
     f"SELECT w.start, w.end, item, supplier_id, SUM(price) FROM {NATIVE_TEN} GROUP BY w, CUBE (supplier_id, item)"),
    # TUMBLE / HOP / CUMULATE aggregation (Flink: Window TVF)
    ("""SELECT window_start, window_end, SUM(price) AS total_price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES)) GROUP BY window_start, window_end""",
     f"SELECT w.start, w.end, SUM(price) FROM {NATIVE_TEN} GROUP BY w"),
    ("""SELECT window_start, window_end, SUM(price) AS total_price
        FROM TABLE(HOP(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES, INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end""",
     "SELECT w.start, w.end, SUM(price) FROM (SELECT *, window(bidtime, '10 minutes', '5 minutes') AS w FROM Bid) "
     "GROUP BY w"),
    ("""SELECT window_start, window_end, SUM(price) AS total_price
        FROM TABLE(CUMULATE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '2' MINUTES, INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end""",
     "SELECT w.start, w.start + make_dt_interval(0, 0, 2 * e), SUM(price) FROM "
     "(SELECT *, window(bidtime, '10 minutes') AS w FROM Bid) LATERAL VIEW explode(sequence(1, 5)) x AS e "
     "WHERE bidtime < w.start + make_dt_interval(0, 0, 2 * e) GROUP BY w, e"),
    # the window TVF alone: every row with its windows
    ("SELECT * FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))",
     f"SELECT bidtime, price, item, supplier_id, w.start, w.end, w.end - INTERVAL 1 MICROSECOND FROM {NATIVE_TEN}"),
    ("""SELECT * FROM TABLE(TUMBLE(DATA => TABLE Bid, TIMECOL => DESCRIPTOR(bidtime), SIZE => INTERVAL '10' MINUTES))""",
     f"SELECT bidtime, price, item, supplier_id, w.start, w.end, w.end - INTERVAL 1 MICROSECOND FROM {NATIVE_TEN}"),
    # window Top-N after a window aggregation (Flink: Window Top-N)
    ("""SELECT * FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
          FROM (SELECT window_start, window_end, supplier_id, SUM(price) AS price, COUNT(*) AS cnt
                FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
                GROUP BY window_start, window_end, supplier_id)
        ) WHERE rownum <= 1""",
     f"""SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY s, e ORDER BY price DESC) AS rownum FROM
          (SELECT w.start AS s, w.end AS e, supplier_id, SUM(price) AS price, COUNT(*) AS cnt FROM {NATIVE_TEN}
           GROUP BY w, supplier_id)) WHERE rownum <= 1"""),
    # window Top-N directly on the window TVF
    ("""SELECT * FROM (
          SELECT bidtime, price, item, supplier_id, window_start, window_end,
                 ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) AS rownum
          FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        ) WHERE rownum <= 2""",
     f"""SELECT * FROM (SELECT bidtime, price, item, supplier_id, w.start, w.end,
          ROW_NUMBER() OVER (PARTITION BY w ORDER BY price DESC) AS rownum FROM {NATIVE_TEN}) WHERE rownum <= 2"""),
    # window deduplication: the last row of each window (Flink: Window Deduplication)
    ("""SELECT * FROM (
          SELECT bidtime, price, item, supplier_id, window_start, window_end,
                 ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bidtime DESC) AS rownum
          FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        ) WHERE rownum <= 1""",
     f"""SELECT * FROM (SELECT bidtime, price, item, supplier_id, w.start, w.end,
          ROW_NUMBER() OVER (PARTITION BY w ORDER BY bidtime DESC) AS rownum FROM {NATIVE_TEN}) WHERE rownum <= 1"""),
    # cascaded window aggregation (Flink: Window Aggregation, "Cascading Window Aggregation")
    ("""WITH window1 AS (
          SELECT window_start, window_end, window_time AS rowtime, SUM(price) AS partial_price
          FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))
          GROUP BY supplier_id, window_start, window_end, window_time)
        SELECT window_start, window_end, SUM(partial_price) AS total_price
        FROM TABLE(TUMBLE(TABLE window1, DESCRIPTOR(rowtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end""",
     """SELECT w2.start, w2.end, SUM(partial_price) FROM (
          SELECT window(rowtime, '10 minutes') AS w2, partial_price FROM (
            SELECT w.end - INTERVAL 1 MICROSECOND AS rowtime, SUM(price) AS partial_price
            FROM (SELECT *, window(bidtime, '5 minutes') AS w FROM Bid) GROUP BY supplier_id, w))
        GROUP BY w2"""),
    # window join (Flink: Window Join)
    ("""SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id,
               COALESCE(L.window_start, R.window_start) AS window_start,
               COALESCE(L.window_end, R.window_end) AS window_end
        FROM (SELECT * FROM TABLE(TUMBLE(TABLE LeftTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))) L
        FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE RightTable, DESCRIPTOR(row_time), INTERVAL '5' MINUTES))) R
        ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end""",
     """SELECT L.num, L.id, R.num, R.id, COALESCE(L.w.start, R.w.start), COALESCE(L.w.end, R.w.end)
        FROM (SELECT *, window(row_time, '5 minutes') AS w FROM LeftTable) L
        FULL JOIN (SELECT *, window(row_time, '5 minutes') AS w FROM RightTable) R ON L.num = R.num AND L.w = R.w"""),
    # filters, HAVING and a query as the table argument
    ("""SELECT window_start, supplier_id, SUM(price) AS price, COUNT(*) AS n
        FROM TABLE(TUMBLE(TABLE (SELECT * FROM Bid WHERE item <> 'A') PARTITION BY supplier_id, DESCRIPTOR(bidtime),
                          INTERVAL '10' MINUTES))
        GROUP BY supplier_id, window_start, window_end HAVING SUM(price) > 3""",
     f"""SELECT w.start, supplier_id, SUM(price), COUNT(*) FROM {NATIVE_TEN} WHERE item <> 'A'
        GROUP BY supplier_id, w HAVING SUM(price) > 3"""),
]


@pytest.mark.parametrize("query, native", FLINK_QUERIES)
def test_flink_style_windowed_query_matches_native_spark(sw, spark, bid, query, native):
    actual, expected = sw.sql(query).collect(), spark.sql(native).collect()
    assert sorted(map(lambda r: repr(tuple(r)), actual)) == sorted(map(lambda r: repr(tuple(r)), expected))
    assert actual


def test_flink_documentation_grouping_sets_result(sw, bid):
    """The result table printed on Flink's Window Aggregation page, row for row."""
    import datetime as dt
    from decimal import Decimal

    result = sw.sql("""SELECT window_start, window_end, supplier_id, SUM(price) AS price
        FROM TABLE(TUMBLE(TABLE Bid, DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ())""").collect()
    at = lambda hh, mm: dt.datetime(2020, 4, 15, hh, mm)  # noqa: E731
    assert sorted(map(tuple, result), key=repr) == sorted([
        (at(8, 0), at(8, 10), None, Decimal("11.00")), (at(8, 0), at(8, 10), "supplier2", Decimal("5.00")),
        (at(8, 0), at(8, 10), "supplier1", Decimal("6.00")), (at(8, 10), at(8, 20), None, Decimal("10.00")),
        (at(8, 10), at(8, 20), "supplier2", Decimal("9.00")), (at(8, 10), at(8, 20), "supplier1", Decimal("1.00")),
    ], key=repr)

"""Spark's own errors reach the user intact after sqlwin ran (issue 13, "Hidden errors").

sqlwin quiets PySpark's error log while it runs Spark SQL of its own. It once did so by
creating the "SQLQueryContextLogger" logger with plain logging.getLogger before PySpark did:
the logger was then a logging.Logger, and every later Spark error in the session turned into
`TypeError: Logger._log() got an unexpected keyword argument 'errorClass'`.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
import textwrap

import pytest
from pyspark.errors import AnalysisException, ParseException, PySparkException

from sqlwin.spark.runner import spark_error

WINDOW_QUERY = """
    SELECT k, window_start, count(*) AS n
    FROM TUMBLE(TABLE errors_events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE)
    GROUP BY k, window_start, window_end
"""


@pytest.fixture(scope="module")
def events(spark):
    spark.sql("SELECT 'a' AS k, TIMESTAMP '2024-01-01 00:00:10' AS ts").createOrReplaceTempView("errors_events")


def test_spark_errors_after_a_sqlwin_query_are_sparks_own(sw, spark, events):
    assert [tuple(r) for r in sw.sql(WINDOW_QUERY).collect()] == [("a", dt.datetime(2024, 1, 1), 1)]
    with pytest.raises(AnalysisException) as caught:
        spark.sql("SELECT * FROM no_such_table")
    assert caught.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND"
    assert spark.conf.get("spark.sql.ansi.enabled") == "true"
    with pytest.raises(PySparkException) as caught:
        spark.sql("SELECT CAST('abc' AS INT)").collect()
    assert caught.value.getCondition() == "CAST_INVALID_INPUT"


def test_spark_errors_after_a_sqlwin_query_in_a_fresh_process():
    # A fresh interpreter: nothing but sqlwin has touched PySpark's loggers before its query.
    script = textwrap.dedent("""
        import sys
        import sqlwin
        spark = sqlwin.session(app_name="sqlwin-errors-test")
        spark.sql("SELECT 'a' AS k, TIMESTAMP '2024-01-01 00:00:10' AS ts").createOrReplaceTempView("errors_events")
        sw = sqlwin.attach(spark)
        assert sw.sql(sys.argv[1]).count() == 1
        for sql in ("SELECT * FROM no_such_table", "SELECT CAST('abc' AS INT)"):
            try:
                spark.sql(sql).collect()
            except Exception as err:
                print("RAISED", type(err).__name__, getattr(err, "getCondition", lambda: None)())
        spark.stop()
    """)
    done = subprocess.run([sys.executable, "-c", script, WINDOW_QUERY], capture_output=True, text=True, timeout=300)
    raised = [line for line in done.stdout.splitlines() if line.startswith("RAISED")]
    assert raised == ["RAISED AnalysisException TABLE_OR_VIEW_NOT_FOUND",
                      "RAISED NumberFormatException CAST_INVALID_INPUT"], done.stdout + done.stderr[-3000:]


def test_a_wrapped_spark_error_keeps_sparks_message(spark):
    # A ParseException's text starts with a blank line: the message is the first line that is not.
    with pytest.raises(ParseException) as caught:
        spark.sql("SELECT 1 +")
    wrapped = spark_error(caught.value, "SELECT 1 +")
    assert wrapped.message.startswith("Spark cannot run the query: [PARSE_SYNTAX_ERROR] Syntax error at or near")

"""A job that starts Spark with sqlwin.session() and runs a stream keeps its stdout to itself: the
JVM's output goes to stderr, and PySpark's planning worker for transformWithStateInPandas, which
prints four paragraphs of its own debugging on every stream start, is not heard (sqlwin/jvm_output.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

JOB = textwrap.dedent("""
    import sys
    import sqlwin
    from sqlwin.testing import feed_stream

    spark = sqlwin.session()
    sw = sqlwin.attach(spark)
    rows = spark.createDataFrame([(1, "2024-01-01 00:00:10", 0), (2, "2024-01-01 00:01:30", 0)],
                                 "id INT, ts STRING, b INT").selectExpr("id", "CAST(ts AS TIMESTAMP) AS ts", "b")
    fed = feed_stream(sw, "SELECT window_start, count(*) AS n FROM TUMBLE(TABLE ev, DESCRIPTOR(ts), "
                          "INTERVAL 1 MINUTE) GROUP BY window_start, window_end", rows, "ev", "b",
                      workdir=sys.argv[1])
    print(sorted((str(r[0]), r[1]) for r in fed.rows))
""")


def test_a_jobs_stdout_holds_only_its_own_output(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYSPARK_PYTHON": sys.executable}
    run = subprocess.run([sys.executable, "-c", JOB, str(tmp_path / "work")], capture_output=True, text=True,
                         env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    # by hand: one row in [00:00, 00:01), one in [00:01, 00:02)
    assert run.stdout == "[('2024-01-01 00:00:00', 1), ('2024-01-01 00:01:00', 1)]\n", run.stdout
    assert "TransformWithStateInPandas" not in run.stderr, run.stderr[-3000:]

"""Complete-input benchmark: sqlwin's lowering against hand-written Spark DataFrame code.

    .venv/bin/python benchmarks/batch_windows.py [--rows 5000000] [--keys 10000] [--repeats 3]

Generates N events (key, timestamp, value) once as parquet, then times, interleaved in
one process and one SparkSession, `sw.sql(query)` and the DataFrame code a Spark
engineer would write for the same result, for TUMBLE, HOP, SESSION and COUNT_WINDOW.
Each run reads the parquet and writes the full result to Spark's `noop` sink. Prints
rows/s for both, the ratio (sqlwin time / hand-written time; the goal is <= 1.05), a
check that both produced the same result, and the JVM's peak resident memory.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import sqlwin


def generate(spark, path: str, rows: int, keys: int) -> None:
    # Six hours of events, microsecond-resolution times, keys spread evenly.
    spark.range(rows).selectExpr(
        f"CONCAT('k', CAST(id % {keys} AS STRING)) AS k",
        "timestamp_micros(1700000000000000 + CAST(rand(7) * 21600000000 AS BIGINT)) AS ts",
        "CAST(rand(11) * 100 AS DOUBLE) AS v",
    ).write.mode("overwrite").parquet(path)


def cases(F, Window):
    """(name, sqlwin query, hand-written DataFrame code) for each window kind."""
    gap_us = 30 * 60 * 1_000_000

    def tumble(df):
        return df.groupBy("k", F.window("ts", "1 minute")).agg(F.count("*").alias("n"), F.avg("v").alias("avg_v"))

    def hop(df):
        return df.groupBy("k", F.window("ts", "5 minutes", "1 minute")).agg(
            F.count("*").alias("n"), F.avg("v").alias("avg_v"))

    def session(df):
        # Rows exactly one gap apart start a new session (BW-07): a gap 1 µs shorter.
        return df.groupBy("k", F.session_window("ts", f"{gap_us - 1} microseconds")).agg(
            F.count("*").alias("n"), F.avg("v").alias("avg_v"))

    def count_window(df):
        numbered = df.withColumn("rn", F.row_number().over(Window.partitionBy("k").orderBy("ts")) - 1)
        return (numbered.groupBy("k", F.floor(F.col("rn") / 100).alias("j"))
                .agg(F.min_by("ts", "rn").alias("window_start"), F.max_by("ts", "rn").alias("window_end"),
                     F.count("*").alias("n"), F.avg("v").alias("avg_v"))
                .where("n = 100"))

    agg = "k, window_start, window_end, count(*) AS n, avg(v) AS avg_v"
    group = "GROUP BY k, window_start, window_end"
    return [
        ("TUMBLE 1 min", f"SELECT {agg} FROM TUMBLE(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE) {group}", tumble),
        ("HOP 5 min / 1 min", f"SELECT {agg} FROM HOP(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE, INTERVAL 5 MINUTES) {group}", hop),
        ("SESSION 30 min", f"SELECT {agg} FROM SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 30 MINUTES) {group}", session),
        ("COUNT_WINDOW 100", f"SELECT {agg} FROM COUNT_WINDOW(TABLE events PARTITION BY k ORDER BY ts, 100) {group}", count_window),
    ]


def timed(frame) -> float:
    start = time.perf_counter()
    frame.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - start


def fingerprint(frame) -> tuple:
    row = frame.selectExpr("count(*) AS windows", "sum(n) AS rows_in_windows").collect()[0]
    return row["windows"], row["rows_in_windows"]


def peak_jvm_memory_mib(spark) -> float | None:
    try:
        pid = spark.sparkContext._gateway.proc.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except Exception:  # not a local launch, or no /proc: memory is not reported
        return None
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", action="append", default=[], metavar="KIND",
                        help="run only the cases whose name starts with KIND (TUMBLE, HOP, SESSION, COUNT_WINDOW)")
    args = parser.parse_args()

    spark = sqlwin.session(app_name="sqlwin-bench", shuffle_partitions=8)
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    sw = sqlwin.attach(spark)
    with tempfile.TemporaryDirectory(prefix="sqlwin-bench-") as tmp:
        path = f"{tmp}/events.parquet"
        started = time.perf_counter()
        generate(spark, path, args.rows, args.keys)
        print(f"generated {args.rows:,} events over {args.keys:,} keys in {time.perf_counter() - started:.1f} s")
        events = spark.read.parquet(path)
        events.createOrReplaceTempView("events")
        print(f"{'window':<20} {'sqlwin rows/s':>14} {'native rows/s':>14} {'ratio':>7}  same result")
        for name, query, handwritten in cases(F, Window):
            if args.only and not any(name.startswith(kind) for kind in args.only):
                continue
            ours, theirs = [], []
            timed(sw.sql(query))  # warm-up: JIT, file listing
            timed(handwritten(events))
            for _ in range(args.repeats):  # interleaved so drift hits both alike
                ours.append(timed(sw.sql(query)))
                theirs.append(timed(handwritten(events)))
            same = fingerprint(sw.sql(query)) == fingerprint(handwritten(events))
            t_ours, t_theirs = statistics.median(ours), statistics.median(theirs)
            print(f"{name:<20} {args.rows / t_ours:>14,.0f} {args.rows / t_theirs:>14,.0f} "
                  f"{t_ours / t_theirs:>7.3f}  {'yes' if same else 'NO'}")
    memory = peak_jvm_memory_mib(spark)
    if memory:
        print(f"peak JVM resident memory: {memory:,.0f} MiB")
    spark.stop()


if __name__ == "__main__":
    main()

"""Registered table functions: plain `spark.sql` calling sqlwin.register's functions, against
Spark's own `window()` and against `sw.sql` on the same query.

    .venv/bin/python benchmarks/functions.py [--rows 1000000] [--keys 1000] [--repeats 2]

Generates N events (key, timestamp, value) once as parquet, then times, in one process and one
SparkSession, each form of the same window assignment, every row with its window columns
(`SELECT *`, written to Spark's `noop` sink):

- native: Spark's `window()` written by hand (TUMBLE and HOP only; Spark has no per-row
  SESSION or COUNT_WINDOW);
- registered: `SELECT * FROM tumble(TABLE(events), 'ts', ...)` after `sqlwin.register(spark)`
  (a classic session: a native Spark plan, sw.sql's lowering, built on the driver);
- python UDTF: the same call to the Python UDTF behind it (`python_udtf`, registered as
  `py_tumble` ...; what a Spark Connect session runs): Arrow record batches in and out, `analyze`
  for the schema;
- sw.sql: sqlwin's own SQL, lowered to native Spark SQL;
- arrow floor: `mapInArrow` handing every record batch back unchanged, what any Python form
  pays to move the rows through a Python worker and back (TUMBLE only);
- row UDTF: the public `@udtf(useArrow=True)` with `analyze`, which calls `eval` once per row,
  and the same class with `useArrow=False` (TUMBLE only, on --row-udtf-rows rows: two orders of
  magnitude slower);

and one grouped query (count per key and 1-minute window), the shape most queries take.
Prints rows/s of each form, the ratios to native and to sw.sql (same run), and checks that
the forms give the same number of output rows.
"""

from __future__ import annotations

import argparse
import tempfile
import time


def generate(spark, path: str, rows: int, keys: int) -> None:
    # Six hours of events, microsecond times, keys spread evenly (as batch_windows.py).
    spark.range(rows).selectExpr(
        f"CONCAT('k', CAST(id % {keys} AS STRING)) AS k",
        "timestamp_micros(1700000000000000 + CAST(rand(7) * 21600000000 AS BIGINT)) AS ts",
        "CAST(rand(11) * 100 AS DOUBLE) AS v",
    ).write.mode("overwrite").parquet(path)


def row_udtf(arrow: bool):
    """The public polymorphic form: @udtf with analyze, eval called once per row."""
    from pyspark.sql.functions import udtf
    from pyspark.sql.types import StructField, StructType, TimestampType
    from pyspark.sql.udtf import AnalyzeResult

    @udtf(useArrow=arrow)
    class RowTumble:
        @staticmethod
        def analyze(data, timecol, size):
            fields = list(data.dataType.fields) + [StructField(n, TimestampType()) for n in
                                                   ("window_start", "window_end", "window_time")]
            return AnalyzeResult(StructType(fields))

        def eval(self, row, timecol, size):
            import datetime as dt

            from sqlwin.ir import Tumble
            from sqlwin.runtime.assign import fixed_windows

            ts = row[timecol]
            if ts is None:
                return
            micros = int(ts.replace(microsecond=0).timestamp()) * 1_000_000 + ts.microsecond
            for start, end in fixed_windows(Tumble(size // dt.timedelta(microseconds=1)), micros):
                at = dt.datetime.fromtimestamp
                yield (*row, at(start / 1e6), at(end / 1e6), at((end - 1) / 1e6))

    return RowTumble


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--row-udtf-rows", type=int, default=50_000)
    parser.add_argument("--cases", default="", help="only the cases whose name contains this text (case-insensitive)")
    args = parser.parse_args()

    import sqlwin
    from pyspark.sql import functions as F

    spark = sqlwin.session(app_name="sqlwin-bench-functions")
    spark.sparkContext.setLogLevel("ERROR")
    sw = sqlwin.attach(spark)
    sqlwin.register(spark)
    from sqlwin.spark.functions import FUNCTIONS, python_udtf

    for name in FUNCTIONS:
        spark.udtf.register(f"py_{name}", python_udtf(name))
    spark.udtf.register("row_tumble", row_udtf(arrow=True))
    spark.udtf.register("row_tumble_pickled", row_udtf(arrow=False))

    with tempfile.TemporaryDirectory() as tmp:
        generate(spark, f"{tmp}/events", args.rows, args.keys)
        events = spark.read.parquet(f"{tmp}/events")
        events.createOrReplaceTempView("events")
        events.limit(args.row_udtf_rows).cache().createOrReplaceTempView("events_small")
        spark.table("events_small").count()

        def native_window(size: str, slide: str | None = None):
            w = F.window("ts", size, slide) if slide else F.window("ts", size)
            return events.withColumn("__w", w).select(
                "k", "ts", "v", F.col("__w.start").alias("window_start"), F.col("__w.end").alias("window_end"),
                (F.col("__w.end") - F.expr("INTERVAL 1 MICROSECOND")).alias("window_time"))

        grouped = "SELECT k, window_start, window_end, count(*) AS n FROM {} GROUP BY k, window_start, window_end"
        cases = [
            ("TUMBLE 1 min", args.rows, {
                "native": lambda: native_window("1 minute"),
                "arrow floor": lambda: events.mapInArrow(lambda batches: batches, events.schema),
                "registered": "SELECT * FROM tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)",
                "python UDTF": "SELECT * FROM py_tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)",
                "sw.sql": "SELECT * FROM TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL 1 MINUTE)"}),
            ("HOP 5 min / 1 min", args.rows, {
                "native": lambda: native_window("5 minutes", "1 minute"),
                "registered": "SELECT * FROM hop(TABLE(events), 'ts', INTERVAL '1' MINUTE, INTERVAL '5' MINUTES)",
                "python UDTF": "SELECT * FROM py_hop(TABLE(events), 'ts', INTERVAL '1' MINUTE, INTERVAL '5' MINUTES)",
                "sw.sql": "SELECT * FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 1 MINUTE, INTERVAL 5 MINUTES)"}),
            ("CUMULATE 5 min / 20 min", args.rows, {
                "registered": "SELECT * FROM cumulate(TABLE(events), 'ts', INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)",
                "python UDTF": "SELECT * FROM py_cumulate(TABLE(events), 'ts', INTERVAL '5' MINUTES, INTERVAL '20' MINUTES)",
                "sw.sql": "SELECT * FROM CUMULATE(TABLE events, DESCRIPTOR(ts), INTERVAL 5 MINUTES, INTERVAL 20 MINUTES)"}),
            ("GLOBAL_WINDOW per key", args.rows, {
                "registered": "SELECT * FROM global_window(TABLE(events) PARTITION BY (k), 'ts')",
                "python UDTF": "SELECT * FROM py_global_window(TABLE(events) PARTITION BY (k), 'ts')",
                "sw.sql": "SELECT * FROM GLOBAL_WINDOW(TABLE events PARTITION BY k, DESCRIPTOR(ts))"}),
            ("SESSION 30 s per key", args.rows, {
                "registered": "SELECT * FROM session(TABLE(events) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
                "python UDTF": "SELECT * FROM py_session(TABLE(events) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
                "sw.sql": "SELECT * FROM SESSION(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 30 SECONDS)"}),
            ("COUNT_WINDOW 100 per key", args.rows, {
                "registered": "SELECT * FROM count_window(TABLE(events) PARTITION BY k ORDER BY (ts), 'ts', 100)",
                "python UDTF": "SELECT * FROM py_count_window(TABLE(events) PARTITION BY k ORDER BY (ts), 'ts', 100)",
                "sw.sql": "SELECT * FROM COUNT_WINDOW(TABLE events PARTITION BY k ORDER BY ts, DESCRIPTOR(ts), 100)"}),
            ("GROUP BY TUMBLE 1 min", args.rows, {
                "native": lambda: events.groupBy("k", F.window("ts", "1 minute")).count(),
                "registered": grouped.format("tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)"),
                "python UDTF": grouped.format("py_tumble(TABLE(events), 'ts', INTERVAL '1' MINUTE)"),
                "sw.sql": grouped.format("TUMBLE(TABLE events PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE)")}),
            (f"SLIDE 30 s per key, {args.row_udtf_rows:,} rows", args.row_udtf_rows, {  # a range join: quadratic per key
                "registered": "SELECT * FROM slide(TABLE(events_small) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
                "python UDTF": "SELECT * FROM py_slide(TABLE(events_small) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
                "sw.sql": "SELECT * FROM SLIDE(TABLE events_small PARTITION BY k, DESCRIPTOR(ts), INTERVAL 30 SECONDS)"}),
            (f"TUMBLE 1 min, {args.row_udtf_rows:,} rows", args.row_udtf_rows, {
                "native": lambda: spark.table("events_small").withColumn("__w", F.window("ts", "1 minute")),
                "registered": "SELECT * FROM tumble(TABLE(events_small), 'ts', INTERVAL '1' MINUTE)",
                "python UDTF": "SELECT * FROM py_tumble(TABLE(events_small), 'ts', INTERVAL '1' MINUTE)",
                "sw.sql": "SELECT * FROM TUMBLE(TABLE events_small, DESCRIPTOR(ts), INTERVAL 1 MINUTE)",
                "row UDTF": "SELECT * FROM row_tumble(TABLE(events_small), 'ts', INTERVAL '1' MINUTE)",
                "row pickled": "SELECT * FROM row_tumble_pickled(TABLE(events_small), 'ts', INTERVAL '1' MINUTE)"}),
        ]

        def frame_of(form):
            if callable(form):
                return form()
            return sw.sql(form) if "DESCRIPTOR(" in form else spark.sql(form)

        print(f"{args.rows:,} rows, {args.keys:,} keys, {spark.sparkContext.defaultParallelism} cores, "
              f"best of {args.repeats} (after one warm-up run each)")
        print(f"{'case':28} {'form':12} {'seconds':>8} {'rows/s':>12} {'x native':>9} {'x sw.sql':>9}  output rows")
        for name, rows, forms in [case for case in cases if args.cases.lower() in case[0].lower()]:
            counts = {form: frame_of(query).count() for form, query in forms.items()}  # also warms up
            best = {}
            for _ in range(args.repeats):
                for form, query in forms.items():  # interleaved, so drift hits every form alike
                    start = time.perf_counter()
                    frame_of(query).write.format("noop").mode("overwrite").save()
                    best[form] = min(best.get(form, float("inf")), time.perf_counter() - start)
            for form, seconds in best.items():
                native = f"{seconds / best['native']:.2f}" if "native" in best else "-"
                ratio = f"{seconds / best['sw.sql']:.2f}"
                print(f"{name:28} {form:12} {seconds:8.2f} {rows / seconds:12,.0f} {native:>9} {ratio:>9}  "
                      f"{counts[form]:,}")
            same = len(set(counts.values())) == 1
            print(f"{'':28} {'same rows' if same else 'ROW COUNTS DIFFER: ' + str(counts)}")
    spark.stop()


if __name__ == "__main__":
    main()

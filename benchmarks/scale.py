"""Scale benchmarks of the stateful engine: a growing key space, and replay against complete input.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/scale.py keys \\
        [--new-keys 100000] [--batches 10] [--shuffle-partitions 2] [--query tumble|early|join]
    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/scale.py replay \\
        [--rows 2000000 --rows 10000000] [--keys 10000] [--batch-rows 100000] [--one-clock]

keys: every micro-batch brings `--new-keys` keys never seen before, two rows each, in the next
minute of event time. sqlwin (TUMBLE 1 min, a watermark per key, count and avg) and the native
Structured Streaming query (withWatermark + window, append mode) read the same files, fed one at
a time to both, interleaved; printed per batch: seconds for each engine (wall time of
processAllAvailable) and the keys seen so far. Under a watermark per key a key that never comes
back keeps its window open, so sqlwin's state grows by `--new-keys` windows every batch: the
figure that matters is whether a batch's cost grows with it (done when: the mean of the last two
batches is at most 1.5x the mean of batches 2-3).

replay: a table of `--rows` rows over `--keys` keys recording arrival (`seq`; and a second case
with `batch`: micro-batches of `--batch-rows` rows), TUMBLE 1 min, count and sum. The replay
(`WITH (arrival_order = seq [, arrival_batch = batch])`) against the same query over the table as
complete input (native Spark SQL), interleaved in one session: seconds, rows/s, the ratio, and the
peak summed RSS of the Python workers during each replay.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sqlwin  # noqa: E402
from streaming_windows import WorkerMemory, jvm_pid  # noqa: E402

T0_MS = 1_699_999_980_000
MINUTE_MS = 60_000


_TUMBLE = ("TUMBLE(TABLE {t} PARTITION BY k WATERMARK ts DELAY OF INTERVAL 5 SECONDS, DESCRIPTOR(ts), "
           "INTERVAL 1 MINUTE)")
KEY_QUERIES = {
    # the vectorised runtime
    "tumble": (f"SELECT k, window_start, window_end, count(*) AS n, avg(v) AS avg_v FROM {_TUMBLE.format(t='events')} "
               "GROUP BY k, window_start, window_end"),
    # the general runtime: early firings with retractions, and a windowed join
    "early": (f"SELECT k, window_start, window_end, count(*) AS n, avg(v) AS avg_v FROM {_TUMBLE.format(t='events')} "
              "GROUP BY k, window_start, window_end EMIT EARLY EVERY 2 ROWS RETRACTING"),
    "join": (f"SELECT l.k, l.window_start, l.v, r.seq AS rseq FROM {_TUMBLE.format(t='events')} l "
             f"JOIN {_TUMBLE.format(t='others')} r ON l.k = r.k AND l.window_start = r.window_start "
             "AND l.window_end = r.window_end"),
}


def growing_keys(args) -> None:
    spark = sqlwin.session(app_name="sqlwin-scale-keys", shuffle_partitions=args.shuffle_partitions)
    from pyspark.sql import functions as F

    sw = sqlwin.attach(spark)
    tmp = Path(tempfile.mkdtemp(prefix="sqlwin-scale-keys-"))
    try:
        files = tmp / "files"
        gen = tmp / "gen"
        n = args.new_keys
        (spark.range(args.batches * n * 2)
         .selectExpr(f"id div {2 * n} AS b", f"(id % {2 * n}) div 2 AS i", "id % 2 AS j", "id")
         .selectExpr("b", "concat('k', b, '_', i) AS k",
                     f"timestamp_millis({T0_MS} + b * {MINUTE_MS} + pmod(i * 7919, 50000) + j * 1000) AS ts",
                     "CAST(rand(11) * 100 AS DOUBLE) AS v", "id AS seq")
         .repartition(args.batches, "b").sortWithinPartitions("b", "seq").write.partitionBy("b").parquet(str(gen)))
        files.mkdir()
        for b in range(args.batches):
            (part,) = (gen / f"b={b}").glob("part-*.parquet")
            part.rename(files / f"batch-{b:04d}.parquet")
        schema = spark.read.parquet(str(files)).schema
        roots = {name: tmp / name for name in ("sqlwin", "native")}
        sources = {}
        for name, root in roots.items():
            (root / "source").mkdir(parents=True)
            sources[name] = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(root / "source"))
        query = KEY_QUERIES[args.query]
        inputs = {"events": sources["sqlwin"]}
        if args.query == "join":  # the same rows on both sides: every row finds its partner
            inputs["others"] = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1) \
                .parquet(str(roots["sqlwin"] / "source"))
        ours = sw.stream(query, sources=inputs, sink=str(roots["sqlwin"] / "sink"),
                         checkpoint=str(roots["sqlwin"] / "checkpoint")).query
        native = (sources["native"].withWatermark("ts", "5 seconds").groupBy("k", F.window("ts", "1 minute"))
                  .agg(F.count("*").alias("n"), F.avg("v").alias("avg_v"))
                  .writeStream.format("parquet").outputMode("append").option("path", str(roots["native"] / "sink"))
                  .option("checkpointLocation", str(roots["native"] / "checkpoint")).start())
        print(f"pyspark {spark.version}, {spark.sparkContext.master}, {args.shuffle_partitions} shuffle partitions; "
              f"{n:,} new keys x 2 rows per micro-batch; sqlwin: {args.query} (native: withWatermark + window, "
              "the reference)")
        print(f"   {query}")
        print(f"{'batch':>5}  {'keys':>9}  {'sqlwin s':>8}  {'native s':>8}")
        times = {"sqlwin": [], "native": []}
        for b in range(args.batches):
            file = files / f"batch-{b:04d}.parquet"
            for name, q in (("sqlwin", ours), ("native", native)):
                started = time.perf_counter()
                os.link(file, roots[name] / "source" / file.name)
                q.processAllAvailable()
                times[name].append(time.perf_counter() - started)
            print(f"{b + 1:>5}  {(b + 1) * n:>9,}  {times['sqlwin'][-1]:>8.2f}  {times['native'][-1]:>8.2f}", flush=True)
        ours.stop()
        native.stop()
        for name in ("sqlwin", "native"):
            early = statistics.mean(times[name][1:3])
            late = statistics.mean(times[name][-2:])
            print(f"{name}: batches 2-3 {early:.2f} s, last two {late:.2f} s: x{late / early:.2f}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        spark.stop()


def replay(args) -> None:
    spark = sqlwin.session(app_name="sqlwin-scale-replay", shuffle_partitions=args.shuffle_partitions)
    sw = sqlwin.attach(spark)
    workers = WorkerMemory(jvm_pid(spark))
    workers.start()
    tmp = Path(tempfile.mkdtemp(prefix="sqlwin-scale-replay-"))
    try:
        print(f"pyspark {spark.version}, {spark.sparkContext.master}, {args.shuffle_partitions} shuffle partitions; "
              f"{args.keys:,} keys, TUMBLE 1 min, count + sum, "
              + ("one clock for the stream" if args.one_clock else "a clock per key (PARTITION BY k)"))
        print(f"{'rows':>11}  {'case':<28}  {'seconds':>8}  {'rows/s':>10}  {'x complete':>10}  {'py peak MiB':>11}")
        for rows in args.rows:
            path = tmp / f"events-{rows}"
            # ~10 rows per key and minute, up to 3 s out of order; seq is the arrival position.
            per_minute = args.keys * 10
            (spark.range(rows).selectExpr(
                f"concat('k', id % {args.keys}) AS k",
                f"timestamp_millis({T0_MS} + (id div {per_minute}) * {MINUTE_MS} + (id % {per_minute}) * "
                f"{MINUTE_MS} div {per_minute} - CAST(rand(7) * 3000 AS BIGINT)) AS ts",
                "CAST(rand(11) * 100 AS DOUBLE) AS v", "id AS seq", f"id div {args.batch_rows} AS batch")
             .write.parquet(str(path)))
            spark.read.parquet(str(path)).createOrReplaceTempView("events")
            partition = "" if args.one_clock else "PARTITION BY k "
            base = ("SELECT k, window_start, window_end, count(*) AS n, sum(v) AS s FROM TUMBLE(TABLE events "
                    f"{partition}WATERMARK ts DELAY OF INTERVAL 5 SECONDS{{with}}, DESCRIPTOR(ts), "
                    "INTERVAL 1 MINUTE) GROUP BY k, window_start, window_end")
            cases = [("complete input", base.replace("{with}", "")),
                     ("replay, arrival_order", base.replace("{with}", " WITH (arrival_order = seq)")),
                     ("replay, + arrival_batch",
                      base.replace("{with}", " WITH (arrival_order = seq, arrival_batch = batch)"))]
            complete = None
            for _ in range(args.repeat):
                for name, query in cases:
                    workers.peak = 0
                    started = time.perf_counter()
                    sw.sql(query).write.format("noop").mode("overwrite").save()
                    seconds = time.perf_counter() - started
                    if name == "complete input":
                        complete = seconds
                    ratio = seconds / complete if complete else float("nan")
                    print(f"{rows:>11,}  {name:<28}  {seconds:>8.2f}  {rows / seconds:>10,.0f}  {ratio:>10.2f}  "
                          f"{workers.peak / 2**20:>11,.0f}", flush=True)
    finally:
        workers.done.set()
        shutil.rmtree(tmp, ignore_errors=True)
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    keys = sub.add_parser("keys", help="a growing key space")
    keys.add_argument("--new-keys", type=int, default=100_000)
    keys.add_argument("--batches", type=int, default=10)
    keys.add_argument("--shuffle-partitions", type=int, default=2)
    keys.add_argument("--query", choices=sorted(KEY_QUERIES), default="tumble",
                      help="tumble: the vectorised runtime; early (EMIT EARLY EVERY 2 ROWS RETRACTING) and join: "
                           "the general runtime")
    rep = sub.add_parser("replay", help="replay against complete input")
    rep.add_argument("--rows", type=int, action="append")
    rep.add_argument("--keys", type=int, default=10_000)
    rep.add_argument("--batch-rows", type=int, default=100_000)
    rep.add_argument("--repeat", type=int, default=1)
    rep.add_argument("--shuffle-partitions", type=int, default=2)
    rep.add_argument("--one-clock", action="store_true",
                     help="no PARTITION BY: one clock for the stream (the replay spreads it over the partitions)")
    args = parser.parse_args()
    if args.what == "keys":
        growing_keys(args)
    else:
        args.rows = args.rows or [2_000_000, 10_000_000]
        replay(args)


if __name__ == "__main__":
    main()

"""The fixed cost of a micro-batch, by the way a stream keeps its state (issue 22: why q7 trails).

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/stateful_floor.py \\
        [--rows 92000] [--batches 12] [--rounds 2]

One process, one SparkSession (sqlwin.session(): local[2], two shuffle partitions). `--batches`
parquet files of `--rows` bids each (event time, price), Nexmark q7's rate: 10,000 a second of event
time, so each file is ~9 s of it. Every engine reads them as a stream, one file a micro-batch, and
computes q7's core -- each 10-second tumbling window's highest price and its count, a watermark 5 s
behind the newest time -- or, for the floors, something smaller. Each prints rows/s over all files
and the median triggerExecution of its micro-batches with data (Spark's recentProgress), per round:

- `plain`: no state; each batch's rows written by foreachBatch. The floor of a foreachBatch stream.
- `native`: Spark's own streaming aggregation (`withWatermark` + `groupBy(window)`, append mode,
  parquet file sink): JVM state, one job a micro-batch.
- `python-tws`: a trivial transformWithStateInPandas (a count per key in a ValueState, 3 keys)
  into foreachBatch: the floor of a stateful operator in Python, whatever it computes.
- `driver-arrow`: no stateful operator: each input partition's rows aggregated per window in
  mapInArrow (PyArrow), the few partial rows collected in foreachBatch and merged into state the
  driver keeps in the checkpoint, a file per batch id (restart-safe), closed windows written.
- `driver-spark`: the same with Spark's own aggregation of the micro-batch (a GROUP BY of the
  finished batch inside foreachBatch, late rows counted per row against the previous batch's
  watermark) in place of mapInArrow.

The driver-* modes are sketches of the designs issue 22 weighs for a windowed aggregation with no
key (no rejected rows, no late sink, no end of input): what they would cost at best.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE_US, DELAY_US = 10_000_000, 5_000_000
MODES = ("plain", "native", "python-tws", "driver-arrow", "driver-spark")


def write_files(directory: Path, rows: int, batches: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(1)
    start = 1_700_000_000_000_000
    for batch in range(batches):
        ts = start + (batch * rows + np.arange(rows)) * 100  # 10,000 bids a second of event time
        table = pa.table({"ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
                          "price": rng.integers(1, 10_000, rows), "k": rng.integers(0, 3, rows)})
        path = directory / f"b{batch:04d}.parquet"
        pq.write_table(table, path)
        os.utime(path, (1e9 + batch, 1e9 + batch))  # Spark takes the files in this order


class _DriverState:
    """Open windows {window start: (max price, count)} and the watermark, a pickle per batch id:
    batch N reads N-1's (a re-run of N after a crash reads the same), writes N atomically."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def load(self, batch: int) -> tuple[dict, int | None]:
        path = self.directory / str(batch - 1)
        if not path.exists():
            return {}, None
        state = pickle.loads(path.read_bytes())
        return state["open"], state["watermark"]

    def save(self, batch: int, opened: dict, watermark: int | None) -> None:
        tmp = self.directory / f".{batch}"
        tmp.write_bytes(pickle.dumps({"open": opened, "watermark": watermark}))
        os.replace(tmp, self.directory / str(batch))


def _merge_and_emit(spark, partials, opened, watermark, out: Path, batch: int) -> int | None:
    for start, top, count, newest in partials:
        if count:
            old = opened.get(start)
            opened[start] = (max(old[0], top), old[1] + count) if old else (top, count)
    newest = [p[3] for p in partials if p[3] is not None]
    if newest:
        watermark = max(watermark if watermark is not None else -2 ** 62, max(newest) - DELAY_US)
    closed = sorted(s for s in opened if watermark is not None and s + SIZE_US <= watermark)
    emitted = [(s, s + SIZE_US, *opened.pop(s)) for s in closed]
    if emitted:
        spark.createDataFrame(emitted, "window_start long, window_end long, top long, n long").coalesce(1) \
            .write.mode("overwrite").parquet(str(out / f"batch_id={batch}"))
    return watermark


def build(spark, mode: str, source: Path, out: Path, checkpoint: Path):
    from pyspark.sql import functions as F

    bids = spark.readStream.schema("ts TIMESTAMP, price LONG, k LONG").option("maxFilesPerTrigger", 1) \
        .parquet(str(source))
    writer = None
    if mode == "plain":
        def write(frame, batch):
            frame.coalesce(1).write.mode("overwrite").parquet(str(out / f"batch_id={batch}"))
        writer = bids.writeStream.foreachBatch(write)
    elif mode == "native":
        top = bids.withWatermark("ts", "5 seconds").groupBy(F.window("ts", "10 seconds")) \
            .agg(F.max("price").alias("top"), F.count("*").alias("n"))
        writer = top.writeStream.outputMode("append").format("parquet").option("path", str(out))
    elif mode == "python-tws":
        from pyspark.sql.streaming import StatefulProcessor
        from pyspark.sql.types import LongType, StructField, StructType

        class Count(StatefulProcessor):
            def init(self, handle):
                self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))

            def handleInputRows(self, key, rows, timerValues):
                import pandas as pd

                seen = sum(len(frame) for frame in rows) + (self.count.get() or (0,))[0]
                self.count.update((seen,))
                yield pd.DataFrame({"k": [key[0]], "n": [seen]})

            def close(self):
                pass

        counts = bids.groupBy("k").transformWithStateInPandas(Count(), "k long, n long", "Update", "None")

        def write(frame, batch):
            frame.coalesce(1).write.mode("overwrite").parquet(str(out / f"batch_id={batch}"))
        writer = counts.writeStream.foreachBatch(write).outputMode("update")
    elif mode == "driver-arrow":
        import pyarrow as pa
        import pyarrow.compute as pc

        def partial(batches):
            for batch in batches:
                micros = pc.cast(batch.column(0), pa.int64()).to_numpy(zero_copy_only=False)
                starts = micros - micros % SIZE_US
                grouped = pa.table({"w": starts, "price": batch.column(1)}).group_by("w") \
                    .aggregate([("price", "max"), ("price", "count")]).combine_chunks()
                newest = int(micros.max()) if len(micros) else None
                yield pa.RecordBatch.from_arrays(
                    [grouped.column(0).chunk(0), grouped.column(1).chunk(0), grouped.column(2).chunk(0),
                     pa.array([newest] * grouped.num_rows, pa.int64())], names=["w", "top", "n", "newest"])

        partials = bids.mapInArrow(partial, "w LONG, top LONG, n LONG, newest LONG")
        state = _DriverState(checkpoint / "driver_state")

        def write(frame, batch):
            opened, watermark = state.load(batch)
            watermark = _merge_and_emit(spark, [tuple(r) for r in frame.collect()], opened, watermark, out, batch)
            state.save(batch, opened, watermark)
        writer = partials.writeStream.foreachBatch(write)
    elif mode == "driver-spark":
        state = _DriverState(checkpoint / "driver_state")

        def write(frame, batch):
            opened, watermark = state.load(batch)
            micros = F.unix_micros("ts")
            start = micros - F.pmod(micros, F.lit(SIZE_US))
            late = (start + F.lit(SIZE_US) <= F.lit(watermark)) if watermark is not None else F.lit(False)
            rows = frame.groupBy(start.alias("w")).agg(
                F.max(F.when(~late, F.col("price"))), F.count_if(~late), F.count_if(late), F.max(micros)).collect()
            watermark = _merge_and_emit(spark, [(r[0], r[1], r[2], r[4]) for r in rows], opened, watermark, out, batch)
            state.save(batch, opened, watermark)
        writer = bids.writeStream.foreachBatch(write)
    return writer.option("checkpointLocation", str(checkpoint / "spark"))


def run(spark, mode: str, source: Path, work: Path, rows: int, batches: int) -> tuple[float, int]:
    out, checkpoint = work / f"{mode}-out", work / f"{mode}-checkpoint"
    query = build(spark, mode, source, out, checkpoint).start()
    started = time.perf_counter()
    query.processAllAvailable()
    elapsed = time.perf_counter() - started
    progress = [p for p in query.recentProgress if p["numInputRows"] > 0]
    query.stop()
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(checkpoint, ignore_errors=True)
    medians = sorted(p["durationMs"]["triggerExecution"] for p in progress)
    return rows * batches / elapsed, medians[len(medians) // 2] if medians else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=92_000, help="bids per file (q7's micro-batch)")
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every mode (the first warms up)")
    parser.add_argument("--only", action="append", choices=MODES, default=[])
    args = parser.parse_args()

    import sqlwin

    spark = sqlwin.session(app_name="sqlwin-stateful-floor")
    work = Path(tempfile.mkdtemp(prefix="sqlwin-floor-"))
    try:
        source = work / "bids"
        source.mkdir()
        write_files(source, args.rows, args.batches)
        print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; "
              f"{args.batches} files of {args.rows:,} rows, one a micro-batch")
        results: dict[str, list[tuple[float, int]]] = {}
        for _ in range(args.rounds):
            for mode in args.only or MODES:
                results.setdefault(mode, []).append(run(spark, mode, source, work, args.rows, args.batches))
        print(f"{'mode':<14}" + "".join(f"{'round ' + str(i + 1) + ' rows/s':>20}{'median ms':>11}"
                                         for i in range(args.rounds)))
        for mode, rounds in results.items():
            print(f"{mode:<14}" + "".join(f"{rate:>20,.0f}{median:>11}" for rate, median in rounds))
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

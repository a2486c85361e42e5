"""Streaming benchmark: sqlwin's per-key-watermark streams against Spark's own streaming windows.

    PYSPARK_PYTHON=.venv/bin/python .venv/bin/python benchmarks/streaming_windows.py \\
        [--keys 10000] [--batch-rows 100000] [--batches 10] [--only TUMBLE] \\
        [--state-multiplier 10] [--state-batch-rows N] [--no-state-native] [--arrival-order] [--verbose]

Generates micro-batches of events (key k, TIMESTAMP ts, value v, arrival position seq) as
parquet, one file per micro-batch; each batch covers the next minute of event time with some
disorder (every key's rows come in a burst of ~10 s at a key-dependent point of the minute, up
to 3 s out of order), so windows close as time moves on and no row is late for either engine.
For TUMBLE 1 min, SESSION 30 s and COUNT_WINDOW 10 (all PARTITION BY k; TUMBLE and SESSION with
WATERMARK ts DELAY OF INTERVAL 5 SECONDS, a clock per key) it runs, in one process and one
SparkSession:

- a sqlwin stream (`sw.stream`: transformWithStateInPandas, RocksDB state, parquet sink) and
  the Structured Streaming code a Spark engineer would write (`withWatermark` + `window` /
  `session_window`, append mode, parquet file sink; for COUNT_WINDOW, which Spark does not
  have, the native TUMBLE as the reference). Both read the same files, each from its own
  source directory; the batches are fed to them interleaved, one file at a time, and each
  engine's `processAllAvailable()` is timed (the first `--warmup-batches` left out, after a
  warm-up pass over two batches). Printed: rows/s for both, the ratio sqlwin / native (goal
  >= 0.8), per input batch the latency from `recentProgress` (sum of
  durationMs.triggerExecution of the micro-batches Spark ran for that file: native runs a
  no-data batch after each data batch to emit what its new watermark closed), and a check
  that both emitted the same windows (for COUNT_WINDOW: every full count window exactly once).
- then both streams on to `--state-multiplier` times as many batches (same keys, time moving
  on, `--state-batch-rows` rows each): the state after 1x and after Mx, which should stay
  flat. For sqlwin: its state values read back with Spark's state data source (segments,
  index parts and directory), `stateOperators[0]` (numRowsTotal, memoryUsedBytes, RocksDB's live SST
  size) and the checkpoint's state directory on disk; the same for native as a reference.
- the JVM's peak resident memory, and the peak summed RSS of the Python processes (sampled).

Spark's watermark is one per stream (the newest event time of all keys, minus the delay);
sqlwin's here is one per key. The data keeps every row on time under both.

COUNT_WINDOW runs as the issue writes it, without ORDER BY: a stream counts each key's rows in
the order they arrive. `--arrival-order` names the arrival column instead, WITH (arrival_order =
seq), in every sqlwin query.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlwin

T0_MS = 1_699_999_980_000  # 2023-11-14 22:13:00 UTC: batch b covers the minute T0 + b min
MINUTE_MS = 60_000
DELAY = "5 seconds"
JITTER_MS = 3_000  # rows are up to 3 s older than their place in the burst
BURST_MS = 10_000  # each key's rows of one batch span ~10 s of the minute
OFFSET_RANGE_MS = 40_000  # where in the minute a key's burst starts


# --------------------------------------------------------------------------- data


def generate(spark, files: Path, first_batch: int, count: int, rows: int, keys: int, seq_base: int) -> list[Path]:
    """Write batches first_batch .. first_batch+count-1 of `rows` rows each, one parquet file per batch.

    Row i of batch b: key i % keys; the key's j-th row (j = i div keys) at
    minute(b) + offset(key) + j * step - jitter, so each key's rows of a batch span a burst of
    ~10 s and arrive up to 3 s out of order; `seq` is the row's position in the whole stream.
    """
    per_key = max(1, math.ceil(rows / keys))
    step = BURST_MS // per_key
    tmp = files / f".gen-{first_batch}"
    (spark.range(count * rows)
     .selectExpr(f"{first_batch} + id div {rows} AS b", f"id % {rows} AS i", "id")
     .selectExpr(
         "b",
         f"CONCAT('k', CAST(i % {keys} AS STRING)) AS k",
         f"timestamp_millis({T0_MS} + b * {MINUTE_MS} + pmod((i % {keys}) * 7919, {OFFSET_RANGE_MS})"
         f" + (i div {keys}) * {step} - CAST(rand(7) * {JITTER_MS} AS BIGINT)) AS ts",
         "CAST(rand(11) * 100 AS DOUBLE) AS v",
         f"{seq_base} + id AS seq")
     .repartition(min(count, 16), "b").sortWithinPartitions("b", "seq")
     .write.partitionBy("b").parquet(str(tmp)))
    out = []
    for b in range(first_batch, first_batch + count):
        (part,) = (tmp / f"b={b}").glob("part-*.parquet")
        target = files / f"batch-{b:06d}.parquet"
        part.rename(target)
        out.append(target)
    shutil.rmtree(tmp)
    return out


# --------------------------------------------------------------------------- cases


@dataclass
class Case:
    name: str
    query: str  # sqlwin
    native: object  # streaming DataFrame -> streaming DataFrame
    native_name: str
    check: str  # "same windows" | "count windows"


def cases(F, arrival_order: bool, one_clock: bool = False) -> list[Case]:
    """The three window kinds. `arrival_order`: the source names its arrival column, WITH
    (arrival_order = seq) (`seq` is each row's position in the stream, as a Kafka offset).
    `one_clock`: no PARTITION BY, one watermark for the stream (as native Spark's), GROUP BY k."""
    agg = "k, window_start, window_end, count(*) AS n, avg(v) AS avg_v"
    group = "GROUP BY k, window_start, window_end"
    arrival = " WITH (arrival_order = seq)" if arrival_order else ""
    partition = "" if one_clock else "PARTITION BY k "
    table = f"TABLE events {partition}WATERMARK ts DELAY OF INTERVAL {DELAY.upper()}{arrival}"
    gap_us = 30 * 1_000_000

    def finish(grouped):
        return grouped.agg(F.count("*").alias("n"), F.avg("v").alias("avg_v")).select(
            "k", F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "n", "avg_v")

    def tumble(df):
        return finish(df.withWatermark("ts", DELAY).groupBy("k", F.window("ts", "1 minute").alias("w")))

    def session(df):
        # Rows exactly one gap apart start a new session in sqlwin (BW-07): a gap 1 µs shorter.
        return finish(df.withWatermark("ts", DELAY).groupBy(
            "k", F.session_window("ts", f"{gap_us - 1} microseconds").alias("w")))

    return [
        Case("TUMBLE 1 min",
             f"SELECT {agg} FROM TUMBLE({table}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) {group}",
             tumble, "window 1 min", "same windows"),
        Case("SESSION 30 s",
             f"SELECT {agg} FROM SESSION({table}, DESCRIPTOR(ts), INTERVAL 30 SECONDS) {group}",
             session, "session_window 30 s", "same windows"),
        # As the issue writes it: no ORDER BY, the stream's own arrival order. sqlwin asks for
        # an order (ORDER BY, or WITH (arrival_order = col): --arrival-order) and refuses this.
        # Spark has no count window: the reference is its TUMBLE over the same batches.
        Case("COUNT_WINDOW 10",
             f"SELECT {agg} FROM COUNT_WINDOW(TABLE events {partition.strip()}{arrival}, 10) {group}",
             tumble, "window 1 min (Spark has no count window)", "count windows"),
        # The cost of firings beyond EMIT FINAL (issue 12 part 6), on the TUMBLE case's data, with
        # Spark's TUMBLE as the reference: early firings as the issue writes them (1000 rows: with
        # ~10 rows per key and minute none fires, so this is the cost of the general runtime), then
        # every 2 rows with RETRACTING (-U/+U pairs). The sink's changelog, applied, must equal
        # native's windows.
        Case("EARLY EVERY 1000 ROWS, TUMBLE 1 min",
             f"SELECT {agg} FROM TUMBLE({table}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) {group} "
             "EMIT EARLY EVERY 1000 ROWS",
             tumble, "window 1 min", "same windows"),
        Case("RETRACTING EARLY EVERY 2 ROWS, TUMBLE 1 min",
             f"SELECT {agg} FROM TUMBLE({table}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) {group} "
             "EMIT EARLY EVERY 2 ROWS RETRACTING",
             tumble, "window 1 min", "same windows"),
        # The cost of a windowed join (issue 12 part 6): the same rows split into two inputs (v below
        # and above 50), joined per key and minute, each side's last value (join_insert 'last', a
        # FULL JOIN: one row per key and window, as many as the aggregation's). One clock per input,
        # as Flink's window join (no PARTITION BY); the watermark is the earlier input's.
        Case("JOIN FULL last, TUMBLE 1 min",
             "SELECT coalesce(l.k, r.k) AS k, coalesce(l.window_start, r.window_start) AS window_start, "
             "coalesce(l.window_end, r.window_end) AS window_end, l.v AS lv, r.v AS rv "
             f"FROM TUMBLE(TABLE (SELECT * FROM events WHERE v < 50) WATERMARK ts DELAY OF INTERVAL "
             f"{DELAY.upper()} WITH (join_insert = 'last'), DESCRIPTOR(ts), INTERVAL 1 MINUTE) l "
             f"FULL JOIN TUMBLE(TABLE (SELECT * FROM events WHERE v >= 50) WATERMARK ts DELAY OF INTERVAL "
             f"{DELAY.upper()}, DESCRIPTOR(ts), INTERVAL 1 MINUTE) r "
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end",
             tumble, "window 1 min (an aggregation, no join)", "join windows"),
    ]


# --------------------------------------------------------------------------- engines


@dataclass
class Engine:
    """One streaming query, fed one file at a time from its own source directory."""

    name: str
    source: Path
    query: object = None  # StreamingQuery
    handle: object = None  # sqlwin's StreamingWindowQuery (sqlwin only)
    seen: int = -1  # last batchId collected
    progress: list = field(default_factory=list)  # every progress entry, in order
    per_input: list = field(default_factory=list)  # per fed file: (rows, wall s, [progress entries])

    def feed(self, file: Path) -> None:
        target = self.source / file.name
        started = time.perf_counter()
        os.link(file, target)  # appears atomically: the file source never sees half a file
        self.query.processAllAvailable()
        wall = time.perf_counter() - started
        fresh = self._collect()
        rows = sum(p["numInputRows"] for p in fresh)
        self.per_input.append((rows, wall, fresh))

    def _collect(self) -> list:
        """Progress of the micro-batches run since the last call.

        recentProgress keeps the last 100 entries: collected after every file, nothing is lost.
        Spark also reports idle triggers (no batch ran; every 10 s while the other engine works):
        they carry the next batch's id and no addBatch, and are left out.
        """
        fresh = [p for p in self.query.recentProgress
                 if p["batchId"] > self.seen and "addBatch" in p["durationMs"]]
        if fresh:
            self.seen = fresh[-1]["batchId"]
        self.progress += fresh
        return fresh

    def state(self, spark, checkpoint: Path, state_vars: tuple[str, ...] = ()) -> dict:
        """The last batch's state: operator metrics, the live state read back, the state directory on disk."""
        last = next((p for p in reversed(self.progress) if p["stateOperators"]), None)
        op = last["stateOperators"][0] if last else {}
        custom = dict(op.get("customMetrics") or {}) if op else {}
        return {
            "rows": op.get("numRowsTotal") if op else None,
            "memory": op.get("memoryUsedBytes") if op else None,
            "sst": custom.get("rocksdbSstFileSize"),
            "disk": directory_bytes(checkpoint / "state"),
            "values": live_state_bytes(spark, checkpoint, state_vars) if state_vars else None,
        }


def live_state_bytes(spark, checkpoint: Path, state_vars: tuple[str, ...]) -> int | None:
    """Bytes of sqlwin's state values as of the last batch, read back with Spark's state data
    source: the segments, index parts and directory of the vectorised runtimes, one pickled blob
    per bucket for the general runtime."""
    total = 0
    for name in state_vars:
        try:
            frame = spark.read.format("statestore").option("stateVarName", name).load(str(checkpoint))
            column = "user_map_value" if "user_map_value" in frame.columns else "value"
            total += frame.selectExpr(f"coalesce(sum(length({column}.blob)), 0) AS b").collect()[0]["b"]
        except Exception:  # a Spark without the state reader for transformWithState
            return None
    return total


def start_sqlwin(sw, spark, schema, case: Case, root: Path) -> Engine:
    engine = Engine("sqlwin", root / "sqlwin-source")
    engine.source.mkdir(parents=True)
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(engine.source))
    handle = sw.stream(case.query, sources={"events": frame}, sink=str(root / "sqlwin-sink"),
                       checkpoint=str(root / "sqlwin-checkpoint"))
    engine.query = handle.query
    engine.handle = handle
    return engine


def start_native(spark, schema, case: Case, root: Path) -> Engine:
    engine = Engine("native", root / "native-source")
    engine.source.mkdir(parents=True)
    frame = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(engine.source))
    engine.query = (case.native(frame).writeStream.format("parquet").outputMode("append")
                    .option("path", str(root / "native-sink"))
                    .option("checkpointLocation", str(root / "native-checkpoint")).start())
    return engine


# --------------------------------------------------------------------------- figures


def measured(engine: Engine, warmup: int, batches: int) -> tuple[int, float, list[float], float]:
    """Rows, wall seconds, per-input latency (ms) and micro-batches per input, after the warm-up."""
    inputs = engine.per_input[warmup:batches]
    rows = sum(r for r, _, _ in inputs)
    wall = sum(w for _, w, _ in inputs)
    latency = [sum(p["durationMs"].get("triggerExecution", 0) for p in ps) for _, _, ps in inputs]
    batches = statistics.mean(len(ps) for _, _, ps in inputs) if inputs else 0.0
    return rows, wall, latency, batches


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (with 9 values p95 is the maximum)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def latency_text(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):,.0f} / {percentile(values, 95):,.0f} / {max(values):,.0f}"


def windows_before(spark, path: Path, cutoff_ms: int, key_clocks) -> tuple[int, int, float]:
    """(windows, rows in them, sum of n * avg_v) of the windows that started before `cutoff_ms` and
    that the key's own watermark has passed (`key_clocks`: k, newest ts of the key)."""
    if not path.exists() or not any(path.rglob("*.parquet")):
        return 0, 0, 0.0
    frame = spark.read.parquet(str(path))
    if "op" in frame.columns:  # a changelog (early firings, retractions): the table it leaves
        from sqlwin.spark.changelog import apply_changelog

        frame = apply_changelog(frame, ["k", "window_start", "window_end"])
    row = (frame.where(f"window_start < timestamp_millis({cutoff_ms})")
           .join(key_clocks, "k").where(f"window_end <= newest - INTERVAL {DELAY}")
           .selectExpr("count(*) AS w", "coalesce(sum(n), 0) AS n", "coalesce(sum(n * avg_v), 0D) AS s")
           .collect()[0])
    return row["w"], row["n"], row["s"]


def same_windows(spark, case_root: Path, files: list[Path]) -> str:
    # Windows that started before the last batch's minute (less the 3 s of disorder) and that
    # their key's watermark has passed: both engines must have closed them all, the per-key and
    # the global watermark alike. (With few rows per key and batch, a key whose burst sits early
    # in the last minute keeps its previous window open under its own watermark.)
    cutoff = T0_MS + (len(files) - 1) * MINUTE_MS - 5_000
    key_clocks = spark.read.parquet(*[str(f) for f in files]).groupBy("k").agg({"ts": "max"}) \
        .withColumnRenamed("max(ts)", "newest").cache()
    ours = windows_before(spark, case_root / "sqlwin-sink", cutoff, key_clocks)
    theirs = windows_before(spark, case_root / "native-sink", cutoff, key_clocks)
    key_clocks.unpersist()
    same = ours[:2] == theirs[:2] and math.isclose(ours[2], theirs[2], rel_tol=1e-9, abs_tol=1e-6)
    return f"{'yes' if same else 'NO'} ({ours[0]:,} windows, {ours[1]:,} rows; native {theirs[0]:,}, {theirs[1]:,})"


def count_windows(spark, case_root: Path, files: list[Path], size: int) -> str:
    counts = spark.read.parquet(*[str(f) for f in files]).groupBy("k").count()
    expected = counts.selectExpr(f"coalesce(sum(count div {size}), 0) AS w").collect()[0]["w"]
    sink = case_root / "sqlwin-sink"
    got = (spark.read.parquet(str(sink)).selectExpr("count(*) AS w", "coalesce(sum(n), 0) AS n",
                                                    f"coalesce(sum(CAST(n <> {size} AS INT)), 0) AS bad")
           .collect()[0]) if sink.exists() else {"w": 0, "n": 0, "bad": 0}
    ok = got["w"] == expected and got["n"] == expected * size and got["bad"] == 0
    return f"{'yes' if ok else 'NO'} ({got['w']:,} full windows of {size}, expected {expected:,})"


def directory_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def mib(value) -> str:
    if value is None:
        return "-"
    return f"{value / 2**20:,.2f} MiB" if value >= 2**20 else f"{value / 2**10:,.0f} KiB"


# --------------------------------------------------------------------------- memory


def jvm_pid(spark) -> int | None:
    try:
        return spark.sparkContext._gateway.proc.pid
    except Exception:  # not a local launch
        return None


def peak_jvm_memory_mib(spark) -> float | None:
    try:
        for line in Path(f"/proc/{jvm_pid(spark)}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except Exception:  # not a local launch, or no /proc: memory is not reported
        return None
    return None


class WorkerMemory(threading.Thread):
    """Samples the summed RSS of the JVM's descendant processes (the Python workers) twice a second."""

    def __init__(self, root_pid: int | None):
        super().__init__(daemon=True)
        self.root_pid, self.peak, self.processes = root_pid, 0, 0
        self.done = threading.Event()

    def run(self) -> None:
        while self.root_pid and not self.done.wait(0.5):
            try:
                total, processes = self._sample()
            except OSError:
                continue
            if total > self.peak:
                self.peak, self.processes = total, processes

    def _sample(self) -> tuple[int, int]:
        parents: dict[int, int] = {}
        rss: dict[int, int] = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
                fields = stat[stat.rindex(")") + 2:].split()
                parents[int(entry.name)] = int(fields[1])
                rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError, IndexError):
                continue
        total = processes = 0
        for pid in rss:
            parent = parents.get(pid)
            while parent and parent != self.root_pid:
                parent = parents.get(parent)
            if parent == self.root_pid:
                total += rss[pid]
                processes += 1
        return total, processes


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--keys", type=int, default=10_000)
    parser.add_argument("--batch-rows", type=int, default=100_000, help="rows per micro-batch")
    parser.add_argument("--batches", type=int, default=10, help="micro-batches fed to both engines")
    parser.add_argument("--warmup-batches", type=int, default=1,
                        help="first micro-batches left out of rows/s and latency (JIT, worker start-up)")
    parser.add_argument("--state-multiplier", type=int, default=10,
                        help="run the sqlwin stream on to this many times --batches and report its state "
                             "again (0 or 1: skip)")
    parser.add_argument("--state-batch-rows", type=int, default=None,
                        help="rows per micro-batch after the first --batches (default: --batch-rows / 5, "
                             "at least --keys so every key is seen in every batch)")
    parser.add_argument("--no-state-native", dest="state_native", action="store_false",
                        help="feed the state run's batches to sqlwin only (default: to both, native as a reference)")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    parser.add_argument("--only", action="append", default=[], metavar="KIND",
                        help="run only the cases whose name starts with KIND (TUMBLE, SESSION, COUNT_WINDOW, "
                             "EARLY, RETRACTING, JOIN)")
    parser.add_argument("--arrival-order", action="store_true",
                        help="name the arrival column in every sqlwin query: TABLE events ... WITH "
                             "(arrival_order = seq). Without it COUNT_WINDOW (no ORDER BY) is refused by sqlwin")
    parser.add_argument("--one-clock", action="store_true",
                        help="no PARTITION BY: one watermark for the stream, as native Spark's (issue 22's scale-out "
                             "cases); run with SQLWIN_MASTER=local[1] / local[2] for the speed-up from 1 to 2 cores")
    parser.add_argument("--verbose", action="store_true",
                        help="print every input batch: wall time and each Spark micro-batch's durationMs")
    parser.add_argument("--keep", action="store_true", help="keep the working directory and print where it is")
    args = parser.parse_args()
    if args.batches <= args.warmup_batches:
        parser.error("--batches must be more than --warmup-batches")
    state_rows = args.state_batch_rows or max(args.keys, args.batch_rows // 5)
    state_batches = args.batches * args.state_multiplier if args.state_multiplier > 1 else 0

    spark = sqlwin.session(app_name="sqlwin-stream-bench", shuffle_partitions=args.shuffle_partitions)
    from pyspark.sql import functions as F

    sw = sqlwin.attach(spark)
    workers = WorkerMemory(jvm_pid(spark))
    workers.start()
    tmp = Path(tempfile.mkdtemp(prefix="sqlwin-stream-bench-"))
    try:
        files_dir = tmp / "files"
        files_dir.mkdir()
        started = time.perf_counter()
        files = generate(spark, files_dir, 0, args.batches, args.batch_rows, args.keys, 0)
        more = generate(spark, files_dir, args.batches, state_batches - args.batches, state_rows, args.keys,
                        args.batches * args.batch_rows) if state_batches else []
        schema = spark.read.parquet(str(files[0])).schema
        print(f"pyspark {spark.version}, master {spark.sparkContext.master}, "
              f"{args.shuffle_partitions} shuffle partitions, RocksDB state store")
        print(f"generated {args.batches} micro-batches x {args.batch_rows:,} rows over {args.keys:,} keys"
              + (f" + {len(more)} x {state_rows:,} rows for the state run" if more else "")
              + f" in {time.perf_counter() - started:.1f} s; one minute of event time per batch")
        if args.batch_rows < args.keys:
            print(f"note: {args.batch_rows:,} rows per batch < {args.keys:,} keys: not every key is in every batch")
        scope = "one watermark for the stream (no PARTITION BY)" if args.one_clock else "a watermark per key (PARTITION BY k)"
        print(f"watermark delay 5 s. sqlwin: {scope}; native Spark: one global "
              f"watermark for the stream. The first {args.warmup_batches} batch(es) of each stream are a "
              f"warm-up, left out of rows/s and latency.")
        print("latency = per input batch, the sum of durationMs.triggerExecution of the micro-batches Spark "
              "ran for it (native: the data batch and the no-data batch that emits what the new watermark "
              "closed); ms median / p95 / max")
        print()
        results = []
        if args.arrival_order:
            print("--arrival-order: sqlwin queries name the arrival column, TABLE events ... WITH "
                  "(arrival_order = seq), seq = the row's position in the stream")
        all_cases = cases(F, arrival_order=args.arrival_order, one_clock=args.one_clock)
        started = time.perf_counter()
        if warm_up(spark, sw, schema, all_cases[0], tmp / "warm-up", files[:2]):
            print(f"warm-up (JIT, Python workers): {all_cases[0].name} over {min(2, len(files))} batches "
                  f"in both engines, not reported ({time.perf_counter() - started:.1f} s)")
        print()
        for case in all_cases:
            if args.only and not any(case.name.startswith(kind) for kind in args.only):
                continue
            result = run_case(spark, sw, schema, case, tmp / case.name.split()[0].lower(), files, more, args)
            if result:
                results.append(result)
        print()
        print(f"{'window':<16} {'sqlwin rows/s':>14} {'native rows/s':>14} {'ratio':>6}  "
              f"{'sqlwin latency ms':>24} {'native latency ms':>24}  native reference")
        for r in results:
            print(f"{r['name']:<16} {r['ours']:>14,.0f} {r['theirs']:>14,.0f} {r['ratio']:>6.2f}  "
                  f"{r['our_latency']:>24} {r['their_latency']:>24}  {r['native_name']}")
        print("latency ms: median / p95 / max per input batch")
        print("ratio = sqlwin rows/s / native rows/s (goal >= 0.8)")
    finally:
        workers.done.set()
        memory = peak_jvm_memory_mib(spark)
        if memory:
            print(f"peak JVM resident memory: {memory:,.0f} MiB")
        if workers.peak:
            print(f"peak Python worker resident memory: {workers.peak / 2**20:,.0f} MiB summed over "
                  f"{workers.processes} processes (daemons and workers, sampled every 0.5 s)")
        spark.stop()
        if args.keep:
            print(f"working directory kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def warm_up(spark, sw, schema, case: Case, root: Path, files: list[Path]) -> bool:
    """Run both engines over a few batches once, so the first case does not pay the JVM's warm-up."""
    root.mkdir(parents=True)
    try:
        ours = start_sqlwin(sw, spark, schema, case, root)
    except Exception:  # reported when the case itself runs
        return False
    theirs = None
    try:
        theirs = start_native(spark, schema, case, root)
        feed_interleaved((ours, theirs), files)
    finally:
        if theirs is not None:
            theirs.query.stop()
        ours.handle.stop()
    return True


def run_case(spark, sw, schema, case: Case, root: Path, files: list[Path], more: list[Path], args) -> dict | None:
    print(f"== {case.name} (native: {case.native_name})")
    print(f"   {case.query}")
    root.mkdir(parents=True)
    try:
        ours = start_sqlwin(sw, spark, schema, case, root)
    except Exception as err:  # a query sqlwin refuses, or Spark refuses its lowering: say so, go on
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        print(f"   sqlwin did not start the stream: {type(err).__name__}: {first}")
        return None
    theirs = None
    try:
        theirs = start_native(spark, schema, case, root)
        feed_interleaved((ours, theirs), files)
        if args.verbose:
            for engine in (ours, theirs):
                print_inputs(engine)
        result = throughput(case, ours, theirs, args)
        check_results(spark, case, root, files)
        dropped = sum((p["stateOperators"] or [{}])[0].get("numRowsDroppedByWatermark", 0) or 0
                      for p in theirs.progress)
        if dropped:
            print(f"   native dropped {dropped:,} rows behind its watermark")
        state_one = state_report(spark, root, ours, theirs, len(files))
        if more:
            engines = (ours, theirs) if args.state_native else (ours,)
            started = time.perf_counter()
            feed_interleaved(engines, more)
            wall = time.perf_counter() - started
            if args.verbose:
                for engine in engines:
                    print_inputs(engine, len(files))
            rows = sum(r for r, _, _ in ours.per_input[len(files):])
            print(f"   state run: {len(more)} more batches of {rows // len(more):,} rows"
                  f"{' to both engines' if args.state_native else ' to sqlwin only'} in {wall:.1f} s "
                  f"(sqlwin {rows / sum(w for _, w, _ in ours.per_input[len(files):]):,.0f} rows/s"
                  + (f", native {rows / sum(w for _, w, _ in theirs.per_input[len(files):]):,.0f} rows/s)"
                     if args.state_native else ")"))
            if args.state_native or case.check == "count windows":
                check_results(spark, case, root, files + more)
            state_later = state_report(spark, root, ours, theirs if args.state_native else None,
                                       len(files) + len(more))
            factor = (len(files) + len(more)) / len(files)
            for name, one, later in (("sqlwin", state_one[0], state_later[0]),
                                     ("native", state_one[1], state_later[1])):
                if later is None:
                    continue
                growth = ", ".join(f"{label} x{later[k] / one[k]:.2f}" for k, label in STATE_FIGURES
                                   if one.get(k) and later.get(k) is not None)
                print(f"   {name} state growth 1x -> {factor:g}x: {growth}")
            retained = spark.conf.get("spark.sql.streaming.minBatchesToRetain", "100")
            print(f"   (state values: sqlwin's state read back with Spark's state data source, the figure that "
                  f"must stay flat; RocksDB memory and SST sizes include overwritten values until compaction; "
                  f"on disk keeps the state of the last {retained} batches (spark.sql.streaming.minBatchesToRetain), "
                  "so it grows with the batch count until then)")
        return result
    finally:
        if theirs is not None:
            theirs.query.stop()
        ours.handle.stop()


def join_windows(spark, case_root: Path, files: list[Path]) -> str:
    """The join gives one row per key and window that either input has; compared with native's
    windows that both inputs' watermarks (the earlier of the two) have passed."""
    newest = spark.read.parquet(*[str(f) for f in files]).selectExpr(
        "max(CASE WHEN v < 50 THEN ts END) AS l", "max(CASE WHEN v >= 50 THEN ts END) AS r").collect()[0]
    closed = f"window_end <= timestamp_millis({int(min(newest['l'], newest['r']).timestamp() * 1000)}) - INTERVAL {DELAY}"
    sink = case_root / "sqlwin-sink"
    ours = spark.read.parquet(str(sink)).where(closed).select("k", "window_start").distinct().count() \
        if sink.exists() else 0
    rows = spark.read.parquet(str(sink)).where(closed).count() if sink.exists() else 0
    theirs = spark.read.parquet(str(case_root / "native-sink")).where(closed).count()
    ok = ours == theirs == rows
    return f"{'yes' if ok else 'NO'} ({rows:,} joined rows, {ours:,} key-windows; native {theirs:,} windows)"


def check_results(spark, case: Case, root: Path, files: list[Path]) -> None:
    if case.check == "join windows":
        print(f"   after {len(files)} batches, one joined row per key and window closed by both inputs: "
              f"{join_windows(spark, root, files)}")
    elif case.check == "same windows":
        print(f"   after {len(files)} batches, same windows as native (those started before the last batch's "
              f"minute and closed by their key's watermark): {same_windows(spark, root, files)}")
    else:
        print(f"   after {len(files)} batches, every full count window emitted once: "
              f"{count_windows(spark, root, files, 10)}")


STATE_FIGURES = (("values", "state values"), ("rows", "numRowsTotal"), ("memory", "memoryUsedBytes"),
                 ("sst", "live SST"), ("disk", "on disk"))


def feed_interleaved(engines, files: list[Path]) -> None:
    """Each file to every engine in turn, alternating who goes first, so drift hits both alike."""
    for index, file in enumerate(files):
        for engine in (engines if index % 2 == 0 else tuple(reversed(engines))):
            engine.feed(file)


def throughput(case: Case, ours: Engine, theirs: Engine, args) -> dict:
    o_rows, o_wall, o_latency, o_batches = measured(ours, args.warmup_batches, args.batches)
    t_rows, t_wall, t_latency, t_batches = measured(theirs, args.warmup_batches, args.batches)
    if case.check == "join windows":
        o_rows //= 2  # both inputs of the join scan the same files: Spark counts each row twice
    result = {
        "name": case.name, "native_name": case.native_name,
        "ours": o_rows / o_wall, "theirs": t_rows / t_wall, "ratio": (o_rows / o_wall) / (t_rows / t_wall),
        "our_latency": latency_text(o_latency), "their_latency": latency_text(t_latency),
    }
    print(f"   {args.batches - args.warmup_batches} measured batches, {o_rows:,} rows each engine: "
          f"sqlwin {o_wall:.2f} s ({result['ours']:,.0f} rows/s, {o_batches:.1f} Spark batches per input), "
          f"native {t_wall:.2f} s ({result['theirs']:,.0f} rows/s, {t_batches:.1f} Spark batches per input); "
          f"ratio {result['ratio']:.2f}")
    print(f"   latency ms median / p95 / max: sqlwin {result['our_latency']}, native {result['their_latency']}")
    return result


def state_report(spark, root: Path, ours: Engine, theirs: Engine | None, batches: int) -> tuple[dict, dict | None]:
    mine = ours.state(spark, root / "sqlwin-checkpoint" / "spark",
                      ("bucket", "directory", "segments", "index"))
    native = theirs.state(spark, root / "native-checkpoint") if theirs else None
    rows = sum(r for r, _, _ in ours.per_input)
    print(f"   state after {batches} batches ({rows:,} rows): sqlwin {state_text(mine)}"
          + (f"; native {state_text(native)}" if native else ""))
    return mine, native


def print_inputs(engine: Engine, first: int = 0) -> None:
    for index, (rows, wall, progress) in enumerate(engine.per_input[first:], start=first):
        parts = []
        for p in progress:
            durations = ", ".join(f"{k} {v}" for k, v in sorted(p["durationMs"].items()) if v)
            op = (p["stateOperators"] or [{}])[0]
            parts.append(f"[batch {p['batchId']}: {p['numInputRows']} rows, state rows updated "
                         f"{op.get('numRowsUpdated', '-')}, {durations}]")
        print(f"   {engine.name} input {index}: {rows:,} rows, {wall * 1000:,.0f} ms wall " + " ".join(parts))


def state_text(state: dict) -> str:
    values = f"state values {mib(state['values'])}, " if state.get("values") is not None else ""
    return (values + f"numRowsTotal {state['rows']}, memoryUsedBytes {mib(state['memory'])}, "
            f"live SST {mib(state['sst'])}, on disk {mib(state['disk'])}")


if __name__ == "__main__":
    main()

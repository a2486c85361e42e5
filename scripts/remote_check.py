#!/usr/bin/env python
"""Run sqlwin on any Spark -- a cluster, a Spark Connect server, local -- and print what it returns.

    .venv/bin/python scripts/remote_check.py [--master URL | --remote sc://HOST:PORT] [--workdir DIR]
                                             [--examples all|NAME,...] [--json]

Without --master / --remote: where sqlwin.session() points (SQLWIN_REMOTE, SQLWIN_MASTER, else
local[2]). Three checks, each through the public API as a user runs it:
- examples: shipped queries of sql_examples/ over their data (complete input, native Spark SQL);
- replays: a recorded stream replayed with `WITH (arrival_order = ..., arrival_batch = ...)`, once
  through the vectorised runtime (EMIT FINAL) and once through the general one (EMIT EARLY, LATE
  ROWS INTO);
- stream: the second replay's query as a Structured Streaming query (`sw.stream`) over a directory
  of parquet files, one file per micro-batch, its results read back from the sink.
The replay and the stream must emit the same rows; every result must equal a local run's
(tests/test_cluster.py and tests/test_connect.py run this script as a separate client and compare).
"""

from __future__ import annotations

import argparse
import datetime as dt
import decimal
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "sql_examples"
STATE_STORE = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
SOURCE = "remote_events"
# (k, ts epoch ms, v) per micro-batch; each key's watermark is its max ts - 2 s after a batch.
BATCHES = [
    [("a", 1000, 1), ("b", 2000, 2), ("a", 4000, 3), ("a", 9000, 4), ("b", 11000, 5)],
    [("a", 13000, 6), ("b", 3000, 7), ("a", 12500, 8)],  # a: 11 s closes a [0, 10 s); b's [0, 10 s) still open
    [("b", 15000, 9), ("a", 5000, 10), ("c", 1000, 11), ("a", 25000, 12)],  # a's 5 s row is late; b: 13 s closes b [0, 10 s)
]  # the end of input closes the rest
# The recorded stream: (k, ts, v, arrival, batch).
RECORDED = [(*row, arrival, batch) for arrival, (batch, row) in
            enumerate((b, row) for b, rows in enumerate(BATCHES) for row in rows)]
SCHEMA = "k STRING, ts BIGINT, v INT, arrival INT, batch INT"
ARRIVAL = " WITH (arrival_order = arrival, arrival_batch = batch)"
REPLAY_FINAL = f"""
SELECT k, window_start, window_end, count(*) AS n, sum(v) AS total, max(v) AS top
FROM TUMBLE(TABLE {SOURCE} PARTITION BY k WATERMARK ts DELAY OF INTERVAL 2 SECONDS{{options}},
            DESCRIPTOR(ts), INTERVAL 10 SECONDS)
GROUP BY k, window_start, window_end
"""
REPLAY_EARLY = f"""
SELECT k, window_start, window_end, count(*) AS n, collect_list(v) AS vs
FROM TUMBLE(TABLE {SOURCE} PARTITION BY k WATERMARK ts DELAY OF INTERVAL 2 SECONDS{{options}},
            DESCRIPTOR(ts), INTERVAL 10 SECONDS)
GROUP BY k, window_start, window_end
EMIT EARLY EVERY 2 ROWS
LATE ROWS INTO late_{SOURCE}
"""


def plain(value):
    """A value as JSON holds it, the same whichever Spark returned it."""
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (dt.datetime, dt.date)):
        return value.isoformat(sep=" ") if isinstance(value, dt.datetime) else value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, float):
        return round(value, 9)
    return value


def rows_of(frame) -> list:
    return [plain(list(row)) for row in frame.collect()]


def declared_tables(query_file: Path) -> dict[str, Path]:
    """`-- sqlwin:table NAME=PATH` comments of a shipped example, absolute."""
    tables = {}
    for line in query_file.read_text().splitlines():
        marker = line.strip().removeprefix("--").strip()
        if marker.startswith("sqlwin:table "):
            name, _, path = marker.removeprefix("sqlwin:table ").strip().partition("=")
            tables[name] = (query_file.parent / path).resolve()
    return tables


def run_examples(sw, names: list[str]) -> dict:
    results = {}
    for name in names:
        query_file = EXAMPLES / name
        for table, path in declared_tables(query_file).items():
            sw.spark.read.option("header", True).option("inferSchema", True).csv(str(path)) \
                .createOrReplaceTempView(table)
        results[name] = rows_of(sw.sql(query_file.read_text()))
    return results


def run_replays(sw) -> dict:
    sw.spark.createDataFrame(RECORDED, SCHEMA).createOrReplaceTempView(SOURCE)
    final = rows_of(sw.sql(REPLAY_FINAL.format(options=ARRIVAL)))
    early = rows_of(sw.sql(REPLAY_EARLY.format(options=ARRIVAL)))
    late = rows_of(sw.spark.table(f"late_{SOURCE}"))
    explained = str(sw.explain(REPLAY_EARLY.format(options=ARRIVAL)))
    return {"final": final, "early": early, "late": late, "explain": explained}


def run_stream(sw, workdir: Path, timeout_s: float = 300.0) -> dict:
    """REPLAY_EARLY as a stream over a directory of parquet files, fed one file per micro-batch.

    The source, sink and checkpoint are given relative to the working directory, as a user in a
    notebook gives them (over Spark Connect the server's working directory is another one); the
    files are written and read back with pyarrow, on this side.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = workdir / "stream"
    shutil.rmtree(root, ignore_errors=True)
    (root / "source").mkdir(parents=True)
    source, sink, late, checkpoint = (os.path.relpath(root / n) for n in ("source", "sink", "late", "checkpoint"))
    kinds = [("k", pa.string()), ("ts", pa.int64()), ("v", pa.int32()), ("arrival", pa.int32()), ("batch", pa.int32())]

    def put(batch: int) -> None:  # one whole parquet file: the next micro-batch
        rows = [r for r in RECORDED if r[4] == batch]
        table = pa.table({name: pa.array([r[i] for r in rows], kind) for i, (name, kind) in enumerate(kinds)})
        tmp = root / "source" / f".batch-{batch:04d}.tmp"
        pq.write_table(table, tmp)
        tmp.rename(root / "source" / f"batch-{batch:04d}.parquet")

    batches = sorted({r[4] for r in RECORDED})
    put(batches[0])  # a directory source reads its schema from the files already there
    handle = sw.stream(REPLAY_EARLY.format(options=""), sources={SOURCE: source}, sink=sink, late_sink=late,
                       checkpoint=checkpoint, source_options={"maxFilesPerTrigger": "1"})
    try:
        handle.process_all_available(timeout_s)
        for batch in batches[1:]:
            put(batch)
            handle.process_all_available(timeout_s)
        handle.end_input()
        status = handle.status()
        seen = len(handle.batches)
    finally:
        handle.stop()
    return {"rows": _read_sink(root / "sink"), "late": _read_sink(root / "late"),
            "status": plain(status), "handle_batches": seen}


def _read_sink(sink: Path) -> list:
    """Every batch_id=N directory's rows, batch by batch, in the order written (pyarrow, no Spark)."""
    import pyarrow.parquet as pq

    rows = []
    for batch in sorted(sink.glob("batch_id=*"), key=lambda p: int(p.name.split("=")[1])):
        for part in sorted(batch.glob("*.parquet")):
            table = pq.read_table(part)
            rows += [plain([record[c] for c in table.column_names]) for record in table.to_pylist()]
    return rows


FUNCTION_CALLS = {
    "tumble": "tumble(TABLE(fn_remote), 'ts', INTERVAL '1' MINUTE)",
    "session": "session(TABLE(fn_remote) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
    "count_window": "count_window(TABLE(fn_remote) PARTITION BY k ORDER BY (ts), 'ts', 2)",
}


def run_functions(spark) -> dict:
    """sqlwin.register's functions in plain spark.sql: native plans on a classic session, the Python
    UDTFs over Connect (docs/functions.md); both must give the same rows."""
    import sqlwin

    sqlwin.register(spark)
    spark.sql("SELECT * FROM VALUES ('a', TIMESTAMP '2023-12-14 00:00:10'), ('a', TIMESTAMP '2023-12-14 00:00:30'), "
              "('a', TIMESTAMP '2023-12-14 00:01:20'), ('b', TIMESTAMP '2023-12-14 00:00:50'), "
              "('b', NULL), (NULL, TIMESTAMP '2023-12-14 00:00:05') AS t(k, ts)").createOrReplaceTempView("fn_remote")
    return {name: sorted(rows_of(spark.sql(f"SELECT * FROM {call}")), key=json.dumps)
            for name, call in FUNCTION_CALLS.items()}


def run_checks(spark, workdir: Path, examples: list[str] | None = None) -> dict:
    """Every check on `spark`, timed; the dict the script prints."""
    import sqlwin

    sw = sqlwin.attach(spark)
    names = examples if examples is not None else sorted(p.name for p in EXAMPLES.glob("*.sql"))
    timings, out = {}, {}
    for name, check in (("examples", lambda: run_examples(sw, names)), ("replays", lambda: run_replays(sw)),
                        ("stream", lambda: run_stream(sw, workdir)), ("functions", lambda: run_functions(spark))):
        began = time.monotonic()
        out[name] = check()
        timings[name] = round(time.monotonic() - began, 2)
    out["timings"] = timings
    return out


_LOCAL: dict = {}


def local_reference(spark, workdir: Path, examples: list[str]) -> dict:
    """The checks on a session of its own over `spark`'s SparkContext (its temp views stay apart), once
    per process and list of examples: what a remote run must equal."""
    key = tuple(examples)
    if key not in _LOCAL:
        try:
            _LOCAL[key] = run_checks(spark.newSession(), workdir, examples)
        finally:  # creating the new session made it PySpark's active one (process-wide): give `spark` back
            from pyspark.sql import SparkSession

            SparkSession._activeSession = spark
            spark._jvm.SparkSession.setActiveSession(spark._jsparkSession)
    return _LOCAL[key]


def spawn_client(code: str, args: list[str], env: dict[str, str], cwd: Path):
    """Run Python `code` as a separate client process in `cwd` (output into client.out / client.err
    there), so that a test can compute the local reference meanwhile."""
    import subprocess

    env = {**env, "SQLWIN_TEST_SCRIPTS": str(Path(__file__).resolve().parent)}
    with open(cwd / "client.out", "w") as out, open(cwd / "client.err", "w") as err:
        process = subprocess.Popen([sys.executable, "-c", code, *args], cwd=cwd, env=env, stdout=out, stderr=err,
                                   stdin=subprocess.DEVNULL)
    process.began = time.monotonic()
    process.cwd = cwd
    return process


def client_result(process, timeout_s: float) -> dict:
    """The JSON document the client printed last; its failure's output otherwise. Kills it on timeout."""
    import subprocess

    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"the client ran over {timeout_s} s:\n{_tail(process.cwd / 'client.err')}") from None
    if process.returncode != 0:
        raise AssertionError(f"the client failed (exit {process.returncode}):\n{_tail(process.cwd / 'client.err')}")
    out = json.loads((process.cwd / "client.out").read_text().strip().splitlines()[-1])
    out["client_seconds"] = round(time.monotonic() - process.began, 2)
    return out


def _tail(path: Path, chars: int = 6000) -> str:
    text = path.read_text(errors="replace") if path.exists() else ""
    return text[-chars:]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--master", help="a Spark master URL (spark://HOST:PORT, local[N], ...)")
    where.add_argument("--remote", help="a Spark Connect server, sc://HOST:PORT")
    parser.add_argument("--workdir", type=Path, help="where the stream's files go (default: a new temp dir)")
    parser.add_argument("--examples", default="all", help="all, or example file names separated by commas")
    parser.add_argument("--json", action="store_true", help="print everything as one JSON document")
    args = parser.parse_args(argv)
    import sqlwin

    began = time.monotonic()
    spark = sqlwin.session(app_name="sqlwin-remote-check", master=args.master, remote=args.remote)
    started = round(time.monotonic() - began, 2)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="sqlwin-check-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    examples = None if args.examples == "all" else [n.strip() for n in args.examples.split(",") if n.strip()]
    try:
        out = run_checks(spark, workdir, examples)
    finally:
        spark.stop()
    out["timings"]["session"] = started
    stream = out["stream"]
    out["agree"] = {"stream equals replay": stream["rows"] == out["replays"]["early"]
                    and stream["late"] == out["replays"]["late"]}
    if args.json:
        print(json.dumps(out))
    else:
        for name, rows in out["examples"].items():
            print(f"example {name}: {len(rows)} rows")
        print(f"replays: {len(out['replays']['final'])} final rows, {len(out['replays']['early'])} early/final "
              f"rows, {len(out['replays']['late'])} late rows")
        print(f"stream: {len(stream['rows'])} rows, {len(stream['late'])} late rows; equals the replay: "
              f"{out['agree']['stream equals replay']}")
        print(f"seconds: {out['timings']}")
    return 0 if all(out["agree"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Nexmark q5, q7, q8 and q11 in Flink SQL (streaming mode) over benchmarks/nexmark.py's events.

    /work/flinkenv/bin/python benchmarks/flink_nexmark.py EVENTS_DIR WORK_DIR \\
        [--warmup-batches 2] [--parallelism 2] [--state-backend hashmap] [--only q5 ...] [--json OUT]

Run by the Python of a venv holding PyFlink (benchmarks/flink_setup.sh makes /work/flinkenv;
PyFlink pins py4j, numpy and pandas versions that clash with pyspark, so not sqlwin's venv).
benchmarks/nexmark.py --flink PYTHON runs it after its Spark runs over the same directory.

Input. EVENTS_DIR is nexmark.py's `generate` output, <stream>/batch-NNNNNN.parquet. The
PyFlink wheel bundles the filesystem connector with the csv and json formats but not parquet
(and nothing can be fetched from Maven here), so each stream is converted with pyarrow, before
anything is timed, to CSV (timestamps as 'yyyy-MM-dd HH:mm:ss.SSS', UTC wall clock, read as
TIMESTAMP(3)): the warm-up batches (the first --warmup-batches) into WORK_DIR/csv/warmup, the
measured ones into WORK_DIR/csv/measured. Each phase's rows are dealt round-robin into
--parallelism files per stream, each still in event-time order: a CSV file is one split, so
each of the source's subtasks reads one file from start to end, as each subtask of Nexmark's
generator produces every P-th event. (Files read in another order by one subtask would make
later files' rows late against that subtask's watermark; the filesystem source does not promise
an order across files.)

Queries, one function each below, written as nexmark's Flink queries are, with window TVFs, on
tables declared with `WATERMARK FOR dateTime AS dateTime - INTERVAL '5' SECOND` (sqlwin's
5 s delay; Flink combines the per-subtask watermarks by their minimum, one clock per stream):
- q5: bids per auction per HOP window (slide 2 s, size 10 s), the stateful part sqlwin's q5
  runs (Nexmark's last step, the auctions with each window's max count, is not in either's time).
- q7: per TUMBLE 10 s window the max price, joined back (a window join on the window and the
  price) to the window's bids: nexmark's shape, not sqlwin's max + max_by (Flink 2.3 has no
  MAX_BY); it returns every bid at the top price where sqlwin returns one.
- q8: persons and auctions each grouped per (id / seller, TUMBLE 10 s window), window-joined
  on id = seller and the window.
- q11: bids per bidder per SESSION window (PARTITION BY bidder). The gap is 9.999 s and the
  end the last bid + 10 s: Flink merges sessions whose bids are exactly one gap apart, sqlwin
  opens a new one (nexmark.py's native Spark q11 does the same with 10 s - 1 µs; times here are ms).
Sinks are filesystem CSV sinks (WORK_DIR/sink/<query>/), so the result rows can be counted
and checked (nexmark.py compares them with its Spark reference).

Run. One TableEnvironment in streaming mode (local MiniCluster in PyFlink's gateway JVM),
parallelism.default = --parallelism, nexmark's table settings (mini-batch on, 2 s / 50,000 rows),
no checkpointing, state backend --state-backend (Flink's default `hashmap`, state on the heap;
`rocksdb` as nexmark's flink-conf). Per query: first an untimed job over the warm-up batches
(JIT and class loading, as nexmark.py's warm-up micro-batches; its state is not carried over),
then the timed job over the measured batches. The filesystem source is bounded (no
source.monitor-interval): the job ends when its files are read, and at their end each source
subtask sends the final (maximum) watermark, which fires every window still open -- so Flink
emits all windows, where the Spark engines stop at the last micro-batch's watermark.

Figures. seconds = wall time from `execute_sql(INSERT ...)` (planning, MiniCluster start,
submission) to the job's end (`wait()`), printed also split into submit / run; events = all
Nexmark events (person + auction + bid) of the measured batches, as nexmark.py counts them;
events/s = events / seconds. Result rows are counted from the sink's CSV files.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

STREAMS = ("person", "auction", "bid")
DELAY = "INTERVAL '5' SECOND"

# --------------------------------------------------------------------------- the tables (all DDL here)

# Flink types of the parquet columns nexmark.py writes (timestamps are whole milliseconds there).
COLUMNS = {
    "person": [("id", "BIGINT"), ("name", "STRING"), ("emailAddress", "STRING"), ("creditCard", "STRING"),
               ("city", "STRING"), ("state", "STRING"), ("dateTime", "TIMESTAMP(3)"), ("extra", "STRING")],
    "auction": [("id", "BIGINT"), ("itemName", "STRING"), ("description", "STRING"), ("initialBid", "BIGINT"),
                ("reserve", "BIGINT"), ("dateTime", "TIMESTAMP(3)"), ("expires", "TIMESTAMP(3)"),
                ("seller", "BIGINT"), ("category", "BIGINT"), ("extra", "STRING")],
    "bid": [("auction", "BIGINT"), ("bidder", "BIGINT"), ("price", "BIGINT"), ("channel", "STRING"),
            ("url", "STRING"), ("dateTime", "TIMESTAMP(3)"), ("extra", "STRING")],
}


def source_ddl(stream: str, path: Path) -> str:
    columns = ",\n  ".join(f"`{name}` {kind}" for name, kind in COLUMNS[stream])
    return (f"CREATE TEMPORARY TABLE {stream} (\n  {columns},\n"
            f"  WATERMARK FOR `dateTime` AS `dateTime` - {DELAY}\n"
            f") WITH ('connector' = 'filesystem', 'path' = 'file://{path}', 'format' = 'csv')")


def sink_ddl(name: str, columns: list[tuple[str, str]], path: Path) -> str:
    listed = ", ".join(f"`{c}` {kind}" for c, kind in columns)
    return (f"CREATE TEMPORARY TABLE {name} ({listed}) "
            f"WITH ('connector' = 'filesystem', 'path' = 'file://{path}', 'format' = 'csv')")


# --------------------------------------------------------------------------- the queries
#
# Each returns (streams read, sink columns, SELECT).


def q5():
    return ("bid",), [("auction", "BIGINT"), ("window_start", "TIMESTAMP(3)"), ("window_end", "TIMESTAMP(3)"),
                      ("num", "BIGINT")], """
        SELECT auction, window_start, window_end, COUNT(*) AS num
        FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
        GROUP BY auction, window_start, window_end"""


def q7():
    return ("bid",), [("window_start", "TIMESTAMP(3)"), ("window_end", "TIMESTAMP(3)"), ("price", "BIGINT"),
                      ("auction", "BIGINT"), ("bidder", "BIGINT"), ("dateTime", "TIMESTAMP(3)")], """
        SELECT B.window_start, B.window_end, B.price, B.auction, B.bidder, CAST(B.`dateTime` AS TIMESTAMP(3))
        FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) B
        JOIN (
          SELECT window_start, window_end, MAX(price) AS maxprice
          FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
          GROUP BY window_start, window_end
        ) M
        ON B.window_start = M.window_start AND B.window_end = M.window_end AND B.price = M.maxprice"""


def q8():
    return ("person", "auction"), [("id", "BIGINT"), ("name", "STRING"), ("window_start", "TIMESTAMP(3)")], """
        SELECT P.id, P.name, P.window_start
        FROM (
          SELECT id, name, window_start, window_end
          FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
          GROUP BY id, name, window_start, window_end
        ) P
        JOIN (
          SELECT seller, window_start, window_end
          FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
          GROUP BY seller, window_start, window_end
        ) A
        ON P.id = A.seller AND P.window_start = A.window_start AND P.window_end = A.window_end"""


def q11():
    return ("bid",), [("bidder", "BIGINT"), ("bid_count", "BIGINT"), ("starttime", "TIMESTAMP(3)"),
                      ("endtime", "TIMESTAMP(3)")], """
        SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime,
               window_end + INTERVAL '0.001' SECOND AS endtime
        FROM TABLE(SESSION(TABLE bid PARTITION BY bidder, DESCRIPTOR(`dateTime`), INTERVAL '9.999' SECOND))
        GROUP BY bidder, window_start, window_end"""


QUERIES = {"q5": q5, "q7": q7, "q8": q8, "q11": q11}

# --------------------------------------------------------------------------- input


def convert(events_dir: Path, csv_dir: Path, warmup: int, parallelism: int) -> dict:
    """The parquet batches as CSV, per phase and stream `parallelism` files dealt round-robin
    (each in event-time order). Returns {phase: {"batches": n, "events": all events, stream: rows}}."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as csv
    import pyarrow.parquet as pq

    batches = sorted(p.name for p in (events_dir / "bid").glob("batch-*.parquet"))
    phases = {"warmup": batches[:warmup], "measured": batches[warmup:]}
    summary = {}
    for phase, names in phases.items():
        summary[phase] = {"batches": len(names), "events": 0}
        for stream in STREAMS:
            out = csv_dir / phase / stream
            out.mkdir(parents=True)
            rows = 0
            writers = [csv.CSVWriter(out / f"part-{k}.csv", _csv_schema(stream),
                                     write_options=csv.WriteOptions(include_header=False,
                                                                     quoting_style="none"))
                       for k in range(parallelism)] if names else []
            for name in names:
                table = pq.read_table(events_dir / stream / name)
                for column, kind in COLUMNS[stream]:
                    if kind.startswith("TIMESTAMP"):
                        index = table.schema.get_field_index(column)
                        text = pc.strftime(table.column(column).cast(pa.timestamp("ms", tz="UTC")),
                                           format="%Y-%m-%d %H:%M:%S")
                        table = table.set_column(index, column, text)
                table = table.select([c for c, _ in COLUMNS[stream]])
                for k, writer in enumerate(writers):
                    writer.write_table(table.take(pa.array(range(k, table.num_rows, parallelism))))
                rows += table.num_rows
            for writer in writers:
                writer.close()
            summary[phase][stream] = rows
            summary[phase]["events"] += rows  # every Nexmark event is a person, an auction or a bid
    return summary


def _csv_schema(stream: str):
    import pyarrow as pa

    kinds = {"BIGINT": pa.int64(), "STRING": pa.string(), "TIMESTAMP(3)": pa.string()}
    return pa.schema([(name, kinds[kind]) for name, kind in COLUMNS[stream]])


# --------------------------------------------------------------------------- running


def table_environment(parallelism: int, state_backend: str):
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    conf = env.get_config()
    for key, value in {
        "parallelism.default": str(parallelism),
        "state.backend.type": state_backend,
        # nexmark's Flink settings (its sql-client defaults)
        "table.exec.mini-batch.enabled": "true",
        "table.exec.mini-batch.allow-latency": "2 s",
        "table.exec.mini-batch.size": "50000",
        "table.optimizer.distinct-agg.split.enabled": "true",
    }.items():
        conf.set(key, value)
    return env


def run_job(env, name: str, streams, sink_columns, select: str, csv_dir: Path, sink: Path) -> dict:
    """One job: the query over the CSV files in csv_dir into the CSV sink; wall time from
    execute_sql (plan, start, submit) to the job's end."""
    for stream in STREAMS:
        env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {stream}")
    for stream in streams:
        env.execute_sql(source_ddl(stream, csv_dir / stream))
    env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {name}_sink")
    env.execute_sql(sink_ddl(f"{name}_sink", sink_columns, sink))
    started = time.perf_counter()
    result = env.execute_sql(f"INSERT INTO {name}_sink {select}")
    submitted = time.perf_counter()
    result.wait()
    finished = time.perf_counter()
    return {"seconds": finished - started, "submit_s": submitted - started, "run_s": finished - submitted,
            "rows": count_rows(sink)}


def count_rows(sink: Path) -> int:
    """Rows the sink's CSV files hold (in-progress '.part' files too: see the check)."""
    return sum(sum(1 for _ in p.open("rb")) for p in sink.rglob("*") if p.is_file() and not p.name.endswith(".crc"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("events_dir", type=Path, help="nexmark.py's generated events: <stream>/batch-NNNNNN.parquet")
    parser.add_argument("work_dir", type=Path, help="for the CSV input and the sinks (emptied first)")
    parser.add_argument("--warmup-batches", type=int, default=2)
    parser.add_argument("--parallelism", type=int, default=2)
    parser.add_argument("--state-backend", default="hashmap", choices=("hashmap", "rocksdb"))
    parser.add_argument("--only", action="append", default=[], metavar="QUERY", help="q5, q7, q8, q11 (repeatable)")
    parser.add_argument("--json", type=Path, help="write the figures here as JSON")
    args = parser.parse_args()

    shutil.rmtree(args.work_dir, ignore_errors=True)
    started = time.perf_counter()
    summary = convert(args.events_dir, args.work_dir / "csv", args.warmup_batches, args.parallelism)
    measured = summary["measured"]
    print(f"flink: converted to CSV in {time.perf_counter() - started:.1f} s (not timed): "
          f"{summary['warmup']['batches']} warm-up batches ({summary['warmup']['events']:,} events), "
          f"{measured['batches']} measured ({measured['events']:,} events: "
          + ", ".join(f"{measured[s]:,} {s}s" for s in STREAMS) + f"), {args.parallelism} files per stream",
          flush=True)
    env = table_environment(args.parallelism, args.state_backend)
    import pyflink

    print(f"flink: PyFlink {pyflink.version.__version__}, streaming mode, parallelism {args.parallelism}, "
          f"state backend {args.state_backend}, mini-batch 2 s / 50,000, no checkpoints", flush=True)
    results = {"events": measured["events"], "batches": measured["batches"], "parallelism": args.parallelism,
               "state_backend": args.state_backend, "queries": {}}
    for name, define in QUERIES.items():
        if args.only and name not in args.only:
            continue
        streams, sink_columns, select = define()
        try:
            if summary["warmup"]["batches"]:
                warm = run_job(env, name, streams, sink_columns, select, args.work_dir / "csv" / "warmup",
                               args.work_dir / "warmup-sink" / name)
            timed = run_job(env, name, streams, sink_columns, select, args.work_dir / "csv" / "measured",
                            args.work_dir / "sink" / name)
        except Exception as err:  # reported, the next query runs
            text = " | ".join(line for line in str(err).splitlines()[:3] if line.strip())
            print(f"flink: {name} failed: {type(err).__name__}: {text}", flush=True)
            results["queries"][name] = {"error": f"{type(err).__name__}: {text}"}
            continue
        timed["events_per_s"] = measured["events"] / timed["seconds"]
        if summary["warmup"]["batches"]:
            timed["warmup_s"] = warm["seconds"]
        results["queries"][name] = timed
        print(f"flink: {name}: {measured['events']:,} events ({'+'.join(streams)}) in {timed['seconds']:.1f} s "
              f"(submit {timed['submit_s']:.1f} s + run {timed['run_s']:.1f} s) = {timed['events_per_s']:,.0f} "
              f"events/s; {timed['rows']:,} result rows"
              + (f"; warm-up job {warm['seconds']:.1f} s" if summary["warmup"]["batches"] else ""), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()

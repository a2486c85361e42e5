"""What sqlwin keeps in a stream's checkpoint beside Spark's own (`<checkpoint>/spark`).

- sqlwin.json (outputs.METADATA): the checkpoint's identity (outputs.claim_sinks), its query,
  the bucket layout and the state-layout choices fixed at the first start, each directory
  source's schema. A restart keeps them, and is refused before any batch runs when the query's
  state would not fit the checkpoint's (`check_restart`).
- sqlwin-progress.json: each bucket's latest figures (progress only, never read for results).
- sqlwin-batches/: what each run's sink writer wrote, a record per batch (the last RECORDS_KEPT).
- sqlwin-control/: the control rows a stream reads beside its sources (end of input).
"""

from __future__ import annotations

import json
import os
import typing as t
from pathlib import Path

from sqlwin.errors import SqlwinError, SqlwinUsageError
from sqlwin.outputs import METADATA, read_metadata, write_json
from sqlwin.spark.stateful import prepare_stateful
from sqlwin.spark.stateful_query import StatefulQuery
from sqlwin.sql.plan import describe_emit, describe_time, describe_watermark, describe_windower

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from sqlwin.sql.plan import QueryPlan

CONTROL = "sqlwin-control"  # in the checkpoint: control rows, one file per end of input


def stored_metadata(checkpoint: str) -> dict:
    """The checkpoint's sqlwin.json ({} for a new checkpoint; a SqlwinUsageError naming it when damaged)."""
    return read_metadata(Path(checkpoint) / METADATA, checkpoint)


def _store(checkpoint: str, stored: dict) -> None:
    """Write sqlwin.json atomically: a process killed while writing must not leave a checkpoint
    whose sqlwin.json is empty (the crash sweep killed one there; the restart failed with
    "Expecting value")."""
    Path(checkpoint).mkdir(parents=True, exist_ok=True)
    write_json(Path(checkpoint) / METADATA, stored)


def remember_source_schemas(checkpoint: str, schemas: dict[str, str]) -> None:
    """Keep each directory source's schema in sqlwin.json at the first start (see stream_sources.read_directory)."""
    stored = stored_metadata(checkpoint)
    known = stored.setdefault("source_schemas", {})
    if all(name in known for name in schemas):
        return
    for name, schema in schemas.items():
        known.setdefault(name, schema)
    _store(checkpoint, stored)


def bucket_layout(spark, checkpoint: str, query_text: str, requested: int | None) -> tuple[int, ...]:
    """The bucket ids of the stream's state: fixed at the first start and kept on restarts.

    A new stream gets one bucket per shuffle partition of the session, so the cluster's
    parallelism sets it, and each bucket's id is an integer Spark's hash partitioner sends to a
    partition of its own: the operator's tasks are balanced, one Python call each. A restart
    keeps the checkpoint's layout whatever the session's setting now (Spark keeps the
    checkpoint's shuffle partitions for its state too). Checkpoints of earlier versions hold
    only a count: their ids are 0 .. count-1.
    """
    stored = stored_metadata(checkpoint)
    if "buckets" in stored:
        ids = tuple(stored.get("bucket_ids") or range(int(stored["buckets"])))
        if requested is not None and requested != len(ids):
            raise SqlwinUsageError(
                f"The checkpoint at {checkpoint} was started with {len(ids)} buckets, not {requested}",
                hint="the same bucket count, or a fresh checkpoint")
        return ids
    partitions = max(1, int(spark.conf.get("spark.sql.shuffle.partitions") or 1))
    ids = partition_aligned_ids(spark, partitions, requested or partitions)
    stored.update({"buckets": len(ids), "bucket_ids": list(ids), "partitions": partitions, "query": query_text})
    _store(checkpoint, stored)
    return ids


def spread_layout(checkpoint: str, wanted: bool) -> bool:
    """Whether this stream's one clock is spread over its buckets (a checkpoint of an earlier
    version ran such a stream in one bucket, and keeps doing so)."""
    return kept_layout(checkpoint, "stream_clock_spread", wanted)


def kept_layout(checkpoint: str, name: str, wanted: bool) -> bool:
    """A choice of state layout, decided at the first start and kept by the checkpoint, whose
    state lives where the first start put it: a checkpoint an earlier version ran without the
    choice keeps the layout it has."""
    stored = stored_metadata(checkpoint)
    if name in stored:
        return bool(stored[name])
    offsets = Path(checkpoint) / "spark" / "offsets"
    ran = offsets.is_dir() and any(offsets.iterdir())  # Spark planned a batch: its state is where it is
    stored[name] = chosen = wanted and not ran
    _store(checkpoint, stored)
    return chosen


def partition_aligned_ids(spark, partitions: int, count: int) -> tuple[int, ...]:
    """`count` INT bucket ids, the i-th sent by Spark's hash partitioning (pmod(hash(id), n), as
    groupBy's exchange computes it) to partition i mod n: every partition gets its share."""
    wanted = {p: [] for p in range(partitions)}
    need = {p: len(range(p, count, partitions)) for p in range(partitions)}
    limit = 64 * max(count, partitions)
    rows = spark.range(limit).selectExpr("CAST(id AS INT) AS b", f"pmod(hash(CAST(id AS INT)), {partitions}) AS p") \
        .collect()
    for b, p in rows:
        if len(wanted[p]) < need[p]:
            wanted[p].append(b)
    return tuple(wanted[i % partitions][i // partitions] for i in range(count))


def state_settings(stateful: StatefulQuery) -> dict[str, str]:
    """What a stream's state depends on, in the query's own words: a restart may change anything
    else (the SELECT list, HAVING, aliases, formatting, the sinks, the trigger), none of these."""
    plan, rel = stateful.plan, stateful.relation
    return {
        "window": describe_windower(rel.windower, rel.time),
        "time column": describe_time(rel.time),
        "partition by": ", ".join(rel.partition_by) or "(none: one stream)",
        # the query's own keys (a windowed aggregation with no key is spread by a hidden one)
        "group keys": ", ".join(stateful.key_sql if stateful.partial_merge is None else ()) or "(none)",
        "watermark": describe_watermark(stateful.config.watermark),
        "emit": describe_emit(plan.emit),
        "aggregates": ", ".join(stateful.aggregate_sql) or "(none)",
        "late rows": "kept (LATE ROWS INTO)" if stateful.config.output_late else "counted only",
    }


def check_restart(checkpoint: str, query_text: str, stateful: StatefulQuery,
                  plan_of: t.Callable[[str], QueryPlan]) -> None:
    """Refuse, before any batch runs, a query whose state would not fit the checkpoint's.

    The checkpoint's query (sqlwin.json) is planned again over today's sources and its state
    settings compared with the new query's; a change the state can carry is recorded as the
    checkpoint's query from now on.
    """
    stored = stored_metadata(checkpoint)
    before = stored.get("query")
    if not before or before == query_text:
        return
    now = state_settings(stateful)
    try:
        then = state_settings(prepare_stateful(plan_of(before), "streaming", stateful.bucket_count,
                                               stateful.bucket_ids))
    except SqlwinError as err:
        raise SqlwinUsageError(
            f"The checkpoint at {checkpoint} holds the state of another query, which no longer plans over "
            f"these sources ({err.message}):\n  {before}",
            hint="the checkpoint's own query and sources, or a fresh checkpoint") from None
    changed = [f"  {name}: {then[name]}  ->  {now[name]}" for name in now if then.get(name) != now[name]]
    if changed:
        raise SqlwinUsageError(
            f"The checkpoint at {checkpoint} holds the state of another query; what changed:\n"
            + "\n".join(changed),
            hint="the checkpoint's query (its SELECT list, HAVING, aliases and layout may change; the window, "
                 "time column, PARTITION BY and GROUP BY keys, watermark, EMIT, aggregates and LATE ROWS INTO may not), "
                 "or a fresh checkpoint")
    stored["query"] = query_text
    _store(checkpoint, stored)


def check_chain_restart(checkpoint: str, query_text: str) -> None:
    """A stream of two chained aggregations restarts with its checkpoint's query only (its text,
    up to whitespace): the outer stage's state settings depend on the inner stage's result
    columns, which `check_restart` cannot compare without building the checkpoint's inner stage,
    so no change is taken on trust. So does a stream of stages side by side: its state is a branch
    per stage, in the order the statement writes them."""
    before = stored_metadata(checkpoint).get("query")
    if not before or before.split() == query_text.split():
        return
    raise SqlwinUsageError(
        f"The checkpoint at {checkpoint} holds the state of another query; a stream of several windowed "
        f"stages (chained, or side by side) restarts only with the query that started it:\n  {before}",
        hint="that query, or a fresh checkpoint")


PROGRESS = "sqlwin-progress.json"  # in the checkpoint: each bucket's latest figures


def load_progress(checkpoint: str) -> dict:
    """The buckets' figures as the last batch left them: a restart reports the whole stream at
    once, not only the buckets its first batches touch. Progress only: never read for results."""
    try:
        stored = json.loads((Path(checkpoint) / PROGRESS).read_text())
    except (OSError, ValueError):
        return {}
    return {int(bucket) if bucket.lstrip("-").isdigit() else bucket: figures for bucket, figures in stored.items()}


def save_progress(checkpoint: str, stats: dict) -> None:
    path = Path(checkpoint) / PROGRESS
    tmp = path.with_name(f".{PROGRESS}.tmp")
    tmp.write_text(json.dumps({str(bucket): figures for bucket, figures in stats.items()}))
    os.replace(tmp, path)


BATCHES = "sqlwin-batches"  # in the checkpoint: what each run's sink writer wrote, per batch


def save_batch(handle, record: dict) -> None:
    """Keep what the sink writer wrote of a batch, `record`, in BATCHES/<run id>-<batch>.json;
    `handle`: the stream's (its checkpoint, its run_id)."""
    folder = Path(handle.checkpoint) / BATCHES
    folder.mkdir(exist_ok=True)
    path = folder / f"{handle.run_id}-{record['batch']:012d}.json"
    tmp = folder / f".{path.name}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)  # a re-run of the batch replaces its record
    if record["batch"] % RECORDS_KEPT == 0:
        _prune_batch_records(folder, record["batch"] - RECORDS_KEPT)


RECORDS_KEPT = 100  # batch records kept in the checkpoint, as Spark keeps 100 batches of its own logs


def _prune_batch_records(folder: Path, below: int) -> None:
    """Delete the batch records of batches before `below`: a long stream's checkpoint must not
    grow a file per batch for ever (measured: 200 records after 200 batches, before). The
    records are progress figures, read by status polls soon after each batch."""
    for old in folder.glob("*.json"):
        try:
            if int(old.stem.rsplit("-", 1)[1]) < below:
                old.unlink()
        except (ValueError, IndexError, OSError):
            continue


def load_batches(checkpoint: str, run_id: str, known: dict) -> list[dict]:
    """This run's batch records in batch order; `known` (name -> record) keeps those read
    before, so a status poll reads only the batches written since."""
    folder = Path(checkpoint) / BATCHES
    for path in folder.glob(f"{run_id}-*.json") if folder.exists() else []:
        if path.name not in known:
            try:
                known[path.name] = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
    return [known[name] for name in sorted(known)]


def check_source_count(checkpoint: str, output: "DataFrame", query_text: str) -> None:
    """A restart must read as many streaming sources as the stream its checkpoint holds: Spark
    matches the checkpoint's offsets to the query's sources by position and otherwise fails the
    first batch with an assertion ("There are [2] sources in the checkpoint offsets and now there
    are [3]"). Refused here, before the query starts, in sqlwin's words. The sources are the
    streaming leaves of `output` (the query's sources, the control rows, and a CSV or JSON
    directory's second read for its malformed rows); over Spark Connect the plan is the server's,
    and Spark's own message stands."""
    offsets = Path(checkpoint) / "spark" / "offsets"
    logs = [p for p in offsets.glob("*") if p.name.isdigit()] if offsets.is_dir() else []
    jdf = getattr(output, "_jdf", None)
    if not logs or jdf is None:
        return
    lines = max(logs, key=lambda p: int(p.name)).read_text().splitlines()
    before = len(lines) - 2  # a version line, the batch's metadata, then one line per source
    now = _streaming_sources(jdf.queryExecution().logical())
    if before > 0 and now != before:
        raise SqlwinUsageError(
            f"The checkpoint at {checkpoint} belongs to a stream that read {before} streaming sources, and this "
            f"start reads {now}: Spark matches a checkpoint's offsets to the sources by position",
            query=query_text,
            hint="start it as it was first started: the same sources, each a directory or a DataFrame as before, "
                 "and the same source format (sqlwin reads a CSV or JSON directory twice, its rows and its "
                 "malformed rows) -- or a fresh checkpoint")


def _streaming_sources(plan) -> int:
    """How many streaming sources Spark gives a (JVM) plan: one per streaming relation it reaches,
    a DataFrame reached twice (a self-union, a directory's rows and its malformed rows) counted
    twice, as Spark reads it twice (checked: a union of a, b, a has three sources in its offsets)."""
    leaves = plan.collectLeaves()
    return sum(1 for index in range(leaves.size()) if leaves.apply(index).nodeName().startswith("StreamingRelation"))

"""A stream's sink writer (foreachBatch): each micro-batch of the operator's records projected into
the result sink and the late sink, `<sink>/batch_id=N/`, replaced when Spark re-runs the batch
after a failure (exactly once); on the way, each bucket's figures kept in the checkpoint.
"""

from __future__ import annotations

import json
import shutil
import typing as t
import uuid
from pathlib import Path

from pyspark.sql import functions as F

from sqlwin.spark import supervision
from sqlwin.spark.around import outer_frame, stages_late
from sqlwin.spark.checkpoint import save_batch, save_progress
from sqlwin.spark.connect import is_connect
from sqlwin.spark.operator import CARRIED
from sqlwin.spark.stateful_query import UPSTREAM_ROW, StatefulQuery, chain_late
from sqlwin.spark.stream_handle import SOURCES, STAGE_COLUMN, Stage, StreamingWindowQuery
from sqlwin.spark.stream_sources import MALFORMED
from sqlwin.sql.text import JSON_OPTIONS

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame


def sink_writer(stateful: StatefulQuery, handle: StreamingWindowQuery):
    """foreachBatch: project one micro-batch of records into the result and late sinks.

    One Spark job per batch: the operator's records flow straight into the result file, and an
    Observation gathers, on the way, each bucket's stats record and how many records of each
    kind there are (no separate pass, no cache). With a late sink and late or rejected rows, the
    records are cached and a second job writes those. Over Spark Connect a write reports no
    observed metrics: there the records are cached and one more job counts them. No global sort
    (one output file, sorted within it by emission order) and no count job (the written file's
    footer says how many rows).
    """

    summary_columns: list = []  # built once per stream (a py4j call per function: ~20 ms a batch)

    def write(records_df: "DataFrame", batch_id: int) -> None:
        from pyspark.sql import Observation

        if handle.branches:
            return _write_branches(records_df, batch_id, handle)
        spark = records_df.sparkSession
        local = None  # the stateful stage on the driver (driver_state.py): its records' summary, read locally
        if stateful.driver is not None:
            records_df, local = stateful.driver.apply(records_df, batch_id)
        if not summary_columns:
            summary_columns.extend(_summary_columns(len(handle.inners) + 1))
        observation = Observation(f"sqlwin_{uuid.uuid4().hex}") \
            if not is_connect(spark) and local is None else None
        if observation is not None:
            records_df = records_df.observe(observation, *summary_columns)
        # read twice (the late rows; the SQL around the windows may read the results twice): computed once
        cached = bool(handle.late_sink) or (observation is None and local is None) or handle.around is not None
        if cached:
            records_df = records_df.persist()
        name = f"__sqlwin_batch_{uuid.uuid4().hex[:12]}"
        try:
            records_df.createOrReplaceTempView(name)
            typed = f"({stateful.typed_emissions_sql(name)})"
            result = spark.sql(stateful.result_sql(typed)).drop("__batch")
            order = "__seq"
            if handle.around is not None:  # the SQL around the windows, over this batch's results
                result, order = outer_frame(spark, handle.around, result), None
            handle.result_schema = result.drop("__seq").schema
            written = _write_batch(result, handle.sink, batch_id, order=order, shuffle=not cached and local is None)
            summary = observation.get if observation is not None else local if local is not None else \
                records_df.agg(*summary_columns).first().asDict()
            rows_before = handle.total("rows")
            kinds = _summarise(summary, handle, batch_id)
            save_progress(handle.checkpoint, handle.bucket_stats)
            late = 0
            if handle.late_sink:
                late_rows = _late_rows(spark, stateful, handle.inners, name).drop("__batch")
                handle.late_schema = late_rows.schema
                late = _write_batch(late_rows, handle.late_sink, batch_id,
                                    records=kinds["late"] + kinds["rejected"])
            figures = {"batch": batch_id, "results": written, "late": late,
                       **handle.batch_figures(rows_before, kinds)}
            handle.batches.append(figures)
            save_batch(handle, {**figures,
                                "result_schema": handle.result_schema.json() if handle.result_schema else None,
                                "late_schema": handle.late_schema.json() if handle.late_schema else None})
        finally:
            spark.catalog.dropTempView(name)
            if cached:
                records_df.unpersist()

    return supervision.guard_writer(write, handle)  # the checkpoint's lock kept; an unwritable directory named


def _write_branches(records_df: "DataFrame", batch_id: int, handle: StreamingWindowQuery) -> None:
    """foreachBatch of several stages side by side: the batch's records split per stage (each
    branch's own columns), each stage's results typed and its figures kept (its buckets under its
    number), the SQL around run over every stage's results of the batch, and every stage's late and
    rejected rows, each with its stage, to the late sink. The records are cached: each stage reads
    them, and each stage's figures are one small job."""
    spark = records_df.sparkSession
    records_df = records_df.persist()
    name = f"__sqlwin_batch_{uuid.uuid4().hex[:12]}"
    views = []
    try:
        results, lates, kinds = [], [], dict.fromkeys(_KINDS, 0)
        rows_before = handle.total("rows")
        for number, branch in enumerate(handle.branches, start=1):
            view = f"{name}_{number}"
            records_df.where(F.col(STAGE_COLUMN) == number) \
                .select(*(F.col(there).alias(own) for own, there in branch.columns.items())) \
                .createOrReplaceTempView(view)
            views.append(view)
            typed = f"({branch.query.typed_emissions_sql(view)})"
            results.append(spark.sql(branch.query.result_sql(typed)).drop("__batch"))
            summary = spark.table(view).agg(*_summary_columns(len(branch.inners) + 1)).first().asDict()
            for kind, count in _summarise(summary, handle, batch_id, branch.first, len(branch.inners)).items():
                kinds[kind] += count
            lates.append((_late_rows(spark, branch.query, branch.inners, view), branch.first))
        save_progress(handle.checkpoint, handle.bucket_stats)
        result = outer_frame(spark, handle.around, results)
        handle.result_schema = result.schema
        written = _write_batch(result, handle.sink, batch_id)
        late = 0
        if handle.late_sink:
            late_rows = stages_late(lates).drop("__batch")
            handle.late_schema = late_rows.schema
            late = _write_batch(late_rows, handle.late_sink, batch_id, records=kinds["late"] + kinds["rejected"])
        figures = {"batch": batch_id, "results": written, "late": late, **handle.batch_figures(rows_before, kinds)}
        handle.batches.append(figures)
        save_batch(handle, {**figures, "result_schema": handle.result_schema.json(),
                            "late_schema": handle.late_schema.json() if handle.late_schema else None})
    finally:
        for view in views:
            spark.catalog.dropTempView(view)
        records_df.unpersist()


_KINDS = ("emit", "late", "rejected")


def _late_rows(spark, stateful: StatefulQuery, inners: t.Sequence[Stage], records: str) -> "DataFrame":
    """A batch's late and rejected rows (`records`: its records' view). A chain's are every stage's:
    the first stage's (carried through each later one as JSON) with its source's columns, a later
    stage's with its upstream stage's result row as one struct column, each with the stage that
    judged it. Stage k's records are peeled from the last stage's, one level of carrying at a time."""
    if not inners:
        return spark.sql(stateful.late_sql(records))
    views, level, per_stage = [], spark.table(records), {len(inners) + 1: (stateful, records)}
    try:  # a DataFrame keeps the plan it was analysed with: the views may go at once
        for number in range(len(inners), 0, -1):  # the stage whose records are carried one level further in
            stage = inners[number - 1]
            level = level.where(F.col("__kind") == CARRIED) \
                .select(F.from_json("__stats", stage.carried_schema, JSON_OPTIONS).alias("__p"), "__batch") \
                .select("__p.*", "__batch")
            view = f"{records}_stage{number}"
            level.createOrReplaceTempView(view)
            views.append(view)
            per_stage[number] = (stage.query, view)
        late = None
        for number in sorted(per_stage):
            query, view = per_stage[number]
            rows = spark.sql(query.late_sql(view, row_struct=UPSTREAM_ROW if number > 1 else None))
            late = rows if late is None else chain_late(late, rows, number)
        return late
    finally:
        for view in views:
            spark.catalog.dropTempView(view)


def _summary_columns(stages: int = 1) -> list:
    """What the sink writer observes of a batch's records: the stats records, a count per kind.
    A chain's earlier stages' records come carried (JSON) through each later one: counted by their
    own kind (the first level that is not 'carried'), each stage's stats apart (`stage<k>_stats`)."""
    kinds, reasons, carried = [F.col("__kind")], [F.col("__reason")], []
    payload = F.col("__stats")
    for _ in range(stages - 1):  # one level of carrying: the record of the stage before, as JSON
        carried.append(kinds[-1] == CARRIED)
        kinds.append(F.get_json_object(payload, "$.__kind"))
        reasons.append(F.get_json_object(payload, "$.__reason"))
        payload = F.get_json_object(payload, "$.__stats")
    kind, reason = kinds[-1], reasons[-1]
    for level in range(len(carried) - 1, -1, -1):
        kind = F.when(carried[level], kind).otherwise(kinds[level])
        reason = F.when(carried[level], reason).otherwise(reasons[level])
    stage_stats, inside, payload = [], F.lit(True), F.col("__stats")
    for level in range(1, stages):  # the stats record of stage `stages - level`
        inside = inside & carried[level - 1]
        stage_stats.append(F.collect_list(F.when(inside & (kinds[level] == "stats"),
                                                 F.get_json_object(payload, "$.__stats")))
                           .alias(f"stage{stages - level}_stats"))
        payload = F.get_json_object(payload, "$.__stats")
    return [F.collect_list(F.when(F.col("__kind") == "stats", F.col("__stats"))).alias("stats"), *stage_stats,
            *(F.count_if(kind == k).alias(k) for k in _KINDS),
            F.count_if(reason == MALFORMED).alias(MALFORMED)]


def _summarise(summary: dict, handle: StreamingWindowQuery, batch_id: int, beside: int = 0,
               inners: int | None = None) -> dict[str, int]:
    """Keep each bucket's stats record; how many records of each other kind the batch had.

    Rows that did not convert never reach a bucket: the sources' own entry (SOURCES) counts them,
    once per batch id, so a batch Spark runs again after a failure does not count them twice.
    A chain's stages share bucket ids: an earlier stage k's buckets are kept as "k:<bucket>", and
    each entry says its stage. So do stages side by side (`beside`: the number of the branch's first
    stage; `inners`: its chain's stages before the last), the first stage's buckets under their own ids."""
    first = beside or 1
    last = first + (len(handle.inners) if inners is None else inners)
    for text in summary.get("stats") or []:
        figures = json.loads(text)
        if last > 1 or beside:
            figures["stage"] = last
        bucket = figures.pop("bucket")
        handle.bucket_stats[f"{last}:{bucket}" if beside > 1 else bucket] = figures
    for stage in range(1, last - first + 1):  # a chain's earlier stages, numbered within it
        number = first + stage - 1
        for text in summary.get(f"stage{stage}_stats") or []:
            figures = json.loads(text)
            handle.bucket_stats[f"{number}:{figures.pop('bucket')}"] = {**figures, "stage": number}
    bad = int(summary.get(MALFORMED) or 0)
    sources = handle.bucket_stats.setdefault(SOURCES, {"rejected": 0, "rows": 0, "last_batch": -1})
    if bad and batch_id > sources["last_batch"]:
        sources["rejected"] += bad
        sources["rows"] += bad
        sources["last_batch"] = batch_id
    return {kind: int(summary.get(kind) or 0) for kind in _KINDS}


def _write_batch(frame: "DataFrame", sink: str, batch_id: int, records: int | None = None,
                 order: str | None = None, shuffle: bool = False) -> int:
    """Write (or replace) `sink/batch_id=N/` as one parquet file; how many rows it holds.

    `records`: how many operator records feed `frame`, when known -- none means nothing to write
    (and a re-run of the batch that now emits nothing removes what the first run wrote).
    `shuffle`: `frame` is computed here, not read from a cache: one file through an exchange, so
    the operator upstream keeps its parallelism (coalesce(1) would run it as one task).
    """
    target = Path(sink) / f"batch_id={batch_id}"
    if records is None or records:
        one_file = frame.repartition(1) if shuffle else frame.coalesce(1)
        if order:
            one_file = one_file.sortWithinPartitions(order).drop(order)
        one_file.write.mode("overwrite").parquet(str(target))
        count = _parquet_rows(target)
        if count:
            return count
    if target.exists():
        shutil.rmtree(target)
    return 0


def _parquet_rows(directory: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(part).metadata.num_rows for part in directory.glob("*.parquet"))

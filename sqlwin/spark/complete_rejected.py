"""Complete input: the rows no window takes, as LATE ROWS INTO lists them (`rejected_rows_sql`).

No row of a finished table is late; a row with a NULL key (`null_key`), else a NULL time where
the query names a time column (`null_time`), is rejected as a replay and a stream reject it,
with the same columns: the row's own (a windowed join: a struct per side), late_by,
window_start, window_end, reason.
"""

from __future__ import annotations

from sqlglot import exp

from sqlwin.spark.complete_sql import LoweringDialect, TimeSql, star_except, timestamp_type
from sqlwin.spark.complete_windows import null_keys
from sqlwin.sql.plan import QueryPlan
from sqlwin.sql.text import named_struct, quote_identifier, quote_string


def rejected_rows_sql(plan: QueryPlan, lowered: exp.Expr) -> str | None:
    """The rows of a finished table no window takes, rejected as a replay and a stream reject them
    -- a NULL key (`null_key`), else a NULL time where the query names a time column (`null_time`)
    -- with the columns a replay or a stream gives LATE ROWS INTO (the row's own columns, late_by,
    window_start, window_end, reason). No row of a finished table is late."""
    if not plan.windows:
        return None
    if plan.join is not None:
        return _join_rejected_rows_sql(plan, lowered)
    grouped = plan.aggregation is not None
    relation = (plan.aggregation.relation if grouped else plan.windows[0])
    epoch = relation.time is not None and relation.time.kind == "epoch_ms"
    late_by, bound = ("BIGINT", "BIGINT") if epoch else ("INTERVAL DAY TO SECOND", timestamp_type(relation))
    prefix = _with_prefix(lowered)
    keys = null_keys(relation, plan.aggregation.group_keys if grouped else ())
    null_key = " OR ".join(f"({k}) IS NULL" for k in keys) or "false"
    time = relation.time
    null_time = f"NOT ({TimeSql(time).present})" if time is not None and time.kind != "processing_time" else "false"
    return (f"{prefix}SELECT {star_except(relation)}, CAST(NULL AS {late_by}) AS late_by, "
            f"CAST(NULL AS {bound}) AS window_start, CAST(NULL AS {bound}) AS window_end, "
            f"CASE WHEN {null_key} THEN 'null_key' ELSE 'null_time' END AS reason "
            f"FROM {relation.source} WHERE ({null_key}) OR ({null_time})")


def _join_rejected_rows_sql(plan: QueryPlan, lowered: exp.Expr) -> str:
    """A windowed join's rows no window takes (a NULL join key, else a NULL time), as a replay and a
    stream list them: `side` (the side's name), a struct column per side holding the row (NULL on the
    other sides), late_by, window_start, window_end, reason."""
    join = plan.join
    prefix = _with_prefix(lowered)
    first = join.sides[0].time
    late_by, bound = ("BIGINT", "BIGINT") if first.kind == "epoch_ms" else (
        "INTERVAL DAY TO SECOND", "TIMESTAMP_NTZ" if first.ntz else "TIMESTAMP")
    structs = [f"STRUCT<{', '.join(f'{quote_identifier(c)}: {kind}' for c, kind in side.columns.items())}>"
               for side in join.sides]
    selects = []
    for s, side in enumerate(join.sides):
        row = named_struct((c, quote_identifier(c)) for c in side.columns)
        per_side = [f"{row} AS {quote_identifier(name)}" if o == s else
                    f"CAST(NULL AS {structs[o]}) AS {quote_identifier(name)}" for o, name in enumerate(join.names)]
        null_key = " OR ".join(f"{quote_identifier(k)} IS NULL" for k in join.keys[s])
        null_time = f"NOT ({TimeSql(side.time).present})"
        selects.append(
            f"SELECT {quote_string(join.names[s])} AS side, {', '.join(per_side)}, CAST(NULL AS {late_by}) AS late_by, "
            f"CAST(NULL AS {bound}) AS window_start, CAST(NULL AS {bound}) AS window_end, "
            f"CASE WHEN {null_key} THEN 'null_key' ELSE 'null_time' END AS reason "
            f"FROM {side.source} WHERE ({null_key}) OR ({null_time})")
    return prefix + " UNION ALL ".join(selects)


def _with_prefix(lowered: exp.Expr) -> str:
    """The lowered query's WITH clause (and a space), for SQL that reads its CTEs; else ''."""
    with_ = lowered.args.get("with_") if isinstance(lowered, exp.Query) else None
    return f"{with_.sql(dialect=LoweringDialect, comments=False)} " if with_ is not None else ""

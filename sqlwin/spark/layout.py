"""The record layout the lowering and the operator share: one place for every column name.

Input rows (StatefulQuery.input_sql, read by the operator's processor and the replay):

    __bucket   the bucket (a shuffle partition) the row's key goes to
    __k<i>     the i-th key column (GROUP BY keys, a join's keys)
    __time     the event time, epoch microseconds (a count window's ordinal where it has no time)
    __a<i>     the i-th aggregate argument (AggregateSpec.arg / arg2 index it)
    __r<i>     the i-th carried column (the row's own columns, for late and rejected rows)
    __ptime    the arrival (processing) time, epoch microseconds, or NULL
    __order    the row's place in its arrival batch
    __batch    the recorded arrival batch (a replay)
    __weight   how many input rows a row of partial aggregates stands for (pre_aggregation.py)

Output records (`record_columns`): one layout for every kind, `__kind` says which (emit, late,
rejected, stats, carried). Keys __k<i>, aggregates __agg<i> and carried row columns __r<i> take
the input's and the aggregates' types (replay.record_schema); the others are typed in
RECORD_TYPES. A stats record carries only __kind and __stats (JSON).
"""

from __future__ import annotations

BUCKET, TIME, PTIME, ORDER, BATCH, WEIGHT = "__bucket", "__time", "__ptime", "__order", "__batch", "__weight"


def key(i: int) -> str:
    return f"__k{i}"


def argument(i: int) -> str:
    return f"__a{i}"


def carried(i: int) -> str:
    return f"__r{i}"


def aggregate(i: int) -> str:
    return f"__agg{i}"


def keys(n: int) -> list[str]:
    return [key(i) for i in range(n)]


def arguments(n: int) -> list[str]:
    return [argument(i) for i in range(n)]


def carried_columns(n: int) -> list[str]:
    return [carried(i) for i in range(n)]


def aggregates(n: int) -> list[str]:
    return [aggregate(i) for i in range(n)]


def index_of(name: str, prefix: str) -> int | None:
    """i of a layout name `<prefix><i>` (prefix '__k', '__a', '__r', '__agg'), else None."""
    tail = name[len(prefix):]
    return int(tail) if name.startswith(prefix) and tail.isdigit() else None


RECORD_TYPES = {"__kind": "string", "__wstart": "bigint", "__wend": "bigint", "__windex": "bigint",
                "__op": "string", "__firing": "string", "__seq": "bigint", BATCH: "bigint",
                "__etime": "bigint", "__late_by": "bigint", "__reason": "string", "__stats": "string"}


def record_columns(key_count: int, aggregate_count: int, late_width: int) -> list[str]:
    """The records' column names, in the order the operator's record tuples hold them."""
    return (["__kind"] + keys(key_count) + ["__wstart", "__wend", "__windex"] + aggregates(aggregate_count)
            + ["__op", "__firing", "__seq", BATCH, "__etime", "__late_by", "__reason"]
            + carried_columns(late_width) + ["__stats"])

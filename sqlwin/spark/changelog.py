"""Applying a changelog: the table a replay's or a stream's results leave (issue 12 part 2).

A result of EMIT CHANGES / early or late firings is a changelog: `op` says what each row does to
the row of its window (`+I` insert, `-U` / `+U` the old and new values of an update, `-D` delete,
a session merged away), `emit_seq` orders a key's changes. Folding it keeps, per window, its
last change unless that change retracts the row -- the same rule as
`sqlwin.runtime.accumulation.apply_changelog`, which the property tests check against EMIT FINAL.
An ACCUMULATING changelog (`+I` then `+U` upserts) folds the same way.
"""

from __future__ import annotations

import typing as t

from sqlwin.errors import SqlwinUsageError
from sqlwin.runtime.accumulation import RETRACTIONS
from sqlwin.sql.text import quote_identifier

if t.TYPE_CHECKING:
    from pyspark.sql import DataFrame

SYSTEM = ("op", "firing", "emit_seq")


def apply_changelog(changes: "DataFrame", keys: t.Sequence[str]) -> "DataFrame":
    """`changes` folded to the table it leaves: one row per `keys` (a window's identity, e.g. the
    GROUP BY keys, window_start and window_end), its last change by `emit_seq`, unless that
    change is a retraction; without op, firing and emit_seq."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = {c.lower(): c for c in changes.columns}
    missing = [c for c in (*SYSTEM[::2], *keys) if c.lower() not in columns]
    if missing:
        raise SqlwinUsageError(
            f"apply_changelog needs the columns {', '.join(missing)}, which the changelog does not have "
            f"(it has {', '.join(changes.columns)})",
            hint="a replay's or a stream's result (it carries op and emit_seq), and as keys the columns that "
                 "name a window: its GROUP BY keys, window_start and window_end as selected")
    identity = [F.col(quote_identifier(columns[k.lower()])) for k in keys]
    last = Window.partitionBy(*identity).orderBy(F.col(quote_identifier(columns["emit_seq"])).desc())
    ranked = changes.withColumn("__sqlwin_last", F.row_number().over(last))
    op = F.col(quote_identifier(columns["op"]))
    kept = ranked.where((F.col("__sqlwin_last") == 1) & ~op.isin(*RETRACTIONS))
    return kept.drop("__sqlwin_last", *(columns[c] for c in SYSTEM if c in columns))

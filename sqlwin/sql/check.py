"""A query checked before Spark starts: its syntax, the tables it names and what needs no schema.

`sqlwin run` / `explain` / `sql -e` call `check_query` first, so a wrong query costs a tenth of a
second, not Spark's start-up (23-39 s): the parse, and the plan made without the tables' columns
(under each kind a time column of unknown type may have, TIMESTAMP or epoch milliseconds, so a
query valid for one of them is never refused here). What needs the columns is checked again,
with them, once Spark runs.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp

from sqlwin.errors import SqlwinError, SqlwinSyntaxError, SqlwinValidationError
from sqlwin.sql.ast_nodes import LateRowsInto
from sqlwin.sql.binding import assuming_time_type
from sqlwin.sql.dialect import parse_one
from sqlwin.sql.places import did_you_mean, node_position, parents, user_text
from sqlwin.sql.plan import build_plan


# A statement whose first word is a keyword misspelt (SELEC): no SQL of Spark's either.
_MISSPELT_START = "cannot start a statement: did you mean"


def unknown_table(name: str, known: t.Iterable[str] = ()) -> SqlwinValidationError:
    """A table the query names that is neither a table nor a CTE (placed by the planner, at the reference)."""
    return SqlwinValidationError(
        f"Unknown table {name}" + did_you_mean(name, set(known)), None,
        "a table or view in the Spark catalog (sw.spark.createOrReplaceTempView / --table NAME=PATH) or a CTE")


def check_query(query: str, tables: t.Collection[str] | None = None, time_zone: str = "UTC") -> None:
    """Raise the error sqlwin would raise for `query` once Spark runs, where it can tell without Spark.

    `tables`: every table the session will hold (the CLI's --table names), or None when others may
    exist (a catalog, a Spark Connect server): then names are not checked. A query sqlwin's parser
    cannot read but that may be Spark's own SQL (none of sqlwin's words) passes, for Spark to judge."""
    known = {name.lower(): name for name in tables} if tables is not None else None

    def schema_of(reference: str) -> None:
        name = _one_part_name(reference)
        if known is not None and name is not None and name.lower() not in known:
            ctes = [cte.alias_or_name for cte in parse_one(query).find_all(exp.CTE)]
            if name.lower() not in {cte.lower() for cte in ctes}:
                raise unknown_table(name, [*known.values(), *ctes])
        return None  # columns unknown: checked once Spark reads the table

    first: SqlwinError | None = None
    for assumed in (None, "bigint"):  # a time column of unknown type: TIMESTAMP, else epoch milliseconds
        try:
            with assuming_time_type(assumed):
                plan = build_plan(query, schema_of, time_zone)
        except SqlwinSyntaxError as err:
            if getattr(err, "plain_spark", False) and _MISSPELT_START not in err.message:
                return  # perhaps Spark's own SQL (`GROUP BY window(ts, '1 hour')`): Spark says
            raise
        except SqlwinError as err:
            if err.message.startswith("Unknown table"):
                raise
            first = first or err
            continue
        if known is not None:
            _check_tables(plan.ast, known, query)
        return
    assert first is not None
    raise first


def _one_part_name(reference: str) -> str | None:
    """The name a table reference (Spark SQL text) gives, if it has one part (db.t: None)."""
    try:
        table = exp.to_table(reference, dialect="spark")
    except Exception:  # noqa: BLE001 - a name sqlglot cannot read is Spark's to judge
        return None
    return None if table.args.get("db") or table.args.get("catalog") else table.name


def _check_tables(ast: exp.Expr, known: dict[str, str], query: str) -> None:
    """Every table reference outside the window functions (FROM t, JOIN t) names a known table or a CTE."""
    ctes = {cte.alias_or_name.lower() for cte in ast.find_all(exp.CTE)}
    for table in ast.find_all(exp.Table):
        if not isinstance(table.this, exp.Identifier) or table.args.get("db") or table.args.get("catalog") \
                or any(isinstance(p, LateRowsInto) for p in parents(table)):
            continue
        name = table.name
        if name.lower() in known or name.lower() in ctes:
            continue
        err = unknown_table(name, [*known.values(), *ctes])
        raise SqlwinValidationError(err.message, node_position(table.this, user_text(table.this)),
                                    err.hint, query=query)

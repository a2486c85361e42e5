"""Identifiers in the Spark SQL text sqlwin writes.

Column, table, view and alias names come from the user's data (a CSV header, a DataFrame's
schema) and the user's query. Wherever sqlwin writes one into SQL text itself, rather than
through a sqlglot AST, it goes through `quote_identifier`: backticks around it, every
backtick inside doubled, so no name can end the identifier early and inject SQL.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.errors import SqlglotError


def quote_identifier(name: str) -> str:
    """`name` as one quoted Spark SQL identifier: `a b` -> `` `a b` ``, ``a`b`` -> ```a``b```."""
    if not isinstance(name, str):
        raise TypeError(f"an identifier is a str, not {type(name).__name__}")
    return "`" + name.replace("`", "``") + "`"


def quote_string(text: str) -> str:
    """`text` as one Spark SQL string literal (a name used as a value: a struct field, a side's
    name), written by sqlglot so that quotes and backslashes inside cannot end it early."""
    return exp.Literal.string(text).sql(dialect="spark")


def named_struct(fields: "t.Iterable[tuple[str, str]]") -> str:
    """Spark SQL `named_struct('name', value, ...)` of (field name, value SQL) pairs."""
    return f"named_struct({', '.join(f'{quote_string(name)}, {value}' for name, value in fields)})"


# to_json / from_json options that keep a timestamp's microseconds (JSON's default keeps milliseconds)
JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
                "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS"}


def json_options_sql() -> str:
    """JSON_OPTIONS as a Spark SQL map literal, to_json's and from_json's last argument."""
    return f"map({', '.join(f'{quote_string(k)}, {quote_string(v)}' for k, v in JSON_OPTIONS.items())})"


def identifier_name(sql: str) -> str | None:
    """The plain name a one-column (or one-table) SQL reference stands for, unquoted; None otherwise.

    `` `a``b` `` -> ``a`b``; ``t.`x y` `` -> ``x y``; ``lower(k)`` -> None.
    """
    try:
        node = exp.maybe_parse(sql, dialect="spark")
    except SqlglotError:  # not a reference at all
        return None
    if isinstance(node, (exp.Column, exp.Table, exp.Identifier)):
        return node.name
    return None

"""The sqlwin SQL dialect: Spark SQL plus window table functions, WATERMARK and EMIT.

The dialect only *parses*: it turns the extensions into typed sqlglot nodes and leaves
every other piece of Spark SQL untouched. Meaning (sizes, validation, defaults) is
given to those nodes by the plan (`sqlwin.sql.plan` and the modules it reads them with).

Grammar added on top of Spark SQL (see docs/sql.md for the full reference)::

    relation      := [TABLE '('] window_fn '(' arg (',' arg)* ')' [')'] [[AS] alias]
    window_fn     := TUMBLE | HOP | CUMULATE | SESSION | SLIDE | COUNT_WINDOW | GLOBAL_WINDOW
    arg           := [name '=>'] ( table_arg | DESCRIPTOR '(' column | PROCTIME() ')' | expr )
    table_arg     := TABLE name [[AS] alias] { WATERMARK col [DELAY OF interval]
                                             | WITH '(' option = value, ... ')'
                                             | PARTITION BY expr, ...
                                             | ORDER BY expr [ASC|DESC], ... }
    after HAVING  := EMIT emit_part+ | LATE ROWS INTO name
    emit_part     := FINAL | CHANGES | EARLY EVERY (interval | n ROWS)
                   | ALLOWED LATENESS interval | LATE EVERY (interval | n ROWS)
                   | ACCUMULATING | DISCARDING | RETRACTING | ONLY UPDATED

A plain table reference may also carry `WATERMARK col DELAY OF interval`.

The dialect's pieces: the nodes (sqlwin/sql/ast_nodes.py), the parser (sqlwin/sql/parser_base.py,
clause_parser.py, window_parser.py), the generator (sqlwin/sql/generator.py) and the syntax errors
(sqlwin/sql/syntax_errors.py). This module puts them together as `SqlwinDialect` and reads a query:
`parse_one`, `parse`, with the rewrites every reader relies on (TABLE (SELECT ...) as a named input,
one form of an ordered collect). The names other layers read (WindowTVF, LateRowsInto,
SqlwinGenerator) are importable from here too.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import Position, SqlwinSyntaxError
from sqlwin.sql.ast_nodes import LateRowsInto, TableArg, WindowTVF  # noqa: F401 (LateRowsInto, WindowTVF re-exported)
from sqlwin.sql.generator import SqlwinGenerator  # noqa: F401 (re-exported)
from sqlwin.sql.scan import COMMENT, unclosed
from sqlwin.sql.syntax_errors import (
    from_parse_error,
    from_token_error,
    internal_error,
    misspelling,
    token_position,
    unclosed_error,
)
from sqlwin.sql.window_parser import SqlwinParser


class SqlwinDialect(Spark):
    """Spark SQL plus sqlwin's windowing extensions."""

    Parser = SqlwinParser
    Generator = SqlwinGenerator


# --------------------------------------------------------------------------- entry point


def parse(sql: str) -> list[exp.Expr]:
    """Parse one or more `;`-separated statements, turning sqlglot errors into SqlwinSyntaxError."""
    return _parse(sql)[0]


def _parse(sql: str) -> tuple[list[exp.Expr], list[Token]]:
    open_span = unclosed(sql)
    if open_span is not None and open_span.kind == COMMENT:
        # sqlglot reads an unclosed /* as a comment running to the end: the rest of the query would vanish.
        raise unclosed_error(sql, open_span)
    dialect = SqlwinDialect()
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as err:
        raise from_token_error(err, sql, open_span) from None
    parser = dialect.parser()
    try:
        statements = [s for s in parser.parse(tokens, sql) if s is not None]
    except SqlwinSyntaxError as err:
        raise err.with_query(sql) from None
    except ParseError as err:
        raise from_parse_error(err, sql, tokens, parser._curr, parser._prev) from None
    except RecursionError:
        raise SqlwinSyntaxError("The query nests too deeply to read", token_position(parser._curr or parser._prev),
                                "fewer nested parentheses or subqueries", query=sql) from None
    except Exception as err:  # noqa: BLE001 - the last resort: a sqlglot or sqlwin bug, still placed in the query
        raise internal_error(SqlwinSyntaxError, err, token_position(parser._curr or parser._prev), sql) from None
    if not statements:
        raise SqlwinSyntaxError("The query is empty", Position(1, 1), hint="a SELECT statement", query=sql)
    _no_bare_expressions(statements, tokens, sql)
    for statement in statements:
        _one_ordered_collect_form(statement)
        _queries_as_named_inputs(statement)
    return statements, tokens


SUBQUERY_INPUT = "__sqlwin_input_"


def _queries_as_named_inputs(statement: exp.Expr) -> None:
    """`TUMBLE(TABLE (SELECT ...) ...)`: the query becomes a CTE of the statement and the window function
    reads it by name, as it reads a table, a view or the user's own CTE (its columns then resolve the same
    way in every mode). It is placed before the CTE that uses it, after those it may read."""
    arguments = [arg for arg in statement.find_all(TableArg) if isinstance(arg.this, exp.Subquery)]
    if not arguments or "with_" not in statement.arg_types:
        return
    with_ = statement.args.get("with_") or exp.With(expressions=[])
    for number, arg in enumerate(arguments, 1):
        subquery = arg.this
        name = f"{SUBQUERY_INPUT}{number}"
        cte = exp.CTE(this=subquery.this.copy(), alias=exp.TableAlias(this=exp.to_identifier(name)))
        table = exp.Table(this=exp.to_identifier(name))
        if subquery.args.get("alias") is not None:
            table.set("alias", subquery.args["alias"])
        table.meta["source"] = subquery.meta.get("source") or subquery.sql(dialect=SqlwinDialect)
        arg.set("this", table)
        host = next((c for c in with_.expressions if any(a is arg for a in c.find_all(TableArg))), None)
        position = with_.expressions.index(host) if host is not None else len(with_.expressions)
        with_.set("expressions", [*with_.expressions[:position], cte, *with_.expressions[position:]])
    statement.set("with_", with_)


def _no_bare_expressions(statements: list[exp.Expr], tokens: list[Token], sql: str) -> None:
    """sqlglot reads `k`, `SELEC` or `f(x)` alone as a statement; Spark does not, and neither does sqlwin."""
    chunks: list[list[Token]] = [[]]
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            chunks.append([])
        else:
            chunks[-1].append(token)
    firsts = [chunk[0] for chunk in chunks if chunk]
    for i, statement in enumerate(statements):
        if isinstance(statement, exp.Condition):
            first = firsts[i] if len(firsts) == len(statements) else None
            word = first.text if first is not None else _short(statement)
            keyword = misspelling(word)
            raise SqlwinSyntaxError(f"'{word}' cannot start a statement" + (f": did you mean {keyword}?" if keyword else ""),
                                    token_position(first) or Position(1, 1), "a statement starting with SELECT or WITH",
                                    query=sql)


def _short(node: exp.Expr) -> str:
    try:
        return node.sql(dialect=SqlwinDialect)[:30]
    except Exception:  # noqa: BLE001 - only for a message
        return type(node).__name__


def _one_ordered_collect_form(statement: exp.Expr) -> None:
    """`collect_list(v) WITHIN GROUP (ORDER BY k)` becomes `array_agg(v ORDER BY k)`: one node shape
    (ArrayAgg over an Order) for the lowerings to read."""
    for node in list(statement.find_all(exp.WithinGroup)):
        agg, order = node.this, node.expression
        if isinstance(agg, exp.ArrayAgg) and not isinstance(agg.this, exp.Order) and isinstance(order, exp.Order):
            agg.set("this", exp.Order(this=agg.this, expressions=order.expressions))
            node.replace(agg)


def parse_one(sql: str) -> exp.Expr:
    statements, tokens = _parse(sql)
    if len(statements) > 1:
        following = (b for a, b in zip(tokens, tokens[1:])
                     if a.token_type == TokenType.SEMICOLON and b.token_type != TokenType.SEMICOLON)
        raise SqlwinSyntaxError(f"Expected one statement, found {len(statements)}",
                                token_position(next(following, None)) or Position(1, 1),
                                hint="a single SELECT (put helper queries in a WITH clause)", query=sql)
    return statements[0]


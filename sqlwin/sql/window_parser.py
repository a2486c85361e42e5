"""Window table functions in Spark SQL's parser: `TUMBLE(TABLE t ..., DESCRIPTOR(ts), ...)` as a relation.

`SqlwinParser` reads a window function where a table may stand (also as `TABLE(TUMBLE(...))`, the
SQL:2016 / Flink spelling): its arguments, positional or named (`SIZE => ...`), the TABLE argument
(a name or a query, WATERMARK, WITH options, PARTITION BY, ORDER BY), DESCRIPTOR(ts). Spark's own
form of the registered functions (`tumble(TABLE(t), 'ts', ...)`) is refused with an error marked
so that a caller hands the statement to Spark as written.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import SqlwinSyntaxError
from sqlwin.sql.ast_nodes import WINDOW_FUNCTIONS, Descriptor, TableArg, WindowOption, WindowOptions, WindowTVF
from sqlwin.sql.clause_parser import ClauseParser


class SqlwinParser(ClauseParser):
    """sqlwin's parser: Spark SQL, its clauses, and window table functions where a table may stand."""

    def _parse_table(self, *args: t.Any, **kwargs: t.Any) -> exp.Expr | None:
        if self._at_window_function():
            return self._parse_window_tvf()
        table = super()._parse_table(*args, **kwargs)
        if isinstance(table, exp.Table) and self._curr and self._curr.text.upper() == "WATERMARK":
            table.set("watermark", self._parse_watermark())
            if not table.args.get("alias"):
                table.set("alias", self._parse_table_alias())
        return table

    # -- window table functions -------------------------------------------------

    def _at_window_function(self) -> bool:
        curr, nxt = self._curr, self._next
        if not curr or not nxt:
            return False
        if curr.text.upper() in WINDOW_FUNCTIONS and nxt.token_type == TokenType.L_PAREN:
            return True
        # TABLE(TUMBLE(...)): the SQL:2016 / Flink spelling.
        if curr.token_type == TokenType.TABLE and nxt.token_type == TokenType.L_PAREN:
            after = self._tokens[self._index + 2] if self._index + 2 < len(self._tokens) else None
            return bool(after and after.text.upper() in WINDOW_FUNCTIONS)
        return False

    def _parse_window_tvf(self) -> WindowTVF:
        wrapped = self._curr.token_type == TokenType.TABLE
        if wrapped:
            self._advance(2)  # TABLE (
        name_token = self._curr
        self._advance(2)  # NAME (
        args = self._parse_csv(self._parse_window_argument)
        parenthesised = [a.this.meta["spark_form"] for a in args if isinstance(a, TableArg)
                         and a.this.meta.get("spark_form")]
        if not wrapped and _registered_form(args, bool(parenthesised)):
            raise self._registered_form_error(name_token)
        if parenthesised:  # TABLE(t) with DESCRIPTOR(ts): neither form
            raise self._syntax_error("Expected a query inside TABLE ( )", parenthesised[0],
                                     "TABLE name, or TABLE (SELECT ...)")
        self._expect_r_paren(f"to close {name_token.text.upper()}(")
        if wrapped:
            self._expect_r_paren("to close TABLE(")
        tvf = WindowTVF(this=name_token.text.upper(), expressions=args)
        tvf.update_positions(name_token)
        alias = self._parse_table_alias()
        if alias:
            tvf.set("alias", alias)
        return tvf

    def _parse_window_argument(self) -> exp.Expr | None:
        if self._curr and self._next and self._next.token_type == TokenType.FARROW:
            name_token = self._curr
            self._advance(2)
            value = self._parse_window_value()
            if value is None:
                raise self._syntax_error(f"Expected a value after {name_token.text} =>", self._curr or self._prev,
                                         f"{name_token.text.upper()} => value, e.g. SIZE => INTERVAL 1 HOUR")
            kwarg = exp.Kwarg(this=exp.var(name_token.text.upper()), expression=value)
            return kwarg.update_positions(name_token)
        return self._parse_window_value()

    def _parse_window_value(self) -> exp.Expr | None:
        token = self._curr
        if token is None:
            return None
        if token.token_type == TokenType.TABLE:
            self._advance()
            return self._parse_table_argument(token)
        if token.text.upper() == "DESCRIPTOR" and self._next and self._next.token_type == TokenType.L_PAREN:
            self._advance(2)
            inner = self._parse_assignment()
            if inner is None:
                raise self._syntax_error("Expected the time column inside DESCRIPTOR( )", self._curr or self._prev,
                                         "DESCRIPTOR(ts) | DESCRIPTOR(PROCTIME())")
            self._expect_r_paren("to close DESCRIPTOR(")
            return self._keep_source(Descriptor(this=inner).update_positions(token), token)
        value = self._parse_assignment()
        if value is not None and not value.meta.get("line"):
            value.update_positions(token)
        return self._keep_source(value, token)

    def _parse_table_argument(self, table_token: Token) -> TableArg:
        if (self._curr and self._curr.token_type == TokenType.L_PAREN and self._next
                and self._next.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
                and self._tokens[min(self._index + 2, len(self._tokens) - 1)].token_type in (TokenType.R_PAREN,
                                                                                           TokenType.DOT)):
            # TABLE(name): Spark's TABLE argument, the registered table functions' form (docs/functions.md).
            open_token = self._curr
            self._advance()
            table = self._parse_table_parts()
            self._expect_r_paren("to close TABLE(")
            table.meta["spark_form"] = open_token  # see _parse_window_tvf
        elif self._curr and self._curr.token_type == TokenType.L_PAREN:
            # TABLE (SELECT ...): a query as the input (Flink's documentation; Spark's TABLE(SELECT ...)).
            open_token = self._curr
            table = self._parse_select(table=True, parse_subquery_alias=False)
            if not isinstance(table, exp.Subquery) or not isinstance(table.this, exp.Query):
                raise self._syntax_error("Expected a query inside TABLE ( )", open_token,
                                         "TABLE name, or TABLE (SELECT ...)")
            self._keep_source(table, open_token)
        else:
            table = self._parse_table_parts()
        alias = self._parse_table_alias()
        if alias:
            table.set("alias", alias)
        arg = TableArg(this=table).update_positions(table_token)
        while self._curr:
            word = self._curr.text.upper()
            if word == "WATERMARK":
                arg.set("watermark", self._parse_watermark())
            elif self._curr.token_type == TokenType.WITH:
                arg.set("options", self._parse_window_options())
            elif self._match(TokenType.PARTITION_BY):
                arg.set("partition_by", self._parse_column_list(self._parse_assignment, "PARTITION BY"))
            elif self._match(TokenType.ORDER_BY):
                arg.set("order", self._parse_column_list(self._parse_ordered, "ORDER BY"))
            else:
                break
        return arg

    def _parse_column_list(self, parse_item: t.Callable[[], exp.Expr | None], clause: str) -> list[exp.Expr]:
        """`k1, k2` or `(k1, k2)` inside a window function's argument list.

        Commas also separate the function's arguments, so the list goes on only while
        the next item looks like a column (an identifier that does not open a call or a
        named argument): `PARTITION BY k, DESCRIPTOR(ts)` stops after `k`.
        """
        first = self._parse_list_item(parse_item, clause)
        if isinstance(first, exp.Tuple):
            return list(first.expressions)
        items = [first]
        while (
            self._curr
            and self._curr.token_type == TokenType.COMMA
            and self._next
            and self._next.token_type in (TokenType.VAR, TokenType.IDENTIFIER)
            and self._next.text.upper() not in ("DESCRIPTOR", "INTERVAL")
            and (self._index + 2 >= len(self._tokens)
                 or self._tokens[self._index + 2].token_type not in (TokenType.FARROW, TokenType.L_PAREN))
        ):
            self._advance()
            items.append(self._parse_list_item(parse_item, clause))
        return items

    def _parse_list_item(self, parse_item: t.Callable[[], exp.Expr | None], clause: str) -> exp.Expr:
        token = self._curr
        item = parse_item()
        if item is None:
            raise self._syntax_error(f"Expected a column in the {clause} list", token or self._prev,
                                     f"{clause} k1, k2 or {clause} (k1, k2)")
        return item

    def _parse_window_options(self) -> WindowOptions:
        token = self._curr
        self._advance()  # WITH
        if not self._match(TokenType.L_PAREN):
            raise self._syntax_error("Expected '(' after WITH", self._curr, "WITH (name = value, ...)")
        options = []
        while True:
            name_token = self._curr
            name = self._parse_id_var(any_token=True)
            if name is None or not self._match(TokenType.EQ):
                raise self._syntax_error("Expected name = value in the options list", self._curr or name_token,
                                         "WITH (watermark_strategy = 'min_event_time', idle_timeout = INTERVAL 5 MINUTES)")
            value = self._parse_clause_value(f"{name.name} =", "WITH (watermark_strategy = 'min_event_time', "
                                      "idle_timeout = INTERVAL 5 MINUTES, arrival_order = column)")
            options.append(WindowOption(this=name, expression=value).update_positions(name_token))
            if not self._match(TokenType.COMMA):
                break
        self._expect_r_paren("to close the options list")
        return WindowOptions(expressions=options).update_positions(token)

    def _registered_form_error(self, name_token: Token) -> SqlwinSyntaxError:
        """Spark's form of a window function -- `tumble(TABLE(t), 'ts', ...)`, the registered table
        functions' -- is not sqlwin's own SQL: the error says so and is marked `registered_form`, so
        that a caller runs the statement through Spark as written (where sqlwin.register(spark) made
        the functions), and shows this message when Spark has no such function."""
        name = name_token.text.upper()
        err = self._syntax_error(
            f"{name_token.text}(TABLE(t), 'ts', ...) is Spark's form of {name}, the registered table function's",
            name_token, f"sqlwin's own SQL: {name}(TABLE t, DESCRIPTOR(ts), ...); Spark's form runs once "
                        "sqlwin.register(spark) has registered the functions (`sqlwin sql` does)")
        err.registered_form = True
        return err


def _registered_form(args: list, parenthesised: bool) -> bool:
    """Whether a window function's arguments are Spark's form (the registered table functions'):
    the time column as a string (`'ts'`, `timecol => 'ts'`), or `TABLE(t)` (`parenthesised`) with no
    DESCRIPTOR (global_window(TABLE(t) PARTITION BY (k)))."""
    def is_string(value) -> bool:
        return isinstance(value, exp.Literal) and value.is_string

    for i, arg in enumerate(args):
        if i == 1 and is_string(arg):
            return True
        if isinstance(arg, exp.Kwarg) and arg.this.name.upper() == "TIMECOL" and is_string(arg.expression):
            return True
    return parenthesised and not any(isinstance(a, Descriptor) or isinstance(a, exp.Kwarg)
                                     and isinstance(a.expression, Descriptor) for a in args)

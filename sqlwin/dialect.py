"""The sqlwin SQL dialect: Spark SQL plus window table functions, WATERMARK and EMIT.

The dialect only *parses*: it turns the extensions into typed sqlglot nodes and leaves
every other piece of Spark SQL untouched. Meaning (sizes, validation, defaults) is
given to those nodes by `sqlwin.plan`, which is the only reader of this module's nodes.

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
"""

from __future__ import annotations

import re
import typing as t

from sqlglot import exp, parse as sqlglot_parse
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import Position, SqlwinSyntaxError

WINDOW_FUNCTIONS = (
    "TUMBLE",
    "HOP",
    "CUMULATE",
    "SESSION",
    "SLIDE",
    "COUNT_WINDOW",
    "GLOBAL_WINDOW",
)

# Words that start a sqlwin clause and so can never be an implicit table alias.
_CLAUSE_WORDS = {"WATERMARK", "EMIT", "LATE"}


# --------------------------------------------------------------------------- nodes


class WindowTVF(exp.Expression):
    """`TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)` used as a relation."""

    arg_types = {"this": True, "expressions": False, "alias": False}

    @property
    def function(self) -> str:
        return self.args["this"]

    @property
    def alias_or_name(self) -> str:  # sqlglot asks relations for this
        return self.alias or ""


class TableArg(exp.Expression):
    """The `TABLE t [WATERMARK ...] [WITH (...)] [PARTITION BY ...] [ORDER BY ...]` argument."""

    arg_types = {
        "this": True,  # exp.Table
        "watermark": False,
        "options": False,
        "partition_by": False,
        "order": False,
    }


class Descriptor(exp.Expression):
    """`DESCRIPTOR(ts)`: names the time column (or `PROCTIME()` for processing time)."""

    arg_types = {"this": True}


class Watermark(exp.Expression):
    """`WATERMARK ts DELAY OF INTERVAL 5 SECONDS`."""

    arg_types = {"this": True, "delay": False}


class WindowOptions(exp.Expression):
    """`WITH (watermark_strategy = 'min_event_time', idle_timeout = INTERVAL 5 MINUTES)`."""

    arg_types = {"expressions": True}


class WindowOption(exp.Expression):
    arg_types = {"this": True, "expression": True}


class Emit(exp.Expression):
    """The EMIT clause after GROUP BY / HAVING; every part is optional."""

    arg_types = {
        "final": False,
        "changes": False,
        "early_interval": False,
        "early_rows": False,
        "allowed_lateness": False,
        "late_interval": False,
        "late_rows": False,
        "accumulation": False,  # 'ACCUMULATING' | 'DISCARDING' | 'RETRACTING'
        "only_updated": False,
    }


class LateRowsInto(exp.Expression):
    """`LATE ROWS INTO late_events`."""

    arg_types = {"this": True}


# --------------------------------------------------------------------------- parser


def _position(token: Token | None) -> Position | None:
    if token is None:
        return None
    return Position(token.line, max(token.col - len(token.text) + 1, 1), token.text)


class SqlwinParser(SparkParser):
    def _parse_table(self, *args: t.Any, **kwargs: t.Any) -> exp.Expr | None:
        if self._at_window_function():
            return self._parse_window_tvf()
        table = super()._parse_table(*args, **kwargs)
        if isinstance(table, exp.Table) and self._curr and self._curr.text.upper() == "WATERMARK":
            table.set("watermark", self._parse_watermark())
            if not table.args.get("alias"):
                table.set("alias", self._parse_table_alias())
        return table

    def _parse_table_alias(self, *args: t.Any, **kwargs: t.Any) -> exp.TableAlias | None:
        if self._curr and self._curr.text.upper() in _CLAUSE_WORDS:
            return None
        return super()._parse_table_alias(*args, **kwargs)

    def _parse_query_modifiers(self, this):  # type: ignore[override]
        this = super()._parse_query_modifiers(this)
        if not isinstance(this, exp.Select):
            return this
        while self._curr:
            word = self._curr.text.upper()
            if word == "EMIT":
                if this.args.get("emit"):
                    raise self._syntax_error("A query takes one EMIT clause, found a second", self._curr,
                                             "one EMIT clause listing every part, e.g. EMIT EARLY EVERY 10 ROWS RETRACTING")
                token = self._curr
                self._advance()
                emit = self._parse_emit_parts()
                emit.update_positions(token)
                this.set("emit", emit)
            elif word == "LATE" and self._next and self._next.text.upper() == "ROWS":
                token = self._curr
                self._advance(2)
                if not self._match(TokenType.INTO):
                    raise self._syntax_error("Expected INTO after LATE ROWS", self._curr, "LATE ROWS INTO name")
                name = self._parse_table_parts()
                if this.args.get("late_into"):
                    raise self._syntax_error("A query takes one LATE ROWS INTO clause", token)
                this.set("late_into", LateRowsInto(this=name).update_positions(token))
            else:
                break
            # ORDER BY / LIMIT may still follow the sqlwin clauses.
            this = super()._parse_query_modifiers(this)
        return this

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
        self._expect_r_paren(f"to close {name_token.text.upper()}(")
        if wrapped:
            self._expect_r_paren("to close TABLE(")
        tvf = WindowTVF(this=name_token.text.upper(), expressions=args)
        tvf.update_positions(name_token)
        alias = self._parse_table_alias()
        if alias:
            tvf.set("alias", alias)
        return tvf

    def _expect_r_paren(self, why: str) -> None:
        if not self._match(TokenType.R_PAREN):
            raise self._syntax_error(f"Expected ')' {why}", self._curr or self._prev,
                                     "window arguments separated by commas, then ')'")

    def _parse_window_argument(self) -> exp.Expr | None:
        if self._curr and self._next and self._next.token_type == TokenType.FARROW:
            name_token = self._curr
            self._advance(2)
            value = self._parse_window_value()
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
            self._expect_r_paren("to close DESCRIPTOR(")
            return Descriptor(this=inner).update_positions(token)
        value = self._parse_assignment()
        if value is not None and not value.meta.get("line"):
            value.update_positions(token)
        return value

    def _parse_table_argument(self, table_token: Token) -> TableArg:
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
                arg.set("partition_by", self._parse_column_list(self._parse_assignment))
            elif self._match(TokenType.ORDER_BY):
                arg.set("order", self._parse_column_list(self._parse_ordered))
            else:
                break
        return arg

    def _parse_column_list(self, parse_item: t.Callable[[], exp.Expr | None]) -> list[exp.Expr]:
        """`k1, k2` or `(k1, k2)` inside a window function's argument list.

        Commas also separate the function's arguments, so the list goes on only while
        the next item looks like a column (an identifier that does not open a call or a
        named argument): `PARTITION BY k, DESCRIPTOR(ts)` stops after `k`.
        """
        first = parse_item()
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
            items.append(parse_item())
        return items

    def _parse_watermark(self) -> Watermark:
        token = self._curr
        self._advance()  # WATERMARK
        column = self._parse_column()
        if column is None:
            raise self._syntax_error("Expected a time column after WATERMARK", self._curr,
                                     "WATERMARK ts DELAY OF INTERVAL 5 SECONDS")
        delay = None
        if self._curr and self._curr.text.upper() == "DELAY":
            self._advance()
            if not (self._curr and self._curr.text.upper() == "OF"):
                raise self._syntax_error("Expected OF after DELAY", self._curr, "DELAY OF INTERVAL 5 SECONDS")
            self._advance()
            delay = self._parse_bitwise()
        return Watermark(this=column, delay=delay).update_positions(token)

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
            value = self._parse_bitwise()
            options.append(WindowOption(this=name, expression=value).update_positions(name_token))
            if not self._match(TokenType.COMMA):
                break
        self._expect_r_paren("to close the options list")
        return WindowOptions(expressions=options).update_positions(token)

    # -- EMIT ----------------------------------------------------------------------

    def _parse_emit_parts(self) -> Emit:
        emit = Emit()
        parsed_any = False
        while self._curr:
            word = self._curr.text.upper()
            if word in ("FINAL", "CHANGES"):
                self._advance()
                emit.set(word.lower(), True)
            elif word == "EARLY":
                self._advance()
                self._expect_word("EVERY", "EMIT EARLY EVERY INTERVAL 10 SECONDS | EMIT EARLY EVERY 100 ROWS")
                self._parse_every(emit, "early")
            elif word == "ALLOWED":
                self._advance()
                self._expect_word("LATENESS", "ALLOWED LATENESS INTERVAL 1 HOUR")
                emit.set("allowed_lateness", self._parse_bitwise())
            elif word == "LATE" and self._next and self._next.text.upper() == "EVERY":
                self._advance(2)
                self._parse_every(emit, "late")
            elif word in ("ACCUMULATING", "DISCARDING", "RETRACTING"):
                if emit.args.get("accumulation"):
                    raise self._syntax_error("EMIT takes one accumulation mode", self._curr,
                                             "one of ACCUMULATING, DISCARDING, RETRACTING")
                self._advance()
                emit.set("accumulation", word)
            elif word == "ONLY":
                self._advance()
                self._expect_word("UPDATED", "ONLY UPDATED")
                emit.set("only_updated", True)
            else:
                break
            parsed_any = True
        if not parsed_any:
            raise self._syntax_error("EMIT needs to say when to emit", self._curr or self._prev,
                                     "EMIT FINAL | EMIT CHANGES | EMIT EARLY EVERY ... | ALLOWED LATENESS ... | "
                                     "ACCUMULATING | DISCARDING | RETRACTING | ONLY UPDATED")
        return emit

    def _parse_every(self, emit: Emit, which: str) -> None:
        if self._curr and self._curr.token_type == TokenType.INTERVAL:
            emit.set(f"{which}_interval", self._parse_bitwise())
            return
        count = self._parse_primary()
        if not (isinstance(count, exp.Literal) and not count.is_string):
            raise self._syntax_error(f"Expected an interval or a row count after {which.upper()} EVERY",
                                     self._prev, f"{which.upper()} EVERY INTERVAL 10 SECONDS | {which.upper()} EVERY 100 ROWS")
        self._expect_word("ROWS", f"{which.upper()} EVERY {count.this} ROWS", also=("ROW",))
        emit.set(f"{which}_rows", count)

    def _expect_word(self, word: str, accepted: str, also: tuple[str, ...] = ()) -> None:
        if self._curr and self._curr.text.upper() in (word, *also):
            self._advance()
            return
        raise self._syntax_error(f"Expected {word}", self._curr or self._prev, accepted)

    def _syntax_error(self, message: str, token: Token | None, hint: str | None = None) -> SqlwinSyntaxError:
        return SqlwinSyntaxError(message, _position(token), hint)


# --------------------------------------------------------------------------- generator


def _emit_sql(gen: SparkGenerator, e: Emit) -> str:
    parts = ["EMIT"]
    if e.args.get("final"):
        parts.append("FINAL")
    if e.args.get("changes"):
        parts.append("CHANGES")
    for which in ("early", "late"):
        if e.args.get(f"{which}_interval") is not None:
            parts.append(f"{which.upper()} EVERY {gen.sql(e, f'{which}_interval')}")
        if e.args.get(f"{which}_rows") is not None:
            parts.append(f"{which.upper()} EVERY {gen.sql(e, f'{which}_rows')} ROWS")
        if which == "early" and e.args.get("allowed_lateness") is not None:
            parts.append(f"ALLOWED LATENESS {gen.sql(e, 'allowed_lateness')}")
    if e.args.get("accumulation"):
        parts.append(e.args["accumulation"])
    if e.args.get("only_updated"):
        parts.append("ONLY UPDATED")
    return " ".join(parts)


def _table_arg_sql(gen: SparkGenerator, e: TableArg) -> str:
    sql = f"TABLE {gen.sql(e, 'this')}"
    if e.args.get("watermark"):
        sql += f" {gen.sql(e, 'watermark')}"
    if e.args.get("options"):
        sql += f" {gen.sql(e, 'options')}"
    if e.args.get("partition_by"):
        sql += f" PARTITION BY {gen.expressions(e, key='partition_by', flat=True)}"
    if e.args.get("order"):
        sql += f" ORDER BY {gen.expressions(e, key='order', flat=True)}"
    return sql


def _watermark_sql(gen: SparkGenerator, e: Watermark) -> str:
    delay = f" DELAY OF {gen.sql(e, 'delay')}" if e.args.get("delay") else ""
    return f"WATERMARK {gen.sql(e, 'this')}{delay}"


class SqlwinGenerator(SparkGenerator):
    TRANSFORMS = {
        **SparkGenerator.TRANSFORMS,
        WindowTVF: lambda gen, e: f"{e.function}({gen.expressions(e, flat=True)})"
        + (f" AS {gen.sql(e, 'alias')}" if e.args.get("alias") else ""),
        TableArg: _table_arg_sql,
        Descriptor: lambda gen, e: f"DESCRIPTOR({gen.sql(e, 'this')})",
        Watermark: _watermark_sql,
        WindowOptions: lambda gen, e: f"WITH ({gen.expressions(e, flat=True)})",
        WindowOption: lambda gen, e: f"{gen.sql(e, 'this')} = {gen.sql(e, 'expression')}",
        Emit: _emit_sql,
        LateRowsInto: lambda gen, e: f"LATE ROWS INTO {gen.sql(e, 'this')}",
    }

    def query_modifiers(self, expression: exp.Expr, *sqls: str) -> str:
        sql = super().query_modifiers(expression, *sqls)
        for key in ("emit", "late_into"):
            if expression.args.get(key) is not None:
                sql += f" {self.sql(expression, key)}"
        return sql

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        sql = super().table_sql(expression, sep)
        if expression.args.get("watermark") is not None:
            sql += f" {self.sql(expression, 'watermark')}"
        return sql

    def arrayagg_sql(self, expression: exp.ArrayAgg) -> str:
        """`array_agg(v ORDER BY k [DESC] [NULLS FIRST|LAST], ...)`, which Spark cannot write (its
        collect_list has no order): the non-NULL values' (keys, value) structs collected, sorted by
        a comparator over the keys, and the values kept."""
        order = expression.this
        if not isinstance(order, exp.Order):
            return super().arrayagg_sql(expression)
        value = order.this
        distinct = isinstance(value, exp.Distinct)
        if distinct:
            value = value.expressions[0]
        keys, value_sql = order.expressions, self.sql(value)
        fields = [*(f"'__k{i}', {self.sql(key, 'this')}" for i, key in enumerate(keys)), f"'__v', {value_sql}"]
        item = f"IF({value_sql} IS NULL, NULL, named_struct({', '.join(fields)}))"
        cases = []
        for i, key in enumerate(keys):
            descending = bool(key.args.get("desc"))
            nulls_first = key.args.get("nulls_first")
            nulls_first = (not descending) if nulls_first is None else bool(nulls_first)
            left, right, null, less = f"__l.__k{i}", f"__r.__k{i}", -1 if nulls_first else 1, 1 if descending else -1
            cases += [f"WHEN {left} IS NULL AND {right} IS NOT NULL THEN {null}",
                      f"WHEN {left} IS NOT NULL AND {right} IS NULL THEN {-null}",
                      f"WHEN {left} < {right} THEN {less}", f"WHEN {left} > {right} THEN {-less}"]
        comparator = f"(__l, __r) -> CASE {' '.join(cases)} ELSE 0 END"
        sql = f"transform(array_sort(collect_list({item}), {comparator}), __x -> __x.__v)"
        return f"array_distinct({sql})" if distinct else sql


class Sqlwin(Spark):
    """Spark SQL plus sqlwin's windowing extensions."""

    Parser = SqlwinParser
    Generator = SqlwinGenerator


# --------------------------------------------------------------------------- entry point


def parse(sql: str) -> list[exp.Expr]:
    """Parse one or more `;`-separated statements, turning sqlglot errors into SqlwinSyntaxError."""
    try:
        statements = [s for s in sqlglot_parse(sql, dialect=Sqlwin) if s is not None]
    except SqlwinSyntaxError as err:
        raise err.with_query(sql) from None
    except ParseError as err:
        raise _from_parse_error(err, sql) from None
    except TokenError as err:
        raise SqlwinSyntaxError(f"Cannot read the query: {err}", hint="Spark SQL with sqlwin's window functions",
                                query=sql) from None
    if not statements:
        raise SqlwinSyntaxError("The query is empty", hint="a SELECT statement", query=sql)
    for statement in statements:
        _one_ordered_collect_form(statement)
    return statements


def _one_ordered_collect_form(statement: exp.Expr) -> None:
    """`collect_list(v) WITHIN GROUP (ORDER BY k)` becomes `array_agg(v ORDER BY k)`: one node shape
    (ArrayAgg over an Order) for the lowerings to read."""
    for node in list(statement.find_all(exp.WithinGroup)):
        agg, order = node.this, node.expression
        if isinstance(agg, exp.ArrayAgg) and not isinstance(agg.this, exp.Order) and isinstance(order, exp.Order):
            agg.set("this", exp.Order(this=agg.this, expressions=order.expressions))
            node.replace(agg)


def parse_one(sql: str) -> exp.Expr:
    statements = parse(sql)
    if len(statements) > 1:
        raise SqlwinSyntaxError(f"Expected one statement, found {len(statements)}",
                                hint="a single SELECT (put helper queries in a WITH clause)", query=sql)
    return statements[0]


def _from_parse_error(err: ParseError, sql: str) -> SqlwinSyntaxError:
    detail = err.errors[0] if err.errors else {}
    description = detail.get("description") or str(err).splitlines()[0]
    # sqlglot names tokens by their repr; a user wants the text they typed.
    description = re.sub(r"<Token token_type: [^,]+, text: ([^,]*),[^>]*>", r"'\1'", description)
    line, col = detail.get("line"), detail.get("col")
    highlight = detail.get("highlight") or ""
    position = None
    if line and col:
        position = Position(line, max(col - len(highlight) + 1, 1), highlight)
    return SqlwinSyntaxError(f"Syntax error: {description}", position,
                             hint="Spark SQL; window functions as FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)",
                             query=sql)

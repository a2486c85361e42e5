"""The sqlwin SQL dialect: Spark SQL plus window table functions, WATERMARK and EMIT.

The dialect only *parses*: it turns the extensions into typed sqlglot nodes and leaves
every other piece of Spark SQL untouched. Meaning (sizes, validation, defaults) is
given to those nodes by `sqlwin.sql.plan`, which is the only reader of this module's nodes.

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

from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, TokenError
from sqlglot.generators.spark import SparkGenerator
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import Position, SqlwinError, SqlwinSyntaxError
from sqlwin.sql.scan import COMMENT, Span, unclosed

E = t.TypeVar("E", bound=exp.Expr)

WINDOW_FUNCTIONS = (
    "TUMBLE",
    "HOP",
    "CUMULATE",
    "SESSION",
    "SLIDE",
    "COUNT_WINDOW",
    "GLOBAL_WINDOW",
)

_INTERVAL_STRING = re.compile(r"(?:\s*[-+]?[0-9]+(?:\.[0-9]+)?\s*[a-zA-Z]+\s*)+")

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
    """Where a token starts, and its text as written: a quoted string's or name's quotes included
    (the token's text leaves them out, and its column is where the closing quote is)."""
    if token is None:
        return None
    text = token.text
    span = token.end - token.start + 1 if token.end >= token.start else len(text)
    if span == len(text) + 2 and token.token_type in (TokenType.STRING, TokenType.IDENTIFIER):
        quote = "'" if token.token_type == TokenType.STRING else "`"
        text = f"{quote}{text}{quote}"
    return Position(token.line, max(token.col - max(span, len(text)) + 1, 1), text)


class SqlwinParser(SparkParser):
    def _parse_csv(self, parse_method, sep=TokenType.COMMA):  # type: ignore[override]
        """sqlglot skips an empty item (`SELECT a, , b`, `ORDER BY , 4`): Spark does not, nor does sqlwin."""
        items = []
        first = True
        while True:
            token = self._curr
            item = parse_method()
            if item is None and not first and self._prev and self._prev.token_type == sep:
                self.raise_error(f"Expected an expression after '{self._prev.text}'", token or self._prev)
            if item is not None:
                items.append(item)
            first = False
            if not self._match(sep):
                break
            if item is None:
                self.raise_error(f"Expected an expression before '{self._prev.text}'", self._prev)
            if isinstance(item, exp.Expr):
                self._add_comments(item)
        return items

    def _parse_interval(self, *args: t.Any, **kwargs: t.Any) -> exp.Expr | None:
        """sqlglot reads `INTERVAL '1 hour 30'` as INTERVAL '1' HOUR, dropping the rest: refuse what it would drop."""
        string = self._next if self._curr and self._curr.token_type == TokenType.INTERVAL else None
        interval = super()._parse_interval(*args, **kwargs)
        if (interval is not None and string and string.token_type == TokenType.STRING
                and exp.INTERVAL_STRING_RE.match(string.text) and not _INTERVAL_STRING.fullmatch(string.text)):
            self.raise_error(f"Cannot read the interval '{string.text}': expected amounts with units, "
                             "like '1 hour 30 minutes'", string)
        return interval

    def _parse_from(self, *args: t.Any, **kwargs: t.Any) -> exp.From | None:
        if (self._curr and self._curr.token_type == TokenType.FROM
                and self._next and self._next.token_type == TokenType.FROM):
            self.raise_error("FROM twice: a table, a subquery or a window function belongs after FROM", self._next)
        return super()._parse_from(*args, **kwargs)

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

    def _expect_r_paren(self, why: str) -> None:
        if not self._match(TokenType.R_PAREN):
            raise self._syntax_error(f"Expected ')' {why}", self._curr or self._prev,
                                     "window arguments separated by commas, then ')'")

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
            delay = self._parse_clause_value("DELAY OF", "DELAY OF INTERVAL 5 SECONDS | DELAY OF UNBOUNDED")
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
            value = self._parse_clause_value(f"{name.name} =", "WITH (watermark_strategy = 'min_event_time', "
                                      "idle_timeout = INTERVAL 5 MINUTES, arrival_order = column)")
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
                emit.set("allowed_lateness", self._parse_clause_value("ALLOWED LATENESS", "ALLOWED LATENESS INTERVAL 1 HOUR"))
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
            emit.set(f"{which}_interval", self._parse_clause_value(f"{which.upper()} EVERY",
                                                            f"{which.upper()} EVERY INTERVAL 10 SECONDS"))
            return
        token = self._curr
        count = self._parse_primary()
        if not (isinstance(count, exp.Literal) and not count.is_string):
            raise self._syntax_error(f"Expected an interval or a row count after {which.upper()} EVERY",
                                     token or self._prev,
                                     f"{which.upper()} EVERY INTERVAL 10 SECONDS | {which.upper()} EVERY 100 ROWS")
        self._keep_source(count.update_positions(token), token)
        self._expect_word("ROWS", f"{which.upper()} EVERY {count.this} ROWS", also=("ROW",))
        emit.set(f"{which}_rows", count)

    def _expect_word(self, word: str, accepted: str, also: tuple[str, ...] = ()) -> None:
        if self._curr and self._curr.text.upper() in (word, *also):
            self._advance()
            return
        raise self._syntax_error(f"Expected {word}", self._curr or self._prev, accepted)

    def _parse_clause_value(self, after: str, accepted: str) -> exp.Expr:
        """An expression (an interval, a name, a string) that must follow `after`, placed at its first token."""
        token = self._curr
        value = self._parse_bitwise()
        if value is None:
            raise self._syntax_error(f"Expected a value after {after}", token, accepted)
        if not value.meta.get("line"):
            value.update_positions(token)
        return self._keep_source(value, token)

    def _keep_source(self, node: E | None, first: Token | None) -> E | None:
        """Remember the text the user wrote for `node` (from `first` to the last token read): errors quote it
        rather than sqlglot's rewriting (`INTERVAL 1e308 MINUTES`, not `INTERVAL '1E+308' MINUTES`)."""
        last = self._prev
        if node is not None and first and last and last.end >= first.start:
            node.meta["source"] = self.sql[first.start:last.end + 1]
        return node

    def _syntax_error(self, message: str, token: Token | None, hint: str | None = None) -> SqlwinSyntaxError:
        return SqlwinSyntaxError(message, _position(token or self._curr or self._prev), hint)

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

    def filter_sql(self, expression: exp.Filter) -> str:
        """`agg FILTER (WHERE c)`; over an ordered array_agg the FILTER goes on the collect_list that
        `arrayagg_sql` writes (Spark refuses it on the `transform` around it)."""
        agg = expression.this
        if isinstance(agg, exp.ArrayAgg) and isinstance(agg.this, exp.Order):
            return self.arrayagg_sql(agg, self.sql(expression, "expression").strip())
        return super().filter_sql(expression)

    def arrayagg_sql(self, expression: exp.ArrayAgg, where: str | None = None) -> str:
        """`array_agg(v ORDER BY k [DESC] [NULLS FIRST|LAST], ...)`, which Spark cannot write (its
        collect_list has no order): the non-NULL values' (keys, value) structs collected, sorted by
        a comparator over the keys, and the values kept. `where`: the aggregate's `WHERE c` of
        FILTER, which filters the rows collected."""
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
        collected = f"collect_list({item})" + (f" FILTER({where})" if where else "")
        sql = f"transform(array_sort({collected}, {comparator}), __x -> __x.__v)"
        return f"array_distinct({sql})" if distinct else sql


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
        raise _unclosed_error(sql, open_span)
    dialect = SqlwinDialect()
    try:
        tokens = dialect.tokenize(sql)
    except TokenError as err:
        raise _from_token_error(err, sql, open_span) from None
    parser = dialect.parser()
    try:
        statements = [s for s in parser.parse(tokens, sql) if s is not None]
    except SqlwinSyntaxError as err:
        raise err.with_query(sql) from None
    except ParseError as err:
        raise _from_parse_error(err, sql, tokens, parser._curr, parser._prev) from None
    except RecursionError:
        raise SqlwinSyntaxError("The query nests too deeply to read", _position(parser._curr or parser._prev),
                                "fewer nested parentheses or subqueries", query=sql) from None
    except Exception as err:  # noqa: BLE001 - the last resort: a sqlglot or sqlwin bug, still placed in the query
        raise internal_error(SqlwinSyntaxError, err, _position(parser._curr or parser._prev), sql) from None
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
            keyword = _misspelling(word)
            raise SqlwinSyntaxError(f"'{word}' cannot start a statement" + (f": did you mean {keyword}?" if keyword else ""),
                                    _position(first) or Position(1, 1), "a statement starting with SELECT or WITH",
                                    query=sql)


def _short(node: exp.Expr) -> str:
    try:
        return node.sql(dialect=SqlwinDialect)[:30]
    except Exception:  # noqa: BLE001 - only for a message
        return type(node).__name__


def internal_error(kind: type[SqlwinError], err: Exception, position: Position | None, sql: str) -> SqlwinError:
    """An exception sqlwin did not foresee, as a SqlwinError that still points into the query.

    Only the parse and plan entry points use this, after every known cause has its own error;
    `.internal` keeps what happened (the fuzz test counts these as crashes).
    """
    error = kind(f"sqlwin cannot read the query here ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})",
                 position or Position(1, 1), "Spark SQL with sqlwin's window functions (docs/sql.md); if the query "
                 "is valid, please report it", query=sql)
    error.internal = f"{type(err).__name__}: {err}"
    return error


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
                                _position(next(following, None)) or Position(1, 1),
                                hint="a single SELECT (put helper queries in a WITH clause)", query=sql)
    return statements[0]


# --------------------------------------------------------------------------- syntax errors

_SYNTAX_HINT = "Spark SQL; window functions as FROM TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)"

# Words a misspelling is compared with ("SELEC" -> SELECT).
KEYWORDS = (
    "SELECT", "FROM", "WHERE", "GROUP", "ORDER", "HAVING", "LIMIT", "WITH", "JOIN", "INNER", "LEFT", "RIGHT", "FULL",
    "OUTER", "CROSS", "UNION", "EXCEPT", "INTERSECT", "DISTINCT", "TABLE", "DESCRIPTOR", "INTERVAL", "EMIT", "WATERMARK",
    "DELAY", "PARTITION", "BETWEEN", "EXISTS", "LATERAL", "VALUES", "CASE", "WHEN", "THEN", "ELSE", "FINAL", "CHANGES",
    "EARLY", "EVERY", "ALLOWED", "LATENESS", "ROWS", "INTO", "ACCUMULATING", "DISCARDING", "RETRACTING", "UPDATED",
    "UNBOUNDED", "PROCTIME", "TIMESTAMP", *WINDOW_FUNCTIONS,
)
_STATEMENT_STARTS = ("SELECT", "WITH", "FROM", "VALUES", "TABLE")

_NODE_WORDS = {
    "Mul": "'*'", "Div": "'/'", "Add": "'+'", "Sub": "'-'", "Mod": "'%'", "EQ": "'='", "NEQ": "'<>'", "GT": "'>'",
    "GTE": "'>='", "LT": "'<'", "LTE": "'<='", "And": "AND", "Or": "OR", "Not": "NOT", "Alias": "the alias",
    "Where": "WHERE", "Having": "HAVING", "Group": "GROUP BY", "Order": "ORDER BY", "Limit": "LIMIT",
    "Interval": "INTERVAL", "Cast": "CAST", "Between": "BETWEEN", "In": "IN", "Like": "LIKE", "Join": "JOIN",
    "Neg": "'-'", "Paren": "'('", "Kwarg": "'=>'", "PropertyEQ": "':='",
}


def _words(node_class: str) -> str:
    return _NODE_WORDS.get(node_class) or re.sub(r"(?<!^)(?=[A-Z])", " ", node_class).lower()


def _readable(description: str, found: str) -> str:
    """sqlglot's description with its internals (token reprs, class names) in the words of the query."""
    description = re.sub(r"<Token token_type: TokenType\.SENTINEL,[^>]*>", "the end of the query", description)
    description = re.sub(r"<Token token_type: [^,]+, text: (.*?), line: [^>]*>", r"'\1'", description)
    required = re.match(r"Required keyword: '(\w+)' missing for <class '[\w.]*?(\w+)'>", description)
    if required:
        return f"{_words(required.group(2))} is incomplete, found {found}"
    if description.startswith("Invalid expression / Unexpected token"):
        return f"unexpected {found}"
    expecting = re.fullmatch(r"Expecting (\S+)", description)
    if expecting:
        return f"expected '{expecting.group(1)}', found {found}"
    return re.sub(r"<class '[\w.]*?(\w+)'>", lambda m: _words(m.group(1)), description)


def _misspelling(word: str) -> str | None:
    """The keyword `word` is one typo (a letter dropped, added, changed or two swapped) away from."""
    upper = word.upper()
    if len(upper) < 4 or upper in KEYWORDS or not upper.replace("_", "").isalpha():
        return None
    for keyword in KEYWORDS:
        if abs(len(keyword) - len(upper)) <= 1 and edit_distance(upper, keyword) <= 1:
            return keyword
    return None


def edit_distance(a: str, b: str) -> int:
    """Optimal string alignment distance (Levenshtein plus swapped neighbours)."""
    rows = [list(range(len(b) + 1))] + [[i] + [0] * len(b) for i in range(1, len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[len(a)][len(b)]


def _from_parse_error(err: ParseError, sql: str, tokens: list[Token], current: Token | None,
                      previous: Token | None) -> SqlwinSyntaxError:
    detail = err.errors[0] if err.errors else {}
    line, col = detail.get("line"), detail.get("col")
    highlight = detail.get("highlight") or ""
    if line and col:
        position = Position(line, max(col - len(highlight) + 1, 1), highlight)
    else:  # a ParseError without a place: where the parser stopped
        position = _position(current or previous) or Position(1, 1)
    at = next((i for i, tok in enumerate(tokens) if (tok.line, tok.col) == (line, col)), None)
    found = f"'{highlight}'" if highlight and at is not None and current else "the end of the query"
    description = _readable(detail.get("description") or str(err).splitlines()[0], found)

    # A misspelled keyword: at the start of the statement, where the parser stopped, or just before.
    if at is not None:
        start = next((i + 1 for i in range(at - 1, -1, -1) if tokens[i].token_type == TokenType.SEMICOLON), 0)
        first = tokens[start]
        if first.token_type == TokenType.VAR and first.text.upper() not in _STATEMENT_STARTS:
            keyword = _misspelling(first.text)
            message = f"'{first.text}' cannot start a statement" + (f": did you mean {keyword}?" if keyword else "")
            return SqlwinSyntaxError(message, _position(first), "a statement starting with SELECT or WITH", query=sql)
        called = (tokens[i] for i in range(at - 1, max(start, at - 12) - 1, -1)
                  if tokens[i].token_type == TokenType.VAR and tokens[i + 1].token_type == TokenType.L_PAREN)
        for token in (tokens[at], tokens[at - 1] if at > start else None, next(called, None)):
            if token is not None and token.token_type == TokenType.VAR and _misspelling(token.text):
                description += f" (did you mean {_misspelling(token.text)} instead of '{token.text}'?)"
                break
    return SqlwinSyntaxError(f"Syntax error: {description}", position, hint=_SYNTAX_HINT, query=sql)


def _offset_position(sql: str, offset: int, length: int = 1) -> Position:
    offset = max(min(offset, len(sql) - 1), 0)
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    text = sql[offset:offset + length].split("\n")[0]
    return Position(line, column, text)


def _unclosed_error(sql: str, span: Span) -> SqlwinSyntaxError:
    """The string, quoted name or /* comment `span` is never closed."""
    kind, offset = span.kind, span.start
    opener = sql[offset:offset + 2] if kind == "comment" else sql[offset]
    what = {"comment": "comment", "string": "string literal", "identifier": "quoted name"}[kind]
    closer = "*/" if kind == "comment" else opener
    position = _offset_position(sql, offset, max(len(sql[offset:].split("\n")[0][:20]), 1))
    return SqlwinSyntaxError(f"Unterminated {what}: the {opener} here is never closed", position,
                             f"{what}s end with {closer}" + (" (an escaped quote inside is \\' or '')" if kind == "string"
                                                             and opener == "'" else ""), query=sql)


def _from_token_error(err: TokenError, sql: str, open_span: Span | None) -> SqlwinSyntaxError:
    if open_span is not None:
        return _unclosed_error(sql, open_span)
    cause = str(err.__cause__ or err)
    place = re.search(r" from (\d+):(\d+)$", cause)
    if place:
        offset = int(place.group(2))
    elif err.start is not None:
        offset = err.start + 50 if err.start else 0
    else:
        offset = 0
    reason = re.sub(r" from \d+:\d+$", "", cause.splitlines()[0] if cause else "")
    return SqlwinSyntaxError(f"Cannot read the query: {reason}", _offset_position(sql, offset),
                             hint="Spark SQL with sqlwin's window functions", query=sql)

"""Spark's parser as sqlwin reads Spark SQL, and the helpers sqlwin's own clauses share.

Stricter than sqlglot where Spark is (an empty item in a list, an interval string sqlglot would cut
short, FROM twice), and the pieces every extension uses: an expected word or `)`, a value after a
keyword, the user's own text kept on a node for error messages, a syntax error at a token. The
extensions build on it: sqlwin/sql/clause_parser.py, then sqlwin/sql/window_parser.py.
"""

from __future__ import annotations

import re
import typing as t

from sqlglot import exp
from sqlglot.parsers.spark import SparkParser
from sqlglot.tokens import Token, TokenType

from sqlwin.errors import SqlwinSyntaxError
from sqlwin.sql.syntax_errors import token_position

E = t.TypeVar("E", bound=exp.Expr)

_INTERVAL_STRING = re.compile(r"(?:\s*[-+]?[0-9]+(?:\.[0-9]+)?\s*[a-zA-Z]+\s*)+")


class StrictSparkParser(SparkParser):
    """Spark SQL read as Spark reads it where sqlglot is looser; the helpers of sqlwin's clauses."""

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

    def _expect_r_paren(self, why: str) -> None:
        if not self._match(TokenType.R_PAREN):
            raise self._syntax_error(f"Expected ')' {why}", self._curr or self._prev,
                                     "window arguments separated by commas, then ')'")

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
        return SqlwinSyntaxError(message, token_position(token or self._curr or self._prev), hint)

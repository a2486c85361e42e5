"""sqlwin's clauses in Spark SQL's parser: WATERMARK, EMIT and LATE ROWS INTO.

`WATERMARK ts DELAY OF interval` (after a table or a window function's TABLE argument), and after
a query's GROUP BY / HAVING the `EMIT ...` parts and `LATE ROWS INTO name`; ORDER BY and LIMIT may
still follow them. The words that start these clauses are never read as a table's alias.
"""

from __future__ import annotations

import typing as t

from sqlglot import exp
from sqlglot.tokens import TokenType

from sqlwin.ir import Accumulation
from sqlwin.sql.ast_nodes import Emit, LateRowsInto, Watermark
from sqlwin.sql.parser_base import StrictSparkParser

# Words that start a sqlwin clause and so can never be an implicit table alias.
_CLAUSE_WORDS = {"WATERMARK", "EMIT", "LATE"}


class ClauseParser(StrictSparkParser):
    """WATERMARK after a table, EMIT and LATE ROWS INTO after a query."""

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
            elif word in t.get_args(Accumulation):
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

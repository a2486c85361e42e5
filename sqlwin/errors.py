"""sqlwin's own error types.

Every problem a user can cause — a query that does not parse, a window with a zero
size, a column that does not exist, a file that cannot be read — surfaces as a
`SqlwinError` carrying *what* is wrong, *where* (line, column and the offending text
of the query) and *what would be accepted*. Nothing user-caused should escape as a
bare Python traceback or a JVM stack.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Position:
    """A place in the query text: 1-based line and column, plus the offending text."""

    line: int
    column: int
    text: str = ""

    def __str__(self) -> str:
        where = f"line {self.line}, column {self.column}"
        if not self.text:
            return where
        return f'{where}, at "{self.text}"' if self.text.startswith("'") else f"{where}, at '{self.text}'"


class SqlwinError(Exception):
    """Base class of every error sqlwin raises on purpose."""

    exit_code = 2  # what the CLI exits with: 2 = the query or the usage is wrong

    def __init__(
        self,
        message: str,
        position: Position | None = None,
        hint: str | None = None,
        query: str | None = None,
    ):
        self.message = message
        self.position = position
        self.hint = hint
        self.query = query
        super().__init__(self._render())

    def _render(self) -> str:
        parts = [self.message]
        if self.position:
            parts[0] += f" ({self.position})"
        excerpt = self._excerpt()
        if excerpt:
            parts.append(excerpt)
        if self.hint:
            parts.append(f"Accepted: {self.hint}")
        return "\n".join(parts)

    def _excerpt(self) -> str:
        """The query line with a caret under the offending text, when we know both."""
        if not (self.query and self.position and self.position.line >= 1):
            return ""
        lines = self.query.splitlines()
        if self.position.line > len(lines):
            return ""
        line = lines[self.position.line - 1]
        caret_at = max(self.position.column - 1, 0)
        width = max(len(self.position.text), 1)
        return f"  {line}\n  {' ' * caret_at}{'^' * width}"

    def with_query(self, query: str) -> "SqlwinError":
        """Attach the query text so the message can show the offending line."""
        if self.query is None:
            self.query = query
            self.args = (self._render(),)
        return self


class SqlwinSyntaxError(SqlwinError):
    """The query text does not parse."""


class SqlwinValidationError(SqlwinError):
    """The query parses but asks for something that cannot be computed (bad size, unknown column...)."""


class SqlwinUnsupportedError(SqlwinError):
    """The query is valid sqlwin but the requested execution mode cannot run it (yet)."""


class SqlwinUsageError(SqlwinError):
    """The command line or API was called wrongly (missing table, unknown file format...)."""


class SqlwinRuntimeError(SqlwinError):
    """Spark failed while running a query that passed validation."""

    exit_code = 1


# --------------------------------------------------------------------------- internal names

import re as _re

_SUGGESTIONS = _re.compile(r"\s*Did you mean one of the following\? \[([^\]]*)\]\.?")
_QUOTED = _re.compile(r"`((?:[^`]|``)*)`")
_WINDOW_NAMES = {"__win_window_start": "window_start", "__win_window_end": "window_end",
                 "__win_window_time": "window_time", "__win_window_index": "window_index"}


def user_name(name: str) -> str | None:
    """The user's name for a column sqlwin's rewrite named (`__k_user_5f_id` -> user_id), None for one
    that is sqlwin's alone (`__a0`, `__win`); any other name as it is."""
    if name in _WINDOW_NAMES:
        return _WINDOW_NAMES[name]
    if name.startswith("__k_"):
        return _re.sub(r"_([0-9a-f]+)_", lambda m: chr(int(m.group(1), 16)), name[4:])
    if name.startswith("__"):
        return None
    return name


def hide_internal_names(message: str) -> str:
    """A Spark message with sqlwin's internal column names taken out of its suggestions (or put back
    into the user's words), so it names only what the user wrote."""

    def suggestions(match: "_re.Match[str]") -> str:
        kept: list[str] = []
        for quoted in _QUOTED.finditer(match.group(1)):
            parts = quoted.group(1).replace("``", "`").split("`.`")
            name = user_name(parts[-1])
            if name is None:
                continue
            qualifiers = [] if any(p.startswith("__") for p in parts[:-1]) else parts[:-1]
            text = ".".join("`" + p.replace("`", "``") + "`" for p in [*qualifiers, name])
            if text not in kept:
                kept.append(text)
        return f" Did you mean one of the following? [{', '.join(kept)}]." if kept else ""

    message = _SUGGESTIONS.sub(suggestions, message)
    return _re.sub(r"`(__(?:k_|win_window_)[^`]*)`", lambda m: f"`{user_name(m.group(1))}`", message)

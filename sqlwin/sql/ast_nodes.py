"""The typed sqlglot nodes of sqlwin's extensions to Spark SQL.

A window table function used as a relation (`WindowTVF`), its TABLE argument (`TableArg`) with
WATERMARK, WITH options, PARTITION BY and ORDER BY, its DESCRIPTOR, and the EMIT and LATE ROWS
INTO clauses. The parser (sqlwin/sql/window_parser.py, clause_parser.py) makes them, the generator
(sqlwin/sql/generator.py) writes them back, the plan (sqlwin/sql/plan.py) gives them meaning.
"""

from __future__ import annotations

from sqlglot import exp

from sqlwin.ir import WINDOWERS

WINDOW_FUNCTIONS = tuple(kind.sql_name for kind in WINDOWERS)  # TUMBLE, HOP, ... as the IR names them


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

    def set_options(self, options: dict[str, exp.Expr]) -> None:
        """Its WITH (...) options with `options` set: added, or in place of a given option of that name."""
        given = self.args.get("options")
        kept = [o for o in (given.expressions if given is not None else [])
                if o.this.name.lower() not in {name.lower() for name in options}]
        added = [WindowOption(this=exp.to_identifier(name), expression=value) for name, value in options.items()]
        self.set("options", WindowOptions(expressions=[*kept, *added]))


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

"""What a plan holds: `QueryPlan`, the one input of every lowering.

The statement's window functions (sqlwin/sql/relation.py), its EMIT clause and LATE ROWS INTO
table, and the shape recognised around the windows: a windowed aggregation or a propagation
(sqlwin/sql/aggregation.py), a windowed join (sqlwin/sql/joins.py), SQL around one windowed stage
(sqlwin/sql/around.py). `build_plan` (sqlwin/sql/plan.py) makes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from sqlwin.errors import Position, SqlwinError
from sqlwin.ir import EmitSpec
from sqlwin.sql.aggregation import Propagation, WindowAggregation
from sqlwin.sql.around import Around
from sqlwin.sql.ast_nodes import Emit, LateRowsInto, WindowTVF
from sqlwin.sql.joins import WindowJoin
from sqlwin.sql.relation import WindowRelation


@dataclass
class QueryPlan:
    sql: str
    ast: exp.Expr
    windows: list[WindowRelation]
    emit: EmitSpec
    late_into: str | None
    aggregation: WindowAggregation | None
    emit_position: Position | None = None
    notes: list[str] = field(default_factory=list)
    time_zone: str = "UTC"  # spark.sql.session.timeZone: how a TIMESTAMP '...' literal was read
    join: "WindowJoin | None" = None  # window functions joined per key and window (sql/joins.py)
    join_refusal: SqlwinError | None = None  # why window functions joined otherwise are not such a join
    propagation: Propagation | None = None  # an aggregation over another's windowed result (AP-11)
    around: Around | None = None  # SQL around one windowed stage in a subquery or CTE (sql/around.py)

    @property
    def plain_spark(self) -> bool:
        """No window function, WATERMARK, EMIT or LATE ROWS INTO: Spark SQL that runs as written."""
        return not self.windows and not uses_sqlwin_syntax(self.ast)


def uses_sqlwin_syntax(ast: exp.Expr) -> bool:
    if ast.find(WindowTVF, Emit, LateRowsInto) is not None:
        return True
    return any(table.args.get("watermark") is not None for table in ast.find_all(exp.Table))

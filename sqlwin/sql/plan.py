"""From a parsed query to sqlwin's one IR: `build_plan`.

`build_plan(sql, schema_of)` parses the query, finds every window table function, binds its
arguments (sqlwin/sql/binding.py; intervals read by sqlwin/sql/durations.py), reads the EMIT and
LATE ROWS INTO clauses, recognises the shapes around the windows (an aggregation, a propagation:
sqlwin/sql/aggregation.py; a join, SQL around a stage), checks everything a user can get wrong
(with line, column and text: sqlwin/sql/places.py), and returns a `QueryPlan`
(sqlwin/sql/query_plan.py). Every later layer (native batch lowering, replay, streaming) reads the
plan only; explain puts it in words (sqlwin/sql/explain.py).

The plan knows nothing of Spark and writes no Spark SQL: the caller passes `schema_of(table_name)`,
which returns the column names and Spark type names of a relation (or None when unknown). All
durations are integer microseconds, the resolution of Spark's TIMESTAMP.

The names of the modules above are importable from here too (sqlwin.sql.plan.Tumble,
sqlwin.sql.plan.QueryPlan, sqlwin.sql.plan.describe_plan, ...), as they were before the plan was split.
"""

from __future__ import annotations

import typing as t
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.tokens import TokenType

from sqlwin.errors import Position, SqlwinError, SqlwinSyntaxError, SqlwinUnsupportedError, SqlwinValidationError
from sqlwin.ir import (  # noqa: F401 (the IR's types, re-exported: sqlwin.sql.plan.Tumble etc.)
    UNBOUNDED,
    CountWindow,
    Cumulate,
    EmitSpec,
    GlobalWindow,
    Hop,
    Session,
    Slide,
    Tumble,
    WatermarkSpec,
    Windower,
)
from sqlwin.sql.aggregation import (  # noqa: F401 (WindowAggregation, key_text, window_keys re-exported)
    WindowAggregation,
    key_text,
    recognise_aggregation,
    recognise_propagation,
    window_keys,
)
from sqlwin.sql.around import recognise_around
from sqlwin.sql.grouping import grouping_around
from sqlwin.sql.ast_nodes import WINDOW_FUNCTIONS, Emit, LateRowsInto, WindowTVF
from sqlwin.sql.binding import MAX_ROWS, SchemaLookup, window_relation
from sqlwin.sql.dialect import SqlwinDialect, parse_one
from sqlwin.sql.durations import MAX_MICROS, duration_micros, interval_text  # noqa: F401 (re-exported)
from sqlwin.sql.explain import (  # noqa: F401 (re-exported)
    default_watermark_notes,
    describe_emit,
    describe_plan,
    describe_time,
    describe_watermark,
    describe_windower,
)
from sqlwin.sql.joins import recognise_join
from sqlwin.sql.places import fail, node_position, parents, short_sql
from sqlwin.sql.query_plan import QueryPlan
from sqlwin.sql.relation import WINDOW_COLUMNS, TimeColumn, WindowRelation  # noqa: F401 (re-exported)
from sqlwin.sql.syntax_errors import edit_distance, internal_error
from sqlwin.sql.text import identifier_name


# --------------------------------------------------------------------------- building


def build_plan(sql: str, schema_of: SchemaLookup = lambda name: None, time_zone: str = "UTC",
               tables: dict[str, str] | None = None) -> QueryPlan:
    """Parse and validate `sql`; errors carry the query text so they can show the line.

    `tables`: {a table name the query reads: the view that stands for it}, e.g. a stream's sources,
    registered under views of sqlwin's own so that no temp view of the user's is replaced. The plan
    reads those views; the query keeps answering to the names it was written with."""
    try:
        ast = parse_one(sql)
    except SqlwinSyntaxError as err:
        # sqlglot cannot read every piece of Spark SQL (`GROUP BY window(ts, '1 hour')`): a query with
        # none of sqlwin's words may still be Spark's, which the caller then hands to Spark as written.
        # Spark's form of a window function (`tumble(TABLE(t), 'ts', ...)`) is the registered functions':
        # Spark runs it where they are registered.
        err.plain_spark = getattr(err, "registered_form", False) or not mentions_sqlwin(sql)
        raise err.with_query(sql) from None
    if tables:
        _read_tables_as(ast, tables)
    try:
        plan = _build(sql, ast, schema_of, time_zone)
    except SqlwinError as err:
        raise err.with_query(sql) from None
    plan.time_zone = time_zone
    return plan


def _read_tables_as(ast: exp.Expr, tables: dict[str, str]) -> None:
    """Every reference to a table named in `tables` (a one-part name, any case) reads its view instead,
    aliased to the name it was written with (`ev.k` keeps resolving) and placed where the name was
    (errors point at the user's text). A CTE of that name shadows the table outside its own body."""
    views = {name.lower(): view for name, view in tables.items()}
    ctes = {cte.alias_or_name.lower(): cte for cte in ast.find_all(exp.CTE)}
    for table in list(ast.find_all(exp.Table)):
        name = table.name
        if table.args.get("db") or table.args.get("catalog") or name.lower() not in views \
                or not isinstance(table.this, exp.Identifier):
            continue
        cte = ctes.get(name.lower())
        if cte is not None and not any(parent is cte for parent in parents(table)):
            continue  # the CTE, not the table
        view = exp.to_identifier(views[name.lower()], quoted=True)
        view.meta.update(table.this.meta)
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name, quoted=table.this.quoted)))
        table.set("this", view)


_SQLWIN_WORDS = {"WATERMARK", "EMIT", "DESCRIPTOR"}


def mentions_sqlwin(sql: str) -> bool:
    """Whether the text uses a word of sqlwin's own (a window function, or one a typo away, WATERMARK,
    EMIT, DESCRIPTOR, LATE ROWS), judged on its tokens; True when it cannot even be tokenized."""
    try:
        tokens = SqlwinDialect().tokenize(sql)
    except Exception:  # noqa: BLE001 - unreadable text is sqlwin's to report
        return True
    for token, following in zip(tokens, [*tokens[1:], None]):
        word = token.text.upper()
        if token.token_type == TokenType.STRING:
            continue
        if word in _SQLWIN_WORDS or (word == "LATE" and following is not None and following.text.upper() == "ROWS"):
            return True
        if following is not None and following.token_type == TokenType.L_PAREN and any(
                word == f or (len(word) >= 4 and edit_distance(word, f) <= 1) for f in WINDOW_FUNCTIONS):
            return True
    return False


def _build(sql: str, ast: exp.Expr, schema_of: SchemaLookup, time_zone: str = "UTC") -> QueryPlan:
    _unwrap_join_sides(ast)
    _hoist_clauses(ast)
    windows = [_guarded(window_relation, node, sql, node, schema_of, time_zone) for node in ast.find_all(WindowTVF)]
    plan = _guarded(_finish, ast, sql, sql, ast, windows)
    if plan.around is not None:  # the stage's own plan, as if it were the whole statement
        try:
            plan.around.stage = _build(plan.around.stage_sql, parse_one(plan.around.stage_sql), schema_of, time_zone)
            plan.around.stage.time_zone = time_zone
            for part in plan.around.others:  # several stages: each its own plan
                part.plan = _build(part.sql, parse_one(part.sql), schema_of, time_zone)
                part.plan.time_zone = time_zone
        except SqlwinError:
            # The statement's own build bound every window function: what fails here is the stage's text
            # read back. Without the split the statement runs as before (complete input) or is refused
            # as one windowed aggregation (replay, stream).
            plan.around = None
    return plan


def _hoist_clauses(ast: exp.Expr) -> None:
    """EMIT and LATE ROWS INTO after a UNION ALL of SELECTs end its last SELECT, as the parser reads
    them: they belong to the whole statement (each of its windowed stages)."""
    if not isinstance(ast, exp.SetOperation):
        return
    last = ast
    while isinstance(last, exp.SetOperation):
        last = last.expression
    for key in ("emit", "late_into"):
        if isinstance(last, exp.Select) and last.args.get(key) is not None:
            ast.set(key, last.args[key].pop())


def _unwrap_join_sides(ast: exp.Expr) -> None:
    """Flink writes a window join's sides as `(SELECT * FROM TABLE(TUMBLE(...))) L`: a SELECT * with
    nothing else is the window function itself, so each such side of a join becomes `TUMBLE(...) L`
    (the windowed join sqlwin recognises), where two or more sides of one join are window functions."""
    def bare(side: exp.Expr | None) -> WindowTVF | None:
        if isinstance(side, WindowTVF):
            return side
        body = side.this if isinstance(side, exp.Subquery) else None
        if not isinstance(body, exp.Select) or len(body.expressions) != 1 or not isinstance(body.expressions[0], exp.Star):
            return None
        if any(v for k, v in body.args.items() if k not in ("expressions", "from_")):
            return None
        inner = (body.args.get("from_") or exp.From()).this
        return inner if isinstance(inner, WindowTVF) and inner.args.get("alias") is None else None

    for select in list(ast.find_all(exp.Select)):
        joins = select.args.get("joins") or []
        sides = [select.args.get("from_").this if select.args.get("from_") else None, *(j.this for j in joins)]
        functions = [bare(side) for side in sides]
        if not joins or sum(f is not None for f in functions) < 2:
            continue
        for side, function in zip(sides, functions):
            if function is not None and function is not side:
                alias = side.args.get("alias")
                side.replace(function)
                function.set("alias", alias)


def _guarded(build: t.Callable[..., t.Any], node: exp.Expr, sql: str, *args: t.Any) -> t.Any:
    """The last resort: an exception nobody foresaw while reading `node` becomes a SqlwinError placed at it.

    Schema lookups raise their own SqlwinErrors (an unknown table), which pass through.
    """
    try:
        return build(*args)
    except SqlwinError:
        raise
    except Exception as err:  # noqa: BLE001 - every known cause has its own error; this keeps a place for the rest
        raise internal_error(SqlwinValidationError, err, node_position(node, short_sql(node)), sql) from None


def _finish(sql: str, ast: exp.Expr, windows: list[WindowRelation]) -> QueryPlan:
    emit, emit_position = _emit_spec(ast)
    late = ast.args.get("late_into")
    late_into = late.this.sql(dialect="spark") if isinstance(late, LateRowsInto) else None  # quoted as needed
    for node in ast.find_all(exp.Select):
        if node is not ast and (node.args.get("emit") or node.args.get("late_into")):
            raise SqlwinValidationError(
                "EMIT and LATE ROWS INTO belong to the outermost query", node_position(node.args.get("emit") or node),
                "the EMIT clause at the end of the top-level SELECT")
    if late_into is not None:
        name = (identifier_name(late_into) or late_into).lower()
        for window in windows:
            if (identifier_name(window.source) or "").lower() == name:
                raise SqlwinValidationError(
                    f"LATE ROWS INTO {late_into} would replace the table {window.function} reads",
                    node_position(late), f"another name, e.g. LATE ROWS INTO late_{identifier_name(window.source)}",
                    query=sql)
    join, refusal = recognise_join(ast, windows, fail, emit)
    if join is None:
        for window in windows:
            for option in ("join_insert", "join_emit"):
                if option in window.options:
                    if refusal is not None:
                        raise refusal
                    fail(f"{option} belongs to a windowed join", window.node,
                         "FROM TUMBLE(...) l JOIN TUMBLE(...) r ON l.k = r.k AND l.window_start = r.window_start "
                         "AND l.window_end = r.window_end")
    propagation = recognise_propagation(ast, windows)
    aggregation = recognise_aggregation(ast, windows, propagation)
    around = None
    if join is None and aggregation is None and propagation is None:
        around = recognise_around(ast, windows, node_position)
    elif aggregation is not None and aggregation.grouping_analytics is not None and propagation is None \
            and not aggregation.relation.windower.data_dependent:
        # (a session's, a count window's, a slide's windows are formed per GROUP BY key: the finest grouping
        # would form its own; those run over the window function's rows, spark/around.rows_for_aggregates)
        around = grouping_around(ast, aggregation.relation.node, node_position)
        if around is not None and around.refusal is not None:
            around.refusal.with_query(sql)
    return QueryPlan(sql, ast, windows, emit, late_into, aggregation, emit_position,
                     join=join, join_refusal=refusal, propagation=propagation, around=around)


# -- EMIT ----------------------------------------------------------------------------


def _emit_spec(ast: exp.Expr) -> tuple[EmitSpec, Position | None]:
    node = ast.args.get("emit") if isinstance(ast, (exp.Select, exp.SetOperation)) else None
    if not isinstance(node, Emit):
        return EmitSpec(), None
    a = node.args
    early_rows = _count(a.get("early_rows"), "EARLY EVERY")
    late_rows = _count(a.get("late_rows"), "LATE EVERY")
    changes = bool(a.get("changes"))
    if changes and (a.get("early_interval") is not None or early_rows is not None):
        fail("EMIT CHANGES already fires after every row; it takes no EARLY EVERY", node,
             "EMIT CHANGES, or EMIT EARLY EVERY ...", text="EMIT")
    if changes and a.get("final"):
        fail("EMIT FINAL and EMIT CHANGES exclude each other", node,
             "EMIT FINAL (once per window) or EMIT CHANGES (after every row)", text="EMIT")
    lateness = a.get("allowed_lateness")
    spec = EmitSpec(
        final=not changes,
        changes=changes,
        early_interval=_micros_or_none(a.get("early_interval"), "EARLY EVERY"),
        early_rows=early_rows,
        allowed_lateness=duration_micros(lateness, None, "ALLOWED LATENESS", allow_zero=True) if lateness else 0,
        late_interval=_micros_or_none(a.get("late_interval"), "LATE EVERY"),
        late_rows=late_rows,
        accumulation=a.get("accumulation") or "ACCUMULATING",
        only_updated=bool(a.get("only_updated")),
    )
    return spec, node_position(node, "EMIT")


def _count(node: exp.Expr | None, what: str) -> int | None:
    if node is None:
        return None
    try:
        number = Decimal(node.this)
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite() or number != number.to_integral_value() or not 0 < number <= MAX_ROWS:
        fail(f"{what} needs a positive whole number of rows, got {node.this}", node,
             f"{what} 1 ROWS or more (up to {MAX_ROWS})")
    return int(number)


def _micros_or_none(node: exp.Expr | None, what: str) -> int | None:
    return None if node is None else duration_micros(node, None, what)


def require_final_only(plan: QueryPlan, mode: str) -> None:
    """Complete input has no arrival order: only the on-time firing is defined there."""
    if plan.join is not None and plan.join.emit_mode == "complete":
        raise SqlwinUnsupportedError(
            f"join_emit = 'complete' emits as rows arrive, which the {mode} mode does not know",
            plan.join.sides[0].position, "join_emit = 'final' over a finished table; 'complete' over a replay "
            "(WITH (arrival_order = col)) or a stream", query=plan.sql)
    if not plan.emit.is_final_only:
        raise SqlwinUnsupportedError(
            f"This EMIT clause needs arrival order, which the {mode} mode does not have",
            plan.emit_position,
            "EMIT FINAL over a finished table; early, changed, late or retracting firings over a replay "
            "(WITH (arrival_order = col)) or a stream",
            query=plan.sql,
        )
    for relation in plan.windows:
        if relation.processing_time:
            raise SqlwinUnsupportedError(
                "Processing time needs arrival times, which a finished table does not have",
                relation.position,
                "DESCRIPTOR(event_time_column) over a finished table; PROCTIME() over a replay with "
                "WITH (arrival_time = col) or a stream",
                query=plan.sql,
            )


"""From a parsed query to sqlwin's one IR.

`build_plan(sql, schema_of)` parses the query, finds every window table function,
binds its arguments, converts intervals to microseconds, checks everything a user can
get wrong (with line, column and text), and returns a `QueryPlan`. Every later layer
(native batch lowering, replay, streaming) reads the plan only.

The module knows nothing of Spark: the caller passes `schema_of(table_name)`, which
returns the column names and Spark type names of a relation (or None when unknown).
All durations are integer microseconds, the resolution of Spark's TIMESTAMP.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime as dt
import difflib
import re
import typing as t
from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

from sqlglot import exp
from sqlglot.tokens import TokenType

from sqlwin.sql.dialect import (
    WINDOW_FUNCTIONS,
    Descriptor,
    Emit,
    LateRowsInto,
    SqlwinDialect,
    TableArg,
    WindowOptions,
    WindowTVF,
    edit_distance,
    internal_error,
    parse_one,
)
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
from sqlwin.sql.around import Around, grouping_around, recognise_around
from sqlwin.sql.joins import WindowJoin, recognise_join
from sqlwin.sql.text import identifier_name, quote_identifier

MICROS = {
    "MICROSECOND": 1,
    "MILLISECOND": 1_000,
    "SECOND": 1_000_000,
    "MINUTE": 60_000_000,
    "HOUR": 3_600_000_000,
    "DAY": 86_400_000_000,
    "WEEK": 7 * 86_400_000_000,
}
MAX_MICROS = 2**63 - 1  # a duration must fit a signed 64-bit count of microseconds (Spark's TIMESTAMP, LONG)
MAX_ROWS = 2**31 - 1  # a row count (COUNT_WINDOW, EVERY n ROWS) must fit Spark's INT
WINDOW_COLUMNS = ("window_start", "window_end", "window_time", "window_index")
TIMESTAMP_TYPES = ("timestamp", "timestamp_ntz")
EPOCH_MS_TYPES = ("bigint", "int", "smallint", "tinyint")
FRACTIONAL_MS_TYPES = ("double", "float")  # and decimal(p,s): epoch ms rounded to the closest ms

SchemaLookup = t.Callable[[str], "dict[str, str] | None"]

# --------------------------------------------------------------------------- the IR
# (windowers, WatermarkSpec and EmitSpec live in sqlwin.ir, free of sqlglot, for the runtime)


@dataclass(frozen=True)
class TimeColumn:
    """Where a row's time comes from. kind: 'timestamp', 'epoch_ms' (LONG milliseconds) or 'processing_time'.

    `rounded`: an epoch-ms column of a fractional type (DOUBLE, FLOAT, DECIMAL), whose times are
    rounded to the closest millisecond (halves away from zero) before any window sees them (QX-20).
    """

    name: str | None
    kind: str
    rounded: bool = False
    # A TIMESTAMP_NTZ column: a wall-clock time in no zone. Its epoch microseconds are read as if it
    # were UTC, whatever the session time zone, and window columns are TIMESTAMP_NTZ again.
    ntz: bool = False

    @property
    def unit_micros(self) -> int:
        return 1_000 if self.kind == "epoch_ms" else 1


@dataclass
class WindowRelation:
    """One window table function in the query: its input, time, windower and watermark."""

    node: WindowTVF  # where it sits in the AST (lowering replaces it)
    function: str
    source: str
    source_alias: str | None
    columns: dict[str, str]  # the input's columns and their Spark type names ({} when unknown)
    partition_by: tuple[str, ...]  # Spark SQL expressions
    order_by: tuple[str, ...]  # Spark SQL ordering terms (COUNT_WINDOW)
    time: TimeColumn | None
    windower: Windower
    watermark: WatermarkSpec
    options: dict[str, t.Any]
    position: Position
    alias: str | None = None


@dataclass
class WindowAggregation:
    """`SELECT ... FROM <window fn> GROUP BY <partition keys>, window_start, window_end`.

    The shape every stream processor computes; recognising it lets the batch lowering
    use Spark's grouped window operators and the streaming layer keep per-window state.
    """

    relation: WindowRelation
    select: exp.Select
    group_keys: tuple[str, ...]  # non-window GROUP BY expressions, as SQL
    # GROUPING SETS / ROLLUP / CUBE beside the window columns: Spark computes them over the
    # annotated rows (complete input); the window runtime has one grouping per window.
    grouping_analytics: exp.Expr | None = None


@dataclass
class Propagation:
    """A windowed aggregation over the result of another (AP-11, window propagation): the inner
    one runs first and its results are the outer's input, as Apex chains windowed operators and
    Flink cascades window aggregations over `window_time`."""

    inner_sql: str  # the inner query alone, with the statement's CTEs it may read
    outer: "WindowRelation"  # the outer window function, whose TABLE argument is the inner result
    cte: str | None  # the CTE that holds the inner query (None: TABLE (SELECT ...))
    # The outer's watermark follows the inner's firings ('upstream'): the outer gave none of its own,
    # and the inner has one clock for the stream, so its firings come in the order of its windows.
    inherit: bool = False


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


# --------------------------------------------------------------------------- building


OPTION_VALUES: dict[str, tuple[str, ...] | None] = {
    "watermark_strategy": ("max_event_time", "min_event_time", "bytewax", "ingestion_time", "upstream"),
    "watermark_scope": ("key", "stream"),
    "idle_timeout": None,  # an interval
    "idle_clock": ("processing_time", "event_time"),
    "lateness_rule": ("window_closed", "before_watermark"),
    "arrival_order": None,  # a column: replay
    "arrival_batch": None,  # a column: replay micro-batch boundaries
    "arrival_time": None,  # a column: replay processing time
    "join_insert": ("product", "first", "last", "collect"),  # a windowed join (sql/joins.py)
    "join_emit": ("final", "running", "complete"),
}

SIGNATURES: dict[str, tuple[tuple[str, ...], int]] = {
    # function: (parameters after TABLE and DESCRIPTOR, how many are required)
    "TUMBLE": (("SIZE", "OFFSET"), 1),
    "HOP": (("SLIDE", "SIZE", "OFFSET"), 2),
    "CUMULATE": (("STEP", "SIZE", "OFFSET"), 2),
    "SESSION": (("GAP",), 1),
    "SLIDE": (("SIZE",), 1),
    "COUNT_WINDOW": (("SIZE", "SLIDE"), 1),
    "GLOBAL_WINDOW": ((), 0),
}
PARAMETER_ALIASES = {"MAX_SIZE": "SIZE", "STEP_SIZE": "STEP"}


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
        if cte is not None and not any(parent is cte for parent in _parents(table)):
            continue  # the CTE, not the table
        view = exp.to_identifier(views[name.lower()], quoted=True)
        view.meta.update(table.this.meta)
        if not table.alias:
            table.set("alias", exp.TableAlias(this=exp.to_identifier(name, quoted=table.this.quoted)))
        table.set("this", view)


def _parents(node: exp.Expr) -> t.Iterator[exp.Expr]:
    while node.parent is not None:
        node = node.parent
        yield node


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
    windows = [_guarded(_window_relation, node, sql, node, schema_of, time_zone) for node in ast.find_all(WindowTVF)]
    plan = _guarded(_finish, ast, sql, sql, ast, windows)
    if plan.around is not None:  # the stage's own plan, as if it were the whole statement
        stage_sql = plan.around.stage_sql
        try:
            plan.around.stage = _build(stage_sql, parse_one(stage_sql), schema_of, time_zone)
            plan.around.stage.time_zone = time_zone
        except SqlwinError:
            # The statement's own build bound every window function: what fails here is the stage's text
            # read back. Without the split the statement runs as before (complete input) or is refused
            # as one windowed aggregation (replay, stream).
            plan.around = None
    return plan


def _guarded(build: t.Callable[..., t.Any], node: exp.Expr, sql: str, *args: t.Any) -> t.Any:
    """The last resort: an exception nobody foresaw while reading `node` becomes a SqlwinError placed at it.

    Schema lookups raise their own SqlwinErrors (an unknown table), which pass through.
    """
    try:
        return build(*args)
    except SqlwinError:
        raise
    except Exception as err:  # noqa: BLE001 - every known cause has its own error; this keeps a place for the rest
        raise internal_error(SqlwinValidationError, err, _node_position(node, _short_sql(node)), sql) from None


def _finish(sql: str, ast: exp.Expr, windows: list[WindowRelation]) -> QueryPlan:
    emit, emit_position = _emit_spec(ast)
    late = ast.args.get("late_into")
    late_into = late.this.sql(dialect="spark") if isinstance(late, LateRowsInto) else None  # quoted as needed
    for node in ast.find_all(exp.Select):
        if node is not ast and (node.args.get("emit") or node.args.get("late_into")):
            raise SqlwinValidationError(
                "EMIT and LATE ROWS INTO belong to the outermost query", _node_position(node.args.get("emit") or node),
                "the EMIT clause at the end of the top-level SELECT")
    if late_into is not None:
        name = (identifier_name(late_into) or late_into).lower()
        for window in windows:
            if (identifier_name(window.source) or "").lower() == name:
                raise SqlwinValidationError(
                    f"LATE ROWS INTO {late_into} would replace the table {window.function} reads",
                    _node_position(late), f"another name, e.g. LATE ROWS INTO late_{identifier_name(window.source)}",
                    query=sql)
    join, refusal = recognise_join(ast, windows, _fail, emit)
    if join is None:
        for window in windows:
            for option in ("join_insert", "join_emit"):
                if option in window.options:
                    if refusal is not None:
                        raise refusal
                    _fail(f"{option} belongs to a windowed join", window.node,
                          "FROM TUMBLE(...) l JOIN TUMBLE(...) r ON l.k = r.k AND l.window_start = r.window_start "
                          "AND l.window_end = r.window_end")
    propagation = _propagation(ast, windows)
    aggregation = _aggregation(ast, windows, propagation)
    around = None
    if join is None and aggregation is None and propagation is None:
        around = recognise_around(ast, windows, _node_position)
    elif aggregation is not None and aggregation.grouping_analytics is not None and propagation is None:
        around = grouping_around(ast, aggregation.relation.node, _node_position)
        if around is not None and around.refusal is not None:
            around.refusal.with_query(sql)
    return QueryPlan(sql, ast, windows, emit, late_into, aggregation, emit_position,
                     join=join, join_refusal=refusal, propagation=propagation, around=around)


def _node_position(node: exp.Expr | None, text: str | None = None) -> Position | None:
    if node is None:
        return None
    meta = node.meta
    if "line" not in meta:
        inner = next((n for n in node.walk() if "line" in n.meta), None)
        if inner is None:
            return None
        meta = inner.meta
    col = meta["col"]
    token_text = text if text is not None else _user_text(node, limit=60)
    # sqlglot records the column of a token's last character; show its first.
    start, end = meta.get("start"), meta.get("end")
    if start is not None and end is not None:
        col = col - (end - start)
    return Position(meta["line"], max(col, 1), token_text)


node_position = _node_position  # public: later layers point errors into the query


def _short_sql(node: exp.Expr, limit: int = 60) -> str:
    """The node as the user might have written it, when short enough to quote ('' otherwise)."""
    text = _sql_text(node)
    return text if len(text) < limit else ""


def _user_text(node: exp.Expr | None, limit: int | None = None) -> str:
    """What the user wrote for `node` (its first line), when the parser kept it; else the node as SQL."""
    source = node.meta.get("source") if node is not None else None
    text = source.strip().splitlines()[0] if source and source.strip() else _sql_text(node)
    return "" if limit is not None and len(text) >= limit else text


def _sql_text(node: exp.Expr | None) -> str:
    """The node as SQL, for a message ('' for a node sqlglot cannot write)."""
    try:
        return node.sql(dialect=SqlwinDialect) if node is not None else ""
    except Exception:  # noqa: BLE001 - a message must not fail while saying what is wrong
        return ""


def _fail(message: str, node: exp.Expr | None, hint: str | None = None, text: str | None = None,
          start: exp.Expr | None = None) -> t.NoReturn:
    """`start`: where the caret begins when it is not where sqlglot places `node` (its first token)."""
    if start is not None:
        place = _node_position(start)
        whole = _node_position(node)
        if place is not None and whole is not None:
            raise SqlwinValidationError(message, Position(place.line, place.column, whole.text), hint)
    raise SqlwinValidationError(message, _node_position(node, text), hint)


# -- the window function's arguments -----------------------------------------------


def _window_relation(node: WindowTVF, schema_of: SchemaLookup, time_zone: str = "UTC") -> WindowRelation:
    function = node.function
    table_arg, descriptor, params = _bind_arguments(node)
    table = table_arg.this
    reference = table.copy()
    reference.set("alias", None)
    source = reference.sql(dialect="spark")  # the name alone, quoted as needed (`x AS y` stays whole)
    try:
        columns = schema_of(source) or {}
    except SqlwinError as err:
        if err.position is not None:
            raise
        # An unknown table: the caret on the TABLE argument, not on some other word of that name.
        raise type(err)(err.message, _node_position(table.this, _user_text(table.this)), err.hint) from None
    options = _options(table_arg.args.get("options"))
    partition_by = tuple(_column_sql(e, columns, "PARTITION BY") for e in table_arg.args.get("partition_by") or [])
    order_by = tuple(_ordering_sql(e, columns) for e in table_arg.args.get("order") or [])
    time = _time_column(node, descriptor, columns)
    # COUNT_WINDOW over a finished table needs an order for its rows (checked where the complete
    # input is lowered); a stream counts its rows in the order they arrive.
    if function != "COUNT_WINDOW" and order_by:
        _fail(f"{function} takes no ORDER BY (rows are placed by their time)", table_arg.args["order"][0],
              "ORDER BY only in COUNT_WINDOW")
    windower = _windower(function, params, time, node, time_zone)
    watermark = _watermark(table_arg, time, options, columns)
    for name in partition_by:
        if name in WINDOW_COLUMNS:
            _fail(f"{name} is produced by the window function and cannot be a key", node)
    alias = node.args.get("alias")
    return WindowRelation(
        node=node,
        function=function,
        source=source,
        source_alias=table.alias or None,
        columns=columns,
        partition_by=partition_by,
        order_by=order_by,
        time=time,
        windower=windower,
        watermark=watermark,
        options=options,
        position=_node_position(node, function),
        alias=alias.name if alias else None,
    )


def _bind_arguments(node: WindowTVF) -> tuple[TableArg, Descriptor | None, dict[str, exp.Expr]]:
    """Match positional and named (`NAME => value`) arguments to the function's parameters."""
    function = node.function
    parameters, required = SIGNATURES[function]
    table_arg: TableArg | None = None
    descriptor: Descriptor | None = None
    positional: list[exp.Expr] = []
    named: dict[str, exp.Expr] = {}
    for arg in node.expressions:
        if isinstance(arg, exp.Kwarg):
            name = arg.this.name.upper()
            name = PARAMETER_ALIASES.get(name, name)
            value = arg.expression
            if name == "DATA":
                table_arg = _expect_table(value, function)
            elif name == "TIMECOL":
                descriptor = _expect_descriptor(value, function)
            elif name in parameters:
                if name in named:
                    _fail(f"{function} got {name} twice", arg)
                named[name] = value
            else:
                accepted = ", ".join(("DATA", "TIMECOL", *parameters))
                _fail(f"{function} has no parameter named {name}", arg, accepted, text=arg.this.name)
        elif isinstance(arg, TableArg):
            table_arg = arg
        elif isinstance(arg, Descriptor):
            descriptor = arg
        else:
            positional.append(arg)
    usage = _usage(function)
    if table_arg is None:
        _fail(f"{function} needs its input as TABLE name", node, usage, text=function)
    free = [p for p in parameters if p not in named]
    if len(positional) > len(free):
        _fail(f"{function} takes {len(parameters)} value argument(s) after the table and time column, "
              f"got {len(positional) + len(named)}", positional[len(free)], usage)
    params = dict(named)
    params.update(zip(free, positional))
    missing = [p for p in parameters[:required] if p not in params]
    if missing:
        _fail(f"{function} is missing its {missing[0]} argument", node, usage, text=function)
    if function not in ("COUNT_WINDOW", "GLOBAL_WINDOW") and descriptor is None:
        _fail(f"{function} needs the time column as DESCRIPTOR(column)", node, usage, text=function)
    return table_arg, descriptor, params


def _usage(function: str) -> str:
    return {
        "TUMBLE": "TUMBLE(TABLE t [PARTITION BY k], DESCRIPTOR(ts), size [, offset])",
        "HOP": "HOP(TABLE t [PARTITION BY k], DESCRIPTOR(ts), slide, size [, offset])",
        "CUMULATE": "CUMULATE(TABLE t [PARTITION BY k], DESCRIPTOR(ts), step, max_size [, offset])",
        "SESSION": "SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), gap)",
        "SLIDE": "SLIDE(TABLE t [PARTITION BY k], DESCRIPTOR(ts), size)",
        "COUNT_WINDOW": "COUNT_WINDOW(TABLE t [PARTITION BY k] ORDER BY col, [DESCRIPTOR(ts),] size [, slide])",
        "GLOBAL_WINDOW": "GLOBAL_WINDOW(TABLE t [PARTITION BY k] [, DESCRIPTOR(ts)])",
    }[function]


def _expect_table(value: exp.Expr, function: str) -> TableArg:
    if not isinstance(value, TableArg):
        _fail(f"DATA of {function} must be TABLE name", value, _usage(function))
    return value


def _expect_descriptor(value: exp.Expr, function: str) -> Descriptor:
    if not isinstance(value, Descriptor):
        _fail(f"TIMECOL of {function} must be DESCRIPTOR(column)", value, _usage(function))
    return value


def _column_sql(expr: exp.Expr, columns: dict[str, str], clause: str) -> str:
    for column in expr.find_all(exp.Column):
        _check_column(column, columns, clause)
    return expr.sql(dialect="spark")


def _ordering_sql(expr: exp.Expr, columns: dict[str, str]) -> str:
    for column in expr.find_all(exp.Column):
        _check_column(column, columns, "ORDER BY")
    return expr.sql(dialect="spark")


def _check_column(column: exp.Column, columns: dict[str, str], clause: str) -> None:
    if columns and column.name.lower() not in {c.lower() for c in columns}:
        _fail(f"Unknown column {column.name} in {clause}" + did_you_mean(column.name, columns), column,
              "one of the input's columns: " + ", ".join(columns), text=column.name)


def did_you_mean(name: str, known: t.Iterable[str]) -> str:
    """`: did you mean x?` for the known name closest to a misspelt `name` ('' when none is close)."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f": did you mean {by_lower[close[0]]}?" if close else ""


# The type a time column of unknown type is taken to have (None: TIMESTAMP). A check before Spark
# starts, without schemas, plans a query under each assumption (sqlwin.check).
_ASSUMED_TIME_TYPE: contextvars.ContextVar[str | None] = contextvars.ContextVar("assumed_time_type", default=None)


@contextlib.contextmanager
def assuming_time_type(type_name: str | None) -> t.Iterator[None]:
    token = _ASSUMED_TIME_TYPE.set(type_name)
    try:
        yield
    finally:
        _ASSUMED_TIME_TYPE.reset(token)


def _time_column(node: WindowTVF, descriptor: Descriptor | None, columns: dict[str, str]) -> TimeColumn | None:
    if descriptor is None:
        return None
    inner = descriptor.this
    if isinstance(inner, (exp.Anonymous, exp.Func)) and inner.sql().upper().startswith(("PROCTIME", "CURRENT_TIMESTAMP")):
        return TimeColumn(None, "processing_time")
    if not isinstance(inner, exp.Column):
        _fail("DESCRIPTOR takes one column name, or PROCTIME() for processing time", descriptor,
              "DESCRIPTOR(ts) | DESCRIPTOR(PROCTIME())")
    _check_column(inner, columns, "DESCRIPTOR")
    type_name = _type_of(inner.name, columns) or _ASSUMED_TIME_TYPE.get()
    if type_name is None or type_name in TIMESTAMP_TYPES:
        return TimeColumn(inner.name, "timestamp", ntz=type_name == "timestamp_ntz")
    if type_name in EPOCH_MS_TYPES:
        return TimeColumn(inner.name, "epoch_ms")
    if type_name in FRACTIONAL_MS_TYPES or type_name.startswith("decimal"):
        return TimeColumn(inner.name, "epoch_ms", rounded=True)  # finer than 1 ms: rounded (QX-20)
    _fail(f"Time column {inner.name} is {type_name.upper()}, not a time", inner,
          "a TIMESTAMP column, or a column of epoch milliseconds (LONG; DOUBLE or DECIMAL are rounded to the ms)",
          text=inner.name)


def window_keys(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> tuple[str, ...]:
    """The keys whose rows form windows of their own, as Spark SQL over the window function's input.

    PARTITION BY always. A data-dependent window (SESSION, SLIDE, COUNT_WINDOW) under a windowed
    aggregation is formed per GROUP BY key too, in every mode (docs/semantics.md, "Which rows form a
    window"): `group_keys` are that aggregation's keys beside the window columns, each added unless
    PARTITION BY has it already, with qualifiers dropped (the input is the only relation there). A key
    that is not over the input's columns (a SELECT alias, say) forms no windows: Spark reports it.
    """
    keys = list(relation.partition_by)
    if not relation.windower.data_dependent:
        return tuple(keys)
    columns = {name.lower(): name for name in relation.columns}
    seen = {key_text(k) for k in keys}
    for key in group_keys:
        try:
            node = exp.maybe_parse(key, dialect="spark")
        except Exception:  # noqa: BLE001 - a key sqlglot cannot read again is Spark's to judge
            continue
        names = list(node.find_all(exp.Column))
        if any(c.name.lower() in WINDOW_COLUMNS for c in names):
            continue
        if columns and any(c.name.lower() not in columns for c in names):
            continue
        node = node.transform(lambda n: exp.column(columns.get(n.name.lower(), n.name), quoted=True)
                              if isinstance(n, exp.Column) else n)
        text = node.sql(dialect="spark")
        if key_text(text) not in seen:
            seen.add(key_text(text))
            keys.append(text)
    return tuple(keys)


def key_text(sql: str) -> str:
    """A key compared with another: a column by its name (any case, quoted or not), else its SQL."""
    name = identifier_name(sql)
    return (name if name is not None else sql).lower().strip()


def _type_of(name: str, columns: dict[str, str]) -> str | None:
    for column, type_name in columns.items():
        if column.lower() == name.lower():
            return type_name.lower()
    return None


# -- durations -------------------------------------------------------------------------


def duration_micros(value: exp.Expr, time: TimeColumn | None, what: str, allow_zero: bool = False,
                    allow_negative: bool = False) -> int:
    """An INTERVAL (or, for an epoch-ms time column, a number of milliseconds) in microseconds.

    Range-checked: a duration fits a signed 64-bit count of microseconds (what Spark's TIMESTAMP
    arithmetic and the runtime hold), is positive unless zero or negative are allowed.
    """
    micros = _interval_micros(value, time, what, value)
    if abs(micros) > MAX_MICROS:
        _fail(f"{what} {_user_text(value)} is too long: a duration must fit in 64-bit microseconds "
              f"(at most {MAX_MICROS // MICROS['DAY']:,} days)", value,
              f"a duration up to INTERVAL {MAX_MICROS // MICROS['DAY']} DAYS")
    if micros < 0 and not allow_negative or micros == 0 and not allow_zero:
        sign = "positive" if not allow_zero else "zero or positive"
        _fail(f"{what} must be {sign}, got {_user_text(value)}", value,
              f"a {sign} interval, e.g. INTERVAL 10 SECONDS")  # what fits where the caret is
    if time is not None and time.kind == "epoch_ms" and micros % 1_000:
        _fail(f"{what} is finer than a millisecond, the unit of the time column {time.name}", value,
              "a whole number of milliseconds")
    return micros


def _interval_micros(value: exp.Expr, time: TimeColumn | None, what: str, where: exp.Expr) -> int:
    """`where`: the whole argument, which errors point at when a part of it has no position of its own."""
    if isinstance(value, exp.Paren):
        return _interval_micros(value.this, time, what, where)
    if isinstance(value, exp.Neg):
        return -_interval_micros(value.this, time, what, where)
    if isinstance(value, exp.Add):
        return _interval_micros(value.this, time, what, where) + _interval_micros(value.expression, time, what, where)
    if isinstance(value, exp.Interval):
        return _interval_literal_micros(value, what, _placed(value, where))
    if isinstance(value, exp.Literal) and not value.is_string:
        if time is not None and time.kind == "epoch_ms":
            return _scaled(_number(value.this, what, _placed(value, where)), 1_000, what, _placed(value, where))
        _fail(f"{what} needs a unit: {value.this} of what?", _placed(value, where),
              f"INTERVAL {value.this} SECONDS (a bare number means milliseconds only with a LONG epoch-ms time column)")
    _fail(f"{what} must be an interval", _placed(value, where),
          "INTERVAL 10 SECONDS, INTERVAL '1' HOUR, INTERVAL '1 hour 30 minutes'")


def _placed(node: exp.Expr | None, where: exp.Expr) -> exp.Expr:
    """`node` if errors can point at it, else the larger expression around it."""
    return node if node is not None and _node_position(node) is not None else where


_UNIT_PAIR = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([a-zA-Z]+)")
_INTERVAL_HINT = "INTERVAL 90 MINUTES, INTERVAL '1' HOUR or INTERVAL '1 hour 30 minutes'"


def _interval_literal_micros(interval: exp.Interval, what: str, where: exp.Expr) -> int:
    amount = interval.this
    unit = interval.args.get("unit")
    if not isinstance(amount, exp.Literal):
        _fail(f"Cannot read the interval {_user_text(interval)}: its amount must be a number",
              where, _INTERVAL_HINT)
    text = amount.name
    if isinstance(unit, exp.IntervalSpan):
        _fail("Interval ranges (DAY TO SECOND) are not supported", where, "INTERVAL '1 hour 30 minutes'")
    if unit is not None:
        try:
            number = Decimal(text.strip())
        except InvalidOperation:
            # INTERVAL '1 hour 30' MINUTES is no duration; INTERVAL '90' MINUTES is.
            _fail(f"Cannot read the interval {_user_text(interval)}", where, _INTERVAL_HINT)
        return _unit_micros(number, unit.name, where, what)
    # INTERVAL '1 hour 30 minutes': number-unit pairs, and nothing else.
    pairs, at = [], 0
    while at < len(text.rstrip()):
        match = _UNIT_PAIR.match(text, at)
        if match is None:
            _fail(f"Cannot read the interval {_user_text(interval)}", where, _INTERVAL_HINT)
        pairs.append(match.groups())
        at = match.end()
    if not pairs:
        _fail(f"Cannot read the interval {_user_text(interval)}", where, _INTERVAL_HINT)
    return sum(_unit_micros(Decimal(n), u, where, what) for n, u in pairs)


def _unit_micros(number: Decimal, unit: str, node: exp.Expr, what: str) -> int:
    name = unit.upper().rstrip("S") if unit.upper() not in ("MS", "US") else unit.upper()
    name = {"MS": "MILLISECOND", "US": "MICROSECOND", "SEC": "SECOND", "MIN": "MINUTE", "H": "HOUR"}.get(name, name)
    if name in ("MONTH", "YEAR", "QUARTER"):
        _fail(f"{what} of a {name.lower()} has no fixed length", node,
              "an interval of fixed length: WEEKS, DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS")
    if name not in MICROS:
        close = [u for u in MICROS if _one_typo(name, u)]
        _fail(f"Unknown interval unit {unit}" + (f": did you mean {close[0]}S?" if close else ""), node,
              "WEEK, DAY, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND")
    return _scaled(number, MICROS[name], what, node)


def _one_typo(word: str, unit: str) -> bool:
    return len(word) >= 3 and edit_distance(word, unit) <= 1


def _number(text: str, what: str, node: exp.Expr) -> Decimal:
    try:
        return Decimal(text)
    except InvalidOperation:
        _fail(f"{what} must be a number, got {text}", node, "a number, e.g. 1000")


def _scaled(number: Decimal, unit_micros: int, what: str, node: exp.Expr) -> int:
    """number × unit in whole microseconds, refused when it is no finite number or does not fit 64 bits."""
    if not number.is_finite():
        _fail(f"{what} must be a finite number, got {_user_text(node)}", node, "INTERVAL 10 SECONDS")
    micros = number * unit_micros
    if abs(micros) > MAX_MICROS:
        _fail(f"{what} {_user_text(node)} is too long: a duration must fit in 64-bit microseconds "
              f"(at most {MAX_MICROS // MICROS['DAY']:,} days)", node,
              f"a duration up to INTERVAL {MAX_MICROS // MICROS['DAY']} DAYS")
    return round(micros)


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_FIXED_ZONE = re.compile(r"(?:UTC|GMT|Z)?\s*([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?")


def _zone(name: str, where: exp.Expr) -> dt.tzinfo:
    """A Spark session time zone (a region such as America/New_York, UTC, or an offset +05:30) as a tzinfo."""
    import zoneinfo

    text = (name or "UTC").strip()
    if text.upper() in ("UTC", "Z", "GMT", "UT"):
        return dt.timezone.utc
    fixed = _FIXED_ZONE.fullmatch(text)
    if fixed:
        sign, hours, minutes, seconds = fixed.groups()
        delta = dt.timedelta(hours=int(hours), minutes=int(minutes or 0), seconds=int(seconds or 0))
        return dt.timezone(-delta if sign == "-" else delta)
    try:
        return zoneinfo.ZoneInfo(text)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        _fail(f"Cannot read the alignment instant {_user_text(where)} in the session time zone {text}", where,
              "an instant with its own offset, e.g. TIMESTAMP '2023-12-14 00:00:00+01:00'")


def _offset_micros(value: exp.Expr, time: TimeColumn | None, time_zone: str = "UTC") -> int:
    """OFFSET is an interval, or an instant the windows are aligned to (Bytewax's align_to).

    An instant without a zone of its own is read in the session time zone, as Spark reads a
    TIMESTAMP literal; the windows are then fixed lengths of absolute time from that instant,
    as Spark's window() with the equivalent offset (a daylight saving change does not move them).
    """
    if isinstance(value, (exp.Cast, exp.TsOrDsToTimestamp)) or (
        isinstance(value, exp.Literal) and value.is_string
    ):
        text = value.name if isinstance(value, exp.Literal) else value.this.name
        try:
            instant = dt.datetime.fromisoformat(text.replace(" ", "T"))
        except ValueError:
            _fail(f"Cannot read the alignment instant {_user_text(value)}", value,
                  "OFFSET => INTERVAL 30 MINUTES, or an instant TIMESTAMP '2023-12-14 00:00:00'")
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=_zone(time_zone, value))
        return (instant - _EPOCH) // dt.timedelta(microseconds=1)  # exact: no float in between
    return duration_micros(value, time, "OFFSET", allow_zero=True, allow_negative=True)


def _windower(function: str, params: dict[str, exp.Expr], time: TimeColumn | None, node: WindowTVF,
              time_zone: str = "UTC") -> Windower:
    def dur(name: str) -> int:
        return duration_micros(params[name], time, name)

    def offset(period: int) -> int:
        return _offset_micros(params["OFFSET"], time, time_zone) % period if "OFFSET" in params else 0

    if function == "TUMBLE":
        size = dur("SIZE")
        return Tumble(size, offset(size))
    if function == "HOP":
        size, slide = dur("SIZE"), dur("SLIDE")
        return Hop(size, slide, offset(slide))
    if function == "CUMULATE":
        step, max_size = dur("STEP"), dur("SIZE")
        if max_size % step:
            _fail("CUMULATE's step must divide its max size", params["STEP"],
                  f"a step that divides {_user_text(params['SIZE'])} evenly")
        return Cumulate(step, max_size, offset(max_size))
    if function == "SESSION":
        return Session(dur("GAP"))
    if function == "SLIDE":
        return Slide(dur("SIZE"))
    if function == "COUNT_WINDOW":
        size = _row_count(params["SIZE"], "SIZE")
        slide = _row_count(params["SLIDE"], "SLIDE") if "SLIDE" in params else size
        return CountWindow(size, slide, timed=_timed(time))
    return GlobalWindow(timed=_timed(time))


def _timed(time: TimeColumn | None) -> bool:
    """Whether rows carry a time of their own (a NULL one then joins no window): a named column."""
    return time is not None and time.kind != "processing_time"


def _row_count(value: exp.Expr, what: str) -> int:
    if not (isinstance(value, exp.Literal) and not value.is_string and value.this.isascii() and value.this.isdigit()):
        if isinstance(value, exp.Neg):
            _fail(f"COUNT_WINDOW {what} must be a positive number of rows", value, "a whole number of rows, e.g. 3")
        _fail(f"COUNT_WINDOW {what} is a number of rows", value, "a whole number of rows, e.g. 3")
    count = int(value.this)
    if count <= 0:
        _fail(f"COUNT_WINDOW {what} must be a positive number of rows, got {count}", value, "a whole number >= 1")
    if count > MAX_ROWS:
        _fail(f"COUNT_WINDOW {what} of {count} rows is too large", value, f"a whole number of rows up to {MAX_ROWS}")
    return count


# -- watermark and options ----------------------------------------------------------


def _options(node: WindowOptions | None) -> dict[str, t.Any]:
    options: dict[str, t.Any] = {}
    for option in node.expressions if node else []:
        name = option.this.name.lower()
        if name not in OPTION_VALUES:
            _fail(f"Unknown window option {name}", option, ", ".join(OPTION_VALUES), text=option.this.name)
        value = option.expression
        allowed = OPTION_VALUES[name]
        if allowed is not None:
            text = value.name.lower() if isinstance(value, (exp.Literal, exp.Column)) else ""
            if text not in allowed:
                _fail(f"Option {name} cannot be {_user_text(value)}", value,
                      " | ".join(f"'{a}'" for a in allowed))
            options[name] = text
        elif name in ("arrival_order", "arrival_batch", "arrival_time"):
            if not isinstance(value, (exp.Column, exp.Literal)):
                _fail(f"Option {name} names a column", value, f"{name} = column_name")
            options[name] = value.name
        else:
            options[name] = value  # converted to micros once the time column is known
    return options


def _watermark(table_arg: TableArg, time: TimeColumn | None, options: dict[str, t.Any],
               columns: dict[str, str]) -> WatermarkSpec:
    clause = table_arg.args.get("watermark")
    delay = 0
    column = time.name if time else None
    if clause is not None:
        column = clause.this.name
        _check_column(clause.this, columns, "WATERMARK")
        if time is not None and time.name and column.lower() != time.name.lower():
            _fail(f"WATERMARK is on {column} but the window's time column is {time.name}", clause.this,
                  f"WATERMARK {time.name} DELAY OF ...", text=column)
        delay_node = clause.args.get("delay")
        if isinstance(delay_node, exp.Column) and delay_node.name.upper() == "UNBOUNDED":
            delay = UNBOUNDED
        elif delay_node is not None:
            delay = duration_micros(delay_node, time, "DELAY", allow_zero=True)
    idle = options.get("idle_timeout")
    return WatermarkSpec(
        column=column,
        delay=delay,
        strategy=options.get("watermark_strategy", "max_event_time"),
        scope=options.get("watermark_scope", "key"),
        idle_timeout=duration_micros(idle, time, "idle_timeout") if idle is not None else None,
        idle_clock=options.get("idle_clock", "processing_time"),
        lateness_rule=options.get("lateness_rule", "window_closed"),
    )


# -- EMIT ----------------------------------------------------------------------------


def _emit_spec(ast: exp.Expr) -> tuple[EmitSpec, Position | None]:
    node = ast.args.get("emit") if isinstance(ast, exp.Select) else None
    if not isinstance(node, Emit):
        return EmitSpec(), None
    a = node.args
    early_rows = _count(a.get("early_rows"), "EARLY EVERY")
    late_rows = _count(a.get("late_rows"), "LATE EVERY")
    changes = bool(a.get("changes"))
    if changes and (a.get("early_interval") is not None or early_rows is not None):
        _fail("EMIT CHANGES already fires after every row; it takes no EARLY EVERY", node,
              "EMIT CHANGES, or EMIT EARLY EVERY ...", text="EMIT")
    if changes and a.get("final"):
        _fail("EMIT FINAL and EMIT CHANGES exclude each other", node,
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
    return spec, _node_position(node, "EMIT")


def _count(node: exp.Expr | None, what: str) -> int | None:
    if node is None:
        return None
    try:
        number = Decimal(node.this)
    except InvalidOperation:
        number = Decimal("NaN")
    if not number.is_finite() or number != number.to_integral_value() or not 0 < number <= MAX_ROWS:
        _fail(f"{what} needs a positive whole number of rows, got {node.this}", node,
              f"{what} 1 ROWS or more (up to {MAX_ROWS})")
    return int(number)


def _micros_or_none(node: exp.Expr | None, what: str) -> int | None:
    return None if node is None else duration_micros(node, None, what)


# -- the aggregation shape -------------------------------------------------------------


def _propagation(ast: exp.Expr, windows: list[WindowRelation]) -> Propagation | None:
    """The outer window function reads, as its TABLE, a query (a CTE of the statement, or TABLE (SELECT
    ...)) that holds every other window function of the statement."""
    if not isinstance(ast, exp.Select) or len(windows) < 2:
        return None
    from_ = ast.args.get("from_")
    outer = next((w for w in windows if from_ is not None and w.node is from_.this), None)
    if outer is None or ast.args.get("joins"):
        return None
    table = outer.node.find(TableArg).this
    with_ = ast.args.get("with_")
    ctes = list(with_.expressions) if with_ is not None else []
    if isinstance(table, exp.Subquery):
        body, cte, before = table.this, None, ctes
    elif isinstance(table, exp.Table) and not table.db:
        match = next((i for i, c in enumerate(ctes) if c.alias_or_name.lower() == table.name.lower()), None)
        if match is None:
            return None
        body, cte, before = ctes[match].this, ctes[match].alias_or_name, ctes[:match]
    else:
        return None
    inner_nodes = {id(n) for n in body.find_all(WindowTVF)}
    if not inner_nodes or any(id(w.node) not in inner_nodes for w in windows if w is not outer):
        return None
    prefix = f"WITH {', '.join(c.sql(dialect=SqlwinDialect) for c in before)} " if before else ""
    body = body.copy()
    body.set("alias", None)  # TABLE (SELECT ...) names its query for Spark; alone it needs none
    outer_arg = outer.node.find(TableArg)
    inner = [w for w in windows if w is not outer]
    inherit = (outer_arg.args.get("watermark") is None and "watermark_strategy" not in outer.options
               and outer.time is not None and outer.time.name is not None
               and outer.time.name.lower() == "window_time"
               and all(not w.partition_by or w.watermark.scope == "stream" for w in inner))
    return Propagation(prefix + body.sql(dialect=SqlwinDialect), outer, cte, inherit)


def _aggregation(ast: exp.Expr, windows: list[WindowRelation],
                 propagation: Propagation | None = None) -> WindowAggregation | None:
    """Recognise SELECT ... FROM <window fn> [WHERE ...] GROUP BY keys, window_start, window_end."""
    if propagation is not None:
        windows = [propagation.outer]
    if not isinstance(ast, exp.Select) or len(windows) != 1:
        return None
    relation = windows[0]
    from_ = ast.args.get("from_")
    if from_ is None or from_.this is not relation.node or ast.args.get("joins"):
        return None
    group = ast.args.get("group")
    if group is None:
        return None
    names = [e.name.lower() if isinstance(e, exp.Column) else None for e in group.expressions]
    if "window_start" not in names or "window_end" not in names:
        return None
    analytics = grouping_analytics(group)
    keys = tuple(e.sql(dialect="spark") for e, n in zip(group.expressions, names)
                 if n not in WINDOW_COLUMNS and not isinstance(e, GROUPING_ANALYTICS))
    return WindowAggregation(relation, ast, keys, analytics)


GROUPING_ANALYTICS = (exp.GroupingSets, exp.Rollup, exp.Cube)


def grouping_analytics(group: exp.Group | None) -> exp.Expr | None:
    """The first GROUPING SETS / ROLLUP / CUBE of a GROUP BY (`WITH ROLLUP` / `WITH CUBE` too), or None."""
    if group is None:
        return None
    for node in group.expressions:
        if isinstance(node, GROUPING_ANALYTICS):
            return node
    for key in ("grouping_sets", "rollup", "cube"):
        value = group.args.get(key)
        if value:
            first = value[0] if isinstance(value, list) else value
            return first if isinstance(first, exp.Expr) else group
    return None


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
        if relation.time is not None and relation.time.kind == "processing_time":
            raise SqlwinUnsupportedError(
                "Processing time needs arrival times, which a finished table does not have",
                relation.position,
                "DESCRIPTOR(event_time_column) over a finished table; PROCTIME() over a replay with "
                "WITH (arrival_time = col) or a stream",
                query=plan.sql,
            )


# -- the plan in words (explain) ---------------------------------------------------------

_UNITS = (("day", MICROS["DAY"]), ("hour", MICROS["HOUR"]), ("minute", MICROS["MINUTE"]),
          ("second", MICROS["SECOND"]), ("millisecond", MICROS["MILLISECOND"]), ("microsecond", 1))


def interval_text(micros: int) -> str:
    """A duration as a user writes it: 3600000000 -> '1 hour', 5400000000 -> '1 hour 30 minutes'."""
    if micros == 0:
        return "0 seconds"
    if micros >= UNBOUNDED:
        return "UNBOUNDED"
    sign, rest, parts = ("-" if micros < 0 else ""), abs(micros), []
    for unit, size in _UNITS:
        amount, rest = divmod(rest, size)
        if amount:
            parts.append(f"{amount} {unit}{'' if amount == 1 else 's'}")
    return sign + " ".join(parts)


def describe_windower(windower: Windower, time: TimeColumn | None = None) -> str:
    def offset(micros: int) -> str:
        return f", offset {interval_text(micros)}" if micros else ""

    def rows(n: int) -> str:
        return f"{n} row{'' if n == 1 else 's'}"

    if isinstance(windower, Tumble):
        return f"TUMBLE size {interval_text(windower.size)}{offset(windower.offset)}"
    if isinstance(windower, Hop):
        return f"HOP slide {interval_text(windower.slide)}, size {interval_text(windower.size)}{offset(windower.offset)}"
    if isinstance(windower, Cumulate):
        return (f"CUMULATE step {interval_text(windower.step)}, max size {interval_text(windower.max_size)}"
                f"{offset(windower.offset)}")
    if isinstance(windower, Session):
        return f"SESSION gap {interval_text(windower.gap)}"
    if isinstance(windower, Slide):
        return f"SLIDE size {interval_text(windower.size)} (one window per row time, both ends inclusive)"
    if isinstance(windower, CountWindow):
        slide = f", slide {rows(windower.slide)}" if windower.slide != windower.size else ""
        return f"COUNT_WINDOW size {rows(windower.size)}{slide}"
    return "GLOBAL_WINDOW (one window per key)"


def describe_time(time: TimeColumn | None) -> str:
    if time is None:
        return "(none)"
    if time.kind == "processing_time":
        return "processing time (PROCTIME())"
    if time.kind == "epoch_ms":
        return f"{time.name}, epoch milliseconds" + (" (rounded to the millisecond)" if time.rounded else "")
    return f"{time.name}, TIMESTAMP"


def describe_watermark(watermark: WatermarkSpec, complete: bool = False) -> str:
    delay = "UNBOUNDED" if watermark.delay >= UNBOUNDED else interval_text(watermark.delay)
    text = (f"delay {delay}, strategy {watermark.strategy}, one clock per "
            f"{'key' if watermark.scope == 'key' else 'stream'}, lateness rule {watermark.lateness_rule}")
    if watermark.idle_timeout is not None:
        text += f", idle timeout {interval_text(watermark.idle_timeout)} ({watermark.idle_clock})"
    return text + (" (over complete input every row is on time)" if complete else "")


def default_watermark_notes(plan: QueryPlan) -> list[str]:
    """For a stream: a line per window function without WATERMARK, saying the watermark it gets and
    how to write another (a row behind its key's newest time is late at once)."""
    notes = []
    for window in plan.windows:
        table = window.node.find(TableArg)
        if table is None or table.args.get("watermark") is not None or window.time is None or not window.time.name:
            continue
        clocks = "each key's" if window.partition_by and window.watermark.scope == "key" else "the stream's"
        name = window.time.name if re.fullmatch(r"[A-Za-z_]\w*", window.time.name) else quote_identifier(window.time.name)
        notes.append(f"{window.function} over {window.source} has no WATERMARK: the default is WATERMARK {name} "
                     f"DELAY OF INTERVAL 0 SECONDS: a window closes once {clocks} newest {name} reaches its end, and "
                     "a row arriving for it after that is late; "
                     f"to wait for rows out of order: TABLE {window.source} WATERMARK {name} DELAY OF INTERVAL 10 SECONDS")
    return notes


def describe_emit(emit: EmitSpec) -> str:
    parts = ["CHANGES" if emit.changes else "FINAL"]
    if emit.early_interval is not None:
        parts.append(f"EARLY EVERY {interval_text(emit.early_interval)}")
    if emit.early_rows is not None:
        parts.append(f"EARLY EVERY {emit.early_rows} ROWS")
    if emit.allowed_lateness:
        parts.append(f"ALLOWED LATENESS {interval_text(emit.allowed_lateness)}")
    if emit.late_interval is not None:
        parts.append(f"LATE EVERY {interval_text(emit.late_interval)}")
    if emit.late_rows is not None:
        parts.append(f"LATE EVERY {emit.late_rows} ROWS")
    parts.append(emit.accumulation)
    if emit.only_updated:
        parts.append("ONLY UPDATED")
    return "EMIT " + " ".join(parts)


def describe_plan(plan: QueryPlan, complete: bool = False) -> list[str]:
    """The IR in the query's own words, one line each (durations as intervals, never microseconds)."""
    lines = []
    for window in plan.windows:
        table = window.node.find(TableArg)
        source = (table.this.meta.get("source") if table is not None else None) or window.source
        lines.append(f"window: {window.function} over {source} at {window.position}")
        lines.append(f"  windows: {describe_windower(window.windower, window.time)}")
        lines.append(f"  time: {describe_time(window.time)}")
        lines.append(f"  partition by: {', '.join(window.partition_by) or '(none: one stream)'}")
        if plan.aggregation is not None and window is plan.aggregation.relation:
            formed = window_keys(window, plan.aggregation.group_keys)
            if formed != tuple(window.partition_by):
                shown = ", ".join(identifier_name(k) or k for k in formed)
                lines.append(f"  windows formed per: {shown} (the GROUP BY keys: a {window.function} window holds "
                             "one key's rows; PARTITION BY names the clocks)")
        if window.order_by:
            lines.append(f"  order by: {', '.join(window.order_by)}")
        # Without PARTITION BY there are no keys to give clocks to: one clock for the stream.
        mark = window.watermark if window.partition_by else replace(window.watermark, scope="stream")
        lines.append(f"  watermark: {describe_watermark(mark, complete)}"
                     + ("" if complete or table is None or table.args.get("watermark") is not None
                        else " (the default: the query has no WATERMARK)"))
    if plan.windows:
        lines.append(f"emit: {describe_emit(plan.emit)}")
    if plan.late_into:
        lines.append(f"late rows into: {plan.late_into}")
    if plan.aggregation:
        keys = ", ".join(plan.aggregation.group_keys) or "(none)"
        lines.append(f"windowed aggregation: GROUP BY {keys}, window_start, window_end"
                     + (f", {plan.aggregation.grouping_analytics.sql(dialect='spark')}"
                        if isinstance(plan.aggregation.grouping_analytics, (exp.GroupingSets, exp.Rollup, exp.Cube))
                        else ""))
    if plan.time_zone != "UTC" and plan.windows:
        lines.append(f"session time zone: {plan.time_zone} (TIMESTAMP literals read in it; windows are "
                     "fixed lengths of absolute time, as Spark's window())")
    return lines

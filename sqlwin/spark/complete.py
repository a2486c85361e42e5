"""Complete input → native Spark SQL.

Over a finished table every row is on time and every window closes at end of input,
so a windowed query is ordinary Spark SQL once each window table function is replaced
by a relation that annotates every row with its window(s). That relation is written
only with Spark's own operators — `window()`, arithmetic on epoch microseconds,
`explode(sequence(...))`, window frames, `row_number()` — never a Python UDF, so the
query runs at Spark's own speed.

Two shapes are lowered differently because Spark has a faster native operator for them:
a GROUP BY over SESSION (Spark's merging `session_window`) and over COUNT_WINDOW
(one `row_number()` pass, windows as grouping keys). Everything else composes as a
derived table under the user's own SQL (joins, CTEs, WHERE, a second window...).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.sql.dialect import SqlwinDialect, SqlwinGenerator, WindowTVF
from sqlwin.errors import SqlwinError, SqlwinValidationError
from sqlwin.spark.time_sql import epoch_ms_sql, time_from_micros_sql, time_micros_sql
from sqlwin.sql.plan import (
    WINDOW_COLUMNS,
    CountWindow,
    Cumulate,
    GlobalWindow,
    Hop,
    QueryPlan,
    Session,
    Slide,
    TimeColumn,
    Tumble,
    WindowAggregation,
    WindowRelation,
    interval_text,
    key_text,
    node_position,
    window_keys,
)
from sqlwin.sql.text import identifier_name, named_struct, quote_identifier, quote_string


@dataclass
class LoweredQuery:
    sql: str  # the Spark SQL that runs
    strategies: list[str]  # one line per window function: how it was lowered and why
    rejected_sql: str | None = None  # the rows no window takes (NULL key or time), as LATE ROWS INTO lists them


def complete_mode(plan: QueryPlan) -> str:
    """The complete-input mode in words, for explain."""
    if plan.plain_spark:
        return "Spark SQL as written (no window function of sqlwin: Spark parses and runs the text itself)"
    return ("complete input: finished tables (no table records its arrival order), every row on time, every "
            "window closed at end of input; native Spark SQL, no Python")


def plain_plan(query: str) -> QueryPlan:
    """The plan of a query sqlglot cannot read but Spark can: nothing of sqlwin's, run as written."""
    from sqlwin.sql.plan import EmitSpec

    return QueryPlan(query, exp.Select(), [], EmitSpec(), None, None)


def run_as_written(runner, query: str, err: SqlwinError):
    """A query sqlwin's parser refused: Spark's own SQL if it has none of sqlwin's words and Spark reads
    it (`GROUP BY window(ts, '1 hour')`), run exactly as written; else sqlwin's error (`err`), which says
    where and what would be accepted."""
    if not getattr(err, "plain_spark", False):
        raise err
    try:
        return runner.sql(query, query)
    except SqlwinError as spark_err:
        if getattr(spark_err, "spark_parse", False):
            raise err from None  # Spark cannot read it either: sqlwin's message is the more precise
        if getattr(err, "registered_form", False) and any(
                c in str(spark_err) for c in ("UNRESOLVABLE_TABLE_VALUED_FUNCTION", "UNRESOLVED_ROUTINE")):
            raise err from None  # the registered functions' form, in a session without them: say both forms
        raise


class RawRelation(exp.Expression):
    """A relation given as ready Spark SQL text (a lowered window function)."""

    arg_types = {"this": True, "alias": False}


class _LoweringGenerator(SqlwinGenerator):
    TRANSFORMS = {
        **SqlwinGenerator.TRANSFORMS,
        RawRelation: lambda gen, e: (f"({e.this}) AS {quote_identifier(e.args['alias'])}" if e.args.get("alias")
                                     else f"({e.this})"),
    }


class _LoweringDialect(SqlwinDialect):
    Generator = _LoweringGenerator


def lower_complete(plan: QueryPlan) -> LoweredQuery:
    """The whole query as Spark SQL, every window function replaced by native Spark."""
    try:
        return _lower_complete(plan)
    except SqlwinError as err:
        raise err.with_query(plan.sql) from None


def _lower_complete(plan: QueryPlan) -> LoweredQuery:
    if plan.plain_spark:
        # Nothing of sqlwin's: Spark runs the user's own text (sqlglot's rewriting of it is not always Spark's).
        return LoweredQuery(plan.sql, [])
    if plan.around is not None and not plan.around.grouping and plan.around.rows_sql is None:
        # (a grouping: Spark's own GROUPING SETS below; a window function's rows: its annotated rows)
        # SQL around a windowed stage: the stage lowered as the whole statement would be (its windows formed
        # as a replay's and a stream's are), the SQL around it over the stage's rows.
        stage = _lower_complete(plan.around.stage)
        return LoweredQuery(plan.around.outer_over(stage.sql), stage.strategies, stage.rejected_sql)
    ast = plan.ast.copy()
    nodes = {id(n): n for n in ast.find_all(WindowTVF)}
    originals = {id(w.node): w for w in plan.windows}
    # Map copied nodes back to their relations through their position in the walk order.
    relations = dict(zip(nodes, (originals[id(n)] for n in plan.ast.find_all(WindowTVF))))
    strategies: list[str] = []

    _group_count_windows_by_index(plan, ast)
    _order_collected_lists(plan, ast)
    fast = _grouped_fast_path(plan)
    for node_id, node in nodes.items():
        relation = relations[node_id]
        if fast is not None and relation is plan.aggregation.relation:
            continue
        grouped = plan.aggregation is not None and relation is plan.aggregation.relation
        if plan.join is not None and relation in plan.join.sides:
            sql, why = _join_side(plan, plan.join.sides.index(relation))
            strategies.append(f"{relation.function} at {relation.position}: {why}")
            node.replace(RawRelation(this=sql, alias=_alias(relation)))
            continue
        group_keys = plan.aggregation.group_keys if grouped else ()
        sql, why = annotate(relation, group_keys, window_keys(relation, group_keys))
        strategies.append(f"{relation.function} at {relation.position}: {why}")
        node.replace(RawRelation(this=sql, alias=_alias(relation)))
    if fast is not None:
        ast, why = fast(ast, plan.aggregation, _strip_modifiers)
        strategies.append(f"{plan.aggregation.relation.function} at {plan.aggregation.relation.position}: {why}")
    _strip_modifiers(ast)
    return LoweredQuery(ast.sql(dialect=_LoweringDialect, comments=False), strategies, _rejected_rows_sql(plan, ast))


def _join_side(plan: QueryPlan, side: int) -> tuple[str, str]:
    """One side of a windowed join over a finished table: its annotated rows, NULL keys left out (the
    runtime rejects them), and what its insert mode keeps of a key's rows in a window -- every row
    ('product': Spark's join is the join), the earliest / latest by time ('first' / 'last'), or every
    value of each column gathered in time order ('collect'). Without arrival order, rows of the
    same time tie; a replay orders them by arrival."""
    join = plan.join
    relation = join.sides[side]
    keys = [quote_identifier(k) for k in join.keys[side]]
    sql, why = annotate(relation, keys)
    if join.insert == "product":
        return sql, why
    bounds = ["window_start", "window_end", "window_time"]
    time = quote_identifier(relation.time.name)
    if join.insert in ("first", "last"):
        order = "ASC" if join.insert == "first" else "DESC"
        ranked = (f"SELECT *, row_number() OVER (PARTITION BY {', '.join(keys + bounds)} ORDER BY {time} {order}) "
                  f"AS __rank FROM ({sql})")
        return f"SELECT * EXCEPT (__rank) FROM ({ranked}) WHERE __rank = 1", f"{why}; the {join.insert} row per key and window"
    keyed = {k.lower() for k in join.keys[side]}
    gathered = [f"transform(array_sort(collect_list(struct({time} AS o, {quote_identifier(c)} AS v))), x -> x.v) "
                f"AS {quote_identifier(c)}" for c in relation.columns if c.lower() not in keyed
                and c.lower() not in WINDOW_COLUMNS]
    columns = ", ".join(keys + gathered + bounds)
    return (f"SELECT {columns} FROM ({sql}) GROUP BY {', '.join(keys + bounds)}",
            f"{why}; each column's values per key and window gathered in time order (cogroup)")


def _rejected_rows_sql(plan: QueryPlan, lowered: exp.Expr) -> str | None:
    """The rows of a finished table no window takes, rejected as a replay and a stream reject them
    -- a NULL key (`null_key`), else a NULL time where the query names a time column (`null_time`)
    -- with the columns a replay or a stream gives LATE ROWS INTO (the row's own columns, late_by,
    window_start, window_end, reason). No row of a finished table is late."""
    if not plan.windows:
        return None
    if plan.join is not None:
        return _join_rejected_rows_sql(plan, lowered)
    grouped = plan.aggregation is not None
    relation = (plan.aggregation.relation if grouped else plan.windows[0])
    epoch = relation.time is not None and relation.time.kind == "epoch_ms"
    late_by, bound = ("BIGINT", "BIGINT") if epoch else ("INTERVAL DAY TO SECOND", _timestamp_type(relation))
    with_ = lowered.args.get("with_") if isinstance(lowered, exp.Query) else None
    prefix = f"{with_.sql(dialect=_LoweringDialect, comments=False)} " if with_ is not None else ""
    keys = null_keys(relation, plan.aggregation.group_keys if grouped else ())
    null_key = " OR ".join(f"({k}) IS NULL" for k in keys) or "false"
    time = relation.time
    null_time = f"NOT ({_Time(time).present})" if time is not None and time.kind != "processing_time" else "false"
    return (f"{prefix}SELECT {_star_except(relation)}, CAST(NULL AS {late_by}) AS late_by, "
            f"CAST(NULL AS {bound}) AS window_start, CAST(NULL AS {bound}) AS window_end, "
            f"CASE WHEN {null_key} THEN 'null_key' ELSE 'null_time' END AS reason "
            f"FROM {relation.source} WHERE ({null_key}) OR ({null_time})")


def _join_rejected_rows_sql(plan: QueryPlan, lowered: exp.Expr) -> str:
    """A windowed join's rows no window takes (a NULL join key, else a NULL time), as a replay and a
    stream list them: `side` (the side's name), a struct column per side holding the row (NULL on the
    other sides), late_by, window_start, window_end, reason."""
    join = plan.join
    with_ = lowered.args.get("with_") if isinstance(lowered, exp.Query) else None
    prefix = f"{with_.sql(dialect=_LoweringDialect, comments=False)} " if with_ is not None else ""
    first = join.sides[0].time
    late_by, bound = ("BIGINT", "BIGINT") if first.kind == "epoch_ms" else (
        "INTERVAL DAY TO SECOND", "TIMESTAMP_NTZ" if first.ntz else "TIMESTAMP")
    structs = [f"STRUCT<{', '.join(f'{quote_identifier(c)}: {kind}' for c, kind in side.columns.items())}>"
               for side in join.sides]
    selects = []
    for s, side in enumerate(join.sides):
        row = named_struct((c, quote_identifier(c)) for c in side.columns)
        per_side = [f"{row} AS {quote_identifier(name)}" if o == s else
                    f"CAST(NULL AS {structs[o]}) AS {quote_identifier(name)}" for o, name in enumerate(join.names)]
        null_key = " OR ".join(f"{quote_identifier(k)} IS NULL" for k in join.keys[s])
        null_time = f"NOT ({_Time(side.time).present})"
        selects.append(
            f"SELECT {quote_string(join.names[s])} AS side, {', '.join(per_side)}, CAST(NULL AS {late_by}) AS late_by, "
            f"CAST(NULL AS {bound}) AS window_start, CAST(NULL AS {bound}) AS window_end, "
            f"CASE WHEN {null_key} THEN 'null_key' ELSE 'null_time' END AS reason "
            f"FROM {side.source} WHERE ({null_key}) OR ({null_time})")
    return prefix + " UNION ALL ".join(selects)


def _group_count_windows_by_index(plan: QueryPlan, ast: exp.Expr) -> None:
    """Count windows are positional: two of them may span the same times. GROUP BY
    window_start, window_end over COUNT_WINDOW therefore also groups by window_index."""
    agg = plan.aggregation
    if agg is None or not isinstance(agg.relation.windower, CountWindow):
        return
    group = ast.args.get("group")
    names = {e.name.lower() for e in group.expressions if isinstance(e, exp.Column)}
    if "window_index" not in names:
        group.append("expressions", exp.column("window_index"))


def _order_collected_lists(plan: QueryPlan, ast: exp.Expr) -> None:
    """collect_list / array_agg of a window lists values in event-time order, ties in arrival
    order, as the window runtime does (Spark's own order is whatever the shuffle left). With
    ORDER BY keys of its own an aggregate keeps them first and breaks their ties the same way."""
    agg = plan.aggregation
    if agg is None:
        return
    relation = agg.relation
    ties = []
    if relation.time is not None and relation.time.kind != "processing_time" \
            and relation.time.name.lower() not in WINDOW_COLUMNS:
        ties.append(exp.Ordered(this=exp.column(relation.time.name, quoted=True), nulls_first=True))
    arrival = relation.options.get("arrival_order")
    if arrival:
        ties.append(exp.Ordered(this=exp.column(arrival, quoted=True), nulls_first=True))
    elif relation.order_by:  # COUNT_WINDOW's row order
        ties += [exp.maybe_parse(term, into=exp.Ordered, dialect="spark") for term in relation.order_by]
    if not ties:
        return
    roots = [*ast.expressions, *([ast.args["having"].this] if ast.args.get("having") else [])]
    for root in roots:
        for node in list(root.find_all(exp.ArrayAgg)):
            if any(isinstance(a, (exp.Select, exp.Window)) for a in _ancestors_until(node, root)):
                continue  # a subquery's or an OVER (...) window function's own list
            order = node.this if isinstance(node.this, exp.Order) else exp.Order(this=node.this, expressions=[])
            order.set("expressions", [*order.expressions, *(t.copy() for t in ties)])
            node.set("this", order)


def _ancestors_until(node: exp.Expr, root: exp.Expr) -> t.Iterator[exp.Expr]:
    while node is not root and node.parent is not None:
        node = node.parent
        yield node


def name_select_items(plan: QueryPlan, columns_of: t.Callable[[str], list[str]]) -> None:
    """Give each unaliased item of the windowed aggregation's SELECT the name Spark itself gives it
    (`count(*)` is `count(1)`, `sum(v)` is `sum(v)`), in every mode: the lowerings rewrite these
    items, so without an alias their names would be the rewrite's (`COUNT(*)`, or an internal
    `__agg0` in a replay or a stream).

    Spark is asked, never imitated: `columns_of` analyses the user's SELECT and GROUP BY over a
    stand-in of the window function's output -- the input's columns and the window columns, no
    rows -- and returns the columns (nothing runs). Anything Spark cannot analyse there is left
    as it is: the query's own run reports it.
    """
    agg = plan.aggregation
    if agg is None or not agg.relation.columns:
        return
    items = agg.select.expressions
    if all(isinstance(e, (exp.Alias, exp.Column, exp.Star)) for e in items):
        return
    relation = agg.relation
    kind = "BIGINT" if relation.time is not None and relation.time.kind == "epoch_ms" else _timestamp_type(relation)
    keep = [quote_identifier(c) for c in relation.columns if c.lower() not in WINDOW_COLUMNS]
    window = [f"CAST(NULL AS {'BIGINT' if c == 'window_index' else kind}) AS {c}" for c in WINDOW_COLUMNS]
    stand_in = f"SELECT {', '.join([*keep, *window])} FROM {relation.source} WHERE false"
    probe = exp.select(*(e.copy() for e in items))
    probe.set("from_", exp.From(this=RawRelation(this=stand_in, alias=_alias(relation))))
    if agg.select.args.get("group") is not None:
        probe.set("group", agg.select.args["group"].copy())
    for key in ("with_", "with"):  # the window function may read a CTE of the query
        if key in exp.Select.arg_types and plan.ast.args.get(key) is not None:
            probe.set(key, plan.ast.args[key].copy())
    _strip_modifiers(probe)
    try:
        names = columns_of(probe.sql(dialect=_LoweringDialect, comments=False))
    except Exception:  # noqa: BLE001 - the query's own run reports what Spark cannot analyse
        return
    if len(names) != len(items):
        return
    for item, name in zip(list(items), names):
        if not isinstance(item, (exp.Alias, exp.Column, exp.Star)):
            item.replace(exp.alias_(item.copy(), name, quoted=True, copy=False))


def _strip_modifiers(ast: exp.Expr) -> None:
    """EMIT / LATE ROWS INTO / WATERMARK have no meaning to Spark over complete input."""
    for select in ast.find_all(exp.Select):
        select.set("emit", None)
        select.set("late_into", None)
    for table in ast.find_all(exp.Table):
        table.set("watermark", None)


def _alias(relation: WindowRelation) -> str:
    # Without an alias of its own the window relation answers to its input's name, so
    # `t.k` keeps working in `SELECT t.k FROM TUMBLE(TABLE t, ...)`.
    # A plain name (RawRelation quotes it); relation.source is SQL text, `db`.`t a` -> t a.
    return relation.alias or relation.source_alias or identifier_name(relation.source) or relation.source


# --------------------------------------------------------------------------- time helpers


class _Time:
    """Arithmetic on a time column in its own unit: microseconds for TIMESTAMP, ms for epoch-ms LONG
    (a DOUBLE / DECIMAL epoch-ms column rounded to the closest millisecond first)."""

    def __init__(self, time: TimeColumn):
        self.time = time
        self.column = quote_identifier(time.name)
        self.epoch_ms = time.kind == "epoch_ms"
        self._value = epoch_ms_sql(time) if self.epoch_ms else time_micros_sql(time)
        # Rows without a time join no window (a rounded time is also NULL for NaN and infinities).
        self.present = f"{self._value} IS NOT NULL" if time.rounded else f"{self.column} IS NOT NULL"

    @property
    def value(self) -> str:
        """The row's time as a number in the column's unit."""
        return self._value

    def duration(self, micros: int) -> int:
        return micros // 1_000 if self.epoch_ms else micros

    def to_time(self, number_sql: str) -> str:
        """A number in the column's unit back to the column's kind (LONG stays LONG, TIMESTAMP_NTZ
        stays TIMESTAMP_NTZ)."""
        return f"({number_sql})" if self.epoch_ms else time_from_micros_sql(self.time, number_sql)

    def window_columns(self, start: str, end: str, inclusive_end: bool = False) -> str:
        """`window_start, window_end, window_time` from numbers; window_time is the last instant inside."""
        last = end if inclusive_end else f"{end} - 1"
        return (
            f"{self.to_time(start)} AS window_start, {self.to_time(end)} AS window_end, "
            f"{self.to_time(last)} AS window_time"
        )


def _star_except(relation: WindowRelation, *temporaries: str) -> str:
    """`* EXCEPT (...)` dropping our temporaries and any window columns the input already has.

    A window over a window's output (e.g. DESCRIPTOR(window_time)) gets fresh window
    columns; the input's are shadowed, as a user chaining windows expects.
    """
    shadowed = [c for c in relation.columns if c.lower() in WINDOW_COLUMNS]
    dropped = [*temporaries, *(quote_identifier(c) for c in shadowed)]
    return f"* EXCEPT ({', '.join(dropped)})" if dropped else "*"


def _partition_clause(keys: t.Sequence[str], extra: str = "") -> str:
    keys = [*keys, *([extra] if extra else [])]
    return f"PARTITION BY {', '.join(keys)} " if keys else ""


def _timestamp_type(relation: WindowRelation) -> str:
    """The type of a TIMESTAMP time column's window columns: its own (TIMESTAMP or TIMESTAMP_NTZ)."""
    return "TIMESTAMP_NTZ" if relation.time is not None and relation.time.ntz else "TIMESTAMP"


def _interval(micros: int) -> str:
    return f"INTERVAL {micros} MICROSECONDS"


# --------------------------------------------------------------------------- annotation


def annotate(relation: WindowRelation, group_keys: t.Sequence[str] = (),
             keys: t.Sequence[str] | None = None) -> tuple[str, str]:
    """Spark SQL for the window function's output: its input's columns plus window_start/end/time.

    `group_keys`: the GROUP BY keys of the windowed aggregation over it, if any (a row with a
    NULL key joins no window, see `admitted_source`). `keys`: the keys whose rows form windows of
    their own (`window_keys`; default PARTITION BY) -- what SESSION, SLIDE and COUNT_WINDOW
    windows are formed per.
    """
    windower = relation.windower
    keys = tuple(relation.partition_by if keys is None else keys)
    src = admitted_source(relation, group_keys)
    if isinstance(windower, (Tumble, Hop)):
        return _annotate_fixed(relation, windower, src)
    if isinstance(windower, Cumulate):
        return _annotate_cumulate(relation, windower, src)
    if isinstance(windower, Session):
        return _annotate_session(relation, windower, src, keys)
    if isinstance(windower, Slide):
        return _annotate_slide(relation, windower, src, keys)
    if isinstance(windower, CountWindow):
        return _annotate_count(relation, windower, src, keys)
    if isinstance(windower, GlobalWindow):
        return _annotate_global(relation, src)
    raise AssertionError(f"no lowering for {windower}")


def _annotate_fixed(relation: WindowRelation, w: Tumble | Hop, src: str) -> tuple[str, str]:
    slide = w.slide
    time = _Time(relation.time)
    if _uses_spark_window(relation):
        # Spark's own window(): the operator a Spark user would write by hand.
        sql = (
            f"SELECT {_star_except(relation, '__w')}, __w.start AS window_start, __w.end AS window_end, "
            f"__w.end - INTERVAL 1 MICROSECOND AS window_time FROM ("
            f"SELECT *, {_spark_window_call(relation)} AS __w FROM {src})"
        )
        return sql, "Spark window() (native)"
    # Epoch-ms columns and hops with gaps (slide > size, which window() refuses): the same
    # assignment written as arithmetic. The latest window start at or before t is
    # t - pmod(t - offset, slide); earlier candidates are `slide` apart.
    size, step, offset = time.duration(w.size), time.duration(slide), time.duration(w.offset)
    candidates = -(-size // step)  # ceil: how many windows can hold one instant
    latest = f"{time.value} - pmod({time.value} - {offset}, {step})"
    if candidates == 1:
        inner = f"SELECT *, {latest} AS __s FROM {src} WHERE {time.present}"
    else:
        inner = (
            f"SELECT *, {latest} - __i * {step} AS __s FROM {src} "
            f"LATERAL VIEW explode(sequence(0, {candidates - 1})) AS __i WHERE {time.present}"
        )
    sql = (
        f"SELECT {_star_except(relation, '__s', *(['__i'] if candidates > 1 else []))}, "
        f"{time.window_columns('__s', f'__s + {size}')} FROM ({inner}) WHERE {time.value} < __s + {size}"
    )
    gap_note = " (slide > size: rows in the gaps join no window)" if slide > w.size else ""
    return sql, f"native arithmetic on the time column{gap_note}"


def _annotate_cumulate(relation: WindowRelation, w: Cumulate, src: str) -> tuple[str, str]:
    time = _Time(relation.time)
    step, max_size, offset = time.duration(w.step), time.duration(w.max_size), time.duration(w.offset)
    base = f"{time.value} - pmod({time.value} - {offset}, {max_size})"
    # A row at t is in every window of its period whose end (base + j*step) is after t.
    first_j = f"CAST(floor(({time.value} - __b) / {step}) AS BIGINT) + 1"
    sql = (
        f"SELECT {_star_except(relation, '__b', '__j')}, {time.window_columns('__b', f'__b + __j * {step}')} FROM ("
        f"SELECT *, {base} AS __b FROM {src} WHERE {time.present}) __c "
        f"LATERAL VIEW explode(sequence({first_j}, {max_size // step})) AS __j"
    )
    return sql, "native arithmetic + explode(sequence) over the cumulating steps"


def _annotate_session(relation: WindowRelation, w: Session, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    time = _Time(relation.time)
    gap = time.duration(w.gap)
    order = f"{_partition_clause(keys)}ORDER BY {time.value}"
    # A row starts a new session when it is a full gap (or more) after the previous row.
    starts = (
        f"SELECT *, CASE WHEN {time.value} - lag({time.value}) OVER ({order}) < {gap} THEN 0 ELSE 1 END AS __new "
        f"FROM {src} WHERE {time.present}"
    )
    numbered = f"SELECT *, sum(__new) OVER ({order} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS __sid FROM ({starts})"
    session = _partition_clause(keys, "__sid")
    bounded = (
        f"SELECT *, min({time.value}) OVER ({session}) AS __first, max({time.value}) OVER ({session}) AS __last "
        f"FROM ({numbered})"
    )
    sql = (
        f"SELECT {_star_except(relation, '__new', '__sid', '__first', '__last')}, "
        f"{time.window_columns('__first', f'__last + {gap}')} FROM ({bounded})"
    )
    return sql, "window frames: lag() marks session starts, a running sum numbers them"


def _annotate_slide(relation: WindowRelation, w: Slide, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    time = _Time(relation.time)
    size = time.duration(w.size)
    # One window per distinct (key, time); each holds the rows of its key in [time - size, time].
    key_match = " AND ".join(f"__r.{_key(k)} <=> __w.{_key(k)}" for k in keys)
    key_cols = ", ".join(f"{k} AS {_key(k)}" for k in keys)
    windows = f"SELECT DISTINCT {key_cols + ', ' if key_cols else ''}{time.value} AS __end FROM {src} WHERE {time.present}"
    rows = f"SELECT *{', ' + key_cols if key_cols else ''}, {time.value} AS __t FROM {src} WHERE {time.present}"
    join = f"{key_match + ' AND ' if key_match else ''}__r.__t BETWEEN __w.__end - {size} AND __w.__end"
    drop = ", ".join(["__t", *(_key(k) for k in keys)])
    sql = (
        f"SELECT __r.{_star_except(relation, *drop.split(', '))}, {time.window_columns(f'__w.__end - {size}', '__w.__end', inclusive_end=True)} "
        f"FROM ({rows}) __r JOIN ({windows}) __w ON {join}"
    )
    return sql, "range join of rows to one window per distinct row time"


def _key(expression: str) -> str:
    """A plain column name standing for a key expression, one per expression: `a b` and `a-b` differ."""
    return "__k_" + "".join(ch if ch.isascii() and ch.isalnum() else f"_{ord(ch):x}_" for ch in expression)


def _window_numbers(first: str, last: str) -> str:
    """explode() of the window numbers first..last; none when first > last (Spark's sequence would count down)."""
    return f"explode(IF({first} <= {last}, sequence({first}, {last}), CAST(array() AS ARRAY<BIGINT>)))"


def _count_order(relation: WindowRelation) -> str:
    if relation.order_by:
        return ", ".join(relation.order_by)
    if "arrival_order" in relation.options:
        return quote_identifier(relation.options["arrival_order"])
    # A finished table has no order of its own (a stream has: the order its rows arrive).
    raise SqlwinValidationError(
        "COUNT_WINDOW over a finished table needs an order for its rows", node_position(relation.node, "COUNT_WINDOW"),
        "COUNT_WINDOW(TABLE t [PARTITION BY k] ORDER BY offset, 3 [, step]), or WITH (arrival_order = offset)")


def _rows_in_count_windows(relation: WindowRelation, w: CountWindow, src: str, keys: t.Sequence[str]) -> str:
    """One row per (input row, count window it is in): row number __rn, window number __j.

    Row rn is in windows j with j*slide <= rn < j*slide + size; tumbling windows need no explode.
    """
    numbered = (f"SELECT *, row_number() OVER ({_partition_clause(keys)}ORDER BY {_count_order(relation)}) - 1 "
                f"AS __rn FROM {src}{_with_time(relation)}")
    if w.slide == w.size:
        return f"SELECT *, div(__rn, {w.size}) AS __j FROM ({numbered})"
    first_j = f"CAST(greatest(0, ceil((__rn - {w.size} + 1) / {w.slide})) AS BIGINT)"
    last_j = f"CAST(floor(__rn / {w.slide}) AS BIGINT)"
    return f"SELECT * FROM ({numbered}) __n LATERAL VIEW {_window_numbers(first_j, last_j)} AS __j"


def _annotate_count(relation: WindowRelation, w: CountWindow, src: str, keys: t.Sequence[str]) -> tuple[str, str]:
    win = _partition_clause(keys, "__j")
    bound = _count_bounds(relation)
    sized = (
        f"SELECT *, count(*) OVER ({win}) AS __size, min_by({bound}, __rn) OVER ({win}) AS __first, "
        f"max_by({bound}, __rn) OVER ({win}) AS __last FROM ({_rows_in_count_windows(relation, w, src, keys)})"
    )
    sql = (
        f"SELECT {_star_except(relation, '__rn', '__j', '__size', '__first', '__last')}, __first AS window_start, __last AS window_end, "
        f"__last AS window_time, __j AS window_index FROM ({sized}) WHERE __size = {w.size}"
    )
    return sql, "row_number() + window numbers per row; only full windows (as Quix and Flink)"


def _count_bounds(relation: WindowRelation) -> str:
    """What window_start / window_end of a count window show: the first / last row's time."""
    if relation.time is not None:
        return epoch_ms_sql(relation.time) if relation.time.kind == "epoch_ms" else quote_identifier(relation.time.name)
    first = _count_order(relation).split(", ")[0]
    return first.rsplit(" ", 1)[0] if first.upper().endswith((" ASC", " DESC")) else first


def _annotate_global(relation: WindowRelation, src: str) -> tuple[str, str]:
    # The global window has no bounds: NULL start / end / time, typed like the time column.
    kind = "BIGINT" if relation.time is not None and relation.time.kind == "epoch_ms" else _timestamp_type(relation)
    bounds = ", ".join(f"CAST(NULL AS {kind}) AS {c}" for c in ("window_start", "window_end", "window_time"))
    return (f"SELECT {_star_except(relation)}, {bounds} FROM {src}{_with_time(relation)}",
            "one window for all rows, closed at end of input")


def null_keys(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> list[str]:
    """The keys whose NULL rejects a row: the PARTITION BY expressions and the GROUP BY keys that
    are the input's own columns -- the keys a replay's and a stream's runtime is keyed by."""
    keys = list(relation.partition_by)
    columns = {name.lower(): name for name in relation.columns}
    for key in group_keys:
        name = (identifier_name(key) or "").lower()
        if name in columns and name not in WINDOW_COLUMNS:
            column = quote_identifier(columns[name])
            if column not in keys and key not in keys:
                keys.append(column)
    return keys


def admitted_source(relation: WindowRelation, group_keys: t.Sequence[str] = ()) -> str:
    """The window function's input without the rows whose key is NULL: one rule in every mode
    (QX-20: such rows join no window; a replay and a stream reject them as `null_key`, and
    LATE ROWS INTO lists them, here too)."""
    keys = null_keys(relation, group_keys)
    if not keys:
        return relation.source
    return f"(SELECT * FROM {relation.source} WHERE {' AND '.join(f'({k}) IS NOT NULL' for k in keys)})"


def _with_time(relation: WindowRelation) -> str:
    """` WHERE <time> IS NOT NULL` when the window function names a time column (DESCRIPTOR(ts)): rows with
    a NULL time join no window, in every kind of window (docs/semantics.md)."""
    time = relation.time
    if time is None or time.kind == "processing_time":
        return ""
    return f" WHERE {_Time(time).present}"


# --------------------------------------------------------------------------- grouped fast paths


Rewrite = t.Callable[[exp.Expr, WindowAggregation, t.Callable], tuple[exp.Expr, str]]


def _grouped_fast_path(plan: QueryPlan) -> Rewrite | None:
    """A native grouped operator for GROUP BY <partition keys>, window_start, window_end, if one fits."""
    agg = plan.aggregation
    if agg is None or agg.grouping_analytics is not None:
        return None  # GROUPING SETS / ROLLUP / CUBE: Spark groups the annotated rows itself
    relation = agg.relation
    if not _aggregates_extractable(agg.select) or not _only_grouped_columns(agg):
        return None
    if isinstance(relation.windower, (Tumble, Hop)) and _uses_spark_window(relation):
        return _rewrite_fixed  # fixed windows do not depend on keys: any GROUP BY keys work
    if {key_text(k) for k in window_keys(relation, agg.group_keys)} != {key_text(k) for k in agg.group_keys}:
        # PARTITION BY a column GROUP BY does not name (windows per both, grouped coarser), or a key
        # the windows cannot be formed by: the general path is exact.
        return None
    if isinstance(relation.windower, Session):
        # Spark merges sessions by merging partial aggregates, which a DISTINCT aggregate does not survive
        # (count(DISTINCT v) over merged sessions counts some values twice): the general path is exact.
        if any(agg_node.find(exp.Distinct) for agg_node in agg.select.find_all(exp.AggFunc)):
            return None
        return _rewrite_session
    if isinstance(relation.windower, CountWindow):
        return _rewrite_count
    return None


def _aggregates_extractable(select: exp.Select) -> bool:
    """True when the SELECT can be split into an inner GROUP BY and an outer projection.

    Every function must be known to sqlglot (so aggregates can be told apart), no window
    column may sit inside an aggregate, and there is no WHERE: a WHERE filters rows after
    they are placed in sessions / count windows, which the grouped operators cannot do.
    """
    if select.args.get("where") is not None:
        return False
    for part in [*select.expressions, select.args.get("having")]:
        if part is None:
            continue
        if any(isinstance(n, (exp.Anonymous, exp.Window)) for n in part.walk()):
            return False
        for aggregate in part.find_all(exp.AggFunc, exp.Filter):
            if any(c.name.lower() in WINDOW_COLUMNS for c in aggregate.find_all(exp.Column)):
                return False
    return True


def _only_grouped_columns(agg: WindowAggregation) -> bool:
    """True when every column outside an aggregate is a window column, a GROUP BY key or (in ORDER BY)
    an output name. Otherwise the query is wrong, and the general path lets Spark say so in the user's
    names (the split into an inner and an outer query would name its own columns instead)."""
    select = agg.select
    keys = set(agg.group_keys)
    key_names = {(identifier_name(k) or "").lower() for k in keys} - {""}
    outputs = {e.alias_or_name.lower() for e in select.expressions}

    def grouped(node: exp.Expr, names: set[str]) -> bool:
        if isinstance(node, (exp.AggFunc, exp.Filter, exp.Subquery, exp.Select)) or _is_mean(node):
            return True
        if not isinstance(node, exp.Literal) and node.sql(dialect="spark") in keys:
            return True
        if isinstance(node, exp.Column):
            name = node.name.lower()
            return name in WINDOW_COLUMNS or name in key_names or name in names or isinstance(node.this, exp.Star)
        return all(grouped(child, names) for child in node.iter_expressions())

    having = select.args.get("having")
    order = select.args.get("order")
    return (all(grouped(e, set()) for e in select.expressions)
            and (having is None or grouped(having.this, outputs))
            and (order is None or grouped(order, outputs)))


def _is_mean(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).lower() == "mean"


def _rewrite_grouped(ast: exp.Select, agg: WindowAggregation, window_key: str, window_cols: dict[str, str],
                     source_sql: str, extra_items: t.Sequence[str] = (), having: str | None = None) -> exp.Expr:
    """Split the user's SELECT into an inner GROUP BY (keys, window) and an outer projection.

    The inner query computes every aggregate the user wrote, grouped by the partition keys
    and `window_key`; the outer one is the user's own SELECT with each aggregate replaced
    by its inner column and window_start / window_end / window_time by `window_cols`.
    """
    inner_items: list[str] = [f"{key} AS {_key(key)}" for key in agg.group_keys]
    inner_items += [f"{window_key} AS __win", *extra_items]
    counter = iter(range(10_000))

    def extract(node: exp.Expr) -> exp.Expr:
        if isinstance(node, (exp.AggFunc, exp.Filter)):  # an aggregate with its FILTER (WHERE ...)
            name = f"__a{next(counter)}"
            inner_items.append(f"{node.sql(dialect=_LoweringDialect)} AS {name}")
            return exp.column(name)
        if not isinstance(node, (exp.Column, exp.Literal)) and node.sql(dialect="spark") in agg.group_keys:
            return exp.column(_key(node.sql(dialect="spark")))  # GROUP BY lower(word): SELECT lower(word)
        if isinstance(node, exp.Column):
            lowered = node.name.lower()
            if lowered in window_cols:
                return exp.column(f"__win_{lowered}")
            for key in agg.group_keys:
                if node.sql(dialect="spark") == key or node.name == key:
                    return exp.column(_key(key))
        return node

    outer = ast.copy()
    outer.set("expressions", [_alias_preserving(e, extract) for e in outer.expressions])
    user_having = outer.args.get("having")
    outer.set("having", None)
    outer.set("group", None)
    if user_having is not None:
        outer.set("where", exp.Where(this=user_having.this.transform(extract)))
    if outer.args.get("order"):
        outer.set("order", outer.args["order"].transform(extract))
    group = ", ".join([*agg.group_keys, window_key])
    # The input answers to the name the user qualifies columns with (`... AS t GROUP BY t.k`).
    inner = (f"SELECT {', '.join(inner_items)} FROM {source_sql} AS {quote_identifier(_alias(agg.relation))} "
             f"GROUP BY {group}")
    if having:
        inner += f" HAVING {having}"
    window_projection = ", ".join(f"{expr} AS __win_{name}" for name, expr in window_cols.items())
    shaped = f"SELECT *, {window_projection} FROM ({inner})"
    outer.set("from_", exp.From(this=RawRelation(this=shaped, alias=_alias(agg.relation))))
    outer.set("joins", None)
    return outer


def _alias_preserving(item: exp.Expr, extract: t.Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """Transform a select item but keep the output name the user would have seen."""
    if isinstance(item, exp.Alias):
        return item.transform(extract)
    name = item.alias_or_name if isinstance(item, exp.Column) else None
    transformed = item.transform(extract)
    if name:
        return exp.alias_(transformed, name)
    if transformed is not item:
        return exp.alias_(transformed, item.sql(dialect="spark"), quoted=True)
    return transformed


def _uses_spark_window(relation: WindowRelation) -> bool:
    w = relation.windower
    return relation.time.kind == "timestamp" and w.slide <= w.size


def _spark_window_call(relation: WindowRelation) -> str:
    w = relation.windower
    return (f"window({quote_identifier(relation.time.name)}, '{interval_text(w.size)}', '{interval_text(w.slide)}', "
            f"'{interval_text(w.offset)}')")


def _rewrite_fixed(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    # GROUP BY keys, window(ts, ...): the plan a Spark user writes by hand (one struct key).
    cols = {"window_start": "__win.start", "window_end": "__win.end",
            "window_time": "__win.end - INTERVAL 1 MICROSECOND"}
    rewritten = _rewrite_grouped(ast, agg, _spark_window_call(agg.relation), cols,
                                 admitted_source(agg.relation, agg.group_keys))
    strip(rewritten)
    return rewritten, "Spark window() as a grouping key (native)"


def _rewrite_session(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    relation = agg.relation
    time = _Time(relation.time)
    ts = f"timestamp_millis({time.value})" if time.epoch_ms else time.column
    # Spark merges sessions that only touch; sqlwin's sessions split rows exactly one gap
    # apart (BW-07). At microsecond resolution a gap one microsecond shorter draws exactly
    # that line, and the session end is then moved back out by that microsecond.
    key = f"session_window({ts}, '{relation.windower.gap - 1} microseconds')"
    # The bounds are the session's first row time and last row time + gap, computed as aggregates:
    # a condition on them (HAVING window_end - window_start > ...) then stays above the merge of
    # sessions. On the session_window struct, a grouping key, Spark would push it below the merge,
    # where it sees each row's own one-gap session (and drops every row).
    gap = time.duration(relation.windower.gap)
    bounds = (f"min({time.value}) AS __first", f"max({time.value}) AS __last")
    if time.epoch_ms:
        cols = {"window_start": "__first", "window_end": f"__last + {gap}", "window_time": f"__last + {gap} - 1"}
    else:
        cols = {"window_start": time.to_time("__first"), "window_end": time.to_time(f"__last + {gap}"),
                "window_time": time.to_time(f"__last + {gap} - 1")}
    rewritten = _rewrite_grouped(ast, agg, key, cols, admitted_source(relation, agg.group_keys),
                                 extra_items=bounds)
    strip(rewritten)
    return rewritten, "Spark session_window() grouping (native merge of sessions)"


def _rewrite_count(ast: exp.Expr, agg: WindowAggregation, strip: t.Callable) -> tuple[exp.Expr, str]:
    relation = agg.relation
    w = relation.windower
    rows = _rows_in_count_windows(relation, w, admitted_source(relation, agg.group_keys),
                                  window_keys(relation, agg.group_keys))
    source = f"({rows})"
    bound = _count_bounds(relation)
    rewritten = _rewrite_grouped(
        ast, agg, "__j",
        {"window_start": "__first", "window_end": "__last", "window_time": "__last", "window_index": "__win"},
        source,
        extra_items=(f"min_by({bound}, __rn) AS __first", f"max_by({bound}, __rn) AS __last"),
        having=f"count(*) = {w.size}",
    )
    strip(rewritten)
    return rewritten, "row_number() numbering, windows as grouping keys; only full windows (as Quix and Flink)"

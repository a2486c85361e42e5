"""SQL around the windows: a query whose window functions sit in a subquery or CTE (the *stage*; or
several, each its own), and whose other SQL reads the stages' results (issue 23, items 1 and 3).

    SELECT auction, num FROM (
        SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY num DESC) AS rn
        FROM (SELECT auction, window_start, window_end, count(*) AS num
              FROM TUMBLE(TABLE bid, DESCRIPTOR(ts), INTERVAL 10 SECONDS)
              GROUP BY auction, window_start, window_end) w)
    WHERE rn <= 3

The stage is one stateful stage (a windowed aggregation, a windowed join, or a chain of two); the
rest -- projections, CASE, filters on window columns, joins to static tables, UNION ALL, a window
Top-N, an aggregation per window -- is Spark SQL that replay and streaming run over the stage's
results: once over a replay's, per micro-batch over a stream's. Over a finished table the whole
statement is Spark SQL (the stage lowered as the stage alone would be).

Three statements become a stage and SQL around it without a subquery of the user's:
- GROUPING SETS / ROLLUP / CUBE (`grouping_around`): the stage groups by every key of every set,
  the SQL around merges the partial aggregates into each set per window;
- a window function's rows, TUMBLE / HOP / CUMULATE without GROUP BY (`_rows_around`): the stage
  keeps each distinct row per window, the SQL around reads the rows back;
- an aggregate the runtime keeps no state for (spark/around.py `rows_for_aggregates`): the same
  statement with its window function read as rows.

Per micro-batch is the same answer as over the whole result only where each piece of SQL sees a
window's results whole: EMIT FINAL (each window's row once, final), and, for a piece that combines
rows (GROUP BY, a window function, DISTINCT, a join of two results), rows of one window only --
partitioned by window_start and window_end -- under one clock for the stream, which closes a
window in every bucket in the same micro-batch. This module finds the stage and the pieces; the
lowering (spark/replay.py, spark/streaming.py) checks the clock against the stage's own plan.

A statement may hold several different stages, each in its own subquery or CTE (a UNION ALL of a
5-minute and a 10-minute aggregation): each is found and read from a marker of its own
(`stage_marker(i)`), and the SQL around reads them all (`Around.others`). A piece that combines rows
of two stages per window is recorded in `Around.across`: exact per micro-batch only where both close
a window in the same one (the lowering compares their clocks and windows).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass, field

from sqlglot import exp

from sqlwin.errors import Position, SqlwinError, SqlwinUnsupportedError
from sqlwin.sql.dialect import SqlwinDialect, WindowTVF
from sqlwin.sql.text import json_options_sql, named_struct, quote_identifier, quote_string

STAGE_MARKER = "__sqlwin_stage_results"  # the stage's results in the outer query, until a view replaces it


def stage_marker(index: int) -> str:
    """The marker of stage `index` (0 first) of a statement with several: none is part of another."""
    return STAGE_MARKER if index == 0 else f"__sqlwin_stage{index + 1}_results"


def stage_numbers(plans: list[t.Any]) -> list[int]:
    """The number of each stage's first stateful stage (QueryPlans, statement order): stages are
    numbered in the order the statement writes them, a chain's k stages taking k numbers, inner
    first (a UNION ALL of a chain of two and an aggregation: 1, 2 for the chain, 3 for the other)."""
    numbers, next_number = [], 1
    for plan in plans:
        numbers.append(next_number)
        next_number += len(plan.windows) if plan.propagation is not None and plan.join is None else 1
    return numbers


@dataclass
class StagePart:
    """A stage beside the first in a statement of several (`Around.others`)."""

    sql: str  # as Around.stage_sql
    name: str
    position: Position | None
    marker: str
    plan: t.Any = None  # its own QueryPlan (sql/plan.py builds it)


@dataclass
class Around:
    """The stage and the SQL around it."""

    stage_sql: str  # the stage alone, with the CTEs before it and the statement's EMIT / LATE ROWS INTO
    outer: exp.Expr  # the statement with the stage read from STAGE_MARKER, without EMIT / LATE ROWS INTO
    name: str  # the stage's name in the statement (its CTE or its subquery's alias), for explain
    position: Position | None
    # The first piece of SQL that combines rows of a window (a Top-N, an aggregation per window, a
    # join of two results on their windows): exact per micro-batch only under one clock for the stream.
    per_window: Position | None = None
    per_window_text: str = ""
    # the columns every such piece partitions by (a clock per key is enough where they hold its keys)
    per_window_columns: frozenset[str] | None = None
    refusal: SqlwinError | None = None  # why replay and streaming cannot run the SQL around the stage
    stage: t.Any = None  # the stage's own QueryPlan (sql/plan.py builds it)
    grouping: bool = False  # GROUPING SETS / ROLLUP / CUBE merged from the finest grouping (grouping_around)
    # A window function's rows (no GROUP BY): the stage keeps each distinct row per window with how many
    # times it came, and the SQL around reads the rows back from `rows_sql` (a query over {view}).
    rows_sql: str | None = None
    others: list[StagePart] = field(default_factory=list)  # the stages after the first, in statement order
    # The pieces that combine rows of two or more stages per window: (where, what, the stages' indexes).
    across: list[tuple[Position | None, str, frozenset[int]]] = field(default_factory=list)

    @property
    def parts(self) -> list[StagePart]:
        """Every stage, the first too, in statement order."""
        return [StagePart(self.stage_sql, self.name, self.position, STAGE_MARKER, self.stage), *self.others]

    def outer_sql(self, view: str | list[str]) -> str:
        """The SQL around the stage, reading the stage's results from `view` (Spark SQL); with several
        stages, a view per stage (a placeholder `<...>` numbered for explain)."""
        if isinstance(view, str):
            view = [view, *(f"{view[:-1]} {i + 2}>" if view.endswith(">") else f"{view}_{i + 2}"
                            for i in range(len(self.others)))]
        if self.rows_sql is not None and not view[0].startswith("<"):
            return self.outer_over(self.rows_sql.replace("{view}", exp.to_identifier(view[0]).sql(dialect="spark")))
        markers = {part.marker: name for part, name in zip(self.parts, view)}
        ast = self.outer.copy()
        for table in ast.find_all(exp.Table):
            if table.name in markers and not table.db:
                read = exp.to_table(markers[table.name])
                table.replace(read.as_(table.alias_or_name) if table.alias else read)
        return ast.sql(dialect="spark")

    def adopt_names(self, select: exp.Select) -> None:
        """A grouping's items keep the names the statement's own items were given (Spark's names for
        unaliased items: `avg(price)`), not those of their merged form."""
        if not self.grouping:
            return
        for item, mine in zip(select.expressions, list(self.outer.expressions)):
            if isinstance(item, exp.Alias) and not isinstance(mine, exp.Alias):
                mine.replace(exp.alias_(mine.copy(), item.alias, quoted=True))

    def outer_over(self, stage_sql: str | list[str]) -> str:
        """The SQL around the stage, reading the stage from `stage_sql` (a query in Spark SQL) in place;
        with several stages, a query per stage."""
        text = self.outer.sql(dialect="spark")
        for part, sql in zip(self.parts, [stage_sql] if isinstance(stage_sql, str) else stage_sql):
            text = text.replace(part.marker, f"({sql})")
        return text


def recognise_around(ast: exp.Expr, windows: list, position_of: t.Callable[..., Position | None]) -> Around | None:
    """The stage and the SQL around it, or None where the statement has no such split (its window
    functions are the top-level query itself, or in several different places)."""
    if not windows or not isinstance(ast, (exp.Select, exp.SetOperation)):
        return None
    with_ = ast.args.get("with_")
    ctes = list(with_.expressions) if with_ is not None else []
    # A stage: a SELECT straight FROM a window function, in a subquery of FROM / JOIN or a CTE.
    stages = [s for s in ast.find_all(exp.Select)
              if isinstance((s.args.get("from_") or exp.From()).this, WindowTVF)
              and not any(isinstance(p, WindowTVF) for p in _ancestors(s))]
    # One window function read as rows -- or several copies of it, one of them read as rows (an
    # aggregation beside them then aggregates the rows: Nexmark q7 joins each window's bids with
    # their maximum): the rows are the stage, every SELECT over them SQL around it.
    if stages and any(_is_rows(s) for s in stages) \
            and len({bare_text(s.args["from_"].this) for s in stages}) == 1 \
            and len({id(n) for n in ast.find_all(WindowTVF)}) == len(stages):
        return _rows_around(ast, stages, windows, position_of)
    if not stages or any(s is ast for s in stages):
        return None
    # each stage's wrapper: its CTE, its subquery, or itself as a branch of a UNION ALL
    wrappers = [s if isinstance(s.parent, exp.SetOperation) else s.parent for s in stages]
    if not all(isinstance(w, (exp.CTE, exp.Select)) or (isinstance(w, exp.Subquery) and isinstance(
            w.parent, (exp.From, exp.Join, exp.SetOperation))) for w in wrappers):
        return None
    # A CTE stage read by another stage's window function is the inner query of a chain: part of it.
    read_by_tvf = {t.name.lower() for s in stages for tvf in [s.args["from_"].this]
                   for t in tvf.find_all(exp.Table) if not t.db}
    outermost = [w for w in wrappers if not (isinstance(w, exp.CTE) and w.alias_or_name.lower() in read_by_tvf)]
    inner_ctes = {w.alias_or_name.lower() for w in wrappers if isinstance(w, exp.CTE)} - \
        {w.alias_or_name.lower() for w in outermost if isinstance(w, exp.CTE)}
    covered = {id(n) for w in wrappers for n in w.find_all(WindowTVF)}
    if any(id(w.node) not in covered for w in windows) or not outermost:
        return None
    groups: dict[str, list[exp.Expr]] = {}  # copies of one stage (they differ only in their items) together
    for wrapper in outermost:
        groups.setdefault(_core(_body(wrapper)), []).append(wrapper)
    if len(groups) > 1 or any(isinstance(w, exp.Select) or isinstance(w.parent, exp.SetOperation) for w in outermost):
        return _several_around(ast, ctes, list(groups.values()), inner_ctes, position_of)
    if len(outermost) > 1 and any(isinstance(w, exp.CTE) for w in outermost):
        return None
    # Copies of one windowed aggregation that differ only in what they select (Nexmark q5 as Flink
    # writes it) are one stage selecting every item of each; each copy then selects its own.
    items = _merged_items([w.this for w in outermost])
    if items is None:
        return None  # windowed subqueries that differ: more than one stage
    first = outermost[0]
    outer = ast.copy()
    if isinstance(first, exp.CTE):
        name = first.alias_or_name
        index = next(i for i, c in enumerate(ctes) if c is first)
        before = ctes[:index]
        marker = exp.CTE(this=exp.select("*").from_(STAGE_MARKER), alias=exp.TableAlias(this=exp.to_identifier(name)))
        kept = [marker if c is first else c.copy() for c in ctes if c.alias_or_name.lower() not in inner_ctes]
        outer.set("with_", exp.With(expressions=kept))
    else:
        name = first.alias_or_name or "the windowed subquery"
        before = ctes
        copies = list(outer.find_all(exp.Subquery))
        for original, copy in zip(list(ast.find_all(exp.Subquery)), copies):
            if any(original is w for w in outermost):
                names = [exp.column(e.alias_or_name, quoted=True) for e in original.this.expressions]
                copy.set("this", exp.select(*names).from_(STAGE_MARKER) if len(outermost) > 1
                         else exp.select("*").from_(STAGE_MARKER))
        if inner_ctes:
            kept = [c.copy() for c in ctes if c.alias_or_name.lower() not in inner_ctes]
            outer.set("with_", exp.With(expressions=kept) if kept else None)
    # the chain's inner CTEs are read by the stage only
    readers = outer.copy()
    if any(t.name.lower() in inner_ctes and not t.db for t in readers.find_all(exp.Table)):
        return None
    for key in ("emit", "late_into"):
        outer.set(key, None)
    stage = first.this.copy()
    stage.set("alias", None)
    stage.set("expressions", [e.copy() for e in items])
    for key in ("emit", "late_into"):
        if ast.args.get(key) is not None:
            stage.set(key, ast.args[key].copy())
    prefix = f"WITH {', '.join(c.sql(dialect=SqlwinDialect) for c in before)} " if before else ""
    around = Around(prefix + stage.sql(dialect=SqlwinDialect), outer, name, position_of(first.this))
    _check_outer(around, [stage], position_of)
    return around


def _several_around(ast: exp.Expr, ctes: list[exp.CTE], groups: list[list[exp.Expr]], inner_ctes: set[str],
                    position_of: t.Callable[..., Position | None]) -> Around | None:
    """Several different stages (each a group of copies of one windowed subquery, or a CTE), each
    read by the SQL around from its own marker, numbered in the order the statement writes them;
    None where a CTE is copied or the copies differ."""
    def written(group: list[exp.Expr]) -> tuple[int, int]:
        where = position_of(_body(group[0]))
        return (where.line, where.column) if where is not None else (0, 0)

    groups = sorted(groups, key=written)
    merged = [_merged_items([_body(w) for w in group]) for group in groups]
    if any(items is None for items in merged) or \
            any(len(group) > 1 and any(isinstance(w, exp.CTE) for w in group) for group in groups):
        return None
    outer = ast.copy()
    copy_of = {id(o): c for o, c in zip(ast.walk(), outer.walk())}
    for index, group in enumerate(groups):
        for wrapper in group:
            names = [exp.column(e.alias_or_name, quoted=True) for e in _body(wrapper).expressions]
            read = (exp.select(*names) if len(group) > 1 else exp.select("*")).from_(stage_marker(index))
            if isinstance(wrapper, exp.Select):  # a UNION ALL branch: the branch reads the stage
                copy_of[id(wrapper)].replace(read)
            else:
                copy_of[id(wrapper)].set("this", read)
    with_ = outer.args.get("with_")
    if with_ is not None:  # the chains' inner CTEs are read by their stages only
        kept = [c for c in with_.expressions if c.alias_or_name.lower() not in inner_ctes]
        outer.set("with_", exp.With(expressions=kept) if kept else None)
    if any(t.name.lower() in inner_ctes and not t.db for t in outer.find_all(exp.Table)):
        return None
    for key in ("emit", "late_into"):
        outer.set(key, None)
    stage_ctes = {w.alias_or_name.lower() for group in groups for w in group if isinstance(w, exp.CTE)}
    by_name = {c.alias_or_name.lower(): c for c in ctes}
    parts, bodies = [], []
    for index, (group, items) in enumerate(zip(groups, merged)):
        body = _body(group[0]).copy()
        body.set("alias", None)
        body.set("expressions", [e.copy() for e in items])
        for key in ("emit", "late_into"):
            if ast.args.get(key) is not None:
                body.set(key, ast.args[key].copy())
        needed, todo = set(), [body]  # the CTEs the stage reads, a chain's inner ones too; no other stage
        while todo:
            for table in todo.pop().find_all(exp.Table):
                name = table.name.lower()
                if not table.db and name in by_name and name not in needed and name not in stage_ctes:
                    needed.add(name)
                    todo.append(by_name[name].this)
        before = [c for c in ctes if c.alias_or_name.lower() in needed]
        prefix = f"WITH {', '.join(c.sql(dialect=SqlwinDialect) for c in before)} " if before else ""
        first = group[0]
        name = (first.alias_or_name if not isinstance(first, exp.Select) else "") or \
            f"the windowed query {index + 1} (of the UNION ALL)"
        parts.append(StagePart(prefix + body.sql(dialect=SqlwinDialect), name, position_of(_body(first)),
                               stage_marker(index)))
        bodies.append(body)
    around = Around(parts[0].sql, outer, parts[0].name, parts[0].position, others=parts[1:])
    _check_outer(around, bodies, position_of)
    return around


def _body(wrapper: exp.Expr) -> exp.Expr:
    """A stage's SELECT: its CTE's or subquery's, or the UNION ALL branch itself."""
    return wrapper if isinstance(wrapper, exp.Select) else wrapper.this


def _core(body: exp.Expr) -> str:
    """A windowed subquery's text without its select items: copies of one stage share it."""
    core = body.copy()
    core.set("expressions", [exp.Star()])
    return bare_text(core)


def _merged_items(bodies: list[exp.Expr]) -> list[exp.Expr] | None:
    """The select items of copies of one stage, each output name once; None where the copies
    differ in more than their items, or give one name to two expressions."""
    cores = {_core(body) for body in bodies}
    if len(cores) != 1:
        return None
    merged: dict[str, exp.Expr] = {}
    for body in bodies:
        for item in body.expressions:
            if isinstance(item, exp.Star) or not item.alias_or_name:
                if len(bodies) > 1:
                    return None
                return list(body.expressions)
            name = item.alias_or_name.lower()
            if name in merged and bare_text(merged[name]) != bare_text(item):
                return None
            merged.setdefault(name, item)
    return list(merged.values())


def _ancestors(node: exp.Expr) -> t.Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def bare_text(node: exp.Expr) -> str:
    """A node's SQL without its alias: two copies of one expression compare equal."""
    copy = node.copy()
    copy.set("alias", None)
    return copy.sql(dialect=SqlwinDialect)


# -- what the SQL around the stage does ------------------------------------------------


def _bounds(stage: exp.Expr) -> tuple[set[str], set[str]]:
    """The names the stage gives window_start and window_end in its results."""
    starts, ends = set(), set()
    selects = [stage] if isinstance(stage, exp.Select) else list(stage.find_all(exp.Select))[:1]
    for select in selects:
        for item in select.expressions:
            inner = item.this if isinstance(item, exp.Alias) else item
            if isinstance(inner, exp.Star):
                starts.add("window_start")
                ends.add("window_end")
            elif isinstance(inner, exp.Column) and inner.name.lower() in ("window_start", "window_end"):
                (starts if inner.name.lower() == "window_start" else ends).add(item.alias_or_name.lower())
    return starts, ends


def _check_outer(around: Around, stages: list[exp.Expr], position_of: t.Callable[..., Position | None]) -> None:
    """Find the pieces of the SQL around the stages that combine rows (and those combining rows of two
    stages), and any that no micro-batch can compute alone (they keep state across batches): the
    first such is the Around's refusal."""
    outer = around.outer
    starts, ends = set(), set()
    for stage in stages:
        for mine, theirs in zip((starts, ends), _bounds(stage)):
            mine |= theirs
    derived = [{stage_marker(i).lower()} for i in range(len(stages))]  # per stage: the names its results have
    with_ = outer.args.get("with_")
    if with_ is not None:  # CTEs reading the stage are its results too
        for cte in with_.expressions:
            for names in derived:
                if any(t.name.lower() in names for t in cte.this.find_all(exp.Table)):
                    names.add(cte.alias_or_name.lower())

    def stages_read(node: exp.Expr) -> frozenset[int]:
        tables = {t.name.lower() for t in node.find_all(exp.Table) if not t.db}
        return frozenset(i for i, names in enumerate(derived) if names & tables)

    def reads_stage(node: exp.Expr) -> bool:
        return bool(stages_read(node))

    # window bounds renamed on the way (`window_start AS ws`) keep being window bounds
    for select in outer.find_all(exp.Select):
        if reads_stage(select):
            for item in select.expressions:
                if isinstance(item, exp.Alias) and isinstance(item.this, exp.Column):
                    name = item.this.name.lower()
                    if name in starts:
                        starts.add(item.alias.lower())
                    if name in ends:
                        ends.add(item.alias.lower())

    def per_window(columns: t.Iterable[exp.Expr]) -> bool:
        names = {c.name.lower() for c in columns if isinstance(c, exp.Column)}
        return bool(names & starts) and bool(names & ends)

    def refuse(message: str, node: exp.Expr, hint: str) -> None:
        if around.refusal is None:
            around.refusal = SqlwinUnsupportedError(message, position_of(node), hint)

    def combines(node: exp.Expr, what: str, columns: t.Sequence[exp.Expr] = ()) -> None:
        if around.per_window is None:
            around.per_window, around.per_window_text = position_of(node), what
        read = stages_read(node if isinstance(node, exp.Select) else node.find_ancestor(exp.Select))
        if len(read) > 1:  # placed at the piece's first window column (its ON, GROUP BY or PARTITION BY)
            anchor = next((c for c in columns if isinstance(c, exp.Column) and c.name.lower() in starts | ends), node)
            around.across.append((position_of(anchor), what, read))
        names = frozenset(c.name.lower() for c in columns if isinstance(c, exp.Column))
        around.per_window_columns = names if around.per_window_columns is None else around.per_window_columns & names

    per_window_hint = ("a GROUP BY, PARTITION BY or join condition with both window_start and window_end of the "
                       "window results (as a window Top-N: ROW_NUMBER() OVER (PARTITION BY window_start, window_end "
                       "ORDER BY ...) <= N)")
    for node in outer.walk():
        if isinstance(node, exp.SetOperation) and reads_stage(node) and node.args.get("distinct"):
            refuse(f"{node.key.upper()} without ALL removes duplicates across every micro-batch's window results: "
                   "it would keep every row it has seen", node, "UNION ALL")
        if not isinstance(node, exp.Select) or not reads_stage(node):
            continue
        group = node.args.get("group")
        aggregates = [a for e in node.expressions for a in e.find_all(exp.AggFunc)
                      if not any(isinstance(p, exp.Window) for p in _up_to(a, e))]
        if group is not None or aggregates or node.args.get("having") is not None:
            keys = list(group.expressions) if group is not None else []
            if per_window(keys):
                combines(group, "an aggregation per window", keys)
            else:
                where = group if group is not None else (aggregates[0] if aggregates else node)
                refuse("An aggregation over a stream's window results that is not per window keeps state across "
                       "micro-batches", where,
                       "GROUP BY window_start, window_end (and keys) over the window results, or a windowed "
                       "aggregation over them: FROM TUMBLE(TABLE (...), DESCRIPTOR(window_time), ...)",
                       )
        if node.args.get("distinct") is not None:
            if per_window(node.expressions):
                combines(node, "SELECT DISTINCT per window", node.expressions)
            else:
                refuse("SELECT DISTINCT over a stream's window results without their window columns keeps every "
                       "row it has seen", node.expressions[0], "SELECT DISTINCT with window_start and window_end")
        for window in node.find_all(exp.Window):
            if not _in_select(window, node):
                continue
            if per_window(window.args.get("partition_by") or []):
                combines(window, "a window Top-N (a window function per window)",
                         window.args.get("partition_by") or [])
            else:
                refuse("A window function over a stream's window results must be partitioned by their window: "
                       "other rows come in other micro-batches", window, per_window_hint)
        for join in node.args.get("joins") or []:
            if reads_stage(join.this) and reads_stage(node.args["from_"]):
                condition = join.args.get("on")
                equal = [c for c in (condition.find_all(exp.EQ) if condition is not None else [])]
                columns = [side for eq in equal for side in (eq.this, eq.expression)]
                if per_window(columns):
                    combines(join, "a join of window results on their windows", columns)
                else:
                    refuse("Two window results joined other than on their windows: rows of other windows come in "
                           "other micro-batches", join, "ON a.window_start = b.window_start AND "
                           "a.window_end = b.window_end")
        for key in ("order", "limit", "offset"):
            if node.args.get(key) is not None:
                refuse("ORDER BY / LIMIT over a stream's window results: results come per micro-batch",
                       node.args[key], "ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY ...) <= N "
                       "for the first N of each window; order the sink's table when reading it")


def _up_to(node: exp.Expr, root: exp.Expr) -> t.Iterator[exp.Expr]:
    parent = node.parent
    while parent is not None and parent is not root:
        yield parent
        parent = parent.parent
    if parent is root:
        yield root


def _in_select(node: exp.Expr, select: exp.Select) -> bool:
    """`node` belongs to `select` itself, not to a subquery inside it."""
    parent = node.parent
    while parent is not None and parent is not select:
        if isinstance(parent, exp.Select):
            return False
        parent = parent.parent
    return parent is select


# -- a window function's rows -------------------------------------------------------------------


def _is_rows(select: exp.Select) -> bool:
    """SELECT ... FROM <window function> with no GROUP BY or aggregate: its rows, each with its windows
    (joined, maybe, with other relations: SQL around them)."""
    if select.args.get("group") is not None or select.args.get("having") is not None:
        return False
    return not any(not any(isinstance(p, exp.Window) for p in _up_to(a, e))
                   for e in select.expressions for a in e.find_all(exp.AggFunc))


def _rows_around(ast: exp.Expr, selects: list[exp.Select], windows: list,
                 position_of: t.Callable[..., Position | None]) -> Around | None:
    """A window function's rows in a replay or a stream: the stage groups by each distinct row (as
    JSON, so that a NULL column keeps the row) and its windows, counting copies; the SQL around reads
    the rows back, each copy once. With a piece of SQL per window around (a window Top-N, a
    deduplication) or EMIT FINAL the rows come when their window closes (each window whole in one
    micro-batch); else as they arrive (EMIT CHANGES DISCARDING: each firing holds the rows since the
    last). Late rows are routed as any stage's.

    A session, a count window or a SLIDE window is formed from its rows together: which window a row
    is in is known when the window closes (a later row may merge two sessions). Its rows come then,
    whole: the stage collects each window's rows (collect_list, merged with the window) and fires
    it once (EMIT FINAL). GLOBAL_WINDOW's one window never closes in a stream: refused."""
    node = selects[0].args["from_"].this
    relation = next((w for w in windows if w.node is node), None)
    if relation is None or not relation.columns or not relation.windower.closes:
        return None
    each_row = relation.windower.aligned  # a row's windows known as it arrives
    outer = ast.copy()
    originals = [id(n) for n in ast.find_all(WindowTVF)]
    copies = list(outer.find_all(WindowTVF))
    for select in selects:
        tvf = select.args["from_"].this
        mine = next(w for w in windows if w.node is tvf)
        alias = tvf.args.get("alias") or (exp.TableAlias(this=exp.to_identifier(mine.alias)) if mine.alias else None)
        marker = exp.to_table(STAGE_MARKER)
        if alias is not None:
            marker.set("alias", alias.copy() if isinstance(alias, exp.TableAlias) else exp.TableAlias(this=alias.copy()))
        copies[originals.index(id(tvf))].replace(marker)
    for key in ("emit", "late_into"):
        outer.set(key, None)
    bound_names = ("window_start", "window_end", "window_time", "window_index")
    columns = [c for c in relation.columns if c.lower() not in bound_names]
    options = json_options_sql()
    row = f"to_json({named_struct((c, quote_identifier(c)) for c in columns)}, {options})"
    ddl = ", ".join(f"{quote_identifier(c)} {relation.columns[c]}" for c in columns)
    partition = [f"{p} AS __pk{i}" for i, p in enumerate(relation.partition_by)]
    bounds = ", ".join(bound_names if relation.windower.ordered else bound_names[:3])
    tvf = node.copy()
    tvf.set("alias", None)
    around = Around("", outer, "the window function's rows", position_of(node))
    _check_outer(around, [exp.select("*")], position_of)
    emit = ast.args.get("emit")
    if emit is not None and (emit.args.get("changes") or any(emit.args.get(k) for k in emit.args if k != "final")):
        around.refusal = around.refusal or SqlwinUnsupportedError(
            "A window function's rows come as they arrive, or with EMIT FINAL when their window closes"
            if each_row else
            f"A {relation.function} window's rows are known when it closes (a later row can still join or "
            "merge it): they come once, whole",
            position_of(emit), "no EMIT clause (each row as it arrives), or EMIT FINAL" if each_row else
            "no EMIT clause, or EMIT FINAL")
    final = around.per_window is not None or emit is not None or not each_row
    with_ = ast.args.get("with_")
    prefix = f"{with_.sql(dialect=SqlwinDialect)} " if with_ is not None else ""
    late = ast.args.get("late_into")
    late_sql = f" {late.sql(dialect=SqlwinDialect)}" if late is not None else ""
    source = tvf.sql(dialect=SqlwinDialect)
    parsed = f"from_json(__row, {quote_string(ddl)}, {options}) AS __r"  # a row read back from its JSON
    if each_row:  # each distinct row per window, its copies counted: rows as they arrive, or at the close
        around.stage_sql = (f"{prefix}SELECT {', '.join([*partition, f'{row} AS __row'])}, {bounds}, count(*) AS __n "
                            f"FROM {source} GROUP BY {', '.join([*relation.partition_by, row])}, {bounds} "
                            f"EMIT {'FINAL' if final else 'CHANGES DISCARDING'}{late_sql}")
        around.rows_sql = (f"SELECT __r.*, {bounds} FROM (SELECT {parsed}, {bounds}, __n FROM {{view}}) "
                           "LATERAL VIEW explode(sequence(1, __n)) AS __copy")
    else:  # each window's rows collected, merged with the window, read back once it closes
        group = ", ".join([*relation.partition_by, bounds])
        around.stage_sql = (f"{prefix}SELECT {', '.join([*partition, bounds])}, collect_list({row}) AS __rows "
                            f"FROM {source} GROUP BY {group} EMIT FINAL{late_sql}")
        around.rows_sql = (f"SELECT __r.*, {bounds} FROM (SELECT {parsed}, {bounds} FROM {{view}} "
                           "LATERAL VIEW explode(__rows) AS __row)")
    return around


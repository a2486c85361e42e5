"""Windowed joins in the plan (AP-12, BX-08): window functions joined per key and window.

Written as Flink SQL writes a window join:

    SELECT ... FROM TUMBLE(TABLE a ..., DESCRIPTOR(ts), INTERVAL 1 MINUTE) l
    [INNER | LEFT | RIGHT | FULL] JOIN TUMBLE(TABLE b ..., DESCRIPTOR(ts), INTERVAL 1 MINUTE) r
      ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end
    [JOIN ... ON ...] [WHERE ...] [EMIT FINAL | EMIT CHANGES]

Every side uses the same window (TUMBLE, HOP or CUMULATE: windows that do not depend on the
rows), and each JOIN's ON condition equates the key columns and both window bounds with one
earlier side; the rest of ON (any condition) tests each pair of rows, and an outer join pads a row
no row satisfies it with (spark/joins.py pairs them: 'product', 'first', 'last'). Options on a
side's table (`WITH (...)`): `join_insert` ('product', the default:
SQL's join of rows; 'first' / 'last': one row per side and window, the earliest / latest by
event time; 'collect': a cogroup, each side's columns gathered into arrays) and `join_emit`
('final' at the window's close, the default; 'running' after every row, as EMIT CHANGES;
'complete': once every side has a row, then start again). The watermark is the earliest of the
sides' (Apex's WindowedMergeOperator).
"""

from __future__ import annotations

import typing as t
from dataclasses import dataclass

from sqlglot import exp

from sqlwin.errors import SqlwinError, SqlwinUnsupportedError
from sqlwin.ir import Cumulate, Hop, Tumble

if t.TYPE_CHECKING:
    from sqlwin.sql.relation import WindowRelation

JOIN_EMIT_MODES = ("final", "running", "complete")
JOINABLE = (Tumble, Hop, Cumulate)
WINDOW_BOUNDS = ("window_start", "window_end", "window_time")


@dataclass
class WindowJoin:
    """`SELECT ... FROM <window fn> JOIN <window fn> ON keys and window bounds ...`."""

    sides: list["WindowRelation"]  # FROM's first, then each JOIN's, in order
    names: list[str]  # how the query names each side: its alias, else its table's name (lower case)
    keys: list[tuple[str, ...]]  # per side, its key columns (as the input names them), aligned across sides
    steps: list[tuple[str, int]]  # per JOIN: (inner | left | right | full, the earlier side ON names)
    conditions: list[list[exp.Expr]]  # per JOIN: the rest of its ON, its conjuncts (the query's own nodes)
    insert: str  # product | first | last | collect
    emit_mode: str  # final | running | complete
    select: exp.Select


def recognise_join(ast: exp.Expr, windows: list["WindowRelation"], fail: t.Callable,
                   emit) -> tuple[WindowJoin | None, SqlwinError | None]:
    """(the windowed join, None); (None, why not) for window functions joined otherwise, which only
    a finished table can run (as the SQL over its annotated rows); (None, None) for no such join.

    `fail(message, node, hint)` raises a positioned error;
    `emit`: the query's EmitSpec."""
    try:
        return _recognise(ast, windows, fail, emit), None
    except SqlwinError as err:
        return None, err


def _recognise(ast, windows, fail, emit) -> WindowJoin | None:
    if not isinstance(ast, exp.Select) or len(windows) < 2:
        return None
    from_ = ast.args.get("from_")
    joins = ast.args.get("joins") or []
    by_node = {id(w.node): w for w in windows}
    if from_ is None or id(from_.this) not in by_node or not joins:
        return None
    if not all(id(j.this) in by_node for j in joins):
        return None
    sides = [by_node[id(from_.this)]] + [by_node[id(j.this)] for j in joins]
    names = [(w.alias or w.source_alias or _table_name(w.source)).lower() for w in sides]
    for i, name in enumerate(names):
        if name in names[:i]:
            fail(f"Two sides of the join are both called {name}", sides[i].node,
                 "an alias for each window function: ... TUMBLE(...) l JOIN TUMBLE(...) r ON ...")
    first = sides[0]
    for side in sides[1:]:
        if type(side.windower) is not type(first.windower) or side.windower != first.windower:
            fail("The sides of a windowed join must use the same window", side.node,
                 f"the window of the first side, {first.function} with the same sizes")
    if not isinstance(first.windower, JOINABLE):
        raise SqlwinUnsupportedError(
            f"{first.function} cannot be joined: its windows depend on each side's own rows, so the sides' "
            "windows would not line up", first.position,
            "TUMBLE, HOP or CUMULATE on every side")
    kinds = {side.time.kind if side.time else None for side in sides}
    if len(kinds) != 1 or None in kinds or "processing_time" in kinds:
        fail("The sides of a windowed join need event-time columns of one kind (all TIMESTAMP or all epoch "
             "milliseconds)", sides[1].node, "DESCRIPTOR(ts) with a TIMESTAMP column on every side")
    keys: list[list[str]] = [[] for _ in sides]
    steps: list[tuple[str, int]] = []
    conditions: list[list[exp.Expr]] = []
    for j, join in enumerate(joins, start=1):
        kind = _kind(join, fail)
        reference, pairs, rest = _on(join, j, names, sides, fail)
        if j == 1:
            keys[0] = [left for left, _, _ in pairs]
        if j > 1:  # the same keys as the side it names, in that side's order; other equalities are conditions
            expected = keys[reference]
            by_key: dict[str, str] = {}
            for left, right, equality in pairs:
                if left.lower() in {k.lower() for k in expected} and left.lower() not in by_key:
                    by_key[left.lower()] = right
                else:
                    rest.append(equality)
            if len(by_key) != len(expected):
                fail(f"JOIN {j} matches other keys than the join before it", join.args.get("on"),
                     f"ON equalities of the same keys: {', '.join(expected)}")
            pairs = [(k, by_key[k.lower()], None) for k in expected]
        keys[j] = [right for _, right, _ in pairs]
        steps.append((kind, reference))
        conditions.append(rest)
    if not keys[0]:
        fail("A windowed join needs at least one key: ON l.k = r.k AND the window bounds", joins[0].args.get("on"),
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end")
    _check_partitions(sides, keys, fail)
    _check_watermarks(sides, fail)
    insert, emit_mode = _modes(sides, emit, fail)
    for rest in conditions:
        if rest and insert == "collect":
            fail("With join_insert = 'collect' a side's rows of a window are gathered into arrays, one output row "
                 "per key and window: there is no pair of rows for the rest of ON to test", rest[0],
                 "ON with the keys and window bounds only; filter a side's rows in a subquery (TABLE (SELECT ... "
                 "WHERE ...)), or join_insert = 'product', 'first' or 'last'", start=_leftmost(rest[0]))
    return WindowJoin(sides, names, [tuple(k) for k in keys], steps, conditions, insert, emit_mode, ast)


def _table_name(source: str) -> str:
    return source.split(".")[-1].strip("`")


def _kind(join: exp.Join, fail) -> str:
    side = (join.args.get("side") or "").upper()
    kind = (join.args.get("kind") or "").upper()
    if kind in ("CROSS", "SEMI", "ANTI") or join.args.get("using"):
        fail(f"A windowed join is INNER, LEFT, RIGHT or FULL JOIN ... ON, not {kind or 'USING'}", join,
             "JOIN ... ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end")
    if join.args.get("on") is None:
        fail("A windowed join needs ON with the keys and the window bounds", join,
             "ON l.k = r.k AND l.window_start = r.window_start AND l.window_end = r.window_end")
    return {"LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(side, "inner")


def _on(join: exp.Join, j: int, names: list[str], sides, fail) -> tuple[int, list, list[exp.Expr]]:
    """(the earlier side ON names, [(its key column, this side's key column, the equality)], the rest of
    ON: every other conjunct, a condition on the matched rows)."""
    on = join.args["on"]
    conjuncts = list(on.flatten()) if isinstance(on, exp.And) else [on]
    hint = (f"ON {names[j - 1]}.k = {names[j]}.k AND {names[j - 1]}.window_start = {names[j]}.window_start AND "
            f"{names[j - 1]}.window_end = {names[j]}.window_end")
    for column in on.find_all(exp.Column):  # every column names this side or an earlier one
        side = _side_of(column, names, sides, j, fail)
        if column.name.lower() not in WINDOW_BOUNDS:
            _column(column, sides[side], fail)
    equated = [_equated(conjunct, names, sides, j, fail) for conjunct in conjuncts]
    # The earlier side whose window bounds ON equates is the one this side joins.
    reference = next((other for other, mine, theirs in filter(None, equated)
                      if mine.name.lower() in ("window_start", "window_end")), None)
    bounds: set[str] = set()
    pairs: list[tuple[str, str, exp.Expr]] = []
    rest: list[exp.Expr] = []
    for conjunct, equality in zip(conjuncts, equated):
        if equality is None or equality[0] != reference:
            rest.append(conjunct)  # not an equality of this side's column with the reference's: a condition
            continue
        other, mine, theirs = equality
        bound = mine.name.lower()
        if bound in WINDOW_BOUNDS:
            bounds.add(bound)
            continue
        pairs.append((_column(theirs, sides[other], fail), _column(mine, sides[j], fail), conjunct))
    if reference is None or not {"window_start", "window_end"} <= bounds:
        missing = " and ".join(b for b in ("window_start", "window_end") if b not in bounds)
        fail(f"A windowed join matches windows: JOIN {j}'s ON lacks the equality of {missing}", on, hint,
             start=_leftmost(on))
    return t.cast(int, reference), pairs, rest


def _equated(conjunct: exp.Expr, names: list[str], sides, j: int, fail) -> tuple[int, exp.Column, exp.Column] | None:
    """(the earlier side, this side's column, the earlier side's column) for an equality of two columns, one of
    side j and one of an earlier side, both window bounds of one name or neither a window bound; else None."""
    bare = conjunct.unnest()
    if not (isinstance(bare, exp.EQ) and isinstance(bare.this, exp.Column) and isinstance(bare.expression, exp.Column)):
        return None
    a, b = _side_of(bare.this, names, sides, j, fail), _side_of(bare.expression, names, sides, j, fail)
    if (a == j) == (b == j):
        return None
    mine, theirs = (bare.this, bare.expression) if a == j else (bare.expression, bare.this)
    bounds = mine.name.lower() in WINDOW_BOUNDS, theirs.name.lower() in WINDOW_BOUNDS
    if any(bounds) and mine.name.lower() != theirs.name.lower():
        return None
    return (b if a == j else a), mine, theirs


def _leftmost(node: exp.Expr) -> exp.Expr:
    """Where a condition starts in the text: its first column's qualifier (sqlglot places a column at its name)."""
    while isinstance(node, (exp.Binary, exp.Paren)):
        node = node.this
    if not isinstance(node, exp.Column):  # a function, CASE ...: its first column
        node = node.find(exp.Column) or node
    return node.args.get("table") or node if isinstance(node, exp.Column) else node


def _side_of(column: exp.Column, names: list[str], sides, j: int, fail) -> int:
    table = column.table.lower()
    if table:
        if table not in names[:j + 1]:
            fail(f"{column.table} is not a side of this join", column, f"one of {', '.join(names[:j + 1])}")
        return names.index(table)
    owners = [i for i in range(j + 1) if column.name.lower() in {c.lower() for c in sides[i].columns}]
    if len(owners) != 1:
        fail(f"Qualify {column.name} in a windowed join's ON with its side", column,
             f"{names[j - 1]}.{column.name} = {names[j]}.{column.name}")
    return owners[0]


def _column(column: exp.Column, side, fail) -> str:
    names = {c.lower(): c for c in side.columns}
    if side.columns and column.name.lower() not in names:
        fail(f"{column.name} is not a column of {side.source}", column, ", ".join(side.columns))
    return names.get(column.name.lower(), column.name)


def _check_partitions(sides, keys, fail) -> None:
    """PARTITION BY on the sides asks for a clock per key: then every side partitions by its join keys."""
    partitioned = [bool(side.partition_by) for side in sides]
    if not any(partitioned):
        return
    for side, side_keys, has in zip(sides, keys, partitioned):
        wanted = {f"`{k}`".lower() for k in side_keys} | {k.lower() for k in side_keys}
        given = {p.lower() for p in side.partition_by}
        if not has or not given or not given <= wanted or len(given) != len(side_keys):
            fail("In a windowed join, PARTITION BY (a clock per key) names the join keys, on every side or none",
                 side.node, f"PARTITION BY {', '.join(side_keys)} on every side, or no PARTITION BY (one clock per "
                 "input, as Flink's)")


def _check_watermarks(sides, fail) -> None:
    first = sides[0].watermark
    for side in sides[1:]:
        mark = side.watermark
        for name in ("delay", "strategy", "scope", "idle_timeout", "idle_clock", "lateness_rule"):
            if getattr(mark, name) != getattr(first, name):
                fail(f"The sides of a windowed join share one watermark rule; {name} differs", side.node,
                     "the same WATERMARK ... DELAY OF and options on every side (the merged watermark is the "
                     "earliest of the sides')")
        for option in ("arrival_order", "arrival_batch", "arrival_time"):
            if (option in side.options) != (option in sides[0].options):
                fail(f"Replaying a windowed join needs {option} on every side or none", side.node,
                     f"WITH ({option} = col) on each side: one arrival sequence shared by the inputs")


def _modes(sides, emit, fail) -> tuple[str, str]:
    chosen: dict[str, tuple[str, t.Any]] = {}
    for side in sides:
        for option in ("join_insert", "join_emit"):
            if option in side.options:
                value = side.options[option]
                if option in chosen and chosen[option][0] != value:
                    fail(f"The sides disagree on {option}: '{chosen[option][0]}' and '{value}'", side.node,
                         f"{option} on one side, or the same on each")
                chosen[option] = (value, side)
    insert = chosen.get("join_insert", ("product",))[0]
    emit_mode = chosen.get("join_emit", (None,))[0]
    if emit.changes and emit_mode in (None, "running"):
        emit_mode = "running"
    elif emit_mode is None:
        emit_mode = "final"
    elif emit_mode == "running" and not emit.changes:
        fail("join_emit = 'running' emits after every row, which EMIT FINAL contradicts", chosen["join_emit"][1].node,
             "EMIT CHANGES, or join_emit = 'running' without EMIT FINAL")
    if not (emit.is_final_only or (emit.changes and emit.accumulation == "ACCUMULATING"
                                   and not emit.allowed_lateness and not emit.only_updated)):
        raise SqlwinUnsupportedError(
            "A windowed join emits at the window's close (EMIT FINAL), after every row (EMIT CHANGES) or when "
            "every side has a row (join_emit = 'complete'); early, late and retracting firings are for "
            "aggregations", None, "EMIT FINAL or EMIT CHANGES")
    return insert, emit_mode



def describe_join(join: WindowJoin) -> str:
    """The join in words, for explain."""
    def condition(rest: list[exp.Expr]) -> str:
        text = " AND ".join(c.sql(dialect="spark") for c in rest)
        return f"; pairs where {text}, outer rows without one padded (Spark SQL over each firing)" if rest else ""

    kinds = " then ".join(f"{kind.upper()} JOIN {join.names[j + 1]} (matching {join.names[reference]}"
                          f"{condition(rest)})" for j, ((kind, reference), rest) in enumerate(zip(join.steps,
                                                                                                  join.conditions)))
    return (f"windowed join: {join.names[0]} {kinds}, per key ({', '.join(join.keys[0])}) and window; insert "
            f"'{join.insert}', emit '{join.emit_mode}'; the watermark is the earliest of the {len(join.sides)} "
            "inputs'")

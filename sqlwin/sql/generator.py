"""sqlwin's nodes written back as SQL (the generator side of the dialect), and ordered aggregates as Spark SQL.

The extensions come back as the user writes them (`TUMBLE(TABLE t ..., DESCRIPTOR(ts), ...)`, WATERMARK,
EMIT, LATE ROWS INTO), every other node as Spark SQL; `array_agg(v ORDER BY k)`, which Spark cannot
write, becomes a sort of the collected values.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.generators.spark import SparkGenerator

from sqlwin.sql.ast_nodes import Descriptor, Emit, LateRowsInto, TableArg, Watermark, WindowOption, WindowOptions, WindowTVF


def _emit_sql(gen: SparkGenerator, e: Emit) -> str:
    parts = ["EMIT"]
    if e.args.get("final"):
        parts.append("FINAL")
    if e.args.get("changes"):
        parts.append("CHANGES")
    for which in ("early", "late"):
        if e.args.get(f"{which}_interval") is not None:
            parts.append(f"{which.upper()} EVERY {gen.sql(e, f'{which}_interval')}")
        if e.args.get(f"{which}_rows") is not None:
            parts.append(f"{which.upper()} EVERY {gen.sql(e, f'{which}_rows')} ROWS")
        if which == "early" and e.args.get("allowed_lateness") is not None:
            parts.append(f"ALLOWED LATENESS {gen.sql(e, 'allowed_lateness')}")
    if e.args.get("accumulation"):
        parts.append(e.args["accumulation"])
    if e.args.get("only_updated"):
        parts.append("ONLY UPDATED")
    return " ".join(parts)


def _table_arg_sql(gen: SparkGenerator, e: TableArg) -> str:
    sql = f"TABLE {gen.sql(e, 'this')}"
    if e.args.get("watermark"):
        sql += f" {gen.sql(e, 'watermark')}"
    if e.args.get("options"):
        sql += f" {gen.sql(e, 'options')}"
    if e.args.get("partition_by"):
        sql += f" PARTITION BY {gen.expressions(e, key='partition_by', flat=True)}"
    if e.args.get("order"):
        sql += f" ORDER BY {gen.expressions(e, key='order', flat=True)}"
    return sql


def _watermark_sql(gen: SparkGenerator, e: Watermark) -> str:
    delay = f" DELAY OF {gen.sql(e, 'delay')}" if e.args.get("delay") else ""
    return f"WATERMARK {gen.sql(e, 'this')}{delay}"


class SqlwinGenerator(SparkGenerator):
    TRANSFORMS = {
        **SparkGenerator.TRANSFORMS,
        WindowTVF: lambda gen, e: f"{e.function}({gen.expressions(e, flat=True)})"
        + (f" AS {gen.sql(e, 'alias')}" if e.args.get("alias") else ""),
        TableArg: _table_arg_sql,
        Descriptor: lambda gen, e: f"DESCRIPTOR({gen.sql(e, 'this')})",
        Watermark: _watermark_sql,
        WindowOptions: lambda gen, e: f"WITH ({gen.expressions(e, flat=True)})",
        WindowOption: lambda gen, e: f"{gen.sql(e, 'this')} = {gen.sql(e, 'expression')}",
        Emit: _emit_sql,
        LateRowsInto: lambda gen, e: f"LATE ROWS INTO {gen.sql(e, 'this')}",
    }

    def query_modifiers(self, expression: exp.Expr, *sqls: str) -> str:
        sql = super().query_modifiers(expression, *sqls)
        for key in ("emit", "late_into"):
            if expression.args.get(key) is not None:
                sql += f" {self.sql(expression, key)}"
        return sql

    def table_sql(self, expression: exp.Table, sep: str = " AS ") -> str:
        sql = super().table_sql(expression, sep)
        if expression.args.get("watermark") is not None:
            sql += f" {self.sql(expression, 'watermark')}"
        return sql

    def filter_sql(self, expression: exp.Filter) -> str:
        """`agg FILTER (WHERE c)`; over an ordered array_agg the FILTER goes on the collect_list that
        `arrayagg_sql` writes (Spark refuses it on the `transform` around it)."""
        agg = expression.this
        if isinstance(agg, exp.ArrayAgg) and isinstance(agg.this, exp.Order):
            return self.arrayagg_sql(agg, self.sql(expression, "expression").strip())
        return super().filter_sql(expression)

    def arrayagg_sql(self, expression: exp.ArrayAgg, where: str | None = None) -> str:
        """`array_agg(v ORDER BY k [DESC] [NULLS FIRST|LAST], ...)`, which Spark cannot write (its
        collect_list has no order): the non-NULL values' (keys, value) structs collected, sorted by
        a comparator over the keys, and the values kept. `where`: the aggregate's `WHERE c` of
        FILTER, which filters the rows collected."""
        order = expression.this
        if not isinstance(order, exp.Order):
            return super().arrayagg_sql(expression)
        value = order.this
        distinct = isinstance(value, exp.Distinct)
        if distinct:
            value = value.expressions[0]
        keys, value_sql = order.expressions, self.sql(value)
        fields = [*(f"'__k{i}', {self.sql(key, 'this')}" for i, key in enumerate(keys)), f"'__v', {value_sql}"]
        item = f"IF({value_sql} IS NULL, NULL, named_struct({', '.join(fields)}))"
        cases = []
        for i, key in enumerate(keys):
            descending = bool(key.args.get("desc"))
            nulls_first = key.args.get("nulls_first")
            nulls_first = (not descending) if nulls_first is None else bool(nulls_first)
            left, right, null, less = f"__l.__k{i}", f"__r.__k{i}", -1 if nulls_first else 1, 1 if descending else -1
            cases += [f"WHEN {left} IS NULL AND {right} IS NOT NULL THEN {null}",
                      f"WHEN {left} IS NOT NULL AND {right} IS NULL THEN {-null}",
                      f"WHEN {left} < {right} THEN {less}", f"WHEN {left} > {right} THEN {-less}"]
        comparator = f"(__l, __r) -> CASE {' '.join(cases)} ELSE 0 END"
        collected = f"collect_list({item})" + (f" FILTER({where})" if where else "")
        sql = f"transform(array_sort({collected}, {comparator}), __x -> __x.__v)"
        return f"array_distinct({sql})" if distinct else sql


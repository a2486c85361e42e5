"""Steps that create input tables from Gherkin data tables."""

from __future__ import annotations

from pytest_bdd import given, parsers

from tests.steps.values import infer_type, parse_cell, spark_type_name, split_header


def create_table(spark, name: str, datatable: list[list[str]]) -> None:
    header, *rows = datatable
    names, types = [], []
    for index, cell in enumerate(header):
        column, declared = split_header(cell)
        names.append(column)
        types.append(declared or infer_type(r[index] for r in rows))
    schema = ", ".join(f"`{n}` {spark_type_name(t)}" for n, t in zip(names, types))
    data = [tuple(parse_cell(r[i], types[i]) for i in range(len(names))) for r in rows]
    spark.createDataFrame(data, schema=schema).createOrReplaceTempView(name)


@given(parsers.parse('the table "{name}":'))
def given_table(spark, name: str, datatable):
    create_table(spark, name, datatable)


@given(parsers.parse('the table "{name}" with {count:d} rows of "{column}" counting from {start:d}'))
def given_counting_table(spark, name: str, count: int, column: str, start: int):
    spark.range(start, start + count).withColumnRenamed("id", column).createOrReplaceTempView(name)

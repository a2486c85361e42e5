"""Through the `sqlwin` command, a query that the parser or the planner refuses exits 2 with its place.

These queries crashed the parser or the planner (OverflowError, ValueError, AttributeError...),
which the command reported as "Spark failed while running the query" with exit status 1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sqlwin.cli import main

CLICKS = Path(__file__).resolve().parent.parent / "sql_examples" / "data" / "clicks.csv"


@pytest.mark.parametrize(
    "query, message, place",
    [
        ("SELECT *\nFROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 1e308 MINUTES)",
         "GAP INTERVAL 1e308 MINUTES is too long", "line 2, column 65"),
        ("SELECT * FROM TUMBLE(TABLE clicks, DESCRIPTOR(), INTERVAL 1 HOUR)",
         "Expected the time column inside DESCRIPTOR", "line 1, column 47"),
        ("SELECT * FROM FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 1 HOUR)", "FROM twice", "line 1, column 15"),
        ("SELECT user_id FROM clicks ORDER BY , 4", "Expected an expression before ','", "line 1, column 37"),
        ("SELECT * FROM TUMBLE(TABLE clicks WITH (lateness_rule = , idle_clock = 'event_time'),\n"
         "  DESCRIPTOR(ts), INTERVAL 1 HOUR)", "Expected a value after lateness_rule =", "line 1, column 57"),
        ("SELECT user_id,\n  'oops FROM clicks", "Unterminated string literal", "line 2, column 3"),
        ("SELEC * FROM clicks", "did you mean SELECT?", "line 1, column 1"),
    ],
)
@pytest.mark.parametrize("command", ["run", "explain"])
def test_a_query_the_parser_refuses_exits_2_with_its_place(spark, tmp_path, capsys, command, query, message, place):
    path = tmp_path / "bad.sql"
    path.write_text(query)
    code = main([command, str(path), "--table", f"clicks={CLICKS}"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert message in err and place in err, err
    assert "Spark failed" not in err and "Traceback" not in err and "^" in err


def test_a_failure_while_spark_runs_the_query_is_one_message_with_no_json_dump_or_jvm_stack(spark, tmp_path, capfd):
    """A percentile of a string column with a value that is no number: Spark fails while running the
    session's rows stage (CAST_INVALID_INPUT), after sqlwin's checks. PySpark logs such an error as
    JSON with the JVM stack and sqlwin's generated SQL before raising it; the command says it once."""
    from sqlwin.spark.runner import spark_error_logger

    logger = spark_error_logger()
    if logger is not None:
        logger.disabled = False  # as in a fresh process: an earlier command of this run turned it off
    path = tmp_path / "median.sql"
    path.write_text("SELECT user_id, window_start, window_end, percentile_approx(id, 0.5) AS med\n"
                    "FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)\n"
                    "GROUP BY user_id, window_start, window_end\n")
    capfd.readouterr()
    code = main(["run", str(path), "--table", f"clicks={CLICKS}"])
    out, err = capfd.readouterr()
    assert code == 1, err
    assert err.startswith("sqlwin: Spark failed while running the query: [CAST_INVALID_INPUT] The value '1A'"), err
    assert len(err.strip().splitlines()) == 1, err
    assert "\tat org.apache" not in err and "__a0" not in err and '"level": "ERROR"' not in err, err

"""The sqlwin command, run in-process against the shared SparkSession."""

from __future__ import annotations

import csv
from pathlib import Path

from sqlwin.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "sql_examples"


def test_run_prints_the_example_result(spark, capsys):
    assert main(["run", str(EXAMPLES / "session_clicks.sql")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["user_id", "window_start", "window_end", "first_click", "last_click", "clicks"]
    assert out[2].split() == ["u1", "2023-12-14", "00:00:00", "2023-12-14", "00:45:00", "2023-12-14", "00:00:00",
                              "2023-12-14", "00:15:00", "3"]
    assert out[-1] == "(3 rows)"


def test_run_writes_one_csv_file(spark, tmp_path):
    out = tmp_path / "result.csv"
    assert main(["run", str(EXAMPLES / "count_window_last_three.sql"), "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [(r["average"], r["window_start"], r["window_end"]) for r in rows] == [
        ("120.0", "121", "583"), ("100.0", "165", "723"), ("120.0", "583", "1009"), ("80.0", "723", "1242")]


def test_a_bad_query_exits_2_with_a_positioned_message(spark, tmp_path, capsys):
    query = tmp_path / "bad.sql"
    query.write_text("SELECT *\nFROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 0 SECONDS)")
    code = main(["run", str(query), "--table", f"clicks={EXAMPLES / 'data' / 'clicks.csv'}"])
    err = capsys.readouterr().err
    assert code == 2
    assert "GAP must be positive" in err and "line 2, column 65" in err
    assert "Traceback" not in err


def test_unknown_column_in_the_outer_query_points_into_the_users_sql(spark, tmp_path, capsys):
    query = tmp_path / "bad.sql"
    query.write_text("SELECT colour FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 1 HOUR)")
    code = main(["run", str(query), "--table", f"clicks={EXAMPLES / 'data' / 'clicks.csv'}"])
    err = capsys.readouterr().err
    assert code == 2 and "colour" in err and "line 1, column 8" in err
    assert "Py4J" not in err and "at org.apache" not in err


def test_usage_errors_exit_2(spark, tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("SELECT 1")
    assert main(["run", str(query), "--table", "clicks=missing.csv"]) == 2
    assert main(["run", str(query), "--table", "no_equals_sign"]) == 2
    assert main(["run", str(tmp_path / "absent.sql")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_explain_names_the_lowering(spark, capsys):
    assert main(["explain", str(EXAMPLES / "session_clicks.sql")]) == 0
    out = capsys.readouterr().out
    assert "session_window" in out and "SESSION gap 30 minutes" in out and "Session(gap=" not in out


def test_run_counts_the_rows_no_window_takes_and_writes_them_with_rejected(spark, tmp_path, capsys):
    """Issue 13: `sqlwin run` dropped rows with a NULL time (or key) without a word."""
    data = tmp_path / "clicks.csv"
    data.write_text("user_id,ts,amount\nu1,2024-01-01 00:00:10,1\nu1,,2\n,2024-01-01 00:00:20,3\nu2,2024-01-01 00:01:00,4\n")
    query = tmp_path / "q.sql"
    query.write_text("SELECT user_id, window_start, count(*) AS n FROM TUMBLE(TABLE clicks PARTITION BY user_id, "
                     "DESCRIPTOR(ts), INTERVAL 1 MINUTE) GROUP BY user_id, window_start, window_end")
    rejected = tmp_path / "rejected.csv"
    assert main(["run", str(query), "--table", f"clicks={data}", "--rejected", str(rejected)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == "(2 rows)"
    assert "2 input rows joined no window (1 with a NULL key, 1 with a NULL time)" in captured.err
    rows = sorted((r["amount"], r["reason"]) for r in csv.DictReader(rejected.open()))
    assert rows == [("2", "null_time"), ("3", "null_key")]


def test_explain_draws_a_timeline(spark, tmp_path, capsys):
    picture = tmp_path / "timeline.png"
    assert main(["explain", str(EXAMPLES / "session_clicks.sql"), "--timeline", str(picture)]) == 0
    assert "mode: complete input" in capsys.readouterr().out
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_an_out_extension_sqlwin_does_not_write_is_refused_before_the_query_runs(spark, tmp_path, capsys):
    """`--out result.txt` was refused only after the query had run (issue 13): a query that would
    fail while running shows which came first."""
    query = tmp_path / "q.sql"
    query.write_text("SELECT raise_error('the query ran')")
    for option in ("--out", "--rejected"):
        assert main(["run", str(query), option, str(tmp_path / "result.txt")]) == 2
        err = capsys.readouterr().err
        assert "result.txt" in err and "the query ran" not in err, err
    assert not (tmp_path / "result.txt").exists()

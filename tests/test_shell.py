"""`sqlwin sql`, the spark-sql style shell.

-e, -f and standard input run in-process against the shared SparkSession (`--conf` reaches it
through the builder); the interactive prompt runs as a real `sqlwin sql` process in a
pseudo-terminal, once, covering multi-line input, history, an error then a good query, and
`--master`.
"""

from __future__ import annotations

import io
import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sqlwin.cli import main
from sqlwin.shell import one_line, split_statements, statement_complete

ROOT = Path(__file__).resolve().parent.parent
TIME_TAKEN = re.compile(r"^Time taken: \d+\.\d{3} seconds(, Fetched (\d+) row\(s\))?$")


@pytest.fixture(scope="module")
def clicks_parquet(spark, tmp_path_factory):
    path = tmp_path_factory.mktemp("shell") / "clicks.parquet"
    spark.sql("""
        SELECT * FROM VALUES
          ('u1', TIMESTAMP '2024-01-01 00:01:00'), ('u1', TIMESTAMP '2024-01-01 00:04:00'),
          ('u1', TIMESTAMP '2024-01-01 00:12:00'), ('u2', TIMESTAMP '2024-01-01 00:02:00')
        AS t(user_id, ts)""").write.parquet(str(path))
    return path


# --------------------------------------------------------------------------- splitting


def test_statements_split_at_semicolons_outside_quotes_and_comments():
    script = ("-- a comment; with a semicolon\nSET spark.x=1;\n"
              "SELECT 'a;b', \"c;d\", `e;f` /* ; /* nested ; */ still ; */ FROM t WHERE s = 'it\\'s;';\n"
              "  SELECT r'\\'; SELECT 2")
    assert [(s.text, s.line, s.column) for s in split_statements(script)] == [
        ("SET spark.x=1", 2, 1),
        ("SELECT 'a;b', \"c;d\", `e;f` /* ; /* nested ; */ still ; */ FROM t WHERE s = 'it\\'s;'", 3, 1),
        ("SELECT r'\\'", 4, 3),
        ("SELECT 2", 4, 16),
    ]
    assert [s.text for s in split_statements(";; -- nothing\n /* at all */ ;")] == []


@pytest.mark.parametrize("typed, complete", [
    ("SELECT 1;", True), ("SELECT 1; -- done", True), ("SELECT 1\n;", True), ("SELECT 1", False),
    ("SELECT ';", False), ("SELECT 1 /* ; */", False), ("SELECT 1; SELECT 2", False), ("/* ;", False),
])
def test_a_statement_is_complete_at_a_semicolon_outside_quotes_and_comments(typed, complete):
    assert statement_complete(typed) is complete


def test_a_multi_line_statement_is_one_runnable_history_line():
    assert one_line("SELECT a, -- the a; really\n  b\nFROM t WHERE s = '--x'\n;") == \
        "SELECT a,    b FROM t WHERE s = '--x' ;"


# --------------------------------------------------------------------------- -e, -f, stdin


def test_a_file_of_statements_runs_as_spark_sql_runs_it(spark, clicks_parquet, tmp_path, capsys):
    script = tmp_path / "script.sql"
    script.write_text(f"""-- a script as spark-sql runs it
SET spark.sqlwin.shell_test=on/off;
SET spark.sqlwin.shell_flag;
CREATE OR REPLACE TEMP VIEW shell_clicks USING parquet OPTIONS (path '{clicks_parquet}');
SELECT user_id, window_start, count(*) AS clicks   -- per user; per 10 minutes
FROM TUMBLE(TABLE shell_clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
GROUP BY user_id, window_start, window_end
ORDER BY user_id, window_start;
SET spark.sql.cli.print.header=true;
SELECT 'a;b' AS s, NULL AS n, array(1, 2) AS a, named_struct('k', 'v') AS st, 1.5D AS d;
SET spark.sql.cli.print.header=false
""")
    code = main(["sql", "-f", str(script), "--conf", "spark.sqlwin.shell_flag=from --conf"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.splitlines() == [
        "spark.sqlwin.shell_test\ton/off",
        "spark.sqlwin.shell_flag\tfrom --conf",
        "u1\t2024-01-01 00:00:00\t2",
        "u1\t2024-01-01 00:10:00\t1",
        "u2\t2024-01-01 00:00:00\t1",
        "key\tvalue",  # spark.sql.cli.print.header is true from here to its last SET
        "spark.sql.cli.print.header\ttrue",
        "s\tn\ta\tst\td",
        'a;b\tNULL\t[1,2]\t{"k":"v"}\t1.5',
        "spark.sql.cli.print.header\tfalse",
    ]
    taken = [TIME_TAKEN.match(line) for line in err.splitlines() if line.startswith("Time taken")]
    assert all(taken) and len(taken) == 7, err
    assert [m.group(2) for m in taken] == ["1", "1", None, "3", "1", "1", "1"]  # CREATE VIEW fetches none


def test_e_stops_at_the_first_error_and_exits_2_with_its_place(spark, capsys):
    code = main(["sql", "-e", "SELECT 1 AS one; SELECT nosuch FROM VALUES (1) AS t(a); SELECT 3", "-S"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == "1\n"  # the third statement does not run
    assert "nosuch" in err and "line 1, column 25" in err, err
    assert "  SELECT 1 AS one; SELECT nosuch FROM VALUES (1) AS t(a); SELECT 3\n" + " " * 26 + "^^^^^^" in err
    assert "Time taken" not in err and "Traceback" not in err


def test_an_error_on_a_later_line_of_a_file_is_placed_in_the_file(spark, clicks_parquet, tmp_path, capsys):
    script = tmp_path / "bad.sql"
    script.write_text(f"CREATE OR REPLACE TEMP VIEW shell_clicks USING parquet OPTIONS (path '{clicks_parquet}');\n"
                      "-- the gap is wrong\n"
                      "SELECT user_id\n"
                      "FROM SESSION(TABLE shell_clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 0 SECONDS);\n"
                      "SELECT 'not reached'")
    code = main(["sql", "-f", str(script)])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    column = script.read_text().splitlines()[3].index("INTERVAL 0") + 1
    assert "GAP must be positive" in err and f"line 4, column {column}" in err, err


def test_spark_failing_while_running_exits_1(spark, capsys):
    code = main(["sql", "-e", "SELECT 'before'; SELECT raise_error('boom from the shell test')"])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == "before\n"
    assert "Spark failed while running the query" in err and "boom from the shell test" in err
    assert "Traceback" not in err and "at org.apache" not in err


def test_statements_on_standard_input_run_as_a_script(spark, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("SELECT 40 + 2;\nSELECT 'x' AS y\n"))
    assert main(["sql"]) == 0
    assert capsys.readouterr().out == "42\nx\n"


def test_bad_command_lines_exit_2_before_spark_starts(tmp_path, capsys):
    assert main(["sql", "-e", "SELECT 1", "--conf", "no-equals-sign"]) == 2
    assert main(["sql", "-f", str(tmp_path / "absent.sql")]) == 2
    query = tmp_path / "q.sql"
    query.write_text("SELECT 1")
    assert main(["run", str(query), "--master", "local[1]", "--remote", "sc://localhost:15002"]) == 2
    err = capsys.readouterr().err
    assert "--conf no-equals-sign is not KEY=VALUE" in err and "Cannot read the SQL file" in err
    assert "--master and --remote cannot both be given" in err
    with pytest.raises(SystemExit):
        main(["sql", "-e", "SELECT 1", "-f", "x.sql"])


def test_run_passes_conf_to_the_session(spark, tmp_path, capsys):
    query = tmp_path / "q.sql"
    query.write_text("SET spark.sqlwin.run_flag")
    assert main(["run", str(query), "--conf", "spark.sqlwin.run_flag=set by run"]) == 0
    assert "set by run" in capsys.readouterr().out


# --------------------------------------------------------------------------- the prompt


class Terminal:
    """A process on a pseudo-terminal: type lines, wait for output."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        import fcntl
        import struct
        import termios

        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 400, 0, 0))
        self.process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT,
                                        start_new_session=True, close_fds=True)
        os.close(slave)
        self.seen = ""  # everything the terminal showed, \r removed
        self.unread = 0  # where expect() looks from

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, pattern: str, timeout: float = 120) -> re.Match:
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            found = regex.search(self.seen, self.unread)
            if found:
                self.unread = found.end()
                return found
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(min(left, 1.0)) and self.process.poll() is not None:
                raise AssertionError(f"{pattern!r} not shown; the terminal showed:\n{self.seen[-4000:]}")

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            data = os.read(self.master, 65536)
        except OSError:  # the process has closed the terminal
            return False
        self.seen += data.decode(errors="replace").replace("\r", "")
        return bool(data)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        os.close(self.master)


def test_the_interactive_prompt(tmp_path):
    history = tmp_path / "history"
    history.write_text("SELECT 'seeded' || ' from history';\n")
    env = {**os.environ, "SQLWIN_HISTORY": str(history), "TERM": "dumb", "INPUTRC": os.devnull,
           "PYTHONPATH": str(ROOT)}
    shell = Terminal([sys.executable, "-m", "sqlwin", "sql", "--master", "local[1]",
                      "--conf", "spark.sqlwin.prompt_flag=on"], env)
    try:
        shell.expect(r"sqlwin> ", timeout=240)
        # The history file is read: the arrow up recalls its statement.
        shell.send("\x1b[A\r")
        shell.expect(r"\nseeded from history\n")
        shell.expect(r"Time taken: [\d.]+ seconds, Fetched 1 row\(s\)\nsqlwin> ")
        # A statement over several lines ends at its semicolon.
        shell.send("SELECT 'multi' || '-line' AS m, -- the first column; not the end\r")
        shell.expect(r"\n     > ")
        shell.send("  40 + 2 AS n\r")
        shell.expect(r"\n     > ")
        shell.send(";\r")
        shell.expect(r"\nmulti-line\t42\n")
        shell.expect(r"sqlwin> ")
        # ... and comes back from the history as one line that runs again.
        shell.send("\x1b[A\r")
        shell.expect(r"\nmulti-line\t42\n")
        shell.expect(r"sqlwin> ")
        # Two statements on one line; --master and --conf reached the session.
        shell.send("SET spark.master; SET spark.sqlwin.prompt_flag;\r")
        shell.expect(r"\nspark\.master\tlocal\[1\]\n")
        shell.expect(r"\nspark\.sqlwin\.prompt_flag\ton\n")
        shell.expect(r"sqlwin> ")
        # An error is reported with its place; the prompt goes on.
        shell.send("SELECT nosuch FROM VALUES (1) AS t(a);\r")
        shell.expect(r"sqlwin: Spark cannot run the query: .*nosuch.* \(line 1, column 8, at 'nosuch'\)")
        shell.expect(r"sqlwin> ")
        shell.send("SELECT 'after ' || 'the error';\r")
        shell.expect(r"\nafter the error\n")
        shell.expect(r"sqlwin> ")
        shell.send("exit;\r")
        assert shell.process.wait(60) == 0
    finally:
        shell.close()
    assert "Traceback" not in shell.seen
    assert history.read_text().splitlines() == [
        "SELECT 'seeded' || ' from history';",
        "SELECT 'seeded' || ' from history';",
        "SELECT 'multi' || '-line' AS m,    40 + 2 AS n ;",
        "SELECT 'multi' || '-line' AS m,    40 + 2 AS n ;",
        "SET spark.master; SET spark.sqlwin.prompt_flag;",
        "SELECT nosuch FROM VALUES (1) AS t(a);",
        "SELECT 'after ' || 'the error';",
    ]


def test_debug_at_the_prompt_shows_how_an_error_came_about(spark):
    """`sqlwin sql --debug`: the prompt prints the message, then the chain behind it (issue 11:
    the prompt used to ignore --debug); without it, the message alone."""
    import sqlwin
    from sqlwin.shell import Shell

    for debug in (False, True):
        out, err = io.StringIO(), io.StringIO()
        shell = Shell(sqlwin.attach(spark), out=out, err=err, debug=debug)
        assert shell._run_typed("SELECT CAST('abc' AS INT) / 0 AS x;\nSELECT 1;") is None
        text = err.getvalue()
        assert text.startswith("sqlwin: ") and ("CAST_INVALID_INPUT" in text or "abc" in text), text
        assert ("sqlwin --debug: what happened" in text) is debug and ("Traceback" in text) is debug, text
        assert out.getvalue() == ""  # the statement after the failing one did not run

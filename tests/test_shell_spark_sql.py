"""`sqlwin sql` behaves as spark-sql does (issue 24, item 2), driven as a user drives it: a real
`sqlwin sql` process on a pseudo-terminal (pexpect), Ctrl-C typed as a terminal sends it (SIGINT to
the foreground process group, the JVM's too).

One Spark start for the whole file: the prompt test covers Ctrl-C (the statement's Spark job
cancelled, the prompt back at once, no traceback, a second Ctrl-C at the prompt) and the
spark-sql flags that need Spark (--name, --driver-memory, --jars, -i, -v).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

pexpect = pytest.importorskip("pexpect")

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "sqlwin> "
# ~1e11 pairs: hours of work for two cores, until it is cancelled.
LONG_QUERY = "SELECT max(a.id + b.id) FROM range(100000) a CROSS JOIN range(1000000) b;"


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SQLWIN_HISTORY": str(tmp_path / "history"), "TERM": "dumb", "INPUTRC": os.devnull,
            "PYTHONPATH": str(ROOT)}


def _answer(shell, statement: str, expected: str, timeout: float) -> float:
    """Type `statement`; the seconds until its answer `expected` (a line) is shown."""
    started = time.monotonic()
    shell.sendline(statement)
    shell.expect(rf"\n{re.escape(expected)}\r?\n", timeout=timeout)
    seconds = time.monotonic() - started
    shell.expect_exact(PROMPT, timeout=timeout)
    return seconds


def _interrupt_running(shell, presses: int) -> float:
    """Start LONG_QUERY, press Ctrl-C `presses` times once its job runs; seconds to the prompt."""
    shell.sendline(LONG_QUERY)
    time.sleep(6)  # planned and running (a Ctrl-C during planning cancels the job it starts later, too)
    started = time.monotonic()
    for _ in range(presses):
        shell.sendintr()
        time.sleep(0.05)
    shell.expect(r"sqlwin: interrupted[^\n]*\n", timeout=30)
    shell.expect_exact(PROMPT, timeout=30)
    return time.monotonic() - started


def test_ctrl_c_cancels_the_statement_and_returns_to_the_prompt(tmp_path):
    jar = tmp_path / "empty.jar"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
    init = tmp_path / "init.sql"
    init.write_text("CREATE TEMP VIEW clicks AS SELECT * FROM VALUES ('u1', TIMESTAMP '2024-01-01 00:00:10'),\n"
                    "  ('u1', TIMESTAMP '2024-01-01 00:00:50'), ('u2', TIMESTAMP '2024-01-01 00:01:10') AS t(user_id, ts);\n")
    shell = pexpect.spawn(sys.executable, ["-m", "sqlwin", "sql", "--master", "local[2]", "--name", "ctrl-c test",
                                           "--driver-memory", "700m", "--jars", str(jar), "-i", str(init)],
                          env=_env(tmp_path), cwd=str(ROOT), encoding="utf-8", codec_errors="replace", timeout=60,
                          dimensions=(50, 400))
    shell.logfile_read = log = _Log()
    try:
        shell.expect_exact(PROMPT, timeout=240)
        # spark-submit's flags reached Spark; -i ran first.
        _answer(shell, "SET spark.app.name;", "spark.app.name\tctrl-c test", timeout=120)
        _answer(shell, "SET spark.driver.memory;", "spark.driver.memory\t700m", timeout=30)
        _answer(shell, "SET spark.jars;", f"spark.jars\t{jar.resolve()}", timeout=30)
        # Both flavours of the window functions: sqlwin's own and Spark's registered table functions'.
        _answer(shell, "SELECT count(*) FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
                       "WHERE window_start = TIMESTAMP '2024-01-01 00:00:00';", "2", timeout=120)
        _answer(shell, "SELECT count(*) FROM tumble(TABLE(clicks), 'ts', INTERVAL '1' MINUTE) "
                       "WHERE window_start = TIMESTAMP '2024-01-01 00:00:00';", "2", timeout=120)
        warm = _answer(shell, "SELECT 'warm';", "warm", timeout=120)

        back = _interrupt_running(shell, presses=1)
        assert back < 5, f"the prompt came back {back:.1f} s after Ctrl-C"
        # The job was cancelled: it would hold both cores for hours, and SELECT 1 wait behind it.
        after = _answer(shell, "SELECT 1;", "1", timeout=120)
        assert after < 5, f"SELECT 1 after the Ctrl-C took {after:.1f} s (before it: {warm:.1f} s)"

        # Ctrl-C at the prompt drops the line typed and prompts again; the shell goes on.
        shell.send("SELECT 'dropped'")
        time.sleep(0.5)  # typed, then Ctrl-C (at the same instant, readline may leave the signal until the next key)
        shell.sendintr()
        shell.expect_exact(PROMPT, timeout=10)
        assert _answer(shell, "SELECT 'still here';", "still here", timeout=30) < 5

        # Ctrl-C pressed twice while a statement runs: the same, once.
        back = _interrupt_running(shell, presses=2)
        assert back < 5, f"the prompt came back {back:.1f} s after two Ctrl-C"
        assert _answer(shell, "SELECT 2;", "2", timeout=120) < 5

        shell.sendline("exit;")
        shell.expect(pexpect.EOF, timeout=60)
        shell.close()
        assert shell.exitstatus == 0
    except Exception as err:
        raise AssertionError(f"the terminal showed:\n{log.text()[-6000:]}") from err
    finally:
        if shell.isalive():
            shell.terminate(force=True)
    shown = log.text()
    for noise in ("Traceback", "py4j", "Py4J", "ERROR", "Exception", "at org.apache"):
        assert noise not in shown, f"{noise!r} shown:\n{shown}"
    assert "\ndropped\n" not in shown  # never run


class _Log:
    """What the terminal showed (pexpect's logfile_read), carriage returns dropped."""

    def __init__(self):
        self.parts: list[str] = []

    def write(self, data: str) -> None:
        self.parts.append(data)

    def flush(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts).replace("\r", "")


# --------------------------------------------------------------------------- flags without a terminal


def _sqlwin(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sqlwin", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)


def test_version_and_a_missing_jar_answer_before_spark_starts():
    import pyspark

    import sqlwin

    for args in (["--version"], ["sql", "--version"]):
        done = _sqlwin(*args)
        assert done.returncode == 0 and done.stdout.startswith(
            f"sqlwin {sqlwin.__version__}, Spark {pyspark.__version__}, Python "), done
    started = time.monotonic()
    done = _sqlwin("sql", "--jars", "nosuch.jar", "-e", "SELECT 1")
    assert done.returncode == 2 and done.stderr.startswith("sqlwin: --jars: no such file nosuch.jar"), done
    assert time.monotonic() - started < 15 and "Traceback" not in done.stderr  # refused before Spark starts


def test_verbose_prints_each_statement_before_its_result(spark, capsys):
    from sqlwin.cli import main

    assert main(["sql", "-v", "-S", "-e", "SELECT 1 AS one;\nSELECT 'b'"]) == 0
    assert capsys.readouterr().out == "SELECT 1 AS one\n1\nSELECT 'b'\nb\n"


def test_spark_s_form_of_a_window_function_is_told_apart_from_sqlwin_s():
    """`tumble(TABLE(t), 'ts', ...)` is the registered functions' (Spark's) form: sqlwin's parser marks
    it so that it runs through Spark as written, and where Spark has no such function the message
    names both forms."""
    from sqlwin.errors import SqlwinSyntaxError
    from sqlwin.sql.plan import build_plan

    for query in ("SELECT * FROM tumble(TABLE(clicks), 'ts', INTERVAL '1' MINUTE)",
                  "SELECT * FROM session(TABLE(clicks) PARTITION BY (k), 'ts', INTERVAL '30' SECONDS)",
                  "SELECT * FROM tumble(data => TABLE(clicks), timecol => 'ts', size => INTERVAL '90' SECONDS)",
                  "SELECT * FROM hop(TABLE(SELECT * FROM clicks), 'ts', INTERVAL '1' MINUTE, INTERVAL '5' MINUTES)"):
        with pytest.raises(SqlwinSyntaxError) as caught:
            build_plan(query)
        assert caught.value.plain_spark, query
        assert "is Spark's form of" in str(caught.value) and "DESCRIPTOR(ts)" in str(caught.value), query
    assert build_plan("SELECT * FROM TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 1 MINUTE)").windows

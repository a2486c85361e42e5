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
import sys
import time
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
    shell = pexpect.spawn(sys.executable, ["-m", "sqlwin", "sql", "--master", "local[2]"], env=_env(tmp_path),
                          cwd=str(ROOT), encoding="utf-8", codec_errors="replace", timeout=60, dimensions=(50, 400))
    shell.logfile_read = log = _Log()
    try:
        shell.expect_exact(PROMPT, timeout=240)
        _answer(shell, "SELECT 'warm';", "warm", timeout=120)
        warm = _answer(shell, "SELECT 'warm again';", "warm again", timeout=120)

        back = _interrupt_running(shell, presses=1)
        assert back < 5, f"the prompt came back {back:.1f} s after Ctrl-C"
        # The job was cancelled: it would hold both cores for hours, and SELECT 1 wait behind it.
        after = _answer(shell, "SELECT 1;", "1", timeout=120)
        assert after < 5, f"SELECT 1 after the Ctrl-C took {after:.1f} s (before it: {warm:.1f} s)"

        # Ctrl-C at the prompt drops the line typed and prompts again; the shell goes on.
        shell.send("SELECT 'dropped'")
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

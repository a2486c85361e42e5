"""Issue 24, item 5: `sqlwin run` / `explain` / `stream` / `sql -e` refuse a wrong query before Spark starts.

Each case runs the command as a subprocess with no Java to be found (JAVA_HOME points nowhere, PATH
holds no java): had Spark been started, the command would fail with Spark's launch error instead
of sqlwin's message. It must also answer well under Spark's start-up time (23-39 s before).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CLICKS = ROOT / "sql_examples" / "data" / "clicks.csv"


def _sqlwin(tmp_path: Path, *args: str) -> tuple[int, str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_SUBMIT", "SQLWIN_REMOTE"))}
    env.update(JAVA_HOME=str(tmp_path / "no-java"), PATH="/nonexistent", PYTHONPATH=str(ROOT))
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "sqlwin", *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stderr, time.monotonic() - started


def _query(tmp_path: Path, text: str) -> str:
    path = tmp_path / "q.sql"
    path.write_text(text)
    return str(path)


WINDOWED = "SELECT user_id, count(*) AS n\nFROM TUMBLE(TABLE {t}, DESCRIPTOR(ts), INTERVAL 1 HOUR)\n" \
           "GROUP BY user_id, window_start, window_end"


@pytest.mark.parametrize("command", ["run", "explain"])
@pytest.mark.parametrize("text, message, place, caret", [
    ("SELEC * FROM clicks", "'SELEC' cannot start a statement: did you mean SELECT?", "line 1, column 1", "^^^^^"),
    (WINDOWED.format(t="clikcs"), "Unknown table clikcs: did you mean clicks?", "line 2, column 19", " " * 18 + "^^^^^^"),
    # The unknown table's name is also a SELECT alias: the caret is on the table reference.
    ("SELECT user_id AS clickz, count(*) AS n\nFROM TUMBLE(TABLE clickz, DESCRIPTOR(ts), INTERVAL 1 HOUR)\n"
     "GROUP BY user_id, window_start, window_end", "Unknown table clickz: did you mean clicks?", "line 2, column 19",
     " " * 18 + "^^^^^^"),
    ("SELECT c.user_id FROM clicks c JOIN ordrs o ON c.user_id = o.user_id", "Unknown table ordrs", "line 1, column 37",
     " " * 36 + "^^^^^"),
    ("SELECT * FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL -5 MINUTES)",
     "GAP must be positive, got INTERVAL -5 MINUTES", "line 1, column 74", None),
])
def test_a_wrong_query_is_refused_before_spark_starts(tmp_path, command, text, message, place, caret):
    code, err, seconds = _sqlwin(tmp_path, command, _query(tmp_path, text), "--table", f"clicks={CLICKS}")
    assert code == 2, err
    assert message in err and place in err, err
    if caret:
        assert "\n  " + caret + "\n" in err, err
    assert "Traceback" not in err and "JAVA_HOME" not in err and "Java" not in err, err
    assert seconds < 3, f"{seconds:.1f} s: {err}"


def test_a_wrong_statement_of_sql_e_is_refused_before_any_runs(tmp_path):
    code, err, seconds = _sqlwin(tmp_path, "sql", "-e", "SELECT 1;\nSELEC 2")
    assert code == 2, err
    assert "'SELEC' cannot start a statement: did you mean SELECT? (line 2, column 1" in err, err
    assert "Java" not in err and seconds < 3, (seconds, err)


def test_a_stream_naming_no_source_is_refused_before_spark_starts(tmp_path):
    (tmp_path / "in").mkdir()
    code, err, seconds = _sqlwin(tmp_path, "stream", _query(tmp_path, WINDOWED.format(t="clicks")),
                                 "--source", f"clickz={tmp_path / 'in'}", "--checkpoint", str(tmp_path / "cp"),
                                 "--sink", str(tmp_path / "out"))
    assert code == 2, err
    assert "Unknown table clicks: did you mean clickz?" in err and "Java" not in err and seconds < 3, (seconds, err)


def test_spark_sql_the_parser_cannot_read_is_left_to_spark(tmp_path):
    """The harness sees Spark start: a query sqlwin cannot judge alone (Spark's own `window(...)`
    grouping, which sqlglot cannot parse) goes on to Spark, which cannot start without Java."""
    code, err, _ = _sqlwin(tmp_path, "run", _query(tmp_path, "SELECT window.start, count(*) FROM clicks "
                                                               "GROUP BY window(ts, '1 hour')"),
                           "--table", f"clicks={CLICKS}")
    assert code != 0 and "cannot start a statement" not in err and "Unknown table" not in err, err
    assert "Java" in err or "JAVA" in err or "java" in err, err


def test_a_stream_without_watermark_is_told_the_default():
    """`sqlwin stream` prints these notes when it starts (before, a stream without WATERMARK said nothing)."""
    from sqlwin.cli import _watermark_notes

    notes = _watermark_notes(WINDOWED.format(t="clicks"))
    assert notes == ["TUMBLE over clicks has no WATERMARK: the default is WATERMARK ts DELAY OF INTERVAL 0 SECONDS: "
                     "a window closes once the stream's newest ts reaches its end, and a row arriving for it after "
                     "that is late; to wait for rows out of order: TABLE clicks WATERMARK ts DELAY OF INTERVAL 10 "
                     "SECONDS"]
    assert _watermark_notes(WINDOWED.format(t="clicks WATERMARK ts DELAY OF INTERVAL 1 SECOND")) == []


def test_the_source_format_has_one_name_and_format_still_works(tmp_path, capsys):
    """`sqlwin stream --source-format` is sw.stream's `source_format`; `--format`, its first name, still works."""
    from sqlwin.cli import _parser, source_format
    from sqlwin.errors import SqlwinUsageError

    def parsed(*options: str):
        return _parser().parse_args(["stream", "q.sql", "--source", "a=in", "--checkpoint", "c", "--sink", "s", *options])

    assert source_format(parsed()) == "parquet"
    assert source_format(parsed("--source-format", "csv")) == "csv" and capsys.readouterr().err == ""
    assert source_format(parsed("--format", "json")) == "json"
    assert "--format is deprecated; say --source-format json" in capsys.readouterr().err
    with pytest.raises(SqlwinUsageError, match="disagree"):
        source_format(parsed("--format", "csv", "--source-format", "json"))


def test_format_and_source_format_that_disagree_are_refused_before_spark_starts(tmp_path):
    (tmp_path / "in").mkdir()
    code, err, seconds = _sqlwin(tmp_path, "stream", _query(tmp_path, WINDOWED.format(t="clicks")),
                                 "--source", f"clicks={tmp_path / 'in'}", "--format", "csv", "--source-format", "json",
                                 "--checkpoint", str(tmp_path / "cp"), "--sink", str(tmp_path / "out"))
    assert code == 2 and "--format csv and --source-format json disagree" in err and "Java" not in err, err
    assert seconds < 3, seconds

"""Issue 24, item 5: the example an error's "Accepted:" line gives is valid SQL in sqlwin's dialect.

Each query below fails; the example after "e.g." in its hint, put where the caret is, must make a
query sqlwin accepts (checked without Spark: sqlwin.sql.check). `SLIDE INTERVAL 10 SECONDS`, the
example these messages gave, is not SQL at all.
"""

from __future__ import annotations

import re

import pytest

from sqlwin.errors import SqlwinError
from sqlwin.sql.check import check_query

AGG = "SELECT k, window_start, count(*) AS n FROM {} GROUP BY k, window_start, window_end"


@pytest.mark.parametrize("query", [
    AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 0 SECONDS)"),
    AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL -1 HOUR)"),
    AGG.format("HOP(TABLE t, DESCRIPTOR(ts), INTERVAL -10 SECONDS, INTERVAL 1 HOUR)"),
    AGG.format("CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL 0 MINUTES, INTERVAL 1 HOUR)"),
    AGG.format("SESSION(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL -5 MINUTES)"),
    AGG.format("SLIDE(TABLE t PARTITION BY k, DESCRIPTOR(ts), INTERVAL 0 SECONDS)"),
    AGG.format("TUMBLE(TABLE t WATERMARK ts DELAY OF INTERVAL -5 SECONDS, DESCRIPTOR(ts), INTERVAL 1 HOUR)"),
    AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)") + " EMIT EARLY EVERY INTERVAL 0 SECONDS",
    AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)") + " EMIT FINAL ALLOWED LATENESS INTERVAL -1 MINUTE",
    AGG.format("COUNT_WINDOW(TABLE t PARTITION BY k, INTERVAL 1 HOUR)"),
    AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 1 HOUR)") + " LATE ROWS INTO t",
])
def test_the_example_in_the_hint_put_at_the_caret_is_accepted(query):
    with pytest.raises(SqlwinError) as caught:
        check_query(query)
    err = caught.value
    example = re.search(r"e\.g\. (.+?)(?: or |$)", err.hint or "")
    assert example and err.position, str(err)
    lines = query.splitlines()
    line = lines[err.position.line - 1]
    start = err.position.column - 1
    assert line[start:start + len(err.position.text)] == err.position.text, str(err)
    lines[err.position.line - 1] = line[:start] + example.group(1) + line[start + len(err.position.text):]
    check_query("\n".join(lines))  # raises if the example is not valid where the caret was


def test_the_emit_and_named_argument_examples_parse():
    check_query(AGG.format("TUMBLE(TABLE t, DESCRIPTOR(ts), SIZE => INTERVAL 1 HOUR)") + " EMIT EARLY EVERY 10 ROWS RETRACTING")

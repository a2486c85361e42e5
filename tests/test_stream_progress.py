"""`sqlwin stream`'s progress tells the truth (issue 24, item 4): a line per micro-batch as the
batch is written, with that batch's own figures -- rows in, results, late, rejected, and the
watermark after it -- also with --once; a line while Spark starts; the stream named in the Spark UI.

A real `sqlwin stream --once --max-files-per-trigger 1` process over four files, its standard error
read line by line while it runs.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
QUERY = ("SELECT k, window_start, window_end, count(*) AS n FROM TUMBLE(TABLE clicks PARTITION BY k "
         "WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE) "
         "GROUP BY k, window_start, window_end LATE ROWS INTO clicks_late")
SCHEMA = pa.schema([("k", pa.string()), ("ts", pa.timestamp("us", tz="UTC"))])


def _at(minute: int, second: int) -> dt.datetime:
    return dt.datetime(2024, 1, 1, 0, minute, second, tzinfo=dt.timezone.utc)


# One file per micro-batch; each batch's own figures, and the key watermarks (lowest .. highest) after it.
FILES = [
    ([("a", _at(0, 10)), ("a", _at(0, 20)), ("b", _at(0, 30))],
     dict(rows_in=3, results=0, late=0, rejected=0, watermark="00:00:19 .. 2024-01-01 00:00:29", keys=2)),
    ([("a", _at(1, 30))],  # a's clock passes 00:01: its first window closes
     dict(rows_in=1, results=1, late=0, rejected=0, watermark="00:00:29 .. 2024-01-01 00:01:29", keys=2)),
    ([("a", _at(0, 40)), (None, _at(0, 50))],  # a window a closed; a NULL key
     dict(rows_in=2, results=0, late=1, rejected=1, watermark="00:00:29 .. 2024-01-01 00:01:29", keys=2)),
    ([("b", _at(2, 0)), ("c", _at(2, 5))],  # b's first window closes; a third key
     dict(rows_in=2, results=1, late=0, rejected=0, watermark="00:01:29 .. 2024-01-01 00:02:04", keys=3)),
]
LINE = re.compile(r"^batch (\d+): (\d+) rows in, (\d+) results, (\d+) late, (\d+) rejected; after it: watermark "
                  r"2024-01-01 (.+?), (\d+) keys, (\d+) open windows")


def test_a_line_per_batch_as_it_is_written_with_its_own_figures(tmp_path):
    source = tmp_path / "clicks"
    source.mkdir()
    for index, (rows, _) in enumerate(FILES):
        path = source / f"b{index}.parquet"
        pq.write_table(pa.Table.from_pylist([{"k": k, "ts": ts} for k, ts in rows], schema=SCHEMA), path)
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))  # Spark takes them in this order
    query = tmp_path / "q.sql"
    query.write_text(QUERY)
    checkpoint, sink = tmp_path / "ck", tmp_path / "sink"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "sqlwin", "stream", str(query), "--source", f"clicks={source}", "--checkpoint",
         str(checkpoint), "--sink", str(sink), "--late-sink", str(tmp_path / "late"), "--once",
         "--max-files-per-trigger", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
        cwd=tmp_path)
    lines, batches = [], {}
    try:
        for line in process.stderr:
            line = line.rstrip("\n")
            lines.append(line)
            if len(lines) == 1:
                assert line == "sqlwin: starting Spark ...", line
                assert time.monotonic() - started < 5  # before Spark starts, not after
            found = LINE.match(line)
            if found:
                batch = int(found.group(1))
                # As it is written: the batch after next has not run yet (Spark's commit log).
                later = [b for b in range(batch + 2, len(FILES)) if (checkpoint / "spark" / "commits" / str(b)).exists()]
                assert not later, f"the line of batch {batch} came after batch {later} had run"
                batches[batch] = found
        assert process.wait(120) == 0, "\n".join(lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    text = "\n".join(lines)
    assert "Traceback" not in text, text
    named = re.search(r'^streaming into .*; named "sqlwin: SELECT k, window_start, .* -> .*sink" in the Spark UI\)',
                      text, re.M)
    assert named, text
    assert sorted(batches) == list(range(len(FILES))), text
    for batch, (_, expected) in enumerate(FILES):
        found = batches[batch]
        shown = dict(rows_in=int(found.group(2)), results=int(found.group(3)), late=int(found.group(4)),
                     rejected=int(found.group(5)), watermark=found.group(6), keys=int(found.group(7)))
        assert shown == expected, f"batch {batch}: {found.group(0)}"

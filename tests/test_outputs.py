"""sqlwin never destroys files it did not write (issue 13, part 1).

`sqlwin run --out` refuses an existing path unless --overwrite, replaces a directory only if it
holds a previous result, and never writes over an input. A stream's sink and late sink that
hold results of another checkpoint are refused before the query starts.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from sqlwin.cli import main
from sqlwin.errors import SqlwinUsageError

QUERY = """
SELECT k, window_start, count(*) AS n, sum(v) AS total
FROM TUMBLE(TABLE ev PARTITION BY k, DESCRIPTOR(ts), INTERVAL 1 MINUTE)
GROUP BY k, window_start, window_end
"""
DATA = "k,ts,v\na,2024-01-01 00:00:10,1\na,2024-01-01 00:00:50,2\nb,2024-01-01 00:01:10,4\n"
# by hand: a's two rows share [00:00, 00:01); b's one row is in [00:01, 00:02)
RESULT = [("a", "2024-01-01T00:00:00.000Z", "2", "3"), ("b", "2024-01-01T00:01:00.000Z", "1", "4")]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "ev.csv").write_text(DATA)
    (tmp_path / "q.sql").write_text(QUERY)
    return tmp_path


def _run(files, *extra):
    return main(["run", str(files / "q.sql"), "--table", f"ev={files / 'ev.csv'}", *extra])


def _csv_rows(path: Path):
    return sorted(tuple(r.values()) for r in csv.DictReader(path.open()))


def test_an_existing_file_is_kept_without_overwrite(spark, files, capsys):
    out = files / "result.csv"
    out.write_text("precious\n")
    assert _run(files, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--overwrite" in err
    assert out.read_text() == "precious\n"
    assert _run(files, "--out", str(out), "--overwrite") == 0
    assert _csv_rows(out) == RESULT


def test_a_directory_of_other_files_is_never_deleted(spark, files, capsys):
    out = files / "results"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert _run(files, "--out", str(out)) == 2
    assert _run(files, "--out", str(out), "--overwrite") == 2
    err = capsys.readouterr().err
    assert "notes.txt" in err and "another --out path" in err
    assert (out / "notes.txt").read_text() == "mine"


def test_a_previous_result_directory_is_replaced_only_with_overwrite(spark, files, capsys):
    out = files / "results"
    assert _run(files, "--out", str(out)) == 0  # a new directory of parquet parts
    first = sorted(p.name for p in out.iterdir())
    assert _run(files, "--out", str(out)) == 2
    assert sorted(p.name for p in out.iterdir()) == first
    assert _run(files, "--out", str(out), "--overwrite") == 0
    rows = spark.read.parquet(str(out)).collect()
    assert sorted((r["k"], r["n"], r["total"]) for r in rows) == [("a", 2, 3), ("b", 1, 4)]


def test_never_over_an_input_even_with_overwrite(spark, files, capsys):
    data = files / "ev.csv"
    code = main(["run", str(files / "q.sql"), "--table", f"ev={data}", "--out", str(data)])
    assert data.read_text() == DATA
    assert code == 2 and "is the input" in capsys.readouterr().err
    assert main(["run", str(files / "q.sql"), "--table", f"ev={data}", "--out", str(data), "--overwrite"]) == 2
    assert data.read_text() == DATA
    # the same file through another spelling of its path
    other = files / "sub" / ".." / "ev.csv"
    (files / "sub").mkdir()
    assert main(["run", str(files / "q.sql"), "--table", f"ev={data}", "--out", str(other), "--overwrite"]) == 2
    # a directory input: nothing inside it, and not the directory that holds it
    parquet = files / "ev_parquet"
    spark.read.option("header", True).option("inferSchema", True).csv(str(data)).write.parquet(str(parquet))
    before = sorted(p.name for p in parquet.iterdir())
    assert main(["run", str(files / "q.sql"), "--table", f"ev={parquet}", "--out", str(parquet / "r.csv")]) == 2
    assert main(["run", str(files / "q.sql"), "--table", f"ev={parquet}", "--out", str(parquet), "--overwrite"]) == 2
    (files / "outer").mkdir()
    nested = files / "outer" / "ev.csv"
    nested.write_text(DATA)
    assert main(["run", str(files / "q.sql"), "--table", f"ev={nested}", "--out", str(files / "outer"),
                 "--overwrite"]) == 2
    assert sorted(p.name for p in parquet.iterdir()) == before and nested.read_text() == DATA


# --------------------------------------------------------------------------- stream sinks


STREAM_QUERY = """
SELECT k, window_start, count(*) AS n
FROM TUMBLE(TABLE ev PARTITION BY k WATERMARK ts DELAY OF INTERVAL 1 SECOND, DESCRIPTOR(ts), INTERVAL 1 MINUTE)
GROUP BY k, window_start, window_end
LATE ROWS INTO late_ev
"""


def _stream(root: Path, checkpoint: str, sink: str, late: str) -> int:
    return main(["stream", str(root / "s.sql"), "--source", f"ev={root / 'in'}", "--source-format", "csv",
                 "--checkpoint", str(root / checkpoint), "--sink", str(root / sink),
                 "--late-sink", str(root / late), "--once", "--end-input"])


def _batches(sink: Path):
    return sorted(p.name for p in sink.glob("batch_id=*"))


def test_a_sink_of_another_checkpoint_is_refused(spark, tmp_path, capsys):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "1.csv").write_text(DATA)
    (tmp_path / "s.sql").write_text(STREAM_QUERY)
    assert _stream(tmp_path, "cp1", "sink", "late") == 0
    written = _batches(tmp_path / "sink")
    assert written  # the end of input closed a's and b's windows
    # A line per batch: the data batch (its line was missing with --once: only the last batch was
    # shown), then the end of input (which showed "1 rows in ... 0 keys, 0 open windows").
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("batch ")]
    assert [line.split(":")[0] for line in lines] == ["batch 0", "batch 1"], lines
    assert lines[0].startswith("batch 0: 3 rows in,") and "2 keys, 2 open windows" in lines[0], lines
    # the end of input's own figures: it closed a's and b's windows
    assert lines[1] == "batch 1: end of input, every open window closed: 2 results, 0 late, 0 rejected", lines

    # A new checkpoint on the same sink: refused before anything is written.
    assert _stream(tmp_path, "cp2", "sink", "late2") == 2
    err = capsys.readouterr().err
    assert "another checkpoint" in err and str(tmp_path / "cp1") in err
    assert not (tmp_path / "cp2").exists() and not (tmp_path / "late2").exists()
    assert _batches(tmp_path / "sink") == written
    # ... and on the same late sink
    assert _stream(tmp_path, "cp2", "sink2", "late") == 2
    assert "late sink" in capsys.readouterr().err

    # The checkpoint that wrote them may go on.
    assert _stream(tmp_path, "cp1", "sink", "late") == 0


def test_a_sink_with_results_and_no_owner_is_refused_for_a_new_checkpoint(sw, spark, tmp_path):
    (tmp_path / "in").mkdir()
    frame = spark.readStream.schema("k STRING, ts TIMESTAMP, v INT").parquet(str(tmp_path / "in"))
    sink = tmp_path / "sink"
    (sink / "batch_id=0").mkdir(parents=True)
    (sink / "batch_id=0" / "part-0.parquet").write_bytes(b"results of some earlier stream")
    with pytest.raises(SqlwinUsageError) as caught:
        sw.stream(STREAM_QUERY, sources={"ev": frame}, sink=str(sink), checkpoint=str(tmp_path / "cp"))
    assert "already holds results (batch_id=0)" in caught.value.message
    assert not (tmp_path / "cp").exists()


def test_sinks_that_overlap_each_other_or_an_input_are_refused(sw, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    with pytest.raises(SqlwinUsageError, match="the same directory"):
        sw.stream(STREAM_QUERY, sources={"ev": str(source)}, sink=str(tmp_path / "s"),
                  late_sink=str(tmp_path / "s"), checkpoint=str(tmp_path / "cp"))
    with pytest.raises(SqlwinUsageError, match="is inside the input"):
        sw.stream(STREAM_QUERY, sources={"ev": str(source)}, sink=str(source / "out"),
                  checkpoint=str(tmp_path / "cp"))
    assert not (tmp_path / "cp").exists() and list(source.iterdir()) == []

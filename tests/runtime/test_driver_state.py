"""The state a stream keeps on the driver (sqlwin/spark/driver_state.py), without Spark: a snapshot per
micro-batch, read back as the newest before a batch (a re-run reads what the first run read), written
atomically, the last few kept; sealed in the envelope every state uses, and a stored one of format 1
(tests/runtime/data/driver_state_1/: Nexmark q7 over 60 bids in six micro-batches, its windows still
open, written by the commit that introduced the format) still read."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from sqlwin.runtime.model import RuntimeConfigError
from sqlwin.runtime.snapshots import unseal
from sqlwin.spark.driver_state import DIRECTORY, KEPT, DriverSnapshots

STORED = Path(__file__).parent / "data" / "driver_state_1"


def test_a_batch_reads_the_newest_state_before_it_and_a_rerun_reads_the_same(tmp_path):
    snapshots = DriverSnapshots(str(tmp_path))
    assert snapshots.before(0) == {}
    for batch in range(4):
        snapshots.write(batch, {0: {"value": f"after {batch}".encode()}})
    assert snapshots.before(3) == {0: {"value": b"after 2"}}  # batch 3 run again: what its first run read
    assert snapshots.before(9) == {0: {"value": b"after 3"}}  # batches with no call between: the newest
    assert not list((tmp_path / DIRECTORY).glob(".*"))  # written through a hidden name, then renamed


def test_the_last_few_are_kept(tmp_path):
    snapshots = DriverSnapshots(str(tmp_path))
    for batch in range(KEPT + 5):
        snapshots.write(batch, {})
    kept = sorted(int(p.name) for p in (tmp_path / DIRECTORY).iterdir())
    assert kept == list(range(4, KEPT + 5))  # batch N keeps N - KEPT .. N


def test_a_state_of_a_newer_format_is_refused(tmp_path):
    snapshots = DriverSnapshots(str(tmp_path))
    snapshots.write(0, {})
    path = tmp_path / DIRECTORY / "0"
    data = pickle.loads(path.read_bytes())
    path.write_bytes(pickle.dumps({**data, "format": 99}))
    with pytest.raises(RuntimeConfigError, match="newer sqlwin"):
        snapshots.before(1)


def test_a_stored_state_of_format_1_is_read(tmp_path):
    shutil.copytree(STORED, tmp_path / DIRECTORY)
    buckets = DriverSnapshots(str(tmp_path)).before(6)
    assert sorted(buckets) == [0, 2]  # q7 over two shuffle partitions: the buckets' ids (checkpoint.bucket_layout)
    for bucket in buckets.values():
        assert unseal(bucket["directory"], "SegmentDirectory").format == 2
        assert bucket["segment"] and all(unseal(blob, "SegmentPiece") for blob in bucket["segment"].values())
        assert bucket["index"] and all(unseal(blob, "IndexPart") for blob in bucket["index"].values())

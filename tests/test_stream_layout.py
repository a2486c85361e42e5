"""The streaming state's bucket layout: one bucket per partition, balanced by Spark's own hashing."""

import json

from sqlwin.spark.checkpoint import bucket_layout, partition_aligned_ids


def test_bucket_ids_land_on_partitions_of_their_own(spark):
    for partitions, count in ((2, 2), (8, 8), (3, 7)):
        ids = partition_aligned_ids(spark, partitions, count)
        assert len(set(ids)) == count
        # Spark's groupBy exchange: pmod(murmur3 hash(INT id), partitions)
        placed = [r[0] for r in spark.createDataFrame([(b,) for b in ids], "b INT")
                  .selectExpr(f"pmod(hash(b), {partitions})").collect()]
        assert placed == [i % partitions for i in range(count)]


def test_a_new_stream_takes_the_session_partitions_and_a_restart_keeps_its_layout(spark, tmp_path):
    previous = spark.conf.get("spark.sql.shuffle.partitions")
    try:
        spark.conf.set("spark.sql.shuffle.partitions", "3")
        ids = bucket_layout(spark, str(tmp_path), "SELECT 1", None)
        assert len(ids) == 3
        spark.conf.set("spark.sql.shuffle.partitions", "5")  # a restart under another setting
        assert bucket_layout(spark, str(tmp_path), "SELECT 1", None) == ids
        stored = json.loads((tmp_path / "sqlwin.json").read_text())
        assert stored["partitions"] == 3 and stored["bucket_ids"] == list(ids)
    finally:
        spark.conf.set("spark.sql.shuffle.partitions", previous)


def test_a_checkpoint_of_an_earlier_version_keeps_its_buckets(spark, tmp_path):
    (tmp_path / "sqlwin.json").write_text(json.dumps({"buckets": 8, "query": "SELECT 1"}))
    assert bucket_layout(spark, str(tmp_path), "SELECT 1", None) == tuple(range(8))

"""The pipeline's inputs: the shipped clicks (sql_examples/data/clicks.csv) as a finished table and a stream.

spark-pipelines imports this file with `spark`, the pipeline's session, in its globals.
"""

from pathlib import Path

from pyspark import pipelines as dp

import sqlwin

DATA = Path(__file__).resolve().parent.parent.parent / "data"  # sql_examples/data
CLICKS = "user_id STRING, id STRING, ts TIMESTAMP"

# sqlwin's window functions as table functions of the pipeline's session, for its SQL files
# (transformations/hourly.sql): tumble, hop, cumulate, session, slide, count_window, global_window.
sqlwin.register(spark)  # noqa: F821 - spark-pipelines defines it


@dp.materialized_view(comment="the clicks, a finished table")
def clicks():
    return spark.read.csv(str(DATA / "clicks.csv"), header=True, schema=CLICKS)  # noqa: F821


@dp.table(comment="the clicks as they arrive: every clicks*.csv file of the data directory, read as a stream")
def clicks_stream():
    return (spark.readStream.format("csv").option("header", True)  # noqa: F821
            .option("pathGlobFilter", "clicks*.csv").schema(CLICKS).load(str(DATA)))

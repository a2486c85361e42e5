"""sqlwin queries as the pipeline's datasets: a materialized view (complete input) and a streaming table.

spark-pipelines imports this file with `spark`, the pipeline's session, in its globals.
"""

from pathlib import Path

import sqlwin.pipelines as swp

DATA = Path(__file__).resolve().parent.parent.parent / "data"  # sql_examples/data
CLICKS = "user_id STRING, id STRING, ts TIMESTAMP"

# Sessions of clicks 30 minutes apart, over the pipeline's finished table `clicks` (native Spark
# SQL). LATE ROWS INTO makes a second materialized view, rejected_clicks: the rows no session takes
# (a NULL user or time; none in the shipped data).
swp.materialized_view(spark, "click_sessions", """
    SELECT user_id, window_start, window_end, count(*) AS clicks, max(ts) AS last_click
    FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
    GROUP BY user_id, window_start, window_end
    LATE ROWS INTO rejected_clicks
""")  # noqa: F821

# Half-hour windows over the clicks as they arrive (every clicks*.csv file of the data directory,
# read as a stream), a watermark per user 5 minutes behind its newest click: a window is appended
# once, when that watermark passes its end (EMIT FINAL); windows still open wait for later clicks.
arriving = (spark.readStream.format("csv").option("header", True)  # noqa: F821
            .option("pathGlobFilter", "clicks*.csv").schema(CLICKS).load(str(DATA)))
swp.streaming_table(spark, "clicks_per_half_hour", """
    SELECT user_id, window_start, window_end, count(*) AS clicks, max(ts) AS last_click
    FROM TUMBLE(TABLE arriving PARTITION BY user_id WATERMARK ts DELAY OF INTERVAL 5 MINUTES,
                DESCRIPTOR(ts), INTERVAL 30 MINUTES)
    GROUP BY user_id, window_start, window_end
    EMIT FINAL
""", sources={"arriving": arriving})  # noqa: F821

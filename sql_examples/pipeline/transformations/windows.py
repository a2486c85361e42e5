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

# The same runtime over more than one window function. The orders as they arrive (every orders*.csv
# file), beside the clicks: each user's clicks and orders per half hour, gathered side by side (a
# windowed join as a cogroup; FULL JOIN keeps a window only one side has). One watermark for each
# stream, 5 minutes behind its newest row; the join's is the earlier of the two.
ordering = (spark.readStream.format("csv").option("header", True)  # noqa: F821
            .option("pathGlobFilter", "orders*.csv").schema("user_id STRING, order_id STRING, ts TIMESTAMP")
            .load(str(DATA)))
swp.streaming_table(spark, "clicks_and_orders", """
    SELECT coalesce(c.user_id, o.user_id) AS user_id, coalesce(c.window_start, o.window_start) AS window_start,
           c.id AS clicks, o.order_id AS orders
    FROM TUMBLE(TABLE arriving WATERMARK ts DELAY OF INTERVAL 5 MINUTES WITH (join_insert = 'collect'),
                DESCRIPTOR(ts), INTERVAL 30 MINUTES) c
    FULL JOIN TUMBLE(TABLE ordering WATERMARK ts DELAY OF INTERVAL 5 MINUTES, DESCRIPTOR(ts), INTERVAL 30 MINUTES) o
      ON c.user_id = o.user_id AND c.window_start = o.window_start AND c.window_end = o.window_end
""", sources={"arriving": arriving, "ordering": ordering})  # noqa: F821

# A WITH clause around the stream: the clicks of known users, per half hour, one watermark for the stream.
swp.streaming_table(spark, "known_users_per_half_hour", """
    WITH known AS (SELECT * FROM arriving WHERE user_id IS NOT NULL)
    SELECT user_id, window_start, window_end, count(*) AS clicks
    FROM TUMBLE(TABLE known WATERMARK ts DELAY OF INTERVAL 5 MINUTES, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
    GROUP BY user_id, window_start, window_end
""", sources={"arriving": arriving})  # noqa: F821

# A chain: the clicks per half hour (one watermark for the stream), summed per hour as the half hours
# close -- the hour's window over the half hours' window_time, its watermark following theirs.
swp.streaming_table(spark, "hours_of_half_hours", """
    SELECT window_start, window_end, sum(clicks) AS clicks, count(*) AS half_hours
    FROM TUMBLE(TABLE (
        SELECT window_start, window_end, window_time, count(*) AS clicks
        FROM TUMBLE(TABLE arriving WATERMARK ts DELAY OF INTERVAL 5 MINUTES, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
        GROUP BY window_start, window_end, window_time), DESCRIPTOR(window_time), INTERVAL 1 HOUR)
    GROUP BY window_start, window_end
""", sources={"arriving": arriving})  # noqa: F821

-- Nexmark q5, hot items: which auctions have seen the most bids in the last period?
-- Per auction, the bids of every HOP window (slide 2 s, size 10 s), one clock for the stream
-- (no PARTITION BY: the watermark is the stream's newest bid time less 5 s, as Flink's and Spark's).
--
-- This is q5's stateful part. Flink's q5 then joins these counts with each window's maximum
-- count and keeps the auctions that reach it; in sqlwin a stream runs one windowed aggregation
-- per query, so that step is a query over this result (the sink), e.g.
--   SELECT auction, num, window_start, window_end FROM (
--     SELECT *, max(num) OVER (PARTITION BY window_start, window_end) AS maxn FROM q5_counts)
--   WHERE num >= maxn
-- which benchmarks/nexmark.py runs as a Spark batch query over the sink after the stream (not timed).
SELECT auction, window_start, window_end, count(*) AS num
FROM HOP(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
         DESCRIPTOR(dateTime), INTERVAL 2 SECONDS, INTERVAL 10 SECONDS)
GROUP BY auction, window_start, window_end

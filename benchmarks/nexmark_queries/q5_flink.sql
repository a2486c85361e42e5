-- Nexmark q5, hot items, as nexmark's Flink query writes it (nexmark/queries/q5.sql): per HOP window
-- (slide 2 s, size 10 s) the auctions with the most bids -- the bid counts joined with each window's
-- maximum count. One streaming query: the two copies of the windowed aggregation are one stateful
-- stage; the maximum per window and the join run per micro-batch over the stage's results, each
-- window's counts whole in the micro-batch one clock for the stream closes it in (docs/sql.md,
-- "SQL around the windows"). Two differences from Flink's text: the WATERMARK (Flink declares it in
-- the bid table's DDL), and the window bounds in the result (so that the check can keep the windows
-- closed before the last watermark).
SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime, AuctionBids.endtime
 FROM (
   SELECT auction, count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
                    DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
 ) AS AuctionBids
 JOIN (
   SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
   FROM (
     SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
     FROM TABLE(HOP(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
                    DESCRIPTOR(dateTime), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
     GROUP BY auction, window_start, window_end
   ) AS CountBids
   GROUP BY CountBids.starttime, CountBids.endtime
 ) AS MaxBids
 ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
    AND AuctionBids.num >= MaxBids.maxn

-- Nexmark q7, highest bid, as nexmark's Flink query writes it (nexmark/queries/q7.sql): the bids
-- joined with the maximum price of their TUMBLE 10 s window -- every bid at the top price, ties
-- included. Flink joins the raw bid stream on `B.dateTime BETWEEN B1.dateTime - INTERVAL '10'
-- SECOND AND B1.dateTime` (an interval join); here the bids are read through the same window
-- function (each bid with its window) and joined on the window's bounds, which picks the same bids
-- (a bid at window_end belongs to the next window in both: Flink's window ends are exclusive too).
-- One streaming query: the window function's rows are the stateful stage, kept until their window
-- closes; the maximum and the join run per micro-batch over each closed window's rows.
SELECT B.auction, B.price, B.bidder, B.dateTime, B.window_end
FROM TUMBLE(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
            DESCRIPTOR(dateTime), INTERVAL '10' SECOND) B
JOIN (
  SELECT MAX(price) AS maxprice, window_start, window_end
  FROM TUMBLE(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
              DESCRIPTOR(dateTime), INTERVAL '10' SECOND)
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice AND B.window_start = B1.window_start AND B.window_end = B1.window_end

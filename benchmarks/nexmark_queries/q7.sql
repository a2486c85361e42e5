-- Nexmark q7, highest bid: the bid with the highest price of every TUMBLE 10 s window.
-- Flink writes it as a join of the bids with each window's max(price); here it is one windowed
-- aggregation with no key and no PARTITION BY (one clock for the stream, the watermark the
-- newest bid time less 5 s): the window's max price and, with max_by, that bid's auction,
-- bidder and time. Where several bids share the top price Flink's join returns each of them,
-- max_by one of them (the count of bids at the top price is not kept here).
SELECT window_start, window_end,
       max(price) AS price,
       max_by(auction, price) AS auction,
       max_by(bidder, price) AS bidder,
       max_by(dateTime, price) AS dateTime
FROM TUMBLE(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
            DESCRIPTOR(dateTime), INTERVAL 10 SECONDS)
GROUP BY window_start, window_end

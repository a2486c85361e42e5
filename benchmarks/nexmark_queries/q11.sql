-- Nexmark q11, user sessions: how many bids did a user make in each session they were active?
-- Per bidder, sessions with a gap of 10 s (rows less than 10 s apart share a session; sqlwin's
-- session is [first bid, last bid + 10 s), as Flink's SESSION_START / SESSION_END). No
-- PARTITION BY: one clock for the stream, the watermark the newest bid time less 5 s; the
-- sessions are still each bidder's own (the GROUP BY key).
SELECT bidder, count(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM SESSION(TABLE bid WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
             DESCRIPTOR(dateTime), INTERVAL 10 SECONDS)
GROUP BY bidder, window_start, window_end

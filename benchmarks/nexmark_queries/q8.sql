-- Nexmark q8, monitor new users: people who created an auction in the TUMBLE 10 s window in
-- which they entered the system. A windowed join of the person and auction streams per id =
-- seller and window; join_insert = 'first' keeps one row per side, key and window (the earliest),
-- as Flink's q8 groups each side by key and window before joining. No PARTITION BY: one clock
-- per input, the join's watermark the earlier of the two (each the input's newest time less 5 s).
SELECT p.id, p.name, p.window_start
FROM TUMBLE(TABLE person WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS WITH (join_insert = 'first'),
            DESCRIPTOR(dateTime), INTERVAL 10 SECONDS) p
JOIN TUMBLE(TABLE auction WATERMARK dateTime DELAY OF INTERVAL 5 SECONDS,
            DESCRIPTOR(dateTime), INTERVAL 10 SECONDS) a
ON p.id = a.seller AND p.window_start = a.window_start AND p.window_end = a.window_end

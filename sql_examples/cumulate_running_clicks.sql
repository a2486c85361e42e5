-- Clicks so far in each hour, refreshed every 30 minutes (CUMULATE, as Flink's).
-- sqlwin:table clicks=data/clicks.csv
--
-- Expected result:
--   window_start         window_end           clicks
--   2023-12-14 00:00:00  2023-12-14 00:30:00  3
--   2023-12-14 00:00:00  2023-12-14 01:00:00  4
--   2023-12-14 01:00:00  2023-12-14 01:30:00  1
--   2023-12-14 01:00:00  2023-12-14 02:00:00  2
SELECT window_start, window_end, count(*) AS clicks
FROM CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR)
GROUP BY window_start, window_end
ORDER BY window_start, window_end

-- One-hour windows every 30 minutes aligned to midnight (HOP; Bytewax's sliding windows, BW-04).
-- A click at 00:10 lands in [23:30, 00:30) and [00:00, 01:00).
-- sqlwin:table clicks=data/clicks.csv
--
-- Expected result:
--   window_start         window_end           clicks  ids
--   2023-12-13 23:30:00  2023-12-14 00:30:00  3       [1A, 1B, 1C]
--   2023-12-14 00:00:00  2023-12-14 01:00:00  4       [1A, 1B, 1C, 2A]
--   2023-12-14 00:30:00  2023-12-14 01:30:00  2       [2A, 2B]
--   2023-12-14 01:00:00  2023-12-14 02:00:00  2       [2B, 3A]
--   2023-12-14 01:30:00  2023-12-14 02:30:00  1       [3A]
SELECT window_start, window_end, count(*) AS clicks, array_sort(collect_list(id)) AS ids
FROM HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
GROUP BY window_start, window_end
ORDER BY window_start

-- Sessions of clicks separated by 30 minutes of inactivity (SESSION; Bytewax BW-07).
-- A session runs from its first click to its last click + the gap; 3A comes exactly one
-- gap after 2B and so starts a session of its own.
-- sqlwin:table clicks=data/clicks.csv
--
-- Expected result:
--   user_id  window_start         window_end           first_click          last_click           clicks
--   u1       2023-12-14 00:00:00  2023-12-14 00:45:00  2023-12-14 00:00:00  2023-12-14 00:15:00  3
--   u1       2023-12-14 00:50:00  2023-12-14 01:30:00  2023-12-14 00:50:00  2023-12-14 01:00:00  2
--   u1       2023-12-14 01:30:00  2023-12-14 02:00:00  2023-12-14 01:30:00  2023-12-14 01:30:00  1
SELECT user_id, window_start, window_end, min(ts) AS first_click, max(ts) AS last_click, count(*) AS clicks
FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
GROUP BY user_id, window_start, window_end
ORDER BY window_start

-- Each user's clicks and orders per half hour, gathered side by side: a windowed join as a
-- cogroup (Apex AP-12, Bytewax BX-08). join_insert = 'collect' gathers each side's values of a
-- key and window into an array (in time order); FULL JOIN keeps windows only one side has, with
-- NULL for the other. In a replay or a stream the same query closes a window when both inputs'
-- watermarks have passed it.
-- sqlwin:table clicks=data/clicks.csv
-- sqlwin:table orders=data/orders.csv
--
-- Expected result:
--   user_id  window_start         clicks        orders
--   u1       2023-12-14 00:00:00  [1A, 1B, 1C]  [o1]
--   u2       2023-12-14 00:00:00  NULL          [o4]
--   u1       2023-12-14 00:30:00  [2A]          [o2]
--   u1       2023-12-14 01:00:00  [2B]          NULL
--   u1       2023-12-14 01:30:00  [3A]          NULL
--   u1       2023-12-14 02:00:00  NULL          [o3]
SELECT coalesce(c.user_id, o.user_id) AS user_id,
       coalesce(c.window_start, o.window_start) AS window_start,
       c.id AS clicks, o.order_id AS orders
FROM TUMBLE(TABLE clicks WITH (join_insert = 'collect'), DESCRIPTOR(ts), INTERVAL 30 MINUTES) c
FULL JOIN TUMBLE(TABLE orders, DESCRIPTOR(ts), INTERVAL 30 MINUTES) o
  ON c.user_id = o.user_id AND c.window_start = o.window_start AND c.window_end = o.window_end
ORDER BY window_start, user_id

-- Each session's click path, folded in timestamp order (fold and reduce; Bytewax BX-03, BX-04).
-- aggregate(collect_list(x), start, (acc, x) -> step) is Spark's own fold over the window's rows,
-- which sqlwin collects in event-time order in every mode; starting from the first value is reduce.
-- Sessions of 30 minutes of inactivity, as session_clicks.sql.
-- sqlwin:table clicks=data/clicks.csv
--
-- Expected result:
--   user_id  window_start         path        longest_gap_minutes
--   u1       2023-12-14 00:00:00  1A>1B>1C    10
--   u1       2023-12-14 00:50:00  2A>2B       10
--   u1       2023-12-14 01:30:00  3A          0
SELECT user_id, window_start,
       aggregate(collect_list(id), '', (path, id) -> IF(path = '', id, concat(path, '>', id))) AS path,
       aggregate(slice(collect_list(ts), 2, count(*) - 1),
                 named_struct('last', element_at(collect_list(ts), 1), 'gap', 0L),
                 (acc, t) -> named_struct('last', t, 'gap', greatest(acc.gap,
                                          (unix_seconds(t) - unix_seconds(acc.last)) DIV 60)),
                 acc -> acc.gap) AS longest_gap_minutes
FROM SESSION(TABLE clicks PARTITION BY user_id, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
GROUP BY user_id, window_start, window_end
ORDER BY window_start

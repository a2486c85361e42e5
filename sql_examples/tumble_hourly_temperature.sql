-- Average temperature per sensor for each hour (TUMBLE).
-- sqlwin:table sensors=data/sensors.csv
--
-- Expected result:
--   sensor  window_start         window_end           readings  avg_temperature
--   s1      2024-05-01 00:00:00  2024-05-01 01:00:00  2         21.0
--   s1      2024-05-01 01:00:00  2024-05-01 02:00:00  1         25.0
--   s2      2024-05-01 00:00:00  2024-05-01 01:00:00  2         18.5
SELECT sensor, window_start, window_end, count(*) AS readings, avg(temperature) AS avg_temperature
FROM TUMBLE(TABLE sensors PARTITION BY sensor, DESCRIPTOR(ts), INTERVAL 1 HOUR)
GROUP BY sensor, window_start, window_end
ORDER BY sensor, window_start

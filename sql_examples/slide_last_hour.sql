-- Average temperature of the last hour at every reading (SLIDE; Quix's time sliding window, QX-08).
-- Times are epoch milliseconds; each window is [t - 1 h, t], both ends inclusive.
-- sqlwin:table temperatures=data/temperatures.csv
--
-- Expected result:
--   avg_temperature  window_start  window_end
--   30.0             0             3600000
--   29.5             1200000       4800000
--   29.0             1200001       4800001
--   28.5             3600000       7200000
--   27.5             3600001       7200001
SELECT avg(temperature) AS avg_temperature, window_start, window_end
FROM SLIDE(TABLE temperatures PARTITION BY sensor, DESCRIPTOR(timestamp), INTERVAL 1 HOUR)
GROUP BY sensor, window_start, window_end
ORDER BY window_end

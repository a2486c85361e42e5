-- sqlwin's registered table function tumble (transformations/clicks.py registers them) in a
-- pipeline SQL file: hourly windows over the finished clicks.
CREATE MATERIALIZED VIEW clicks_hourly AS
SELECT user_id, window_start, window_end, count(*) AS clicks
FROM tumble(TABLE(clicks), 'ts', INTERVAL '1' HOUR)
GROUP BY user_id, window_start, window_end;

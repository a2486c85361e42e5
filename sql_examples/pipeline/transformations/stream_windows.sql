-- The registered tumble() over a stream in a pipeline SQL file: a streaming table of the clicks
-- with the half hour each falls in (window assignment, row by row: no watermark, no state).
CREATE STREAMING TABLE clicks_with_half_hour AS
SELECT * FROM tumble(TABLE(SELECT * FROM STREAM(clicks_stream)), 'ts', INTERVAL '30' MINUTES);

-- Average of the last 3 purchases (COUNT_WINDOW sliding by 1; Quix QX-09).
-- Windows hold 3 rows in offset order; start / end are the first / last row's timestamp.
-- sqlwin:table purchases=data/purchases.csv
--
-- Expected result:
--   customer  average  window_start  window_end
--   c1        120.0    121           583
--   c1        100.0    165           723
--   c1        120.0    583           1009
--   c1        80.0     723           1242
SELECT customer, avg(amount) AS average, window_start, window_end
FROM COUNT_WINDOW(TABLE purchases PARTITION BY customer ORDER BY offset, DESCRIPTOR(timestamp), 3, 1)
GROUP BY customer, window_start, window_end
ORDER BY window_start

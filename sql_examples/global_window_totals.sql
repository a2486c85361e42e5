-- Everything each customer bought (GLOBAL_WINDOW: one window per key, closed at end of input).
-- sqlwin:table purchases=data/purchases.csv
--
-- Expected result:
--   customer  purchases  total  window_start  window_end
--   c1        6          600    NULL          NULL
SELECT customer, count(*) AS purchases, sum(amount) AS total, window_start, window_end
FROM GLOBAL_WINDOW(TABLE purchases PARTITION BY customer)
GROUP BY customer, window_start, window_end

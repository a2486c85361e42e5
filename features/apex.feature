@apex
Feature: Apache Apex Malhar WindowedOperator window options (seeds/004_fe0ac8e13c6d6895.txt)
  Global, time and sliding time windows over finished tables.

  @AP-02
  Scenario: The global window holds every row and fires at end of input
    # Apex fires the global window only by triggers. Over a finished table sqlwin fires it
    # once at end of input — its own choice, so a batch query has an answer. The global
    # window has no bounds: window_start and window_end are NULL.
    Given the table "orders":
      | customer | amount | ts                  |
      | c1       | 10     | 2024-01-01 08:00:00 |
      | c2       | 5      | 2024-03-09 17:30:00 |
      | c1       | 7      | 2025-06-30 23:59:59 |
    When I run the query:
      """
      SELECT count(*) AS orders, sum(amount) AS total, window_start, window_end
      FROM GLOBAL_WINDOW(TABLE orders)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | orders | total | window_start:timestamp | window_end:timestamp |
      | 3      | 22    | NULL                   | NULL                 |

  @AP-02
  Scenario: A keyed global window: one window per key
    Given the table "orders":
      | customer | amount | ts                  |
      | c1       | 10     | 2024-01-01 08:00:00 |
      | c2       | 5      | 2024-03-09 17:30:00 |
      | c1       | 7      | 2025-06-30 23:59:59 |
    When I run the query:
      """
      SELECT customer, count(*) AS orders, sum(amount) AS total
      FROM GLOBAL_WINDOW(TABLE orders PARTITION BY customer)
      GROUP BY customer, window_start, window_end
      """
    Then the result is:
      | customer | orders | total |
      | c1       | 2      | 17    |
      | c2       | 1      | 5     |

  @AP-03
  Scenario: Time windows of 10 minutes: each row in exactly one window
    Given the table "events":
      | key | value | ts                  |
      | a   | 1     | 2024-01-01 10:01:00 |
      | a   | 2     | 2024-01-01 10:09:59 |
      | a   | 3     | 2024-01-01 10:10:00 |
      | b   | 4     | 2024-01-01 10:05:00 |
    When I run the query:
      """
      SELECT key, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE events PARTITION BY key, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY key, window_start, window_end
      """
    Then the result is:
      | key | window_start        | window_end          | total |
      | a   | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     |
      | a   | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 3     |
      | b   | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 4     |

  @AP-04
  Scenario: Sliding time windows of 10 minutes sliding by 2 minutes: every row in exactly 5 windows
    # Apex requires the slide to be smaller than the size and to divide it ("exactly the
    # window duration divided by the slideBy duration" windows). sqlwin's HOP accepts any
    # positive slide (BW-05, BX-09); this is the Apex case.
    Given the table "events":
      | id | ts                  |
      | a  | 2024-01-01 10:00:00 |
      | b  | 2024-01-01 10:03:30 |
      | c  | 2024-01-01 10:09:59 |
    When I run the query:
      """
      SELECT id, count(*) AS windows, min(window_start) AS first_start, max(window_start) AS last_start
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 2 MINUTES, INTERVAL 10 MINUTES)
      GROUP BY id
      """
    Then the result is:
      | id | windows | first_start         | last_start          |
      | a  | 5       | 2024-01-01 09:52:00 | 2024-01-01 10:00:00 |
      | b  | 5       | 2024-01-01 09:54:00 | 2024-01-01 10:02:00 |
      | c  | 5       | 2024-01-01 10:00:00 | 2024-01-01 10:08:00 |

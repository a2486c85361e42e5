Feature: Quix Streams windowed aggregations (seeds/002_501feacbf626c494.txt)
  Quix times are epoch milliseconds (LONG columns); results keep milliseconds.
  These scenarios run over finished tables: every window closes at end of input.

  @QX-05
  Scenario: Count-based tumbling window of 3 collects the batch
    Given the table "messages":
      | data | timestamp | offset |
      | 100  | 121       | 1      |
      | 50   | 165       | 2      |
      | 200  | 583       | 3      |
    When I run the query:
      """
      SELECT collect_list(data) AS data, window_start AS window_start_ms, window_end AS window_end_ms
      FROM COUNT_WINDOW(TABLE messages ORDER BY offset, DESCRIPTOR(timestamp), 3)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | data            | window_start_ms | window_end_ms |
      | [100, 50, 200]  | 121             | 583           |

  @QX-07
  Scenario: Count-based hopping windows of 6 messages with a step of 2
    # The document's figure: [0, 5], [2, 7], [4, 9], [6, 11] of message positions. A count
    # window emits when it is full, so windows starting at 8 and 10 never complete.
    Given the table "messages" with 12 rows of "position" counting from 0
    When I run the query:
      """
      SELECT window_start, window_end, count(*) AS messages
      FROM COUNT_WINDOW(TABLE messages ORDER BY position, SIZE => 6, SLIDE => 2)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start | window_end | messages |
      | 0            | 5          | 6        |
      | 2            | 7          | 6        |
      | 4            | 9          | 6        |
      | 6            | 11         | 6        |

  @QX-08
  Scenario: Time-based sliding window of one hour, one window per reading, both ends inclusive
    Given the table "readings":
      | temperature | timestamp |
      | 30          | 3600000   |
      | 29          | 4800000   |
      | 28          | 4800001   |
      | 27          | 7200000   |
      | 26          | 7200001   |
    When I run the query:
      """
      SELECT avg(temperature) AS avg_temperature, window_start AS window_start_ms, window_end AS window_end_ms
      FROM SLIDE(TABLE readings, DESCRIPTOR(timestamp), INTERVAL 1 HOUR)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | avg_temperature | window_start_ms | window_end_ms |
      | 30              | 0               | 3600000       |
      | 29.5            | 1200000         | 4800000       |
      | 29              | 1200001         | 4800001       |
      | 28.5            | 3600000         | 7200000       |
      | 27.5            | 3600001         | 7200001       |

  @QX-09
  Scenario: Count-based sliding window: the average of the last 3 purchases
    Given the table "purchases":
      | amount | timestamp | offset |
      | 100    | 121       | 1      |
      | 60     | 165       | 2      |
      | 200    | 583       | 3      |
      | 40     | 723       | 4      |
      | 120    | 1009      | 5      |
      | 80     | 1242      | 6      |
    When I run the query:
      """
      SELECT avg(amount) AS average, window_start AS window_start_ms, window_end AS window_end_ms
      FROM COUNT_WINDOW(TABLE purchases ORDER BY offset, DESCRIPTOR(timestamp), 3, 1)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | average | window_start_ms | window_end_ms |
      | 120     | 121             | 583           |
      | 100     | 165             | 723           |
      | 120     | 583             | 1009          |
      | 80      | 723             | 1242          |

@quix
Feature: Quix Streams windowed aggregations (seeds/002_501feacbf626c494.txt)
  Quix times are epoch milliseconds (LONG columns); results keep milliseconds.
  Scenarios on a "table" run over finished tables: every window closes at end of input.
  Scenarios on a "stream" list rows in arrival order and run twice, as a replay and as a
  Structured Streaming query fed one micro-batch per row; Quix closes a window when the newest
  timestamp of its key reaches end + grace (max event time, a clock per key) and calls a row
  late only when its window has closed (lateness_rule 'window_closed', sqlwin's default).

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

  @QX-15 @QX-16
  Scenario Outline: A 10 s grace period keeps a 1 h window open; late rows are reported (<mode>)
    # Newest 3605000: the window [0, 3600000) waits until 3610000, so the row at 100000 still lands
    # in it and its final result comes 10 s (of event time) later. The row at 200000 arrives after
    # the close: reported with its value, key, timestamp, how late (effective watermark 3600000
    # minus its time) and the window it missed (QX-16's on_late arguments).
    Given the stream "readings", arriving in this order:
      | sensor   | temperature | timestamp |
      | sensor_1 | 10          | 1000      |
      | sensor_1 | 20          | 3605000   |
      | sensor_1 | 30          | 100000    |
      | sensor_1 | 40          | 3610000   |
      | sensor_1 | 50          | 200000    |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start AS start, window_end AS end, sum(temperature) AS value
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK timestamp DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 1 HOUR)
      GROUP BY sensor, window_start, window_end
      LATE ROWS INTO late_readings
      """
    Then each result is emitted after batch:
      | sensor   | start   | end     | value | after batch |
      | sensor_1 | 0       | 3600000 | 40    | 4           |
      | sensor_1 | 3600000 | 7200000 | 60    | end         |
    And the late rows are:
      | temperature | sensor   | timestamp | late_by | window_start | window_end |
      | 50          | sensor_1 | 200000    | 3400000 | 0            | 3600000    |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @QX-17
  Scenario Outline: Emitting after every row: a running sum for [0, 10000) (<mode>)
    Given the stream "numbers", arriving in this order:
      | key | value | timestamp |
      | k   | 1     | 100       |
      | k   | 1     | 101       |
      | k   | 1     | 102       |
    When I run the query in <mode> mode:
      """
      SELECT window_start AS start, window_end AS end, sum(value) AS value
      FROM TUMBLE(TABLE numbers PARTITION BY key WATERMARK timestamp DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 10 SECONDS)
      GROUP BY key, window_start, window_end
      EMIT CHANGES
      """
    Then the result is, in order:
      | start | end   | value | firing  |
      | 0     | 10000 | 1     | changes |
      | 0     | 10000 | 2     | changes |
      | 0     | 10000 | 3     | changes |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @QX-18
  Scenario Outline: Final results: nothing until time passes the window's end (<mode>)
    Given the stream "numbers", arriving in this order:
      | key | value | timestamp |
      | k   | 1     | 100       |
      | k   | 1     | 101       |
      | k   | 1     | 10001     |
    When I run the query in <mode> mode:
      """
      SELECT window_start AS start, window_end AS end, sum(value) AS value
      FROM TUMBLE(TABLE numbers PARTITION BY key WATERMARK timestamp DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 10 SECONDS)
      GROUP BY key, window_start, window_end
      EMIT FINAL
      """
    Then each result is emitted after batch:
      | start | end   | value | after batch |
      | 0     | 10000 | 2     | 3           |
      | 10000 | 20000 | 1     | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @QX-19
  Scenario Outline: Windows close only from rows of the same key (<mode>)
    # One sentence of the document says final windows wait for the newest timestamp "for the
    # topic partition"; the rest (and its NOTE) says per key: encoded per key. sensor_2's row at
    # 20000 leaves sensor_1's [0, 10000) open, so sensor_1's row at 500 still counts.
    Given the stream "numbers", arriving in this order:
      | key      | value | timestamp |
      | sensor_1 | 1     | 100       |
      | sensor_2 | 1     | 20000     |
      | sensor_1 | 1     | 500       |
    When I run the query in <mode> mode:
      """
      SELECT key, window_start AS start, window_end AS end, sum(value) AS value
      FROM TUMBLE(TABLE numbers PARTITION BY key WATERMARK timestamp DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 10 SECONDS)
      GROUP BY key, window_start, window_end
      """
    Then each result is emitted after batch:
      | key      | start | end   | value | after batch |
      | sensor_1 | 0     | 10000 | 2     | end         |
      | sensor_2 | 20000 | 30000 | 1     | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @QX-03 @QX-01 @QX-02
  Scenario Outline: Minimum temperature of a 10 s window, after every row (<mode>)
    # Timestamps come from a column in milliseconds (QX-01); the result carries the window's start
    # and end, the result timestamp being the start (QX-02).
    Given the stream "readings", arriving in this order:
      | key      | temperature | timestamp |
      | sensor_1 | 9999        | 10001     |
    When I run the query in <mode> mode:
      """
      SELECT window_start AS start, window_end AS end, min(temperature) AS value
      FROM TUMBLE(TABLE readings PARTITION BY key WATERMARK timestamp DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 10 SECONDS)
      GROUP BY key, window_start, window_end
      EMIT CHANGES
      """
    Then the result is, in order:
      | start | end   | value |
      | 10000 | 20000 | 9999  |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @QX-04
  Scenario Outline: Hourly mean temperature, after every row (<mode>)
    Given the stream "readings", arriving in this order:
      | key      | temperature | timestamp |
      | sensor_1 | 30          | 100       |
      | sensor_1 | 29          | 200       |
      | sensor_1 | 28          | 300       |
    When I run the query in <mode> mode:
      """
      SELECT window_start AS start, window_end AS end, avg(temperature) AS value
      FROM TUMBLE(TABLE readings PARTITION BY key WATERMARK timestamp DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(timestamp), INTERVAL 1 HOUR)
      GROUP BY key, window_start, window_end
      EMIT CHANGES
      """
    Then the result is, in order:
      | start | end     | value |
      | 0     | 3600000 | 30.0  |
      | 0     | 3600000 | 29.5  |
      | 0     | 3600000 | 29.0  |

    Examples:
      | mode      |
      | replay    |
      | streaming |

@voltsp
Feature: VoltSP time and watermarks in window aggregations (seeds/003_3efd8ef133f7b69e.txt)
  Times are epoch milliseconds (LONG columns): the document's "2s" is 2000. Rows are listed in
  arrival order; `batch` is the micro-batch they arrived in. Every scenario runs twice: as a
  replay of the recorded table (arrival_order / arrival_batch) and as a Structured Streaming
  query fed one micro-batch per batch, whose input ends after the last batch.

  The document uses two lateness rules (SPEC_INVENTORY, VoltSP). Its watermark illustrations
  (VS-02, VS-03) call a row late when it is before the watermark: lateness_rule =
  'before_watermark'. Its worked example (VS-06 .. VS-11) accepts e3 at 8 s under watermark 9 s
  because [0, 10 s) is still open: lateness_rule = 'window_closed', sqlwin's default.
  The worked example's code says one-hour windows, its text and tables 10 seconds: 10 seconds here.

  Background:
    Given the stream "events", arriving in this order:
      | user | event | ts:bigint | batch | proc:bigint |
      | u1   | e1    | 2000      | 1     | 7000        |
      | u1   | e2    | 5000      | 1     | 7000        |
      | u1   | e4    | 12000     | 2     | 8000        |
      | u1   | e3    | 8000      | 3     | 9000        |
      | u1   | e5    | 25000     | 4     | 10000       |

  @VS-05 @VS-12 @tumble @processing_time
  Scenario Outline: Scenario 0, processing time: rows are bucketed by arrival (<mode>)
    # The table keeps [0, 10 s) open until e5 arrives at 10 s; sqlwin fires a processing-time
    # window when the clock reaches its end. Replays and tests read the clock from the recorded
    # `proc` column (arrival_time), so the window closes with the batch that arrives at 10 s.
    # e5 opens [10 s, 20 s), which only the end of input closes.
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user
                    WITH (arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(PROCTIME()), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events           | firing  | after batch |
      | u1   | 0            | 10000      | [e1, e2, e4, e3] | on_time | 4           |
      | u1   | 10000        | 20000      | [e5]             | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-06 @tumble @late
  Scenario Outline: Scenario 1, event time with the default MIN_EVENT_TIME: e3 is late (<mode>)
    # Watermark 2 s, 12 s, 12 s, 25 s. After batch 2 [0, 10 s) has closed, so e3 (8 s) is late.
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user
                    WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events   | after batch |
      | u1   | 0            | 10000      | [e1, e2] | 2           |
      | u1   | 10000        | 20000      | [e4]     | 4           |
      | u1   | 20000        | 30000      | [e5]     | end         |
    And the late rows are:
      | user | event | ts   | late_by | window_start | window_end | reason |
      | u1   | e3    | 8000 | 4000    | 0            | 10000      | late   |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-07 @tumble @late
  Scenario Outline: Scenario 2, a 5 s delay: e3 lands in [0, 10 s) (<mode>)
    # Effective watermark -3 s (the document clamps it to 0; sqlwin does not clamp, which closes
    # nothing a 0 would), 7 s, 7 s, 20 s.
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user
                    WATERMARK ts DELAY OF INTERVAL 5 SECONDS
                    WITH (watermark_strategy = 'min_event_time',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events       | after batch |
      | u1   | 0            | 10000      | [e1, e2, e3] | 4           |
      | u1   | 10000        | 20000      | [e4]         | 4           |
      | u1   | 20000        | 30000      | [e5]         | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-14 @tumble @late
  Scenario Outline: A watermark per key when a key is given (<mode>)
    # u2's row at 25 s does not touch u1's clock: u1's second row still lands in [0, 10 s).
    Given the stream "clicks", arriving in this order:
      | user | ts:bigint | batch |
      | u1   | 2000      | 1     |
      | u2   | 25000     | 2     |
      | u1   | 4000      | 3     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS clicks
      FROM TUMBLE(TABLE clicks PARTITION BY user
                    WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_clicks
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | clicks | after batch |
      | u1   | 0            | 10000      | 2      | end         |
      | u2   | 20000        | 30000      | 1      | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-14 @tumble @late
  Scenario Outline: One shared watermark when no key is given (<mode>)
    # Without PARTITION BY the stream has one clock: u2's row moves it past 10 s, [0, 10 s)
    # closes after batch 2 and u1's row at 4 s is late.
    Given the stream "clicks", arriving in this order:
      | user | ts:bigint | batch |
      | u1   | 2000      | 1     |
      | u2   | 25000     | 2     |
      | u1   | 4000      | 3     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS clicks
      FROM TUMBLE(TABLE clicks
                    WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_clicks
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | clicks | after batch |
      | u1   | 0            | 10000      | 1      | 2           |
      | u2   | 20000        | 30000      | 1      | end         |
    And the late rows are:
      | user | ts   | late_by | window_start | window_end | reason |
      | u1   | 4000 | 21000   | 0            | 10000      | late   |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-01 @tumble @processing_time
  Scenario Outline: Processing time buckets rows by arrival (<mode>)
    # The document's "Visualizing the difference": e1 (event 2 s, arrives 3 s), e2 (4 s, 5 s),
    # e3 (8 s, 13 s), e4 (15 s, 9 s); rows come in arrival order, one per micro-batch.
    Given the stream "readings", arriving in this order:
      | event | ts:bigint | proc:bigint |
      | e1    | 2000      | 3000        |
      | e2    | 4000      | 5000        |
      | e4    | 15000     | 9000        |
      | e3    | 8000      | 13000       |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE readings WITH (arrival_order = arrival, arrival_time = proc),
                  DESCRIPTOR(PROCTIME()), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start | window_end | events       |
      | 0            | 10000      | [e1, e2, e4] |
      | 10000        | 20000      | [e3]         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-01 @tumble
  Scenario Outline: Event time buckets rows by their own time when every row is on time (<mode>)
    # The document's event-time figure shows bucketing only: all four rows in one batch here.
    Given the stream "readings", arriving in this order:
      | event | ts:bigint | batch |
      | e1    | 2000      | 1     |
      | e2    | 4000      | 1     |
      | e4    | 15000     | 1     |
      | e3    | 8000      | 1     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE readings WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start | window_end | events       |
      | 0            | 10000      | [e1, e2, e3] |
      | 10000        | 20000      | [e4]         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-01 @tumble @late
  Scenario Outline: Event time, one row per batch in arrival order: e4 makes e3 late (<mode>)
    # As the document warns: e4 (15 s) arrives first and pushes the watermark past [0, 10 s).
    Given the stream "readings", arriving in this order:
      | event | ts:bigint |
      | e1    | 2000      |
      | e2    | 4000      |
      | e4    | 15000     |
      | e3    | 8000      |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE readings WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      LATE ROWS INTO late_readings
      """
    Then the result is:
      | window_start | window_end | events   |
      | 0            | 10000      | [e1, e2] |
      | 10000        | 20000      | [e4]     |
    And the late rows are:
      | event | ts   | late_by | window_start | window_end |
      | e3    | 8000 | 7000    | 0            | 10000      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-02 @VS-16 @tumble @late
  Scenario Outline: MIN_EVENT_TIME: the watermark advances to the earliest time of each batch (<mode>)
    # The watermark illustration's rule: a row before the watermark is late (before_watermark).
    # Batch 1 {2, 4, 9} -> watermark 2 s; batch 2 {5, 8, 15} is checked against 2 s (the watermark
    # of the previous batch, VS-16) and accepted -> 5 s; e_late at 3 s is late.
    Given the stream "events2", arriving in this order:
      | event  | ts:bigint | batch |
      | e1     | 2000      | 1     |
      | e2     | 4000      | 1     |
      | e3     | 9000      | 1     |
      | e4     | 5000      | 2     |
      | e5     | 8000      | 2     |
      | e6     | 15000     | 2     |
      | e_late | 3000      | 3     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events2 WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time', lateness_rule = 'before_watermark',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      LATE ROWS INTO late_events
      """
    Then the result is:
      | window_start | window_end | events               |
      | 0            | 10000      | [e1, e2, e4, e5, e3] |
      | 10000        | 20000      | [e6]                 |
    And the late rows are:
      | event  | ts   | late_by | window_start | window_end |
      | e_late | 3000 | 2000    | 0            | 10000      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-03 @tumble @late
  Scenario Outline: MAX_EVENT_TIME: the watermark advances to the latest time of each batch (<mode>)
    # Batch 1 -> watermark 9 s; in batch 2, 5 s and 8 s are before it and declined, 15 s is
    # accepted -> 15 s, which closes [0, 10 s) after batch 2.
    Given the stream "events2", arriving in this order:
      | event  | ts:bigint | batch |
      | e1     | 2000      | 1     |
      | e2     | 4000      | 1     |
      | e3     | 9000      | 1     |
      | e4     | 5000      | 2     |
      | e5     | 8000      | 2     |
      | e6     | 15000     | 2     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events2 WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'max_event_time', lateness_rule = 'before_watermark',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | window_start | window_end | events       | after batch |
      | 0            | 10000      | [e1, e2, e3] | 2           |
      | 10000        | 20000      | [e6]         | end         |
    And the late rows are:
      | event | ts   | late_by | window_start | window_end |
      | e4    | 5000 | 4000    | 0            | 10000      |
      | e5    | 8000 | 1000    | 0            | 10000      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-08 @tumble @late
  Scenario Outline: Scenario 3 with MAX_EVENT_TIME: e6 joins [0, 10 s), e3 is late (<mode>)
    # Watermark 5 s, 12 s, 12 s, 25 s.
    Given the stream "events3", arriving in this order:
      | user | event | ts:bigint | batch |
      | u1   | e1    | 2000      | 1     |
      | u1   | e2    | 5000      | 1     |
      | u1   | e4    | 12000     | 2     |
      | u1   | e6    | 9000      | 2     |
      | u1   | e3    | 8000      | 3     |
      | u1   | e5    | 25000     | 4     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events3 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'max_event_time', arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events       | after batch |
      | u1   | 0            | 10000      | [e1, e2, e6] | 2           |
      | u1   | 10000        | 20000      | [e4]         | 4           |
      | u1   | 20000        | 30000      | [e5]         | end         |
    And the late rows are:
      | event | ts   | late_by | window_start | window_end |
      | e3    | 8000 | 4000    | 0            | 10000      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-09 @tumble @late
  Scenario Outline: Scenario 3 with MIN_EVENT_TIME: e3 escapes lateness (<mode>)
    # Watermark 2 s, 9 s, 9 s, 25 s: [0, 10 s) is still open when e3 (8 s) arrives; the worked
    # example's rule (window_closed) accepts it although 8 s < 9 s.
    Given the stream "events3", arriving in this order:
      | user | event | ts:bigint | batch |
      | u1   | e1    | 2000      | 1     |
      | u1   | e2    | 5000      | 1     |
      | u1   | e4    | 12000     | 2     |
      | u1   | e6    | 9000      | 2     |
      | u1   | e3    | 8000      | 3     |
      | u1   | e5    | 25000     | 4     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events3 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time', lateness_rule = 'window_closed',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events           | after batch |
      | u1   | 0            | 10000      | [e1, e2, e3, e6] | 4           |
      | u1   | 10000        | 20000      | [e4]             | 4           |
      | u1   | 20000        | 30000      | [e5]             | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-10 @VS-04 @tumble @late
  Scenario Outline: Scenario 3 with MAX_EVENT_TIME and a 3 s delay equals MIN_EVENT_TIME (<mode>)
    # Effective watermark 2 s, 9 s, 9 s, 22 s. VS-04: MAX_EVENT_TIME with delay D + S (S = 3 s,
    # the spread of batch 2) is as conservative as MIN_EVENT_TIME with delay D = 0 (VS-09).
    Given the stream "events3", arriving in this order:
      | user | event | ts:bigint | batch |
      | u1   | e1    | 2000      | 1     |
      | u1   | e2    | 5000      | 1     |
      | u1   | e4    | 12000     | 2     |
      | u1   | e6    | 9000      | 2     |
      | u1   | e3    | 8000      | 3     |
      | u1   | e5    | 25000     | 4     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events3 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 3 SECONDS
                    WITH (watermark_strategy = 'max_event_time', arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events           | after batch |
      | u1   | 0            | 10000      | [e1, e2, e3, e6] | 4           |
      | u1   | 10000        | 20000      | [e4]             | 4           |
      | u1   | 20000        | 30000      | [e5]             | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-04 @tumble @processing_time
  Scenario Outline: The strategy matters only when time comes from the rows (<mode>)
    # With processing time both strategies see the same clock: the same windows as VS-05.
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user
                    WITH (watermark_strategy = '<strategy>',
                          arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(PROCTIME()), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | window_start | window_end | events           |
      | u1   | 0            | 10000      | [e1, e2, e4, e3] |
      | u1   | 10000        | 20000      | [e5]             |

    Examples:
      | mode      | strategy       |
      | replay    | min_event_time |
      | replay    | max_event_time |
      | streaming | max_event_time |

  @VS-11 @tumble @idle
  Scenario Outline: Scenario 4, a quiet key is flushed after its idle timeout (<mode>)
    # The scenario-3 rows without e5, MAX_EVENT_TIME, delay 3 s: the effective watermark stays at
    # 9 s and nothing closes. The idle timeout is measured on processing time (the recorded `proc`
    # clock): at 309 s another user's row shows the pipeline busy 5 minutes after u1's last row,
    # and u1's windows are emitted (firing 'final': closed by the timeout, not by time).
    Given the stream "events4", arriving in this order:
      | user | event | ts:bigint | batch | proc:bigint |
      | u1   | e1    | 2000      | 1     | 7000        |
      | u1   | e2    | 5000      | 1     | 7000        |
      | u1   | e4    | 12000     | 2     | 8000        |
      | u1   | e6    | 9000      | 2     | 8000        |
      | u1   | e3    | 8000      | 3     | 9000        |
      | u2   | x1    | 300000    | 4     | 309000      |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events4 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 3 SECONDS
                    WITH (watermark_strategy = 'max_event_time', idle_timeout = INTERVAL 5 MINUTES,
                          arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | events           | firing | after batch |
      | u1   | 0            | 10000      | [e1, e2, e3, e6] | final  | 4           |
      | u1   | 10000        | 20000      | [e4]             | final  | 4           |
      | u2   | 300000       | 310000     | [x1]             | final  | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-12 @tumble @idle
  Scenario Outline: The idle timeout measured on event time (<mode>)
    # idle_clock = 'event_time': a key is idle once the stream's newest event time is the timeout
    # past the key's own newest. sqlwin's default clock is processing time (scenario 4's wording:
    # "by default silence is measured against the worker's wall clock").
    Given the stream "events5", arriving in this order:
      | user | ts:bigint | batch |
      | u1   | 2000      | 1     |
      | u2   | 200000    | 2     |
      | u2   | 302000    | 3     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS n
      FROM TUMBLE(TABLE events5 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (idle_timeout = INTERVAL 5 MINUTES, idle_clock = 'event_time',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | n | firing  | after batch |
      | u1   | 0            | 10000      | 1 | final   | 3           |
      | u2   | 200000       | 210000     | 1 | on_time | 3           |
      | u2   | 300000       | 310000     | 1 | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-13 @tumble
  Scenario Outline: A future outlier holds its own window until the watermark reaches it (<mode>)
    # MIN_EVENT_TIME: e_future (95 s) arrives with 6 s, so the watermark only moves to 6 s; its
    # window [90 s, 100 s) is kept until the watermark reaches 100 s in batch 4.
    Given the stream "events6", arriving in this order:
      | event    | ts:bigint | batch |
      | e1       | 2000      | 1     |
      | e2       | 5000      | 1     |
      | e_future | 95000     | 2     |
      | e3       | 6000      | 2     |
      | e4       | 12000     | 3     |
      | e5       | 100000    | 4     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events6 WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time', arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY window_start, window_end
      """
    Then each result is emitted after batch:
      | window_start | window_end | events       | after batch |
      | 0            | 10000      | [e1, e2, e3] | 3           |
      | 10000        | 20000      | [e4]         | 4           |
      | 90000        | 100000     | [e_future]   | 4           |
      | 100000       | 110000     | [e5]         | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-15 @tumble @late
  Scenario Outline: Without a late output, late rows are dropped (and counted) (<mode>)
    # Scenario 1 again, without LATE ROWS INTO: e3 is simply not in any result.
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time', arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | window_start | window_end | events   |
      | u1   | 0            | 10000      | [e1, e2] |
      | u1   | 10000        | 20000      | [e4]     |
      | u1   | 20000        | 30000      | [e5]     |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-15 @tumble @late
  Scenario Outline: With a late output, late rows go there (<mode>)
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(event) AS events
      FROM TUMBLE(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'min_event_time', arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then the late rows are:
      | user | event | ts   | batch | late_by | window_start | window_end | reason |
      | u1   | e3    | 8000 | 3     | 4000    | 0            | 10000      | late   |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-16 @tumble
  Scenario Outline: Without rows for a key its event-time watermark does not move (<mode>)
    # Batch 1's rows are checked against the watermark before the batch, so 2 s is on time next to
    # 12 s; the watermark becomes 12 s and closes [0, 10 s). Five minutes of processing time pass
    # with rows of another user only: u1's [10 s, 20 s) stays open until the input ends.
    Given the stream "events7", arriving in this order:
      | user | ts:bigint | batch | proc:bigint |
      | u1   | 2000      | 1     | 1000        |
      | u1   | 12000     | 1     | 1000        |
      | u2   | 400000    | 2     | 300000      |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS n
      FROM TUMBLE(TABLE events7 PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (watermark_strategy = 'max_event_time',
                          arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 SECONDS)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start | window_end | n | after batch |
      | u1   | 0            | 10000      | 1 | 1           |
      | u1   | 10000        | 20000      | 1 | end         |
      | u2   | 400000       | 410000     | 1 | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @VS-17 @session @error
  Scenario: A session window needs an inactivity bound
    # VoltSP requires an idle timeout for a session window; in sqlwin the SESSION gap is that bound.
    Given the table "clicks":
      | user | ts:bigint |
      | u1   | 2000      |
    When I run the query expecting an error:
      """
      SELECT user, window_start, window_end, count(*) AS n
      FROM SESSION(TABLE clicks PARTITION BY user, DESCRIPTOR(ts))
      GROUP BY user, window_start, window_end
      """
    Then it fails with a validation error at line 2, column 6: "SESSION"

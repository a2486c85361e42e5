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

  @VS-05 @VS-12
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

  @VS-06
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

  @VS-07
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

  @VS-14
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

  @VS-14
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

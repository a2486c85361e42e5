@bytewax
Feature: Bytewax clocks, watermarks and late data (seeds/000_b053eec30e33ac17.txt)
  Bytewax's event clock: the watermark is the newest timestamp minus the wait, plus the system
  time elapsed since that timestamp was seen; it never goes backwards; a row before the
  watermark is late and joins no window (watermark_strategy = 'bytewax', lateness_rule =
  'before_watermark'). Every key has its own clock. Rows are listed in arrival order; `sys` is
  the system time at which each arrived (arrival_time). Each scenario runs as a replay and as a
  Structured Streaming query fed one micro-batch per row (or per `batch`). Where system time
  plays no part, Bytewax's clock with still system time is the newest timestamp − wait, which
  is 'max_event_time' with DELAY OF the wait: those scenarios say so, and stay deterministic
  when run as a live stream (a 'bytewax' clock without `sys` would age with the wall clock).

  @BW-01 @tumble @late
  Scenario Outline: The event clock in real time: waiting advances the watermark (<mode>)
    # The document's table is lost; this one is rebuilt from its definition, wait = 5 minutes,
    # 10-minute tumbling windows (times are 2023-12-14; the watermark is the one a row meets):
    #   current watermark         | incoming | possible watermark  | resulting watermark
    #   (none)                    | 00:00    | 00:00 - 5m = 23:55  | 23:55 (00:00 seen at 12:00)
    #   23:55 + 1m = 23:56        | 00:03    | 00:03 - 5m = 23:58  | 23:58 (00:03 seen at 12:01)
    #   23:58 + 5m = 00:03        | 00:01    | late: 00:01 < 00:03 | 00:03
    #   00:03                     | 00:04    | 23:59 (not ahead)   | 00:03
    #   00:03 + 1m = 00:04        | 00:15    | 00:10               | 00:10: [00:00, 00:10) closes
    # In a replay without system time (BW-02) 00:01 would be on time: here 5 minutes of real
    # waiting moved the watermark past it.
    Given the stream "readings", arriving in this order:
      | user | ts                  | sys                 |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 12:00:00 |
      | u1   | 2023-12-14 00:03:00 | 2023-12-14 12:01:00 |
      | u1   | 2023-12-14 00:01:00 | 2023-12-14 12:06:00 |
      | u1   | 2023-12-14 00:04:00 | 2023-12-14 12:06:00 |
      | u1   | 2023-12-14 00:15:00 | 2023-12-14 12:07:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS readings
      FROM TUMBLE(TABLE readings PARTITION BY user WATERMARK ts DELAY OF INTERVAL 5 MINUTES
                    WITH (watermark_strategy = 'bytewax', lateness_rule = 'before_watermark',
                          arrival_order = arrival, arrival_time = sys),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_readings
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | readings | after batch |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 3        | 5           |
      | u1   | 2023-12-14 00:10:00 | 2023-12-14 00:20:00 | 1        | end         |
    And the late rows are:
      | user | ts                  | late_by:double  | window_start        | window_end          |
      | u1   | 2023-12-14 00:01:00 | 120             | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-02 @tumble @late
  Scenario Outline: Batch replay: only new timestamps push the watermark (<mode>)
    # A replay reads the rows much faster than real time: the system time (`sys`) does not move,
    # so the clock never ages and the wait is the out-of-orderness tolerated. 00:01 is 2 minutes
    # behind the newest timestamp: on time. 00:02 arrives after 00:15 (13 minutes behind, more
    # than the 5-minute wait): late, as it would be in real time. (Without arrival_time a replay
    # also keeps system time still; a live stream would read the wall clock.)
    Given the stream "readings", arriving in this order:
      | user | ts                  | sys                 |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 12:00:00 |
      | u1   | 2023-12-14 00:03:00 | 2023-12-14 12:00:00 |
      | u1   | 2023-12-14 00:01:00 | 2023-12-14 12:00:00 |
      | u1   | 2023-12-14 00:15:00 | 2023-12-14 12:00:00 |
      | u1   | 2023-12-14 00:02:00 | 2023-12-14 12:00:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS readings
      FROM TUMBLE(TABLE readings PARTITION BY user WATERMARK ts DELAY OF INTERVAL 5 MINUTES
                    WITH (watermark_strategy = 'bytewax', lateness_rule = 'before_watermark',
                          arrival_order = arrival, arrival_time = sys),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_readings
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | readings | after batch |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 3        | 4           |
      | u1   | 2023-12-14 00:10:00 | 2023-12-14 00:20:00 | 1        | end         |
    And the late rows are:
      | user | ts                  | window_start        | window_end          |
      | u1   | 2023-12-14 00:02:00 | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-03 @BW-12 @tumble @late
  Scenario Outline: An unbounded wait: nothing is late, every window closes at end of input (<mode>)
    # Input sorted by user, not by time: with wait = timedelta.max (DELAY OF UNBOUNDED) and one
    # clock for the stream, no row is late and every window is emitted when the input ends.
    Given the stream "visits", arriving in this order:
      | user  | ts                  |
      | alice | 2023-12-14 02:10:00 |
      | alice | 2023-12-14 00:05:00 |
      | bob   | 2023-12-14 01:30:00 |
      | bob   | 2023-12-14 00:01:00 |
      | carol | 2023-12-14 00:20:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS visits
      FROM TUMBLE(TABLE visits WATERMARK ts DELAY OF UNBOUNDED
                    WITH (watermark_strategy = 'max_event_time', lateness_rule = 'before_watermark',
                          arrival_order = arrival),
                  DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_visits
      """
    Then each result is emitted after batch:
      | user  | window_start        | window_end          | visits | firing | after batch |
      | alice | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1      | final  | end         |
      | alice | 2023-12-14 02:00:00 | 2023-12-14 03:00:00 | 1      | final  | end         |
      | bob   | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1      | final  | end         |
      | bob   | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 1      | final  | end         |
      | carol | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1      | final  | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-08 @session @late
  Scenario Outline: ⚠ A row arriving out of order that bridges two sessions merges them (<mode>)
    # The document: "Currently, session windows do not support out-of-order data. Out of order
    # data will be placed in their own sessions rather than merging adjacent sessions." That is a
    # Bytewax limitation; sqlwin merges instead (as Apex's AP-05 and Spark do): a row that
    # arrives late but not before the watermark joins, extends and bridges sessions. The
    # document's rows with a 30-minute gap and wait, plus X at 00:30, which arrives after 2A:
    # the watermark is then 00:20, X is on time, and its [00:30, 01:00) overlaps [00:00, 00:45)
    # and [00:50, 01:20), so the first two sessions become one. 3A, exactly one gap after 2B,
    # starts its own session (BW-07). 4A moves the watermark to 02:10 and closes both.
    # A row before the watermark is late and joins nothing (BX-07).
    Given the stream "events", arriving in this order:
      | user | id | ts                  | batch |
      | u    | 1A | 2023-12-14 00:00:00 | 1     |
      | u    | 1B | 2023-12-14 00:10:00 | 1     |
      | u    | 1C | 2023-12-14 00:15:00 | 1     |
      | u    | 2A | 2023-12-14 00:50:00 | 2     |
      | u    | X  | 2023-12-14 00:30:00 | 3     |
      | u    | 2B | 2023-12-14 01:00:00 | 4     |
      | u    | 3A | 2023-12-14 01:30:00 | 4     |
      | u    | 4A | 2023-12-14 02:40:00 | 5     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(id) AS ids
      FROM SESSION(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 30 MINUTES
                     WITH (watermark_strategy = 'max_event_time', lateness_rule = 'before_watermark',
                           arrival_order = arrival, arrival_batch = batch),
                   DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | ids                          | after batch |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 01:30:00 | [1A, 1B, 1C, X, 2A, 2B]      | 5           |
      | u    | 2023-12-14 01:30:00 | 2023-12-14 02:00:00 | [3A]                         | 5           |
      | u    | 2023-12-14 02:40:00 | 2023-12-14 03:10:00 | [4A]                         | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-09 @tumble @late
  Scenario Outline: Each key has its own clock: another key's rows never close a key's window (<mode>)
    # bob's row two hours later moves only bob's watermark; alice's late-arriving 00:20 still
    # lands in her open [00:00, 01:00) window.
    Given the stream "visits", arriving in this order:
      | user  | ts                  |
      | alice | 2023-12-14 00:05:00 |
      | bob   | 2023-12-14 02:10:00 |
      | alice | 2023-12-14 00:20:00 |
      | alice | 2023-12-14 01:10:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS visits
      FROM TUMBLE(TABLE visits PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 MINUTES
                    WITH (watermark_strategy = 'max_event_time', lateness_rule = 'before_watermark',
                          arrival_order = arrival),
                  DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_visits
      """
    Then each result is emitted after batch:
      | user  | window_start        | window_end          | visits | after batch |
      | alice | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 2      | 4           |
      | alice | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 1      | end         |
      | bob   | 2023-12-14 02:00:00 | 2023-12-14 03:00:00 | 1      | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-10 @tumble
  Scenario Outline: A windowing operator emits only after a window closes (<mode>)
    # EMIT FINAL is the default: nothing after batch 1, [00:00, 00:10) once 00:12 closes it.
    Given the stream "readings", arriving in this order:
      | user | ts                  | batch |
      | u1   | 2023-12-14 00:00:00 | 1     |
      | u1   | 2023-12-14 00:05:00 | 1     |
      | u1   | 2023-12-14 00:12:00 | 2     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS readings
      FROM TUMBLE(TABLE readings PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 MINUTES
                    WITH (watermark_strategy = 'max_event_time', lateness_rule = 'before_watermark',
                          arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | readings | firing  | after batch |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 2        | on_time | 2           |
      | u1   | 2023-12-14 00:10:00 | 2023-12-14 00:20:00 | 1        | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-11 @tumble @late @processing_time
  Scenario Outline: System time: each row's time is when it is processed; nothing is late (<mode>)
    # The rows' own timestamps are out of order and ignored: windows follow the system clock.
    Given the stream "readings", arriving in this order:
      | user | ts                  | sys                 |
      | u1   | 2023-12-14 05:00:00 | 2023-12-14 12:01:00 |
      | u1   | 2023-12-14 01:00:00 | 2023-12-14 12:04:00 |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 12:12:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS readings
      FROM TUMBLE(TABLE readings PARTITION BY user
                    WITH (arrival_order = arrival, arrival_time = sys),
                  DESCRIPTOR(PROCTIME()), INTERVAL 10 MINUTES)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_readings
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | readings | after batch |
      | u1   | 2023-12-14 12:00:00 | 2023-12-14 12:10:00 | 2        | 3           |
      | u1   | 2023-12-14 12:10:00 | 2023-12-14 12:20:00 | 1        | end         |
    And no row is late

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BW-13 @tumble @restart
  Scenario Outline: A query restarted from its checkpoint mid-window emits what an uninterrupted run does (<mode>)
    # sqlwin promises more than the document's "as gracefully as possible": with event time, a
    # stream stopped after batch 2 (both windows open) and restarted from its checkpoint loses
    # nothing and emits nothing twice. Processing time is not deterministic across a restart (the
    # document's 15-minute example): the clock moves while the query is down.
    Given the stream "readings", arriving in this order:
      | user | ts                  | batch |
      | u1   | 2023-12-14 00:01:00 | 1     |
      | u2   | 2023-12-14 00:02:00 | 1     |
      | u1   | 2023-12-14 00:04:00 | 2     |
      | u1   | 2023-12-14 00:11:00 | 3     |
      | u2   | 2023-12-14 00:25:00 | 4     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS readings
      FROM TUMBLE(TABLE readings PARTITION BY user WATERMARK ts DELAY OF INTERVAL 0 MINUTES
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | readings | after batch |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 2        | 3           |
      | u2   | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 1        | 4           |
      | u1   | 2023-12-14 00:10:00 | 2023-12-14 00:20:00 | 1        | end         |
      | u2   | 2023-12-14 00:20:00 | 2023-12-14 00:30:00 | 1        | end         |

    Examples:
      | mode                             |
      | replay                           |
      | streaming                        |
      | streaming restarted after batch 2 |

@apex
Feature: Apache Apex Malhar WindowedOperator window options (seeds/004_fe0ac8e13c6d6895.txt)
  Global, time and sliding time windows over finished tables; keyed and non-keyed state, session
  windows, triggers and accumulation modes over streams.
  The document gives no data and no results for these: every table below is ours, the smallest
  that shows what the document describes. Scenarios on a "stream" list rows in arrival order and
  run twice, as a replay and as a Structured Streaming query fed one micro-batch per batch.
  Apex's watermark is one control tuple for the whole operator, keyed or not: a key's rows are
  windowed separately, but one watermark says which windows are late. The streams here have one
  key, or no PARTITION BY (one clock for the stream), which is the same thing. The document's
  fixed watermark is 10 s behind ingestion time (AP-06); here it is 10 s behind the newest event
  time (DELAY OF INTERVAL 10 SECONDS), which the recorded streams make deterministic.

  @AP-02 @global
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

  @AP-02 @global
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

  @AP-03 @tumble
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

  @AP-04 @hop
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

  @AP-01 @tumble
  Scenario: A non-keyed windowed aggregation: one state per window, whatever the key
    # "State storage, accumulation and triggers behave differently based on whether or not the
    # operator is keyed ... For non-keyed WindowedOperator, the state is per window." Without a
    # key in GROUP BY, a's and b's rows of [10:00, 10:10) share one sum.
    Given the table "readings":
      | sensor | value | ts                  |
      | a      | 1     | 2024-01-01 10:01:00 |
      | b      | 2     | 2024-01-01 10:02:00 |
      | a      | 4     | 2024-01-01 10:12:00 |
    When I run the query:
      """
      SELECT window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start        | window_end          | total |
      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     |
      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     |

  @AP-01 @tumble
  Scenario: A keyed windowed aggregation: one state per key and window
    # "For keyed WindowedOperator, the state is per key per window." The same rows, keyed by
    # sensor: a and b each have their own [10:00, 10:10).
    Given the table "readings":
      | sensor | value | ts                  |
      | a      | 1     | 2024-01-01 10:01:00 |
      | b      | 2     | 2024-01-01 10:02:00 |
      | a      | 4     | 2024-01-01 10:12:00 |
    When I run the query:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      """
    Then the result is:
      | sensor | window_start        | window_end          | total |
      | a      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     |
      | b      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 2     |
      | a      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     |

  @AP-01 @AP-08 @tumble @emit_early
  Scenario Outline: A keyed operator fires per key and window: early every 2 rows counts a key's rows (<mode>)
    # "For the non-keyed WindowedOperator, triggers are fired on a per-window basis. For the keyed
    # WindowedOperator, triggers are fired on a per-key-per-window basis." A count-based early
    # trigger (EARLY EVERY 2 ROWS) counts the rows of each key's window: batch 1 brings one row
    # of a and one of b, so nothing fires (a non-keyed operator would fire [10:00, 10:10) here,
    # with 2 rows); a's second row fires a's window early in batch 2. One watermark for the
    # operator (no PARTITION BY: one clock), 10 s behind the newest time: b's row at 10:12 moves
    # it to 10:11:50, and both keys' [10:00, 10:10) get their on-time firing ("a trigger is fired
    # for a window when the window is flipped from being early to being late"); a's repeats its
    # early value, accumulating. b's [10:10, 10:20) closes at the end of input.
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch |
      | a      | 1     | 2024-01-01 10:01:00 | 1     |
      | b      | 2     | 2024-01-01 10:02:00 | 1     |
      | a      | 4     | 2024-01-01 10:03:00 | 2     |
      | b      | 8     | 2024-01-01 10:12:00 | 2     |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT EARLY EVERY 2 ROWS
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | after batch |
      | a      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 5     | +I | early   | 2           |
      | a      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 5     | +U | on_time | 2           |
      | b      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 2     | +I | on_time | 2           |
      | b      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 8     | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-05 @session @emit_changes @retracting
  Scenario Outline: Session windows with a 1 h minimum gap: the four cases, with retractions (<mode>)
    # Upon arrival of a row, its proto-session [t, t + 1 h) is checked against the key's sessions
    # (a session is [first row, last row + gap)):
    #   A 10:00: overlaps none: "the proto-session window is in effect": [10:00, 11:00).
    #   B 10:40: "overlaps with one existing session window": a new, longer session [10:00, 11:40)
    #     replaces it, and "a retraction trigger for the old window will be fired" ('-D').
    #   C 10:20: [10:20, 11:20) "can be fit into an existing SessionWindow ... without change":
    #     the session keeps its bounds, its value changes ('-U' then '+U').
    #   D 12:00: overlaps none ([10:00, 11:40) ends before it): a new session [12:00, 13:00).
    #   E 11:30: [11:30, 12:30) "overlaps with two existing session windows": one session
    #     [10:00, 13:00) with both states plus E; "the two existing SessionWindows will be deleted
    #     and retraction triggers for the two deleted windows will be fired" (two '-D').
    # A 1 h delay keeps every session open while this happens; EMIT CHANGES fires after every row.
    Given the stream "clicks", arriving in this order:
      | user | id | ts                  |
      | u    | A  | 2024-01-01 10:00:00 |
      | u    | B  | 2024-01-01 10:40:00 |
      | u    | C  | 2024-01-01 10:20:00 |
      | u    | D  | 2024-01-01 12:00:00 |
      | u    | E  | 2024-01-01 11:30:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(id) AS ids
      FROM SESSION(TABLE clicks PARTITION BY user WATERMARK ts DELAY OF INTERVAL 1 HOUR
                     WITH (arrival_order = arrival),
                   DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      EMIT CHANGES RETRACTING
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | ids             | op | after batch |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:00:00 | [A]             | +I | 1           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:00:00 | [A]             | -D | 2           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:40:00 | [A, B]          | +I | 2           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:40:00 | [A, B]          | -U | 3           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:40:00 | [A, C, B]       | +U | 3           |
      | u    | 2024-01-01 12:00:00 | 2024-01-01 13:00:00 | [D]             | +I | 4           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 11:40:00 | [A, C, B]       | -D | 5           |
      | u    | 2024-01-01 12:00:00 | 2024-01-01 13:00:00 | [D]             | -D | 5           |
      | u    | 2024-01-01 10:00:00 | 2024-01-01 13:00:00 | [A, C, B, E, D] | +I | 5           |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-08 @AP-10 @tumble @late @emit_early
  Scenario Outline: The document's triggers: early every 10 s, on time at the watermark, late every row; accumulating (<mode>)
    # TriggerOption.AtWatermark().withEarlyFiringsAtEvery(Duration.standardSeconds(10))
    #   .withLateFiringsAtEvery(1), with 10-minute time windows and "allowed lateness to be one hour".
    # Time-based triggers: Apex fires them "based on the implicit timestamp from the Apex streaming
    # windows, not based on the wall clock time ... only at the Apex streaming window boundary",
    # and processes watermarks only there too. sqlwin does the same at micro-batch boundaries:
    # EARLY EVERY INTERVAL ticks at multiples of 10 s of the processing (arrival) clock, which a
    # replay and this stream read from the recorded `proc` (WITH arrival_time = proc); a tick due
    # by a batch's arrival fires, before the batch's rows are applied, the open windows that got
    # rows since their last firing (several missed ticks fire once); the watermark moves when a
    # batch commits. Batch 2 arrives at 12:00:12: the tick at 12:00:10 fires [10:00, 10:10) with
    # the row of batch 1 (early, 1); then 10:12 moves the watermark to 10:11:50 and the window
    # flips to late: its on-time firing (3). Batch 3's rows are late but within the hour: each
    # fires the window again (late every 1 row), the second with a value of 0, unchanged.
    # [10:10, 10:20) got its row after the tick and closes at the end of input.
    # ACCUMULATING: "the state of the window is preserved until purged", every firing is the
    # whole window (the first '+I', later ones '+U').
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch | proc                |
      | s      | 1     | 2024-01-01 10:01:00 | 1     | 2024-01-01 12:00:01 |
      | s      | 2     | 2024-01-01 10:02:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 4     | 2024-01-01 10:12:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 8     | 2024-01-01 10:05:00 | 3     | 2024-01-01 12:00:15 |
      | s      | 0     | 2024-01-01 10:06:00 | 3     | 2024-01-01 12:00:15 |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT EARLY EVERY INTERVAL 10 SECONDS ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1 ROW
           ACCUMULATING
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | after batch |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | +I | early   | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     | +U | on_time | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 11    | +U | late    | 3           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 11    | +U | late    | 3           |
      | s      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-10 @tumble @late @emit_early
  Scenario Outline: The same triggers discarding: each firing holds only the rows since the last (<mode>)
    # "DISCARDING: The state of the window is discarded after firing of a trigger": the early
    # firing holds 1, the on-time firing only the row that came after it (2), each late firing its
    # own row (8, then 0). Every firing is a new pane ('+I').
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch | proc                |
      | s      | 1     | 2024-01-01 10:01:00 | 1     | 2024-01-01 12:00:01 |
      | s      | 2     | 2024-01-01 10:02:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 4     | 2024-01-01 10:12:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 8     | 2024-01-01 10:05:00 | 3     | 2024-01-01 12:00:15 |
      | s      | 0     | 2024-01-01 10:06:00 | 3     | 2024-01-01 12:00:15 |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT EARLY EVERY INTERVAL 10 SECONDS ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1 ROW
           DISCARDING
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | after batch |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | +I | early   | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 2     | +I | on_time | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 8     | +I | late    | 3           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 0     | +I | late    | 3           |
      | s      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-10 @tumble @late @emit_early @retracting
  Scenario Outline: ⚠ The same triggers retracting: a changed firing is preceded by the retraction of the previous one (<mode>)
    # ⚠ The document's list names "ACCUMULATING_AND_DISCARDING", its definitions and code
    # ACCUMULATING_AND_RETRACTING: encoded RETRACTING. "The state of the window is preserved until
    # purged, but if the state has changed upon a trigger compared to the previous trigger, an
    # additional retraction trigger is fired." sqlwin writes the retraction first ('-U' with the
    # previous values, then '+U'), as a changelog needs; emit_seq gives the order.
    # ⚠ The second late firing (the row of value 0) does not change the state. By the document's
    # words that trigger still fires, without a retraction ('+U' 11 a second time); Apex's code
    # fires a retraction and the firing ('-U' 11, '+U' 11). sqlwin's RETRACTING is a changelog
    # and says nothing when nothing changed, as Flink's retract streams: a '+U' without its '-U'
    # would break a retract-stream consumer, and '-U 11, +U 11' is noise. A query that wants
    # every trigger's firing uses ACCUMULATING (the scenario above: the repeated 11 is there).
    # Encoded: sqlwin's reading.
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch | proc                |
      | s      | 1     | 2024-01-01 10:01:00 | 1     | 2024-01-01 12:00:01 |
      | s      | 2     | 2024-01-01 10:02:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 4     | 2024-01-01 10:12:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 8     | 2024-01-01 10:05:00 | 3     | 2024-01-01 12:00:15 |
      | s      | 0     | 2024-01-01 10:06:00 | 3     | 2024-01-01 12:00:15 |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT EARLY EVERY INTERVAL 10 SECONDS ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1 ROW
           RETRACTING
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | emit_seq | after batch |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | +I | early   | 1        | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | -U | on_time | 2        | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     | +U | on_time | 3        | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     | -U | late    | 4        | 3           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 11    | +U | late    | 5        | 3           |
      | s      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     | +I | final   | 6        | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-09 @tumble @late @emit_early
  Scenario Outline: Firing only updated panes: a firing whose value has not changed is not emitted (<mode>)
    # fireOnlyUpdatedPanes: "not fire a trigger if the trigger value is the same as the value of
    # the previous trigger" (ONLY UPDATED). The accumulating scenario's input: the second late
    # row (value 0) fires [10:00, 10:10) with 11 again, which is not emitted here; a firing with
    # a new value is (the late firing of 11 after the on-time 3).
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch | proc                |
      | s      | 1     | 2024-01-01 10:01:00 | 1     | 2024-01-01 12:00:01 |
      | s      | 2     | 2024-01-01 10:02:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 4     | 2024-01-01 10:12:00 | 2     | 2024-01-01 12:00:12 |
      | s      | 8     | 2024-01-01 10:05:00 | 3     | 2024-01-01 12:00:15 |
      | s      | 0     | 2024-01-01 10:06:00 | 3     | 2024-01-01 12:00:15 |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT EARLY EVERY INTERVAL 10 SECONDS ALLOWED LATENESS INTERVAL 1 HOUR LATE EVERY 1 ROW
           ACCUMULATING ONLY UPDATED
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | after batch |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | +I | early   | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     | +U | on_time | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 11    | +U | late    | 3           |
      | s      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 4     | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-07 @AP-13 @tumble @late @restart
  Scenario Outline: An hour of allowed lateness: late rows update kept windows, then the windows are purged; a restart fires the same (<mode>)
    # AP-07: "If a tuple has a timestamp that lies beyond the lateness horizon, it is dropped ...
    # if a window completely lies beyond the lateness horizon as a result of the arrival of a new
    # watermark, the window along with its state is purged" -- the document's one hour. The
    # horizon is the watermark - 1 hour. 10:05 (batch 3) is late for [10:00, 10:10), closed at
    # 10:15 but kept: a late firing updates it. 11:30 (batch 4) moves the watermark past
    # 10:10 + 1 h and 10:20 + 1 h: both windows are purged (the second right after its on-time
    # firing). 10:08 (batch 5) then lies beyond the horizon: dropped, listed as a late row.
    # AP-13: "idempotent processing ... re-running from a checkpoint emits the same rows, in the
    # same firings": the stream stopped after batch 2 -- one window kept for lateness, one open --
    # and restarted from its checkpoint emits every row with the same op, firing and emit_seq as
    # the uninterrupted stream and the replay. Our data (the document has none).
    Given the stream "readings", arriving in this order:
      | sensor | value | ts                  | batch |
      | s      | 1     | 2024-01-01 10:01:00 | 1     |
      | s      | 2     | 2024-01-01 10:15:00 | 2     |
      | s      | 4     | 2024-01-01 10:05:00 | 3     |
      | s      | 8     | 2024-01-01 11:30:00 | 4     |
      | s      | 16    | 2024-01-01 10:08:00 | 5     |
    When I run the query in <mode> mode:
      """
      SELECT sensor, window_start, window_end, sum(value) AS total
      FROM TUMBLE(TABLE readings PARTITION BY sensor WATERMARK ts DELAY OF INTERVAL 0 MINUTES
                    WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      EMIT FINAL ALLOWED LATENESS INTERVAL 1 HOUR
      LATE ROWS INTO late_readings
      """
    Then each result is emitted after batch:
      | sensor | window_start        | window_end          | total | op | firing  | emit_seq | after batch |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 1     | +I | on_time | 1        | 2           |
      | s      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 5     | +U | late    | 2        | 3           |
      | s      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 2     | +I | on_time | 3        | 4           |
      | s      | 2024-01-01 11:30:00 | 2024-01-01 11:40:00 | 8     | +I | final   | 4        | end         |
    And the late rows are:
      | sensor | value | ts                  | late_by:double | window_start        | window_end          |
      | s      | 16    | 2024-01-01 10:08:00 | 4920           | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 |

    Examples:
      | mode                              |
      | replay                            |
      | streaming                         |
      | streaming restarted after batch 2 |

  @AP-06 @tumble @late
  Scenario Outline: A watermark a fixed 10 s behind ingestion time: windows before it close, rows for them are late (<mode>)
    # "A watermark is a control tuple that contains a timestamp ... all the windows that lie
    # completely before the watermark timestamp are considered late" -- the document's figure is
    # a watermark "fixed 10 seconds behind the ingestion time". watermark_strategy =
    # 'ingestion_time' makes the watermark the processing time (here the recorded arrival time,
    # the ingestion time) minus the delay, whatever the rows' own times. Processing time reaching
    # 12:01:15 closes [12:00, 12:01), although no row newer than 12:01:05 arrived; e3 (12:00:50,
    # ingested 12:01:20) is then 20 s late. With the default max_event_time strategy and the same
    # delay, [12:00, 12:01) would still be open (12:01:05 - 10 s) and take e3. Our data.
    Given the stream "events", arriving in this order:
      | id | ts                  | proc                |
      | e1 | 2024-01-01 12:00:02 | 2024-01-01 12:00:05 |
      | e2 | 2024-01-01 12:01:05 | 2024-01-01 12:01:15 |
      | e3 | 2024-01-01 12:00:50 | 2024-01-01 12:01:20 |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, count(*) AS events
      FROM TUMBLE(TABLE events WATERMARK ts DELAY OF INTERVAL 10 SECONDS
                    WITH (watermark_strategy = 'ingestion_time', arrival_order = arrival, arrival_time = proc),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE)
      GROUP BY window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | window_start        | window_end          | events | after batch |
      | 2024-01-01 12:00:00 | 2024-01-01 12:01:00 | 1      | 2           |
      | 2024-01-01 12:01:00 | 2024-01-01 12:02:00 | 1      | end         |
    And the late rows are:
      | id | ts                  | late_by:double | window_start        | window_end          |
      | e3 | 2024-01-01 12:00:50 | 20             | 2024-01-01 12:00:00 | 2024-01-01 12:01:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-12 @tumble @join
  Scenario Outline: Merging two streams: a windowed inner join per key, under the earlier of the two watermarks (<mode>)
    # "The WindowedMergeOperator ... takes two incoming data streams ... Examples of this type of
    # accumulation are InnerJoin and Cogroup ... Its watermark timestamp is the earlier watermark
    # timestamp between the two input streams." The document gives no data; ours: names and
    # emails of users, one arrival sequence over both inputs. The inner join gives every pair of a
    # user's rows in the same minute (SQL's join, as Flink's window join). After batch 3 the names
    # are at 00:01:10 but the emails only at 00:00:55: the merged watermark (00:00:55) keeps
    # [00:00, 00:01) open, so b@x (00:00:58, batch 4) is on time and joins Bob. One watermark
    # over both inputs (the later, 00:01:10) would have closed the window after batch 3 and
    # dropped b@x as late. Batch 4 takes both inputs past 00:01:00 (00:01:20, 00:01:05): the
    # window closes; [00:01, 00:02) closes at the end of input. Cid (uid 3) and d@z (uid 4) have
    # no partner: an inner join drops them.
    Given the stream "names", arriving in this order:
      | uid | name | ts                  | batch | arrival |
      | 1   | Ann  | 2024-01-01 00:00:05 | 1     | 1       |
      | 2   | Bob  | 2024-01-01 00:00:10 | 1     | 2       |
      | 1   | Anna | 2024-01-01 00:00:40 | 2     | 4       |
      | 3   | Cid  | 2024-01-01 00:01:10 | 3     | 7       |
      | 2   | Bo   | 2024-01-01 00:01:20 | 4     | 8       |
    And the stream "emails", arriving in this order:
      | uid | email | ts                  | batch | arrival |
      | 1   | a@x   | 2024-01-01 00:00:20 | 1     | 3       |
      | 1   | ann@y | 2024-01-01 00:00:50 | 2     | 5       |
      | 4   | d@z   | 2024-01-01 00:00:55 | 2     | 6       |
      | 2   | b@x   | 2024-01-01 00:00:58 | 4     | 9       |
      | 2   | bo@x  | 2024-01-01 00:01:05 | 4     | 10      |
    When I run the query in <mode> mode:
      """
      SELECT n.uid, n.window_start, n.window_end, n.name, e.email
      FROM TUMBLE(TABLE names WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      JOIN TUMBLE(TABLE emails WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then each result is emitted after batch:
      | uid | window_start        | window_end          | name | email | op | firing  | after batch |
      | 1   | 2024-01-01 00:00:00 | 2024-01-01 00:01:00 | Ann  | a@x   | +I | on_time | 4           |
      | 1   | 2024-01-01 00:00:00 | 2024-01-01 00:01:00 | Ann  | ann@y | +I | on_time | 4           |
      | 1   | 2024-01-01 00:00:00 | 2024-01-01 00:01:00 | Anna | a@x   | +I | on_time | 4           |
      | 1   | 2024-01-01 00:00:00 | 2024-01-01 00:01:00 | Anna | ann@y | +I | on_time | 4           |
      | 2   | 2024-01-01 00:00:00 | 2024-01-01 00:01:00 | Bob  | b@x   | +I | on_time | 4           |
      | 2   | 2024-01-01 00:01:00 | 2024-01-01 00:02:00 | Bo   | bo@x  | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-12 @tumble @join
  Scenario: Merging two finished tables: the same inner join over complete input is Spark's own join
    # Every row is on time over a finished table, and the join is the same.
    Given the table "names":
      | uid:int | name | ts:timestamp        |
      | 1       | Ann  | 2024-01-01 00:00:05 |
      | 2       | Bob  | 2024-01-01 00:00:10 |
      | 1       | Anna | 2024-01-01 00:00:40 |
      | 3       | Cid  | 2024-01-01 00:01:10 |
      | 2       | Bo   | 2024-01-01 00:01:20 |
    And the table "emails":
      | uid:int | email | ts:timestamp        |
      | 1       | a@x   | 2024-01-01 00:00:20 |
      | 1       | ann@y | 2024-01-01 00:00:50 |
      | 4       | d@z   | 2024-01-01 00:00:55 |
      | 2       | b@x   | 2024-01-01 00:00:58 |
      | 2       | bo@x  | 2024-01-01 00:01:05 |
    When I run the query:
      """
      SELECT n.uid, n.window_start, n.name, e.email
      FROM TUMBLE(TABLE names, DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      JOIN TUMBLE(TABLE emails, DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then the result is:
      | uid | window_start        | name | email |
      | 1   | 2024-01-01 00:00:00 | Ann  | a@x   |
      | 1   | 2024-01-01 00:00:00 | Ann  | ann@y |
      | 1   | 2024-01-01 00:00:00 | Anna | a@x   |
      | 1   | 2024-01-01 00:00:00 | Anna | ann@y |
      | 2   | 2024-01-01 00:00:00 | Bob  | b@x   |
      | 2   | 2024-01-01 00:01:00 | Bo   | bo@x  |

  @AP-12 @tumble @join
  Scenario Outline: Merging two streams: a cogroup gathers every value of each input per key and window (<mode>)
    # Apex's Cogroup accumulation: per key and window, all values of each input. In SQL a FULL
    # JOIN with join_insert = 'collect': one row per key and window, each side's columns as arrays
    # in event-time order; an input without rows for the key gives NULL, as a full join does.
    # (Replay here; the inner join above and tests/test_joins.py run the join in streaming.)
    Given the stream "names", arriving in this order:
      | uid | name | ts                  | batch | arrival |
      | 1   | Ann  | 2024-01-01 00:00:05 | 1     | 1       |
      | 2   | Bob  | 2024-01-01 00:00:10 | 1     | 2       |
      | 1   | Anna | 2024-01-01 00:00:40 | 2     | 4       |
      | 3   | Cid  | 2024-01-01 00:01:10 | 3     | 7       |
      | 2   | Bo   | 2024-01-01 00:01:20 | 4     | 8       |
    And the stream "emails", arriving in this order:
      | uid | email | ts                  | batch | arrival |
      | 1   | ann@y | 2024-01-01 00:00:50 | 1     | 3       |
      | 1   | a@x   | 2024-01-01 00:00:20 | 2     | 5       |
      | 4   | d@z   | 2024-01-01 00:00:55 | 2     | 6       |
      | 2   | b@x   | 2024-01-01 00:00:58 | 4     | 9       |
      | 2   | bo@x  | 2024-01-01 00:01:05 | 4     | 10      |
    When I run the query in <mode> mode:
      """
      SELECT coalesce(n.uid, e.uid) AS uid, coalesce(n.window_start, e.window_start) AS window_start,
             n.name AS names, e.email AS emails
      FROM TUMBLE(TABLE names WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch, join_insert = 'collect'),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      FULL JOIN TUMBLE(TABLE emails WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then each result is emitted after batch:
      | uid | window_start        | names       | emails       | after batch |
      | 1   | 2024-01-01 00:00:00 | [Ann, Anna] | [a@x, ann@y] | 4           |
      | 2   | 2024-01-01 00:00:00 | [Bob]       | [b@x]        | 4           |
      | 4   | 2024-01-01 00:00:00 | NULL        | [d@z]        | 4           |
      | 2   | 2024-01-01 00:01:00 | [Bo]        | [bo@x]       | end         |
      | 3   | 2024-01-01 00:01:00 | [Cid]       | NULL         | end         |

    Examples:
      | mode      |
      | replay    |

  @AP-11 @tumble @chain
  Scenario Outline: Window propagation: per-user counts feed a total over the same windows, fired as the upstream windows close (<mode>)
    # "It is possible to chain multiple instances of WindowedOperator and have only the most
    # upstream instance assign the windows and have all downstream instances inherit the same
    # windows of the triggers from the upstream instance." In SQL, Flink's cascading window
    # aggregation: the second window function reads the first one's result over its window_time,
    # which keeps each row in the window it came from. One streaming query runs both stages. With
    # no watermark of its own, the downstream follows the upstream's firings (watermark strategy
    # 'upstream'): [10:00, 10:10) closes upstream after batch 2 (the clock reaches 10:14), and its
    # total fires in the same batch. The document gives no data; ours: two users' clicks.
    Given the stream "clicks", arriving in this order:
      | user | ts                  | batch |
      | u    | 2024-01-01 10:01:00 | 1     |
      | v    | 2024-01-01 10:02:00 | 1     |
      | u    | 2024-01-01 10:05:00 | 1     |
      | u    | 2024-01-01 10:12:00 | 2     |
      | v    | 2024-01-01 10:14:00 | 2     |
      | v    | 2024-01-01 10:25:00 | 3     |
      | u    | 2024-01-01 10:31:00 | 4     |
    When I run the query in <mode> mode:
      """
      WITH per_user AS (
        SELECT user, window_start, window_end, window_time, count(*) AS n
        FROM TUMBLE(TABLE clicks WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                    WITH (arrival_order = arrival, arrival_batch = batch),
                    DESCRIPTOR(ts), INTERVAL 10 MINUTES)
        GROUP BY user, window_start, window_end, window_time)
      SELECT window_start, window_end, sum(n) AS total, count(*) AS users
      FROM TUMBLE(TABLE per_user, DESCRIPTOR(window_time), INTERVAL 10 MINUTES)
      GROUP BY window_start, window_end
      """
    Then each result is emitted after batch:
      | window_start        | window_end          | total | users | after batch |
      | 2024-01-01 10:00:00 | 2024-01-01 10:10:00 | 3     | 2     | 2           |
      | 2024-01-01 10:10:00 | 2024-01-01 10:20:00 | 2     | 2     | 3           |
      | 2024-01-01 10:20:00 | 2024-01-01 10:30:00 | 1     | 1     | 4           |
      | 2024-01-01 10:30:00 | 2024-01-01 10:40:00 | 1     | 1     | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @AP-11 @tumble @chain
  Scenario: Window propagation over a finished table: a coarser downstream window gathers whole upstream windows
    # Over complete input the same chain is Spark SQL over Spark SQL. A 20-minute window over the
    # 10-minute results' window_time holds two whole upstream windows each.
    Given the table "clicks":
      | user | ts:timestamp        |
      | u    | 2024-01-01 10:01:00 |
      | v    | 2024-01-01 10:02:00 |
      | u    | 2024-01-01 10:05:00 |
      | u    | 2024-01-01 10:12:00 |
      | v    | 2024-01-01 10:14:00 |
      | v    | 2024-01-01 10:25:00 |
      | u    | 2024-01-01 10:31:00 |
    When I run the query:
      """
      SELECT window_start, window_end, sum(n) AS total, max(n) AS busiest
      FROM TUMBLE(TABLE (SELECT user, window_time, count(*) AS n
                         FROM TUMBLE(TABLE clicks PARTITION BY user, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
                         GROUP BY user, window_start, window_end, window_time),
                  DESCRIPTOR(window_time), INTERVAL 20 MINUTES)
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start        | window_end          | total | busiest |
      | 2024-01-01 10:00:00 | 2024-01-01 10:20:00 | 5     | 2       |
      | 2024-01-01 10:20:00 | 2024-01-01 10:40:00 | 2     | 1       |

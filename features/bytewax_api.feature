@bytewax
Feature: Bytewax windowing API parameters (seeds/001_ea9afaaf845f71a0.txt)

  @BX-09 @tumble @hop @join
  Scenario: A sliding windower whose offset equals its length is the tumbling windower
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:10:00 |
      | b  | 2023-12-14 01:20:00 |
      | c  | 2023-12-14 01:59:59 |
    When I run the query:
      """
      SELECT h.id, h.window_start, h.window_end, t.window_start AS tumble_start
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 1 HOUR, INTERVAL 1 HOUR) AS h
      JOIN TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL 1 HOUR) AS t
        ON h.id = t.id AND h.window_start = t.window_start AND h.window_end = t.window_end
      """
    Then the result is:
      | id | window_start        | window_end          | tumble_start        |
      | a  | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 2023-12-14 00:00:00 |
      | b  | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 2023-12-14 01:00:00 |
      | c  | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 2023-12-14 01:00:00 |

  @BX-09 @hop
  Scenario: A sliding windower with offset shorter than length overlaps; align_to fixes the origin
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:20:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 20 MINUTES, INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:10:00')
      """
    Then the result is:
      | id | window_start        | window_end          |
      | a  | 2023-12-13 23:30:00 | 2023-12-14 00:30:00 |
      | a  | 2023-12-13 23:50:00 | 2023-12-14 00:50:00 |
      | a  | 2023-12-14 00:10:00 | 2023-12-14 01:10:00 |

  @BX-09 @hop
  Scenario: ⚠ An offset longer than the length is allowed (the API forbids it, the concepts page draws it)
    # sqlwin follows the concepts page (BW-05): windows with gaps, rows in the gaps join no window.
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:30:00 |
      | b  | 2023-12-14 01:10:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 90 MINUTES, INTERVAL 1 HOUR)
      """
    Then the result is:
      | id | window_start        | window_end          |
      | a  | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |

  @BX-10 @session @error
  Scenario: A negative session gap is a clear error with its position
    Given the table "events":
      | user | ts                  |
      | u    | 2023-12-14 00:00:00 |
    When I run the query expecting an error:
      """
      SELECT user, window_start, count(*)
      FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), GAP => INTERVAL -30 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then it fails with a validation error at line 2, column 69: "GAP must be positive"
    And the error says what is accepted: "a positive interval"

  @BX-10 @session @error
  Scenario: A zero session gap is a clear error too
    Given the table "events":
      | user | ts                  |
      | u    | 2023-12-14 00:00:00 |
    When I run the query expecting an error:
      """
      SELECT * FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 0 MINUTES)
      """
    Then it fails with a validation error at line 1, column 71: "GAP must be positive"

  @BX-01 @tumble
  Scenario: Collecting a window's rows: in timestamp order, or in arrival order
    # collect_window gathers a window's values into a list in timestamp order, or in upstream
    # (arrival) order with ordered=False. In SQL collect_list(v) (or array_agg(v)) lists a
    # window's non-NULL values in timestamp order, ties in arrival order; array_agg(v ORDER BY
    # col) (or collect_list(v) WITHIN GROUP (ORDER BY col)) orders them by any column, so ORDER BY
    # the column that records arrival is arrival order. The document gives no data: this table
    # records six rows with their arrival number, out of timestamp order.
    Given the table "events":
      | user | item  | ts                  | arrival |
      | u1   | apple | 2023-12-14 00:05:00 | 1       |
      | u2   | plum  | 2023-12-14 00:20:00 | 2       |
      | u1   | pear  | 2023-12-14 00:01:00 | 3       |
      | u1   | fig   | 2023-12-14 00:03:00 | 4       |
      | u2   | lime  | 2023-12-14 00:10:00 | 5       |
      | u1   | kiwi  | 2023-12-14 01:10:00 | 6       |
    When I run the query:
      """
      SELECT user, window_start, window_end, collect_list(item) AS in_time_order,
             array_agg(item ORDER BY arrival) AS in_arrival_order
      FROM TUMBLE(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | window_start        | window_end          | in_time_order      | in_arrival_order   |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | [pear, fig, apple] | [apple, pear, fig] |
      | u1   | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | [kiwi]             | [kiwi]             |
      | u2   | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | [lime, plum]       | [plum, lime]       |

  @BX-01 @tumble
  Scenario Outline: A stream collects each window in timestamp order and in arrival order (<mode>)
    # The same two lists from a stream: the rows of [00:00, 01:00) arrive out of order (within
    # Bytewax's 10-minute wait, so none is late); kiwi's 01:10 closes the window.
    Given the stream "events", arriving in this order:
      | user | item  | ts                  |
      | u1   | apple | 2023-12-14 00:05:00 |
      | u1   | pear  | 2023-12-14 00:01:00 |
      | u1   | fig   | 2023-12-14 00:03:00 |
      | u1   | kiwi  | 2023-12-14 01:10:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(item) AS in_time_order,
             array_agg(item ORDER BY arrival) AS in_arrival_order
      FROM TUMBLE(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 10 MINUTES
                    WITH (lateness_rule = 'before_watermark', arrival_order = arrival),
                  DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | in_time_order      | in_arrival_order   | after batch |
      | u1   | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | [pear, fig, apple] | [apple, pear, fig] | 4           |
      | u1   | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | [kiwi]             | [kiwi]             | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-02 @tumble
  Scenario: Counting occurrences per key per window
    # count_window counts a window's items by a key function (items to a string key) and emits
    # (key, count) per window. In SQL the key function is an expression to GROUP BY, here
    # lower(word), and the count is count(*). The document gives no data: this table is ours.
    Given the table "words":
      | word  | ts                  |
      | Apple | 2023-12-14 00:01:00 |
      | pear  | 2023-12-14 00:07:00 |
      | apple | 2023-12-14 00:20:00 |
      | APPLE | 2023-12-14 01:05:00 |
      | pear  | 2023-12-14 01:15:00 |
      | pear  | 2023-12-14 01:30:00 |
    When I run the query:
      """
      SELECT lower(word) AS word, window_start, window_end, count(*) AS count
      FROM TUMBLE(TABLE words, DESCRIPTOR(ts), INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
      GROUP BY lower(word), window_start, window_end
      """
    Then the result is:
      | word  | window_start        | window_end          | count |
      | apple | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 2     |
      | pear  | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1     |
      | apple | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 1     |
      | pear  | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 2     |

  @BX-05 @tumble
  Scenario: The row with the largest or smallest value of an expression: max_by and min_by
    # max_window / min_window emit the value whose `by` key is largest / smallest. In SQL that is
    # max_by(value, by) / min_by(value, by), where `by` is any expression: the reading closest
    # to 20 degrees is min_by(reading, abs(temp - 20)). The document gives no data: this table
    # is ours (no ties).
    Given the table "readings":
      | sensor | reading | temp | ts                  |
      | s1     | r1      | 16.0 | 2023-12-14 00:05:00 |
      | s1     | r2      | 23.0 | 2023-12-14 00:15:00 |
      | s1     | r3      | 21.0 | 2023-12-14 00:40:00 |
      | s1     | r4      | 15.0 | 2023-12-14 01:10:00 |
      | s2     | r5      | 30.0 | 2023-12-14 00:30:00 |
    When I run the query:
      """
      SELECT sensor, window_start, window_end,
             max_by(reading, temp) AS hottest, min_by(reading, temp) AS coldest,
             min_by(reading, abs(temp - 20)) AS closest_to_20
      FROM TUMBLE(TABLE readings PARTITION BY sensor, DESCRIPTOR(ts), INTERVAL 1 HOUR)
      GROUP BY sensor, window_start, window_end
      """
    Then the result is:
      | sensor | window_start        | window_end          | hottest | coldest | closest_to_20 |
      | s1     | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | r2      | r1      | r3            |
      | s1     | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | r4      | r4      | r4            |
      | s2     | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | r5      | r5      | r5            |

  @BX-06 @hop
  Scenario: Window metadata of sliding windows: open time inclusive, close time exclusive
    # WindowMetadata.open_time is window_start and close_time is window_end; for sliding and
    # tumbling windows the close time is exclusive: c at 01:00 is in [01:00, 02:00), not in
    # [00:00, 01:00). The document gives no data: this table is ours.
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:00:00 |
      | b  | 2023-12-14 00:59:59 |
      | c  | 2023-12-14 01:00:00 |
    When I run the query:
      """
      SELECT window_start AS open_time, window_end AS close_time, collect_list(id) AS ids
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
      GROUP BY window_start, window_end
      """
    Then the result is:
      | open_time           | close_time          | ids    |
      | 2023-12-13 23:30:00 | 2023-12-14 00:30:00 | [a]    |
      | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | [a, b] |
      | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 | [b, c] |
      | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | [c]    |

  @BX-06 @session
  Scenario: Window metadata of sessions: the close time is inclusive, the last row's time
    # For SessionWindower close_time is inclusive: the session's last row. sqlwin's window_end is
    # last row + gap (BW-07, as Apex, Spark and Flink), so the inclusive close time is max(ts),
    # or window_end - gap; open_time is window_start, the first row. Our data, gap 30 minutes.
    Given the table "events":
      | user | ts                  |
      | u    | 2023-12-14 00:00:00 |
      | u    | 2023-12-14 00:10:00 |
      | u    | 2023-12-14 00:50:00 |
    When I run the query:
      """
      SELECT user, window_start AS open_time, max(ts) AS close_time,
             window_end - INTERVAL 30 MINUTES AS also_close_time, window_end
      FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | open_time           | close_time          | also_close_time     | window_end          |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 00:10:00 | 2023-12-14 00:10:00 | 2023-12-14 00:40:00 |
      | u    | 2023-12-14 00:50:00 | 2023-12-14 00:50:00 | 2023-12-14 00:50:00 | 2023-12-14 01:20:00 |

  @BX-06 @session @emit_changes @retracting
  Scenario Outline: Merged sessions: the changelog retracts the sessions merged into a new one (<mode>)
    # WindowMetadata.merged_ids lists the windows merged into a window before it closed. sqlwin's
    # windows have no ids: a window is its key, window_start and window_end. With EMIT CHANGES
    # RETRACTING every change is in the changelog (`op`), and a merge shows as a '-D' for each
    # session merged away (its bounds and last values) followed by the '+I' of the merged session:
    # the '-D' rows are Bytewax's merged_ids. (Bytewax keeps one of the ids as the merged
    # window's; sqlwin's merged session is a new window.) With EMIT FINAL, as Bytewax emits, a
    # merge that happens before the close is not visible: only the merged session comes out.
    # Our data, gap 30 minutes: B at 00:20 arrives after A and C and bridges their sessions.
    Given the stream "events", arriving in this order:
      | user | id | ts                  |
      | u    | A  | 2023-12-14 00:00:00 |
      | u    | C  | 2023-12-14 00:40:00 |
      | u    | B  | 2023-12-14 00:20:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, collect_list(id) AS ids
      FROM SESSION(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 30 MINUTES
                     WITH (lateness_rule = 'before_watermark', arrival_order = arrival),
                   DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      EMIT CHANGES RETRACTING
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | ids       | op | after batch |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 00:30:00 | [A]       | +I | 1           |
      | u    | 2023-12-14 00:40:00 | 2023-12-14 01:10:00 | [C]       | +I | 2           |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 00:30:00 | [A]       | -D | 3           |
      | u    | 2023-12-14 00:40:00 | 2023-12-14 01:10:00 | [C]       | -D | 3           |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 01:10:00 | [A, B, C] | +I | 3           |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-07 @hop @late
  Scenario Outline: ⚠ Late rows come out on their own, with each window they were late for (<mode>)
    # The API's `late` stream carries each late item with the id of the window it was late for;
    # the concepts page says Bytewax only logs and discards late values. sqlwin encodes the API:
    # LATE ROWS INTO names a table of the late rows, one row per missed window (window_start /
    # window_end), with late_by. Bytewax's rule: a row before the watermark is late
    # (lateness_rule = 'before_watermark'); wait 10 minutes. One-hour windows every 30 minutes:
    # `late` at 00:45 missed [00:00, 01:00) and [00:30, 01:30); the second never held a row, so
    # it is named only here (as the API warns: "window IDs here that were never in the down or
    # meta streams"). Our data.
    Given the stream "events", arriving in this order:
      | user | id   | ts                  |
      | u    | a    | 2023-12-14 00:10:00 |
      | u    | b    | 2023-12-14 01:40:00 |
      | u    | late | 2023-12-14 00:45:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS events
      FROM HOP(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 10 MINUTES
                 WITH (lateness_rule = 'before_watermark', arrival_order = arrival),
               DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | events | after batch |
      | u    | 2023-12-13 23:30:00 | 2023-12-14 00:30:00 | 1      | 2           |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1      | 2           |
      | u    | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 1      | end         |
      | u    | 2023-12-14 01:30:00 | 2023-12-14 02:30:00 | 1      | end         |
    And the late rows are:
      | user | id   | ts                  | late_by:double | window_start        | window_end          |
      | u    | late | 2023-12-14 00:45:00 | 2700           | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |
      | u    | late | 2023-12-14 00:45:00 | 2700           | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-07 @session @late
  Scenario Outline: ⚠ A late session row has no window to name: NULL, Bytewax's LATE_SESSION_ID (<mode>)
    # Sessions are made by their rows, so a late row cannot name the session it missed: Bytewax
    # sends it with the sentinel LATE_SESSION_ID, sqlwin with NULL window_start / window_end.
    # Gap 30 minutes, wait 10 minutes: b's 01:00 moves the watermark to 00:50 and closes a's
    # session; x at 00:20 would have joined that session and y at 00:45 b's open one, but both
    # are before the watermark. Our data.
    Given the stream "events", arriving in this order:
      | user | id | ts                  | batch |
      | u    | a  | 2023-12-14 00:00:00 | 1     |
      | u    | b  | 2023-12-14 01:00:00 | 2     |
      | u    | x  | 2023-12-14 00:20:00 | 3     |
      | u    | y  | 2023-12-14 00:45:00 | 3     |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end, count(*) AS events
      FROM SESSION(TABLE events PARTITION BY user WATERMARK ts DELAY OF INTERVAL 10 MINUTES
                     WITH (lateness_rule = 'before_watermark', arrival_order = arrival, arrival_batch = batch),
                   DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      LATE ROWS INTO late_events
      """
    Then each result is emitted after batch:
      | user | window_start        | window_end          | events | after batch |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 00:30:00 | 1      | 2           |
      | u    | 2023-12-14 01:00:00 | 2023-12-14 01:30:00 | 1      | end         |
    And the late rows are:
      | user | id | ts                  | late_by:double | window_start | window_end | reason |
      | u    | x  | 2023-12-14 00:20:00 | 1800           | NULL         | NULL       | late   |
      | u    | y  | 2023-12-14 00:45:00 | 300            | NULL         | NULL       | late   |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-03 @session
  Scenario Outline: fold: an empty accumulator, a step per row in timestamp order, sessions merged (<mode>)
    # fold_window(builder, folder, merger): "Values will be passed in timestamp order"; the
    # merger "combines two states whenever two windows merge". In SQL, Spark's own higher-order
    # function over the window's rows: aggregate(collect_list(v), builder, (acc, x) -> folder).
    # sqlwin's collect_list is in event-time order (arrival order on ties), so the fold runs in
    # timestamp order; when sessions merge, the fold runs over the merged rows, which is what a
    # merger consistent with the folder gives (sqlwin keeps a window's rows, not only its
    # accumulator). For upstream order, collect_list(v ORDER BY arrival) (BX-01). Our data:
    # gap 30 minutes; c at 00:50 starts a second session, b at 00:25 (arriving last) bridges both.
    Given the stream "clicks", arriving in this order:
      | user | page | ts                  |
      | u    | a    | 2023-12-14 00:00:00 |
      | u    | c    | 2023-12-14 00:50:00 |
      | u    | b    | 2023-12-14 00:25:00 |
      | v    | x    | 2023-12-14 00:10:00 |
    When I run the query in <mode> mode:
      """
      SELECT user, window_start, window_end,
             aggregate(collect_list(page), '', (path, p) -> concat(path, '/', p)) AS path
      FROM SESSION(TABLE clicks PARTITION BY user WATERMARK ts DELAY OF INTERVAL 1 HOUR
                   WITH (arrival_order = arrival),
                   DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | window_start        | window_end          | path   |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 01:20:00 | /a/b/c |
      | v    | 2023-12-14 00:10:00 | 2023-12-14 00:40:00 | /x     |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-04 @tumble
  Scenario: reduce: the first value is the accumulator, combined with each next value
    # reduce_window(reducer): "the first value is the initial accumulator". In SQL: the fold of
    # the rest of the window's values, starting from its first (timestamp order). Here the reducer
    # keeps the larger reading and counts how often it rose (a struct accumulator; Spark's
    # aggregate() takes a last lambda that finishes it). Our data.
    Given the table "readings":
      | sensor | value | ts                  |
      | s1     | 5     | 2023-12-14 00:01:00 |
      | s1     | 3     | 2023-12-14 00:02:00 |
      | s1     | 8     | 2023-12-14 00:03:00 |
      | s1     | 9     | 2023-12-14 00:04:00 |
      | s2     | 2     | 2023-12-14 00:05:00 |
    When I run the query:
      """
      SELECT sensor, window_start,
             aggregate(slice(collect_list(value), 2, count(*) - 1),
                       named_struct('peak', element_at(collect_list(value), 1), 'rises', 0),
                       (acc, v) -> named_struct('peak', greatest(acc.peak, v),
                                                'rises', acc.rises + IF(v > acc.peak, 1, 0)),
                       acc -> format_string('peak %d, rises %d', acc.peak, acc.rises)) AS reduced
      FROM TUMBLE(TABLE readings PARTITION BY sensor, DESCRIPTOR(ts), INTERVAL 10 MINUTES)
      GROUP BY sensor, window_start, window_end
      """
    Then the result is:
      | sensor | window_start        | reduced          |
      | s1     | 2023-12-14 00:00:00 | peak 9, rises 2  |
      | s2     | 2023-12-14 00:00:00 | peak 2, rises 0  |

  @BX-08 @tumble @join
  Scenario Outline: join_window with its defaults: the last value of each stream per key and window, at the window's close (<mode>)
    # join_window(..., *sides, insert_mode='last', emit_mode='final'): "Gather together the value
    # for a key on multiple streams ... tuples with the value from each stream in the order of the
    # argument list". Bytewax fills a side without a value with None: in SQL a FULL JOIN, one
    # column per stream. join_insert = 'last' keeps each stream's latest value by event time.
    # The document gives no data; ours: names and emails of users, one arrival sequence. The
    # window [00:00, 00:01) closes when both streams are past 00:01 (the earlier of the two
    # watermarks): after batch 4.
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
      SELECT coalesce(n.uid, e.uid) AS uid, coalesce(n.window_start, e.window_start) AS window_start,
             n.name, e.email
      FROM TUMBLE(TABLE names WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch, join_insert = 'last'),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      FULL JOIN TUMBLE(TABLE emails WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then each result is emitted after batch:
      | uid | window_start        | name | email | op | firing  | after batch |
      | 1   | 2024-01-01 00:00:00 | Anna | ann@y | +I | on_time | 4           |
      | 2   | 2024-01-01 00:00:00 | Bob  | b@x   | +I | on_time | 4           |
      | 4   | 2024-01-01 00:00:00 | NULL | d@z   | +I | on_time | 4           |
      | 2   | 2024-01-01 00:01:00 | Bo   | bo@x  | +I | final   | end         |
      | 3   | 2024-01-01 00:01:00 | Cid  | NULL  | +I | final   | end         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-08 @tumble @join
  Scenario: join_window insert mode 'first' over finished tables: the earliest value of each stream
    # JoinInsertMode 'first': a stream's first value stays. Over a finished table "first" is the
    # earliest by event time (a replay breaks ties by arrival). An inner join keeps the keys both
    # streams have in the window.
    Given the table "names":
      | uid:int | name | ts:timestamp        |
      | 1       | Anna | 2024-01-01 00:00:40 |
      | 1       | Ann  | 2024-01-01 00:00:05 |
      | 2       | Bob  | 2024-01-01 00:00:10 |
      | 2       | Bo   | 2024-01-01 00:01:20 |
    And the table "emails":
      | uid:int | email | ts:timestamp        |
      | 1       | ann@y | 2024-01-01 00:00:50 |
      | 1       | a@x   | 2024-01-01 00:00:20 |
      | 4       | d@z   | 2024-01-01 00:00:55 |
      | 2       | bo@x  | 2024-01-01 00:01:05 |
    When I run the query:
      """
      SELECT n.uid, n.window_start, n.name, e.email
      FROM TUMBLE(TABLE names WITH (join_insert = 'first'), DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      JOIN TUMBLE(TABLE emails, DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then the result is:
      | uid | window_start        | name | email |
      | 1   | 2024-01-01 00:00:00 | Ann  | a@x   |
      | 2   | 2024-01-01 00:01:00 | Bo   | bo@x  |

  @BX-08 @tumble @join
  Scenario Outline: join_window emit mode 'complete': a tuple as soon as every stream has a value, then start again (<mode>)
    # JoinEmitMode 'complete': emit once every side has a value, then discard the state, so a
    # key's later values gather anew; nothing is left to emit when the window closes (an
    # incomplete gathering, as uid 4's, never emits). Arrival order decides: Ann then a@x
    # (batch 1); Anna then ann@y (batch 2); Bob waits for b@x (batch 4); Bo then bo@x (batch 4).
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
      SELECT n.uid, n.window_start, n.name, e.email
      FROM TUMBLE(TABLE names WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch, join_emit = 'complete'),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      JOIN TUMBLE(TABLE emails WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch, join_insert = 'last'),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then each result is emitted after batch:
      | uid | window_start        | name | email | op | firing  | after batch |
      | 1   | 2024-01-01 00:00:00 | Ann  | a@x   | +I | changes | 1           |
      | 1   | 2024-01-01 00:00:00 | Anna | ann@y | +I | changes | 2           |
      | 2   | 2024-01-01 00:00:00 | Bob  | b@x   | +I | changes | 4           |
      | 2   | 2024-01-01 00:01:00 | Bo   | bo@x  | +I | changes | 4           |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @BX-08 @tumble @emit_changes @join
  Scenario Outline: join_window emit mode 'running': the key's tuple after every value (<mode>)
    # JoinEmitMode 'running': emit after every value, with None for the streams without one yet
    # (a FULL JOIN, after every row: EMIT CHANGES). The window's first tuple is +I, later ones
    # +U: each replaces the last for that key and window. (Replay only: a replay and a stream run
    # the same operator, and the scenarios above run this join in streaming too.)
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
      SELECT coalesce(n.uid, e.uid) AS uid, coalesce(n.window_start, e.window_start) AS window_start,
             n.name, e.email
      FROM TUMBLE(TABLE names WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch, join_insert = 'last'),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      FULL JOIN TUMBLE(TABLE emails WATERMARK ts DELAY OF INTERVAL 0 SECONDS
                  WITH (arrival_order = arrival, arrival_batch = batch),
                  DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      EMIT CHANGES
      """
    Then each result is emitted after batch:
      | uid | window_start        | name | email | op | after batch |
      | 1   | 2024-01-01 00:00:00 | Ann  | NULL  | +I | 1           |
      | 2   | 2024-01-01 00:00:00 | Bob  | NULL  | +I | 1           |
      | 1   | 2024-01-01 00:00:00 | Ann  | a@x   | +U | 1           |
      | 1   | 2024-01-01 00:00:00 | Anna | a@x   | +U | 2           |
      | 1   | 2024-01-01 00:00:00 | Anna | ann@y | +U | 2           |
      | 4   | 2024-01-01 00:00:00 | NULL | d@z   | +I | 2           |
      | 3   | 2024-01-01 00:01:00 | Cid  | NULL  | +I | 3           |
      | 2   | 2024-01-01 00:01:00 | Bo   | NULL  | +I | 4           |
      | 2   | 2024-01-01 00:00:00 | Bob  | b@x   | +U | 4           |
      | 2   | 2024-01-01 00:01:00 | Bo   | bo@x  | +U | 4           |

    Examples:
      | mode      |
      | replay    |

  @BX-08 @session @join @error
  Scenario Outline: Session windows cannot be joined: the sides' sessions would not line up (<mode>)
    # "Event-time session windows cannot be used with a windowed join" in Bytewax. A session
    # depends on its own side's rows, so the two sides' sessions differ; sqlwin refuses too (a replay
    # here; a stream refuses the same way before it starts; over finished tables the join of each
    # side's sessions is plain SQL).
    Given the stream "names", arriving in this order:
      | uid | name | ts                  | batch |
      | 1   | Ann  | 2024-01-01 00:00:05 | 1     |
    And the stream "emails", arriving in this order:
      | uid | email | ts                  | batch |
      | 1   | a@x   | 2024-01-01 00:00:20 | 1     |
    When I run the query in <mode> mode:
      """
      SELECT n.uid, n.name, e.email
      FROM SESSION(TABLE names WITH (arrival_order = arrival), DESCRIPTOR(ts), INTERVAL 1 MINUTE) n
      JOIN SESSION(TABLE emails WITH (arrival_order = arrival), DESCRIPTOR(ts), INTERVAL 1 MINUTE) e
        ON n.uid = e.uid AND n.window_start = e.window_start AND n.window_end = e.window_end
      """
    Then it fails with a unsupported error at line 2, column 6: "SESSION cannot be joined"
    And the error says what is accepted: "TUMBLE, HOP or CUMULATE on every side"

    Examples:
      | mode      |
      | replay    |

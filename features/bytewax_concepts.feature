@bytewax
Feature: Bytewax windowing concepts (seeds/000_b053eec30e33ac17.txt)
  Windows are assigned by a windower: sliding (HOP), tumbling (TUMBLE) and session
  (SESSION) windows, each aligned to a fixed origin. These scenarios run over finished
  tables (complete input): every row is on time and every window closes at the end.

  @BW-04 @hop
  Scenario: One-hour windows every 30 minutes, aligned to midnight, overlap
    # The document's figure: windows [00:00, 01:00), [00:30, 01:30), [01:00, 02:00).
    # Bytewax's "offset" (the spacing of window starts) is HOP's SLIDE; align_to is OFFSET.
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:45:00 |
      | b  | 2023-12-14 01:15:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM HOP(TABLE events, DESCRIPTOR(ts),
               SLIDE => INTERVAL 30 MINUTES, SIZE => INTERVAL 1 HOUR,
               OFFSET => TIMESTAMP '2023-12-14 00:00:00')
      """
    Then the result is:
      | id | window_start        | window_end          |
      | a  | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |
      | a  | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 |
      | b  | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 |
      | b  | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 |

  @BW-04 @hop
  Scenario: The row at 00:45 is counted in both windows that hold it
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:45:00 |
      | b  | 2023-12-14 01:15:00 |
    When I run the query:
      """
      SELECT window_start, window_end, count(*) AS rows_in_window
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 30 MINUTES, INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start        | window_end          | rows_in_window |
      | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 | 1              |
      | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 | 2              |
      | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 | 1              |

  @BW-05 @hop @late
  Scenario: One-hour windows every 90 minutes leave gaps; a row in a gap joins no window
    # The document's figure: [00:00, 01:00), [01:30, 02:30), [03:00, 04:00). The API
    # reference (BX-09) forbids offset > length "which would lose items"; the concepts page
    # draws it. sqlwin follows the concepts page: rows in the gaps belong to no window.
    Given the table "events":
      | id      | ts                  |
      | early   | 2023-12-14 00:30:00 |
      | in_gap  | 2023-12-14 01:15:00 |
      | middle  | 2023-12-14 02:00:00 |
      | late    | 2023-12-14 03:30:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM HOP(TABLE events, DESCRIPTOR(ts), INTERVAL 90 MINUTES, INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
      """
    Then the result is:
      | id     | window_start        | window_end          |
      | early  | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |
      | middle | 2023-12-14 01:30:00 | 2023-12-14 02:30:00 |
      | late   | 2023-12-14 03:00:00 | 2023-12-14 04:00:00 |

  @BW-06 @tumble
  Scenario: Tumbling hours: each row in exactly one window, start inclusive, end exclusive, before the origin too
    # Windows extend indefinitely in both directions from the alignment instant.
    Given the table "events":
      | id            | ts                  |
      | before_origin | 2023-12-13 23:20:00 |
      | at_origin     | 2023-12-14 00:00:00 |
      | inside        | 2023-12-14 00:59:59 |
      | at_boundary   | 2023-12-14 01:00:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL 1 HOUR, TIMESTAMP '2023-12-14 00:00:00')
      """
    Then the result is:
      | id            | window_start        | window_end          |
      | before_origin | 2023-12-13 23:00:00 | 2023-12-14 00:00:00 |
      | at_origin     | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |
      | inside        | 2023-12-14 00:00:00 | 2023-12-14 01:00:00 |
      | at_boundary   | 2023-12-14 01:00:00 | 2023-12-14 02:00:00 |

  @BW-06 @tumble
  Scenario: Tumbling hours aligned to half past: the alignment instant starts a window
    Given the table "events":
      | id | ts                  |
      | a  | 2023-12-14 00:10:00 |
      | b  | 2023-12-14 00:40:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM TUMBLE(DATA => TABLE events, TIMECOL => DESCRIPTOR(ts), SIZE => INTERVAL 1 HOUR,
                  OFFSET => TIMESTAMP '2023-12-14 00:30:00')
      """
    Then the result is:
      | id | window_start        | window_end          |
      | a  | 2023-12-13 23:30:00 | 2023-12-14 00:30:00 |
      | b  | 2023-12-14 00:30:00 | 2023-12-14 01:30:00 |

  @BW-07 @session
  Scenario: Sessions with a 30-minute gap
    # ⚠ The document draws each session from its first to its last row ([00:00, 00:15],
    # [00:50, 01:00], [01:30, 01:30]); sqlwin's window_start / window_end report
    # [first row, last row + gap) as Apex, Spark and Flink do, and MIN / MAX of the time
    # column give the drawn bars. 3A comes exactly one gap after 2B and starts a new
    # session, as the figure shows (Spark's session_window and Bytewax's code would merge
    # them; see docs/semantics.md).
    Given the table "events":
      | id | user | ts                  |
      | 1A | u    | 2023-12-14 00:00:00 |
      | 1B | u    | 2023-12-14 00:10:00 |
      | 1C | u    | 2023-12-14 00:15:00 |
      | 2A | u    | 2023-12-14 00:50:00 |
      | 2B | u    | 2023-12-14 01:00:00 |
      | 3A | u    | 2023-12-14 01:30:00 |
    When I run the query:
      """
      SELECT user, window_start, window_end, min(ts) AS first_row, max(ts) AS last_row,
             array_sort(collect_list(id)) AS ids
      FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user | window_start        | window_end          | first_row           | last_row            | ids          |
      | u    | 2023-12-14 00:00:00 | 2023-12-14 00:45:00 | 2023-12-14 00:00:00 | 2023-12-14 00:15:00 | [1A, 1B, 1C] |
      | u    | 2023-12-14 00:50:00 | 2023-12-14 01:30:00 | 2023-12-14 00:50:00 | 2023-12-14 01:00:00 | [2A, 2B]     |
      | u    | 2023-12-14 01:30:00 | 2023-12-14 02:00:00 | 2023-12-14 01:30:00 | 2023-12-14 01:30:00 | [3A]         |

  @BW-07 @session
  Scenario: Each row carries its session when the window function is used without GROUP BY
    Given the table "events":
      | id | ts                  |
      | 1A | 2023-12-14 00:00:00 |
      | 1C | 2023-12-14 00:15:00 |
      | 2B | 2023-12-14 01:00:00 |
      | 3A | 2023-12-14 01:30:00 |
    When I run the query:
      """
      SELECT id, window_start, window_end
      FROM SESSION(TABLE events, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      """
    Then the result is:
      | id | window_start        | window_end          |
      | 1A | 2023-12-14 00:00:00 | 2023-12-14 00:45:00 |
      | 1C | 2023-12-14 00:00:00 | 2023-12-14 00:45:00 |
      | 2B | 2023-12-14 01:00:00 | 2023-12-14 01:30:00 |
      | 3A | 2023-12-14 01:30:00 | 2023-12-14 02:00:00 |

  @BW-09 @session
  Scenario: Windows are per key: another key's rows never join or split a key's session
    # Complete-input form: keys interleave in time, each key's sessions are its own.
    Given the table "events":
      | user  | ts                  |
      | alice | 2023-12-14 00:00:00 |
      | bob   | 2023-12-14 00:20:00 |
      | alice | 2023-12-14 00:25:00 |
      | bob   | 2023-12-14 01:00:00 |
      | alice | 2023-12-14 01:10:00 |
    When I run the query:
      """
      SELECT user, window_start, window_end, count(*) AS visits
      FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 30 MINUTES)
      GROUP BY user, window_start, window_end
      """
    Then the result is:
      | user  | window_start        | window_end          | visits |
      | alice | 2023-12-14 00:00:00 | 2023-12-14 00:55:00 | 2      |
      | alice | 2023-12-14 01:10:00 | 2023-12-14 01:40:00 | 1      |
      | bob   | 2023-12-14 00:20:00 | 2023-12-14 00:50:00 | 1      |
      | bob   | 2023-12-14 01:00:00 | 2023-12-14 01:30:00 | 1      |

@bytewax
Feature: Bytewax windowing API parameters (seeds/001_ea9afaaf845f71a0.txt)

  @BX-09
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

  @BX-09
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

  @BX-09
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

  @BX-10
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

  @BX-10
  Scenario: A zero session gap is a clear error too
    Given the table "events":
      | user | ts                  |
      | u    | 2023-12-14 00:00:00 |
    When I run the query expecting an error:
      """
      SELECT * FROM SESSION(TABLE events PARTITION BY user, DESCRIPTOR(ts), INTERVAL 0 MINUTES)
      """
    Then it fails with a validation error at line 1, column 71: "GAP must be positive"

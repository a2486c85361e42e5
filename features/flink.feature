@flink
Feature: Flink SQL's windowing examples (nightlies.apache.org/flink/flink-docs-stable/docs/dev/table/sql/queries/)
  Each scenario is an example of Flink's documentation, with its data and its documented result,
  tagged with the page it comes from. Flink declares the watermark in the table's DDL
  (`WATERMARK FOR bidtime AS bidtime - INTERVAL '1' SECOND`); here it is the TABLE argument's
  WATERMARK clause. Flink's results print as a changelog of a finished run; a replay and a stream
  give the same rows (one clock for the stream, EMIT FINAL: each window's result once, at its close).
  Scenarios on a "stream" run twice: as a replay and as a Structured Streaming query fed one
  micro-batch per arrival batch.

  @flink-window-agg-grouping-sets @tumble @grouping_sets
  Scenario Outline: Window aggregation with GROUPING SETS: per supplier and in total, per window (<mode>)
    # window-agg.md, "GROUPING SETS"
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | C    | supplier1   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier2   | 1     |
      | 2020-04-15 08:11:00 | 3.00         | B    | supplier2   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier2   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, supplier_id, SUM(price) AS total_price
      FROM TABLE(TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                          WITH (arrival_order = arrival, arrival_batch = batch),
                        DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
      GROUP BY window_start, window_end, GROUPING SETS ((supplier_id), ())
      """
    Then the result is:
      | window_start        | window_end          | supplier_id | total_price |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | NULL        | 11.0        |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier2   | 5.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier1   | 6.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | NULL        | 10.0        |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier2   | 9.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier1   | 1.0         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-agg-rollup @tumble @grouping_sets
  Scenario Outline: Window aggregation with ROLLUP: the same sets as GROUPING SETS ((supplier_id), ()) (<mode>)
    # window-agg.md, "ROLLUP"
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | C    | supplier1   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier2   | 1     |
      | 2020-04-15 08:11:00 | 3.00         | B    | supplier2   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier2   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, supplier_id, SUM(price) AS total_price
      FROM TABLE(TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                          WITH (arrival_order = arrival, arrival_batch = batch),
                        DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
      GROUP BY window_start, window_end, ROLLUP (supplier_id)
      """
    Then the result is:
      | window_start        | window_end          | supplier_id | total_price |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | NULL        | 11.0        |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier2   | 5.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier1   | 6.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | NULL        | 10.0        |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier2   | 9.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier1   | 1.0         |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-agg-cube @tumble @grouping_sets
  Scenario Outline: Window aggregation with CUBE: every combination of supplier and item, per window (<mode>)
    # window-agg.md, "CUBE". The page gives the query without its result; the rows below are worked
    # out by hand from the page's Bid table: per window each (supplier, item), each supplier, each
    # item, and the total.
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | C    | supplier1   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier2   | 1     |
      | 2020-04-15 08:11:00 | 3.00         | B    | supplier2   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier2   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT window_start, window_end, item, supplier_id, SUM(price) AS total_price
      FROM TABLE(TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                          WITH (arrival_order = arrival, arrival_batch = batch),
                        DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
      GROUP BY window_start, window_end, CUBE (supplier_id, item)
      """
    Then the result is:
      | window_start        | window_end          | item | supplier_id | total_price |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | C    | supplier1   | 4.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | A    | supplier1   | 2.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | D    | supplier2   | 5.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | NULL | supplier1   | 6.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | NULL | supplier2   | 5.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | C    | NULL        | 4.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | A    | NULL        | 2.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | D    | NULL        | 5.0         |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | NULL | NULL        | 11.0        |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | B    | supplier2   | 3.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | E    | supplier1   | 1.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | F    | supplier2   | 6.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | NULL | supplier2   | 9.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | NULL | supplier1   | 1.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | B    | NULL        | 3.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | E    | NULL        | 1.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | F    | NULL        | 6.0         |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | NULL | NULL        | 10.0        |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-topn @tumble @top_n
  Scenario Outline: Window Top-N: the top 3 suppliers by price of each 10-minute window (<mode>)
    # window-topn.md, "Window Top-N follows after Window Aggregation"
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:06:00 | 4.00         | C    | supplier2   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | G    | supplier1   | 1     |
      | 2020-04-15 08:08:00 | 2.00         | B    | supplier3   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier4   | 1     |
      | 2020-04-15 08:11:00 | 2.00         | B    | supplier3   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:15:00 | 3.00         | H    | supplier2   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier5   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT *
        FROM (
          SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC) as rownum
          FROM (
            SELECT window_start, window_end, supplier_id, SUM(price) as price, COUNT(*) as cnt
            FROM TABLE(
              TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                       WITH (arrival_order = arrival, arrival_batch = batch),
                     DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
            GROUP BY window_start, window_end, supplier_id
          )
        ) WHERE rownum <= 3
      """
    Then the result is:
      | window_start        | window_end          | supplier_id | price | cnt | rownum |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier1   | 6.0   | 2   | 1      |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier4   | 5.0   | 1   | 2      |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | supplier2   | 4.0   | 1   | 3      |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier5   | 6.0   | 1   | 1      |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier2   | 3.0   | 1   | 2      |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | supplier3   | 2.0   | 1   | 3      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-agg-cascading @tumble @chain
  Scenario Outline: Cascading window aggregation: 5-minute sums per supplier, summed into 10-minute windows (<mode>)
    # window-agg.md, "Cascading Window Aggregation". The page gives the queries without a result;
    # the rows are worked out by hand from window-agg.md's Bid table: [08:00, 08:10) holds the 5-minute
    # windows [08:05, 08:10) (supplier1 4 + 2, supplier2 5); [08:10, 08:20) holds [08:10, 08:15)
    # (supplier2 3, supplier1 1) and [08:15, 08:20) (supplier2 6).
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | C    | supplier1   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier2   | 1     |
      | 2020-04-15 08:11:00 | 3.00         | B    | supplier2   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier2   | 3     |
    When I run the query in <mode> mode:
      """
      WITH window1 AS (
        SELECT window_start AS window_5mintumble_start, window_end AS window_5mintumble_end,
               window_time AS rowtime, SUM(price) AS partial_price
        FROM TABLE(TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                            WITH (arrival_order = arrival, arrival_batch = batch),
                          DESCRIPTOR(bidtime), INTERVAL '5' MINUTES))
        GROUP BY supplier_id, window_start, window_end, window_time)
      SELECT window_start, window_end, SUM(partial_price) AS total_price
      FROM TABLE(TUMBLE(TABLE window1, DESCRIPTOR(rowtime), INTERVAL '10' MINUTES))
      GROUP BY window_start, window_end
      """
    Then the result is:
      | window_start        | window_end          | total_price |
      | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | 11.0        |
      | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | 10.0        |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-topn @tumble @top_n
  Scenario Outline: Window Top-N after a window TVF: the 3 highest bids of each 10-minute window (<mode>)
    # window-topn.md, "Window Top-N follows after Window TVF". A and C tie at 4.00 in the first
    # window; the page ranks A (08:05) before C (08:06): encoded with bidtime as the tie-break (Flink's
    # order among ties is not defined either).
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:06:00 | 4.00         | C    | supplier2   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | G    | supplier1   | 1     |
      | 2020-04-15 08:08:00 | 2.00         | B    | supplier3   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier4   | 1     |
      | 2020-04-15 08:11:00 | 2.00         | B    | supplier3   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:15:00 | 3.00         | H    | supplier2   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier5   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT *
        FROM (
          SELECT bidtime, price, item, supplier_id, window_start, window_end,
                 ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY price DESC, bidtime) as rownum
          FROM TABLE(
                     TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                              WITH (arrival_order = arrival, arrival_batch = batch),
                            DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        ) WHERE rownum <= 3
      """
    Then the result is:
      | bidtime             | price | item | supplier_id | window_start        | window_end          | rownum |
      | 2020-04-15 08:05:00 | 4.0   | A    | supplier1   | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | 2      |
      | 2020-04-15 08:06:00 | 4.0   | C    | supplier2   | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | 3      |
      | 2020-04-15 08:09:00 | 5.0   | D    | supplier4   | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | 1      |
      | 2020-04-15 08:11:00 | 2.0   | B    | supplier3   | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | 3      |
      | 2020-04-15 08:15:00 | 3.0   | H    | supplier2   | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | 2      |
      | 2020-04-15 08:17:00 | 6.0   | F    | supplier5   | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | 1      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-deduplication @tumble @top_n
  Scenario Outline: Window deduplication: the last bid of each 10-minute window (<mode>)
    # window-deduplication.md, "Example"
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | supplier_id | batch |
      | 2020-04-15 08:05:00 | 4.00         | A    | supplier1   | 1     |
      | 2020-04-15 08:06:00 | 4.00         | C    | supplier2   | 1     |
      | 2020-04-15 08:07:00 | 2.00         | G    | supplier1   | 1     |
      | 2020-04-15 08:08:00 | 2.00         | B    | supplier3   | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | supplier4   | 1     |
      | 2020-04-15 08:11:00 | 2.00         | B    | supplier3   | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | supplier1   | 2     |
      | 2020-04-15 08:15:00 | 3.00         | H    | supplier2   | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | supplier5   | 3     |
    When I run the query in <mode> mode:
      """
      SELECT *
        FROM (
          SELECT bidtime, price, item, supplier_id, window_start, window_end,
            ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bidtime DESC) AS rownum
          FROM TABLE(
                     TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                              WITH (arrival_order = arrival, arrival_batch = batch),
                            DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
        ) WHERE rownum <= 1
      """
    Then the result is:
      | bidtime             | price | item | supplier_id | window_start        | window_end          | rownum |
      | 2020-04-15 08:09:00 | 5.0   | D    | supplier4   | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 | 1      |
      | 2020-04-15 08:17:00 | 6.0   | F    | supplier5   | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 | 1      |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-tvf @tumble
  Scenario Outline: Window TVF rows: each bid with its 10-minute tumbling window, as it arrives (<mode>)
    # window-tvf.md, "TUMBLE" (the page's window_time is window_end - 1 ms; sqlwin's is
    # window_end - 1 µs, the last instant of the window, and left out here). Without GROUP BY a
    # stream gives each row as it arrives: the rows of batch 1 after batch 1, and so on.
    Given the stream "Bid", arriving in this order:
      | bidtime             | price:double | item | batch |
      | 2020-04-15 08:05:00 | 4.00         | C    | 1     |
      | 2020-04-15 08:07:00 | 2.00         | A    | 1     |
      | 2020-04-15 08:09:00 | 5.00         | D    | 1     |
      | 2020-04-15 08:11:00 | 3.00         | B    | 2     |
      | 2020-04-15 08:13:00 | 1.00         | E    | 2     |
      | 2020-04-15 08:17:00 | 6.00         | F    | 3     |
    When I run the query in <mode> mode:
      """
      SELECT bidtime, price, item, window_start, window_end
      FROM TABLE(TUMBLE(TABLE Bid WATERMARK bidtime DELAY OF INTERVAL 1 SECOND
                          WITH (arrival_order = arrival, arrival_batch = batch),
                        DESCRIPTOR(bidtime), INTERVAL '10' MINUTES))
      """
    Then the result is:
      | bidtime             | price | item | window_start        | window_end          |
      | 2020-04-15 08:05:00 | 4.0   | C    | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 |
      | 2020-04-15 08:07:00 | 2.0   | A    | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 |
      | 2020-04-15 08:09:00 | 5.0   | D    | 2020-04-15 08:00:00 | 2020-04-15 08:10:00 |
      | 2020-04-15 08:11:00 | 3.0   | B    | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 |
      | 2020-04-15 08:13:00 | 1.0   | E    | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 |
      | 2020-04-15 08:17:00 | 6.0   | F    | 2020-04-15 08:10:00 | 2020-04-15 08:20:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

  @flink-window-join @tumble @join
  Scenario Outline: Window join: a FULL JOIN of two tables per num and 5-minute window (<mode>)
    # window-join.md, "FULL JOIN", written as Flink writes it: each side read through
    # `(SELECT * FROM TABLE(TUMBLE(...))) L` (a SELECT * alone is the window function itself).
    Given the stream "LeftTable", arriving in this order:
      | row_time            | num | id | arrival | batch |
      | 2020-04-15 12:02:00 | 1   | L1 | 1       | 1     |
      | 2020-04-15 12:06:00 | 2   | L2 | 2       | 1     |
      | 2020-04-15 12:03:00 | 3   | L3 | 3       | 1     |
    And the stream "RightTable", arriving in this order:
      | row_time            | num | id | arrival | batch |
      | 2020-04-15 12:01:00 | 2   | R2 | 4       | 1     |
      | 2020-04-15 12:04:00 | 3   | R3 | 5       | 1     |
      | 2020-04-15 12:05:00 | 4   | R4 | 6       | 1     |
    When I run the query in <mode> mode:
      """
      SELECT L.num AS L_Num, L.id AS L_Id, R.num AS R_Num, R.id AS R_Id,
             COALESCE(L.window_start, R.window_start) AS window_start,
             COALESCE(L.window_end, R.window_end) AS window_end
      FROM (
          SELECT * FROM TABLE(TUMBLE(TABLE LeftTable WATERMARK row_time DELAY OF INTERVAL 1 SECOND
                                       WITH (arrival_order = arrival, arrival_batch = batch),
                                     DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
      ) L
      FULL JOIN (
          SELECT * FROM TABLE(TUMBLE(TABLE RightTable WATERMARK row_time DELAY OF INTERVAL 1 SECOND
                                       WITH (arrival_order = arrival, arrival_batch = batch),
                                     DESCRIPTOR(row_time), INTERVAL '5' MINUTES))
      ) R
      ON L.num = R.num AND L.window_start = R.window_start AND L.window_end = R.window_end
      """
    Then the result is:
      | L_Num | L_Id | R_Num | R_Id | window_start        | window_end          |
      | 1     | L1   | NULL  | NULL | 2020-04-15 12:00:00 | 2020-04-15 12:05:00 |
      | NULL  | NULL | 2     | R2   | 2020-04-15 12:00:00 | 2020-04-15 12:05:00 |
      | 3     | L3   | 3     | R3   | 2020-04-15 12:00:00 | 2020-04-15 12:05:00 |
      | 2     | L2   | NULL  | NULL | 2020-04-15 12:05:00 | 2020-04-15 12:10:00 |
      | NULL  | NULL | 4     | R4   | 2020-04-15 12:05:00 | 2020-04-15 12:10:00 |

    Examples:
      | mode      |
      | replay    |
      | streaming |

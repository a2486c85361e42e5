"""sqlwin: streaming windows for Spark SQL.

    import sqlwin
    spark = sqlwin.session()            # or your own SparkSession
    sw = sqlwin.attach(spark)
    sw.sql("SELECT k, window_start, count(*) FROM TUMBLE(TABLE t PARTITION BY k, "
           "DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end").show()
"""

from sqlwin.api import Explanation, Sqlwin, attach
from sqlwin.errors import (
    SqlwinError,
    SqlwinRuntimeError,
    SqlwinSyntaxError,
    SqlwinUnsupportedError,
    SqlwinUsageError,
    SqlwinValidationError,
)
from sqlwin.plan import build_plan
from sqlwin.session import session

__all__ = [
    "Explanation",
    "Sqlwin",
    "SqlwinError",
    "SqlwinRuntimeError",
    "SqlwinSyntaxError",
    "SqlwinUnsupportedError",
    "SqlwinUsageError",
    "SqlwinValidationError",
    "attach",
    "build_plan",
    "session",
]
__version__ = "0.1.0"

"""sqlwin: streaming windows for Spark SQL.

    import sqlwin
    spark = sqlwin.session()            # or your own SparkSession
    sw = sqlwin.attach(spark)
    sw.sql("SELECT k, window_start, count(*) FROM TUMBLE(TABLE t PARTITION BY k, "
           "DESCRIPTOR(ts), INTERVAL 1 HOUR) GROUP BY k, window_start, window_end").show()
"""

from sqlwin.errors import (
    SqlwinError,
    SqlwinRuntimeError,
    SqlwinSyntaxError,
    SqlwinUnsupportedError,
    SqlwinUsageError,
    SqlwinValidationError,
)
from sqlwin.version import __version__

# The API, the parser and Spark load on first use (PEP 562): a Spark Python worker that imports
# sqlwin's runtime and worker code never loads sqlglot or the API.
# `%load_ext sqlwin` in IPython / Jupyter calls load_ipython_extension: the `%%sqlwin` magic
# (sqlwin/jupyter.py), loaded only then.
_LAZY = {"Explanation": "sqlwin.api", "Sqlwin": "sqlwin.api", "attach": "sqlwin.api",
         "build_plan": "sqlwin.sql.plan", "register": "sqlwin.spark.functions", "session": "sqlwin.session",
         "load_ipython_extension": "sqlwin.jupyter"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'sqlwin' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "__version__",
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
    "register",
    "session",
]

"""A ready local SparkSession for users (and tests) who do not bring their own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def session(app_name: str = "sqlwin", master: str = "local[2]", shuffle_partitions: int = 2,
            conf: dict[str, str] | None = None):
    """A SparkSession configured the way sqlwin expects.

    UTC session time zone (window arithmetic is on epoch microseconds), few shuffle
    partitions (local data is small), the UI off, the RocksDB state store (needed by the
    streaming operator), and PYSPARK_PYTHON pointing at this interpreter so Python
    workers start with the same packages.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    java_options = f"-Dlog4j2.configurationFile=file:{LOG_CONFIG} -Duser.timezone=UTC"
    builder = (
        SparkSession.builder.appName(app_name)
        .master(master)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.executor.extraJavaOptions", java_options)
        .config(
            "spark.sql.streaming.stateStore.providerClass",
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        )
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark

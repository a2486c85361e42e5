"""What Spark's Python workers load: the runtime and the worker code, never the parser or the API."""

import subprocess
import sys

from sqlwin.ir import EmitSpec, Tumble, WatermarkSpec
from sqlwin.spark.operator import OperatorConfig, pack_rows
from sqlwin.spark.replay_worker import replay_partition
from sqlwin.spark.processor import WindowProcessor
from sqlwin.runtime import AggregateSpec
from sqlwin.runtime.vector import FixedFinalRuntime

CONFIG = OperatorConfig(windower=Tumble(60_000_000), watermark=WatermarkSpec(column="ts", delay=5_000_000),
                        emit=EmitSpec(), aggregates=(AggregateSpec("count"),), processing_time=False, key_count=1,
                        clock_positions=None, argument_count=0, row_count=0, output_late=False, timers=False)


def test_a_worker_unpickles_the_operator_without_loading_sqlglot(tmp_path):
    from pyspark import cloudpickle  # what PySpark pickles functions and processors with

    blob = tmp_path / "worker.pickle"
    processor = WindowProcessor(CONFIG, (False,), "none", 1000, ["__bucket", "__pack", "__newest", "__blob", "__control"],
                                ["__bucket", "__k0"], FixedFinalRuntime)
    function = replay_partition(CONFIG, (False,), FixedFinalRuntime, None, None)
    blob.write_bytes(cloudpickle.dumps((processor, function, pack_rows)))
    code = (f"import pickle, sys; pickle.loads(open({str(blob)!r}, 'rb').read()); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sqlglot', 'sqlwin')))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "sqlglot" not in loaded
    assert "sqlwin.api" not in loaded and "sqlwin.sql.plan" not in loaded and "sqlwin.sql.dialect" not in loaded
    assert "sqlwin.runtime.vector" in loaded  # the check is not vacuous: the worker code did load

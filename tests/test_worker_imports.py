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


def test_the_driver_plans_a_stream_without_loading_the_runtime(tmp_path):
    """Spark plans a stream's first micro-batch in a fresh Python process that unpickles the processor
    to call init(): the LazyProcessor it gets loads neither the runtime nor NumPy, pandas, PyArrow
    (1-2 s on a busy machine, at every start of a stream), and declares the processor's state."""
    from pyspark import cloudpickle

    from sqlwin.runtime import segments
    from sqlwin.spark import lazy_processor
    from sqlwin.spark.lazy_processor import LazyProcessor

    assert (lazy_processor.SEGMENT, lazy_processor.INDEX) == (segments.SEGMENT, segments.INDEX)
    blob = tmp_path / "driver.pickle"
    processor = WindowProcessor(CONFIG, (False,), "none", 1000, ["__bucket", "__pack", "__newest", "__blob", "__control"],
                                ["__bucket", "__k0"], FixedFinalRuntime)
    blob.write_bytes(cloudpickle.dumps(LazyProcessor(processor)))
    code = (f"import pickle, sys\n"
            f"shell = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
            "class Handle:\n"
            "    def getValueState(self, name, schema): return ('value', name)\n"
            "    def getMapState(self, name, key, schema): return ('map', name)\n"
            "shell.init(Handle())\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'pyarrow', 'sqlglot')"
            " or m.startswith('sqlwin.runtime')))\n"
            "print(shell.state, sorted(shell.store.maps.items()))\n"
            "shell._loaded()\n"
            "print(type(shell._processor).__name__, shell._processor.store is shell.store)")
    loaded, declared, unpickled = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                 check=True).stdout.splitlines()
    assert loaded == "[]"
    assert declared == "('value', 'bucket') [('index', ('map', 'index')), ('segment', ('map', 'segments'))]"
    assert unpickled == "WindowProcessor True"  # where rows come, the processor itself, over the same state

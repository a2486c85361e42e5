"""Worker code: the streaming processor as Spark pickles it, light to unpickle (transformWithStateInPandas).

Spark plans a stream's first micro-batch in a fresh Python process on the driver (one per start,
not one of the reused workers) that unpickles the processor only to call init(): the state it
declares. Unpickling WindowProcessor loads the window runtime, NumPy, pandas and PyArrow -- about
1.5 s more on a busy two-core machine, on the first micro-batch's path. LazyProcessor declares
the same state itself (`declare_state`, shared with WindowProcessor) and carries the processor
pickled: it is unpickled where rows or timers come, in the executors' Python workers, which Spark
reuses (the modules are loaded once per worker).
"""

from __future__ import annotations

import pickle
import typing as t

from pyspark.sql.streaming import StatefulProcessor

# sqlwin.runtime.segments' SEGMENT and INDEX, the kinds of part a Store keeps, written again here: that
# module loads NumPy and pandas (tests/test_worker_imports.py checks they are the same).
SEGMENT, INDEX = "segment", "index"


def declare_state(handle, segmented: bool) -> tuple[t.Any, "SparkStore | None"]:
    """The processor's state: the general runtime's bucket as one value; a vectorised one's (and the
    keyed general one's) as a directory, and segments and index parts by id (sqlwin.runtime.segments)."""
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    blob = StructType([StructField("blob", BinaryType(), True)])
    state = handle.getValueState("bucket", blob)
    if not segmented:
        return state, None
    ident = StructType([StructField("id", LongType(), False)])
    return state, SparkStore(handle.getValueState("directory", blob),
                             {SEGMENT: handle.getMapState("segments", ident, blob),
                              INDEX: handle.getMapState("index", ident, blob)})


class LazyProcessor(StatefulProcessor):
    """A WindowProcessor (sqlwin.spark.processor) carried pickled, unpickled on its first rows or timer."""

    def __init__(self, processor):
        from pyspark import cloudpickle  # what PySpark pickles processors with

        self.segmented = processor.segmented is not None
        self.payload = cloudpickle.dumps(processor)
        self._processor = None

    def init(self, handle) -> None:
        self.handle = handle
        self.state, self.store = declare_state(handle, self.segmented)
        if self._processor is not None:
            self._attach(self._processor)

    def handleInputRows(self, key, rows, timerValues):
        return self._loaded().handleInputRows(key, rows, timerValues)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
        return self._loaded().handleExpiredTimer(key, timerValues, expiredTimerInfo)

    def close(self) -> None:
        pass

    def _loaded(self):
        if self._processor is None:
            self._processor = self._attach(pickle.loads(self.payload))
        return self._processor

    def _attach(self, processor):
        processor.handle, processor.state, processor.store = self.handle, self.state, self.store
        return processor


class SparkStore:
    """sqlwin.runtime.segments.Store over the processor's state: a ValueState and two MapStates."""

    def __init__(self, directory, maps):
        self.directory, self.maps = directory, maps

    def get_directory(self) -> bytes | None:
        value = self.directory.get()
        return value[0] if value is not None else None

    def put_directory(self, blob: bytes) -> None:
        self.directory.update((blob,))

    def get(self, kind: str, ident: int) -> bytes | None:
        value = self.maps[kind].getValue((ident,))
        return value[0] if value is not None else None

    def put(self, kind: str, ident: int, blob: bytes) -> None:
        self.maps[kind].updateValue((ident,), (blob,))

    def delete(self, kind: str, ident: int) -> None:
        self.maps[kind].removeKey((ident,))

"""Shared helpers of the runtime tests: units and compact views of the runtime's output."""

from __future__ import annotations

import io
import pickle

from sqlwin.sql.plan import EmitSpec, WatermarkSpec
from sqlwin.runtime import AggregateSpec, BatchResult, WindowRuntime

US = 1
MS = 1_000
S = 1_000_000
MIN = 60 * S
HOUR = 60 * MIN

COUNT = AggregateSpec("count")
COLLECT0 = AggregateSpec("collect_list", 0)


def runtime(windower, aggregates=(COLLECT0,), processing_time=False, emit=None, **watermark) -> WindowRuntime:
    """A runtime with WatermarkSpec(**watermark) and EmitSpec() unless told otherwise."""
    return WindowRuntime(windower, WatermarkSpec(**watermark), emit or EmitSpec(), list(aggregates),
                         processing_time=processing_time)


def rows(*items, key=()):
    """(name_or_value, time) pairs -> runtime rows for one key; values are (name_or_value,)."""
    return [(key, time, (value,)) for value, time in items]


def feed(rt: WindowRuntime, batches) -> list[BatchResult]:
    """batches: (batch_time, rows) pairs, in order; one BatchResult per batch."""
    return [rt.process_batch(batch_rows, batch_time) for batch_time, batch_rows in batches]


def view(emissions, key=False):
    """Emissions as (start, end, values, op, firing) tuples (with the key first when asked)."""
    out = []
    for e in emissions:
        item = (e.window_start, e.window_end, e.values, e.op, e.firing)
        out.append((e.key, *item) if key else item)
    return out


def windows(emissions, unit=S):
    """{(start, end) in `unit`: sorted first value} of the emissions, for set-like comparisons."""
    return {(e.window_start // unit, e.window_end // unit): sorted(e.values[0]) for e in emissions}


def late_view(late, unit=S):
    return [(r.values[0], r.event_time // unit, r.late_by_us // unit,
             None if r.window_start is None else r.window_start // unit,
             None if r.window_end is None else r.window_end // unit) for r in late]


def batches(rows, cuts):
    """`rows` cut into micro-batches of the sizes in `cuts`, repeated as often as needed."""
    i = 0
    for size in cuts * (len(rows) + 1):
        if i >= len(rows):
            return
        yield rows[i:i + size]
        i += size


class _PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("sqlwin") and module not in ("sqlwin.ir", "sqlwin.runtime.model"):
            raise AssertionError(f"a snapshot pickled {module}.{name}")
        return super().find_class(module, name)


def plain_data(blob: bytes):
    """A snapshot unpickled, asserting it holds no sqlwin class but the configuration's (the IR's
    and the runtime model's frozen dataclasses): plain data that survives reshaped classes."""
    return _PlainData(io.BytesIO(blob)).load()

"""Slow tests' work in processes of its own, started when the run starts, checked when pytest gets there.

The `spark-pipelines run`s and the driver on the standalone cluster are processes that share nothing
with this process's Spark: run at their tests' turn they cost ~2 minutes of the suite, mostly waiting
(JVMs starting, micro-batches), while the in-process tests before them leave a core idle part of the
time. So a test module may define

    def start_in_background(items, submit): ...

which gets its selected items (nothing selected: not called) and queues jobs with
`submit(name, function)`. The jobs run one at a time in one background thread, in module order, from
the end of collection; a fixture or test takes a job's result with `take(name)` (waiting for it; None
if it was never queued, e.g. `pytest -p no:...` or a module run whose items were deselected -- then the
test does the work itself).
"""

from __future__ import annotations

import typing as t
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

_pool: ThreadPoolExecutor | None = None
_jobs: dict[str, Future] = {}


def take(name: str) -> t.Any:
    """The result of the background job `name` (its exception raised), or None if none was queued."""
    job = _jobs.pop(name, None)
    return None if job is None else job.result()


@pytest.hookimpl(trylast=True)  # after tests/support/deploy.py has started its servers: a job may wait for one
def pytest_collection_finish(session) -> None:
    by_module: dict = {}
    for item in session.items:
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "start_in_background"):
            by_module.setdefault(module, []).append(item)
    for module, items in sorted(by_module.items(), key=lambda kv: kv[0].__name__):
        def submit(name: str, function: t.Callable[[], t.Any]) -> None:
            global _pool
            if _pool is None:
                _pool = ThreadPoolExecutor(1, thread_name_prefix="sqlwin-background")
            _jobs[name] = _pool.submit(function)

        module.start_in_background(items, submit)


def pytest_sessionfinish(session) -> None:
    if _pool is not None:  # a job nobody took (its tests failed before, or were interrupted): let it end
        _pool.shutdown(wait=True, cancel_futures=True)

"""Streams a parametrized test feeds, started ahead in threads of the run's one SparkSession.

A small stream's micro-batch mostly waits (its stages one after the other, a Python worker's round
trips, the checkpoint's files): on this two-core machine two 12-batch streams at once took 10.0 s,
one alone 7.1 s (three 12.5 s). So the first case of a test asks for every selected case's
stream, `WORKERS` at a time beside the test in the foreground, and each case then takes its own
(`Ahead.stream`) and checks it. Two ahead: tests/test_around.py 219-225 s with one, 196 s with two,
200 s with three (2026-12-08, one run each; CPU 324-344 s in all three). (Two ahead once made the
crash harness's kills land late: that was while the crash chains ran in the background beside the
suite; they run in their own module's turn now, with no stream ahead.) Only for streams that share
nothing with the tests running meanwhile: each
its own source DataFrame and directories, no temp view it reads that a test replaces, no session
setting changed while they run (a replay's LATE ROWS INTO view stays in the foreground).

Streams started side by side in one driver once failed to plan (the driver-side Python worker of
transformWithStateInPandas timing out connecting back, tests/crash_harness.reference_runs); sqlwin's
supervision starts such a stream again (sqlwin/spark/supervision.py). 48 small streams started four
at a time in one session (two queries, vectorised and general runtimes) all ran, none failed.
"""

from __future__ import annotations

import typing as t
from concurrent.futures import Future, ThreadPoolExecutor

import pytest

WORKERS = 2  # beside the test in the foreground: three streams at a time


class Ahead:
    def __init__(self, tmp_path_factory: pytest.TempPathFactory):
        self.pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="sqlwin-ahead")
        self.futures: dict[str, Future] = {}
        self.tmp = tmp_path_factory

    def stream(self, request: pytest.FixtureRequest, feed: t.Callable[[dict, str], t.Any]) -> Future:
        """The future of this case's `feed(params, workdir)`; the first call of a test function
        submits every selected case of it (this module's items of the same function, in run order)."""
        node = request.node
        for item in node.session.items:
            if getattr(item, "originalname", None) == node.originalname and item.module is node.module \
                    and item.nodeid not in self.futures:
                params = dict(item.callspec.params)
                workdir = str(self.tmp.mktemp(item.name[:40].replace("[", "-").replace("]", "")))
                self.futures[item.nodeid] = self.pool.submit(feed, params, workdir)
        return self.futures[node.nodeid]

    def named(self, request: pytest.FixtureRequest, feeds: dict[str, t.Callable[[str], t.Any]]) -> Future | None:
        """The future of this test's feed in `feeds` (keyed by test name, `item.name`; None if it has
        none), each called with its own directory; the first call submits the feed of every selected
        test of the module that has one (in run order), whatever its function."""
        node = request.node
        for item in node.session.items:
            if item.module is node.module and item.name in feeds and item.nodeid not in self.futures:
                workdir = str(self.tmp.mktemp(item.name[:40].replace("[", "-").replace("]", "")))
                self.futures[item.nodeid] = self.pool.submit(feeds[item.name], workdir)
        return self.futures.get(node.nodeid)

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)


@pytest.fixture(scope="module")
def ahead(tmp_path_factory):
    runner = Ahead(tmp_path_factory)
    yield runner
    runner.close()

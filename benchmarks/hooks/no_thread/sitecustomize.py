"""A measurement, not a way to run apps: `def` functions called on the event loop's thread.

`queue_peers_bench.py --no-thread-row` puts this folder first on PYTHONPATH of a `funchost start`
(`funchost-1-no-thread`). The function pool's `run` then calls the function in a loop callback
and settles the same future there, so the message's task still awaits a future and resumes, as
with the thread, but nothing crosses to another thread: the drain's figure without the trip to
the thread that the Python worker's contract requires (azure-semantics 2.3). A function that
blocked would block the loop here.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from typing import Any

if os.environ.get("FUNCHOST_BENCH_NO_THREAD") == "1" and sys.argv[:1] == ["-m"]:
    from funchost import thread_pool

    _run_on_thread: Callable[..., asyncio.Future[Any]] = thread_pool.ThreadPool.run

    def _run_on_loop(self: thread_pool.ThreadPool, fn: Any, *args: Any) -> asyncio.Future[Any]:
        if self._prefix != "function":  # SQLite's file threads keep theirs
            return _run_on_thread(self, fn, *args)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def call() -> None:
            try:
                future.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task, as the pool does
                future.set_exception(exc)

        loop.call_soon(call)
        return future

    thread_pool.ThreadPool.run = _run_on_loop

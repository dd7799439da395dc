"""A measurement, not a way to run apps: `def` functions called on the event loop's thread.

`queue_peers_bench.py --no-thread-row` puts this folder first on PYTHONPATH of a `funchost start`
(`funchost-1-no-thread`), with FUNCHOST_BENCH_NO_THREAD naming a file to create on the first call
made here: the runner checks it exists, so a hook that did not take cannot pass for a figure.
The function pool's `run` calls the function in a loop callback and settles the same future
there, so the message's task still awaits a future and resumes, as with the thread, but nothing
crosses to another thread: the drain's figure without the trip to the thread that the Python
worker's contract requires (azure-semantics 2.3). A function that blocked would block the loop here.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_MARK = os.environ.get("FUNCHOST_BENCH_NO_THREAD")
if _MARK and sys.argv[:1] == ["-m"]:
    from funchost import thread_pool

    _mark_file: Path | None = Path(_MARK)  # None once created

    _run_on_thread: Callable[..., asyncio.Future[Any]] = thread_pool.ThreadPool.run

    def _run_on_loop(self: thread_pool.ThreadPool, fn: Any, *args: Any) -> asyncio.Future[Any]:
        if self._prefix != "function":  # SQLite's file threads keep theirs
            return _run_on_thread(self, fn, *args)
        global _mark_file
        if _mark_file is not None:
            _mark_file.touch(exist_ok=False)
            _mark_file = None
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

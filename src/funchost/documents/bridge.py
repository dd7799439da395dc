"""Run a store coroutine to completion from synchronous code (the sync client, the CLI).

The `DocumentStore` port is asynchronous. A sync caller is one of:

* a thread of a running host (a ``def`` function on the worker pool): the call runs on the host's
  event loop, like every other storage call of the host;
* a thread with no event loop (a script, the CLI): the call runs on a loop kept for that thread;
* code on a thread whose loop is running (blocking sync code inside ``async def``): the call runs
  on a short-lived loop in a separate thread, since that loop cannot be re-entered; the caller's
  loop is blocked meanwhile, as any blocking call blocks it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from funchost.runtime.current import get_current

T = TypeVar("T")
_local = threading.local()


def run_sync(work: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="documents-sync") as separate:
            return separate.submit(asyncio.run, work).result()
    host_loop = _host_loop()
    if host_loop is not None:
        return asyncio.run_coroutine_threadsafe(work, host_loop).result()
    loop: asyncio.AbstractEventLoop | None = getattr(_local, "loop", None)
    if loop is None or loop.is_closed():
        loop = _local.loop = asyncio.new_event_loop()
    return loop.run_until_complete(work)


def _host_loop() -> asyncio.AbstractEventLoop | None:
    runtime = get_current()
    loop = runtime.services.loop if runtime is not None else None
    return loop if loop is not None and loop.is_running() else None

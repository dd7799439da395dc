"""The threads that run `def` functions, as the worker's ThreadPoolExecutor does, made cheap.

`loop.run_in_executor` costs a concurrent Future, an asyncio Future chained to it and one
loop wake-up (a self-pipe write) per call. Here a call is one queue put, the caller awaits a
plain loop future, and calls that finish close together are handed back with one wake-up.
Threads start on demand up to `max_workers` and then stay, like ThreadPoolExecutor's; at
interpreter exit idle threads are told to leave and running functions are waited for.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any

_pools: weakref.WeakSet[FunctionThreadPool] = weakref.WeakSet()


def _at_exit() -> None:
    for pool in list(_pools):
        pool.shutdown()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]  # what ThreadPoolExecutor does


class FunctionThreadPool:
    def __init__(self, max_workers: int, name_prefix: str = "function") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._prefix = name_prefix
        self._work: SimpleQueue[tuple[Any, ...] | None] = SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._idle = 0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: deque[tuple[asyncio.Future[Any], bool, Any]] = deque()
        self._wake_pending = False
        self._closed = False
        _pools.add(self)

    @property
    def thread_count(self) -> int:
        return len(self._threads)

    def run(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        """Call `fn(*args)` on a pool thread; the returned future is the running loop's."""
        if self._closed:
            raise RuntimeError("cannot run new functions after shutdown")
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        future: asyncio.Future[Any] = loop.create_future()
        self._work.put((loop, future, fn, args))
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
                return future
            start = len(self._threads) < self.max_workers
            if start:
                thread = threading.Thread(target=self._worker, name=f"{self._prefix}_{len(self._threads)}")
                self._threads.append(thread)
        if start:
            thread.start()
        return future

    def shutdown(self) -> None:
        """Threads leave once the calls already queued are done; does not wait for them."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            count = len(self._threads)
        for _ in range(count):
            self._work.put(None)

    # -- pool threads ----------------------------------------------------------------------------

    def _worker(self) -> None:
        work = self._work
        while True:
            item = work.get()
            if item is None:
                return
            loop, future, fn, args = item
            if future.cancelled():
                outcome: tuple[asyncio.Future[Any], bool, Any] = (future, True, None)
            else:
                try:
                    outcome = (future, True, fn(*args))
                except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                    outcome = (future, False, exc)
            del item, fn, args
            self._complete(loop, outcome)
            del outcome
            with self._lock:
                self._idle += 1

    def _complete(self, loop: asyncio.AbstractEventLoop, outcome: tuple[asyncio.Future[Any], bool, Any]) -> None:
        if loop is not self._loop:
            _call_soon(loop, _settle, outcome)
            return
        self._done.append(outcome)
        with self._lock:
            if self._wake_pending:
                return  # a delivery is already scheduled and will see this outcome
            self._wake_pending = True
        if not _call_soon(loop, self._deliver):
            with self._lock:
                self._wake_pending = False

    def _deliver(self) -> None:
        """On the loop: settle every outcome queued since the last delivery."""
        with self._lock:
            self._wake_pending = False
        done = self._done
        while done:
            _settle(done.popleft())


def _settle(outcome: tuple[asyncio.Future[Any], bool, Any]) -> None:
    future, ok, value = outcome
    if future.done():
        return  # cancelled by a timeout or by the host stopping
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


def _call_soon(loop: asyncio.AbstractEventLoop, callback: Callable[..., None], *args: Any) -> bool:
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:  # the loop is closed: nobody is waiting any more
        return False
    return True

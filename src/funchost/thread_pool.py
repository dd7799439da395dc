"""Threads for blocking work of the event loop, as ThreadPoolExecutor's, made cheap: the `def`
functions (as the worker runs them) and the statements of each SQLite file and of PostgreSQL's
sync connections.

`loop.run_in_executor` costs a concurrent Future, an asyncio Future chained to it and one
loop wake-up (a self-pipe write) per call. Here a call is one deque append, the caller awaits a
plain loop future, and outcomes are handed back to the loop together. Threads start on demand up
to `max_workers` and then stay, like ThreadPoolExecutor's; at interpreter exit idle threads are
told to leave and running calls are waited for.

Waking a sleeping thread costs a futex call, a context switch and a turn of the GIL on each side,
more than a short function itself. ThreadPoolExecutor wakes a thread per call, so a queue
trigger's batch of sixteen quick `def` calls woke sixteen threads that then queued for the GIL
behind the event loop. Here a call wakes a thread only when no thread is awake to take it: an
awake thread runs the waiting calls one after another. Each outcome goes to the loop as soon as
its call returns, in one wake-up with those that follow before the loop takes them: a burst of
calls that keep the GIL costs one wake-up, and statements that release it while they wait for
SQLite or the network are settled as they finish, as with ThreadPoolExecutor.

So that nothing waits behind a function that takes long (one that blocks), the loop looks again
STARVING_AFTER after a call was queued for busy threads: if calls still wait, no thread took one
meanwhile and every awake thread is inside a call, it wakes (or starts) a thread per waiting
call, up to `max_workers`, and looks again. An awake thread that has not taken a call yet is only
waiting for the interpreter lock, held by a busy loop: a thread woken for each waiting call would
queue for the same lock (a drain of quick `def` calls on PostgreSQL ran with 75 threads that way,
12 now). At most `max_workers` functions run at once, as with ThreadPoolExecutor; a call queued
behind busy threads starts up to STARVING_AFTER later than there (docs/deviations.md).
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections import deque
from collections.abc import Callable
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")

STARVING_AFTER = 0.001  # seconds: how long calls may wait while the awake threads take none

Outcome = tuple[asyncio.Future[Any], bool, Any]  # the future, whether it returned, its value or exception

_pools: weakref.WeakSet[ThreadPool] = weakref.WeakSet()


def _at_exit() -> None:
    for pool in list(_pools):
        pool.shutdown()


threading._register_atexit(_at_exit)  # type: ignore[attr-defined]  # what ThreadPoolExecutor does


class ThreadPool:
    def __init__(self, max_workers: int, name_prefix: str = "function") -> None:
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self.max_workers = max_workers
        self._prefix = name_prefix
        self._work: deque[tuple[Any, ...]] = deque()  # calls no thread has taken yet, oldest first
        self._wakes: SimpleQueue[bool] = SimpleQueue()  # to sleeping threads: True look for calls, False leave
        self._threads: list[threading.Thread] = []
        self._awake = 0  # threads running calls or about to look for one
        self._taken = 0  # calls taken so far (the loop's second look compares it)
        self._inside = 0  # threads inside a call now (other awake threads are about to take one)
        self._second_look: asyncio.TimerHandle | None = None
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._done: deque[Outcome] = deque()  # outcomes waiting to be settled on the loop
        self._wake_pending = False
        self._closed = False
        _pools.add(self)

    @property
    def thread_count(self) -> int:
        return len(self._threads)

    def run(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Call `fn(*args)` on a pool thread; the returned future is the running loop's."""
        if self._closed:
            raise RuntimeError("cannot run new functions after shutdown")
        loop = asyncio.get_running_loop()
        if self._loop is None or self._loop.is_closed():
            self._loop = loop
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:
            self._work.append((loop, future, fn, args))
            if self._awake == 0:
                starting = self._wake_one()
            else:  # an awake thread takes it after what it runs now, unless that takes long
                starting = None
                if self._second_look is None:
                    self._second_look = loop.call_later(STARVING_AFTER, self._look_again, self._taken)
        if starting is not None:
            starting.start()
        return future

    def shutdown(self, wait: bool = False) -> None:
        """Threads leave once the calls already queued are done; `wait` returns when they have."""
        leaving = 0
        with self._lock:
            if not self._closed:
                self._closed = True
                leaving = len(self._threads)
                if self._second_look is not None:
                    self._second_look.cancel()
                    self._second_look = None
            threads = list(self._threads)
        for _ in range(leaving):
            self._wakes.put(False)
        if wait:
            current = threading.current_thread()
            for thread in threads:
                if thread is not current and thread.ident is not None:  # started
                    thread.join()

    def _wake_one(self) -> threading.Thread | None:
        """(Lock held.) Wake a sleeping thread, or make a new one for the caller to start once the
        lock is released; None when every thread is awake already."""
        if self._awake < len(self._threads):
            self._awake += 1
            self._wakes.put(True)
            return None
        if len(self._threads) < self.max_workers:
            self._awake += 1
            thread = threading.Thread(target=self._worker, name=f"{self._prefix}_{len(self._threads)}")
            self._threads.append(thread)
            return thread
        return None

    def _look_again(self, taken_before: int) -> None:
        """On the loop, STARVING_AFTER after a call was queued for busy threads."""
        starting: list[threading.Thread] = []
        with self._lock:
            self._second_look = None
            waiting = len(self._work)
            if not waiting or self._closed:
                return
            # Only threads inside long functions starve the calls. An awake thread that took none
            # yet may just be waiting for the interpreter lock, which the loop has held (a busy
            # loop): it takes the calls once the loop waits, so waking more would only add threads
            # that queue for the same lock.
            if self._taken == taken_before and self._inside >= self._awake:
                for _ in range(waiting):
                    thread = self._wake_one()
                    if thread is not None:
                        starting.append(thread)
                    elif self._awake >= len(self._threads):
                        break  # every thread is busy: the calls wait for one, as in any pool
            loop = self._loop
            if loop is not None and not loop.is_closed():
                self._second_look = loop.call_later(STARVING_AFTER, self._look_again, self._taken)
        for thread in starting:
            thread.start()

    # -- pool threads ----------------------------------------------------------------------------

    def _worker(self) -> None:
        """Take calls until none waits, then sleep until woken (a thread starts awake)."""
        work, lock, done = self._work, self._lock, self._done
        while True:
            while True:
                with lock:
                    if not work:
                        self._awake -= 1
                        break
                    item = work.popleft()
                    self._taken += 1
                    self._inside += 1
                loop, future, fn, args = item
                if future.cancelled():
                    outcome: Outcome = (future, True, None)
                else:
                    try:
                        outcome = (future, True, fn(*args))
                    except BaseException as exc:  # noqa: BLE001 - handed to the awaiting task
                        outcome = (future, False, exc)
                del item, fn, args
                with lock:
                    self._inside -= 1
                if loop is not self._loop:
                    _call_soon(loop, _settle, outcome)
                else:
                    done.append(outcome)
                    if not self._wake_pending:  # else the scheduled delivery takes it too
                        self._hand_over(loop)
                del outcome
            if not self._wakes.get():
                return

    def _hand_over(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Have the loop settle the waiting outcomes: one wake-up for all that finish before the
        loop takes them. (The unlocked look at `_wake_pending` before this is safe: an outcome is
        appended before the look, and `_deliver` clears the flag before it takes the outcomes.)"""
        with self._lock:
            if self._wake_pending:
                return  # a delivery is already scheduled and will see these outcomes
            self._wake_pending = True
        if loop is None or not _call_soon(loop, self._deliver):
            with self._lock:
                self._wake_pending = False

    def _deliver(self) -> None:
        """On the loop: settle every outcome queued since the last delivery."""
        with self._lock:
            self._wake_pending = False
        done = self._done
        while done:
            _settle(done.popleft())


def _settle(outcome: Outcome) -> None:
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

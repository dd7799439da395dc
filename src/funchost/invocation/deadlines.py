"""functionTimeout on the system clock without a timer per invocation.

`asyncio.timeout` arms and cancels a loop timer for every call; with one timeout for every
invocation of a host, deadlines are reached in the order the invocations started, so one timer
for the earliest running invocation is enough: when it fires, the invocations whose deadline
has passed are cancelled (as `asyncio.timeout` cancels its task) and the timer moves to the next
one. An invocation that ends only leaves the watch (a dict deletion); a timer left for an
invocation that already ended fires once and moves on.
"""

from __future__ import annotations

import asyncio


class Watch:
    __slots__ = ("cancelling", "deadline", "expired", "task")

    def __init__(self, task: asyncio.Task[object], deadline: float) -> None:
        self.task = task
        self.deadline = deadline
        self.cancelling = task.cancelling()  # cancellation requests already pending at entry
        self.expired = False


class DeadlineWatch:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._running: dict[int, Watch] = {}  # in start order, which is deadline order
        self._timer: asyncio.TimerHandle | None = None

    def enter(self, task: asyncio.Task[object] | None = None) -> Watch:
        """Watch `task` (by default the current one) from now until `leave`."""
        if task is None:
            task = asyncio.current_task()
        if task is None:
            raise RuntimeError("functionTimeout needs a running task")
        loop = task.get_loop()
        watch = Watch(task, loop.time() + self.seconds)
        self._running[id(watch)] = watch
        if self._timer is None:
            self._timer = loop.call_at(watch.deadline, self._expire, loop)
        return watch

    def leave(self, watch: Watch) -> None:
        self._running.pop(id(watch), None)

    def _expire(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        now = loop.time()
        running = self._running
        while running:
            key = next(iter(running))
            watch = running[key]
            if watch.deadline > now:
                self._timer = loop.call_at(watch.deadline, self._expire, loop)
                return
            del running[key]
            watch.expired = True
            watch.task.cancel()

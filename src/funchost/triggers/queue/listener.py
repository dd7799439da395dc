"""When to fetch queue messages (azure-semantics 1.2, 1.3, 1.10).

One listener per queue-triggered function, on the shared `PollLoop` with WebJobs' randomized
exponential back-off. A non-empty batch is processed concurrently and the next fetch waits only
until no more than `newBatchThreshold` messages are still running their function, so at most
batchSize + newBatchThreshold run at once. A local write to the queue (`notify`) ends the back-off,
never the threshold wait. The monitored queue is never created by the listener.

WebJobs counts a message until its delete returns too. Its deletes are one request each and end
one by one, so the fetch starts while the last deletes of a batch are still on their way. Here the
deletes of a burst are one statement (`WriteGroup`, the PostgreSQL delete batch) and end together:
counted to the end, every fetch would wait for that statement's round trip. A message therefore
stops counting once its function has returned, and the fetch overlaps its delete
(docs/deviations.md, "Queues"). So that deletes slower than the fetches cannot pile up,
the fetch also waits while more than batchSize + newBatchThreshold messages are held in all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from funchost.errors import QueueNotFound, StorageError
from funchost.indexing.spec import FunctionSpec
from funchost.listeners.delays import RandomizedExponentialBackoff
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.contracts import Runtime
from funchost.runtime.signals import queue_topic
from funchost.runtime.stopping import until_empty
from funchost.storage.queues import QueueService
from funchost.triggers.queue.options import MIN_POLLING_INTERVAL, QueuesOptions
from funchost.triggers.queue.processor import QueueProcessor

log = logging.getLogger("funchost.queues")


def is_transient(exc: BaseException) -> bool:
    """Queue missing, being deleted (409) or a 5xx: back off and try again (WebJobs keeps polling)."""
    if not isinstance(exc, StorageError):
        return False
    return isinstance(exc, QueueNotFound) or exc.status == 409 or exc.status >= 500


class QueueListener:
    def __init__(
        self,
        function: FunctionSpec,
        runtime: Runtime,
        service: QueueService,
        queue: str,
        processor: QueueProcessor,
        options: QueuesOptions,
        receive_visibility: float,
    ) -> None:
        self.function = function
        self.runtime = runtime
        self.service = service
        self.queue = queue
        self.processor = processor
        self.options = options
        self.receive_visibility = int(receive_visibility)
        maximum = options.polling_maximum(runtime.is_development)
        self.strategy = RandomizedExponentialBackoff(MIN_POLLING_INTERVAL, maximum)
        self.loop = PollLoop(f"queue:{function.name}", self._poll, self.strategy, runtime.clock,
                             on_error=self._on_error)
        self._queue_exists: bool | None = None
        self._processing: set[asyncio.Task[None]] = set()  # every message held, until deleted or released
        self._running: set[asyncio.Task[None]] = set()  # those whose function has not returned yet
        self._most_held = options.batch_size + options.new_batch_threshold
        self._stopping = asyncio.Event()  # ends the batch-threshold wait: nothing else does
        self._below: asyncio.Future[None] | None = None  # the threshold wait: resolved as a message finishes
        self._unsubscribe: Callable[[], None] | None = None
        self._event_loop: asyncio.AbstractEventLoop | None = None  # the loop it runs on, from `start`
        self.fetches = 0

    # -- Listener --------------------------------------------------------------------------------

    async def start(self) -> None:
        self._event_loop = asyncio.get_running_loop()  # `_executed` asks it for the current task
        self._unsubscribe = self.runtime.signals.subscribe(
            queue_topic(self.service.account_name, self.queue), self.notify)
        self.loop.start()

    async def stop(self) -> None:
        """Fetch nothing new; let every in-flight message finish and be completed."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._stopping.set()
        self._resolve_below()
        await self.loop.stop()
        await until_empty(self._processing)
        await self.processor.stop()

    def notify(self) -> None:
        """A local write to the queue: end the polling back-off. The batch-threshold wait is not
        ended: WebJobs' QueueListener.Notify completes only the wait of CreateBackoffResult, the
        wait after a batch is WaitForNewBatchThreshold alone (azure-semantics 1.2)."""
        self.loop.notify()

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    # -- one iteration ---------------------------------------------------------------------------

    async def _poll(self) -> bool:
        if not self._queue_exists:
            self._queue_exists = await self.service.queue_exists(self.queue)
            if not self._queue_exists:
                return False
        try:
            messages = await self.service.get_messages(
                self.queue, max_messages=self.options.batch_size, visibility_timeout=self.receive_visibility)
        except StorageError:
            self._queue_exists = None
            raise
        self.fetches += 1
        if not messages:
            return False
        create_task, process, processing, running, finished, executed = (
            asyncio.get_running_loop().create_task, self.processor.process, self._processing, self._running,
            self._finished, self._executed)
        for message in messages:  # a task per message, on the processor's own coroutine
            task = create_task(process(message, executed), name=f"queue-message:{self.queue}/{message.id}")
            processing.add(task)
            running.add(task)
            task.add_done_callback(finished)
        await self._wait_for_threshold()
        return True

    def _below_threshold(self) -> bool:
        return (len(self._running) <= self.options.new_batch_threshold
                and len(self._processing) <= self._most_held)

    def _executed(self) -> None:
        """Called by the processor in a message's task once its function has returned."""
        # With the loop given, no look for the running loop (a system call on Python 3.11).
        task = asyncio.current_task(self._event_loop)
        if task is not None:
            self._running.discard(task)  # the message's own task
        if self._below_threshold():
            self._resolve_below()

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._processing.discard(task)
        self._running.discard(task)  # a message that ended without running its function (undecodable, poisoned)
        if self._below_threshold():
            self._resolve_below()
        if task.cancelled():
            return
        error = task.exception()
        if error is not None and isinstance(error, Exception):
            # WebJobs hands this to the host's unhandled-exception handler; funchost logs it and
            # leaves the message to reappear when its visibility lapses.
            log.error("processing a message from '%s' failed unexpectedly", self.queue, exc_info=error)

    async def _wait_for_threshold(self) -> None:
        """Until no more than newBatchThreshold messages run their function (and no more than
        batchSize + newBatchThreshold are held), or the listener stops: one future, resolved by the
        message that brings the count down (not a wait over every task in flight, renewed as each
        one finishes)."""
        while not self._below_threshold() and not self._stopping.is_set():
            self._below = asyncio.get_running_loop().create_future()
            try:
                await self._below
            finally:
                self._below = None

    def _resolve_below(self) -> None:
        below = self._below
        if below is not None and not below.done():
            below.set_result(None)

    def _on_error(self, exc: BaseException) -> bool:
        """Keep polling, after the back-off. WebJobs backs off on a missing queue, a 409 or a 5xx
        and hands anything else to the host's unhandled-exception handler, which stops the host
        (the platform then starts it again, listeners and all): funchost keeps this listener
        polling at its growing back-off instead, with an error logged, so the function resumes
        once the cause passes and the other functions go on (docs/deviations.md, "Queues")."""
        self._queue_exists = None
        if is_transient(exc):
            log.debug("queue '%s' poll failed (%s); backing off", self.queue, exc)
        else:
            log.error("queue '%s' poll failed unexpectedly (%s: %s); polling again after the back-off",
                      self.queue, type(exc).__name__, exc,
                      exc_info=None if isinstance(exc, StorageError) else exc)  # a bug's traceback
        return True

"""When to receive Service Bus messages: the extension's `ServiceBusListener` rules (shared spec §1.3).

* single dispatch, no sessions: up to `maxConcurrentCalls` messages in flight; a free slot is
  filled by the next receive (the SDK processor with PrefetchCount 0 does the same);
* single dispatch with sessions: `maxConcurrentSessions` session workers, each holding one
  session and processing its messages `maxConcurrentCallsPerSession` at a time, in order;
  a session with no message for `sessionIdleTimeout` is released;
* batch (`cardinality: many`): one loop, one invocation at a time, up to `maxMessageBatchSize`
  messages, with `minMessageBatchSize` / `maxBatchWaitTime` caching; no lock renewal.

All loops run on the shared `PollLoop` with a short back-off (the AMQP receive of the SDK
returns as soon as a message arrives; sends from this process wake the loop at once).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from funchost.indexing.spec import FunctionSpec
from funchost.listeners.delays import RandomizedExponentialBackoff
from funchost.listeners.poll_loop import PollLoop
from funchost.runtime.contracts import Runtime
from funchost.runtime.stopping import until_empty
from funchost.servicebus.namespaces import ServiceBusNamespace
from funchost.storage.servicebus import (
    ReceivedMessage,
    ServiceBusError,
    SessionLock,
    SessionLockLost,
    split_dead_letter,
)
from funchost.triggers.servicebus.messages import build_batch, build_single
from funchost.triggers.servicebus.options import ServiceBusOptions
from funchost.triggers.servicebus.processor import LOST, LockRenewal, Settler, renew_delay

log = logging.getLogger("funchost.servicebus")

MIN_POLL = 0.05
MAX_POLL = 1.0


def signal_topic(namespace: str, entity: str) -> tuple[str, str, str]:
    """Wake-up topic of a queue or topic (subscription listeners listen on their topic's)."""
    return ("servicebus", namespace.lower(), entity.lower())


class ServiceBusListener:
    def __init__(self, function: FunctionSpec, runtime: Runtime, namespace: ServiceBusNamespace, path: str,
                 wake_entity: str, options: ServiceBusOptions, *, sessions: bool, batch: bool,
                 auto_complete: bool, endpoint: str, on_error: Callable[[str], None]) -> None:
        self.function = function
        self.runtime = runtime
        self.namespace = namespace
        self.broker = namespace.broker
        self.path = path
        self.options = options
        self.sessions = sessions
        self.batch = batch
        self.settler = Settler(function, runtime, self.broker, path, endpoint, auto_complete)
        self._wake_entity = wake_entity
        self._report_error = on_error
        self._loops: list[PollLoop] = []
        self._processing: set[asyncio.Task[None]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._stopping = False
        self._cache: list[ReceivedMessage] = []
        self._cache_session: SessionLock | None = None
        self._cache_deadline: float | None = None
        self._session_wakes: set[asyncio.Event] = set()
        self._starting: asyncio.Task[None] | None = None
        self.max_in_flight = 0
        self.details = (f"namespace='{endpoint}', entityPath='{path}', singleDispatch='{not batch}', "
                        f"isSessionsEnabled='{sessions}', functionId='Functions.{function.name}'")

    # -- Listener --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Embedded: a missing or mismatched entity raises (the host retries the start). A real
        namespace may take the SDK's retries to answer: the host does not wait for it, and the
        function is put in error if it turns out unreachable."""
        if self.namespace.embedded:
            await self._check_entity()
            self._listen()
        else:
            self._starting = asyncio.get_running_loop().create_task(self._start_remote())

    async def _start_remote(self) -> None:
        try:
            await self._check_entity()
        except (ServiceBusError, ValueError, OSError) as exc:
            self._report_error(str(exc))
            return
        self._listen()

    def _listen(self) -> None:
        if self._stopping:
            return
        self._unsubscribe = self.runtime.signals.subscribe(
            signal_topic(self.broker.namespace, self._wake_entity), self.notify)
        if self.batch:
            self._add_loop("batch", self._poll_batch_sessions if self.sessions else self._poll_batch)
        elif self.sessions:
            for worker in range(self.options.max_concurrent_sessions):
                self._add_loop(f"session-{worker}", self._poll_session)
        else:
            self._add_loop("messages", self._poll_messages)
        log.debug("ServiceBus listener started (%s)", self.details)

    async def _check_entity(self) -> None:
        await self.namespace.ensure_entity(self.path)
        entity, dead_letters = split_dead_letter(self.path)
        info = await self.broker.get_entity(entity)  # a real namespace: is it reachable?
        if not self.namespace.embedded:
            return  # the service itself refuses a mismatched (non-)session receiver
        if dead_letters:
            if self.sessions:  # a dead-letter queue has no sessions, even one of a session entity
                raise ValueError(f"'{self.path}' is a dead-letter queue: it has no sessions (remove "
                                 "is_sessions_enabled)")
            return
        if info.properties.requires_session and not self.sessions:
            raise ValueError(f"the entity '{self.path}' requires sessions: it is not possible for an entity that "
                             "requires sessions to create a non-sessionful message receiver (set "
                             "is_sessions_enabled=True)")
        if self.sessions and not info.properties.requires_session:
            raise ValueError(f"the entity '{self.path}' does not require sessions: a session receiver cannot be "
                             "created for it (remove is_sessions_enabled or enable RequiresSession)")

    def _add_loop(self, name: str, poll: Callable[[], Any]) -> None:
        strategy = RandomizedExponentialBackoff(MIN_POLL, MAX_POLL)
        loop = PollLoop(f"servicebus:{self.function.name}:{name}", poll, strategy, self.runtime.clock,
                        on_error=self._on_error)
        self._loops.append(loop)
        loop.start()

    async def stop(self) -> None:
        """Receive nothing new; in-flight invocations finish and are settled; cached batch
        messages are dispatched; held sessions are released."""
        self._stopping = True
        if self._starting is not None:
            await asyncio.gather(self._starting, return_exceptions=True)
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.notify()
        await asyncio.gather(*(loop.stop() for loop in self._loops))
        await until_empty(self._processing)
        if self._cache:
            await self._dispatch_batch(self._take_cache(len(self._cache)), self._cache_session)
        if self._cache_session is not None:
            await self._release(self._cache_session)
        if not self.namespace.embedded:
            await self.broker.aclose()  # this listener's own SDK client, as the extension's is
        log.debug("ServiceBus listener stopped (%s)", self.details)

    def notify(self) -> None:
        for loop in self._loops:
            loop.notify()
        for wake in self._session_wakes:
            wake.set()

    def _on_error(self, exc: BaseException) -> bool:
        if isinstance(exc, ServiceBusError):
            log.warning("Service Bus receive on '%s' failed (%s); retrying", self.path, exc.code)
            return True
        log.error("An unhandled exception occurred in the message receive loop (%s): %s", self.details, exc)
        return True

    # -- single dispatch without sessions ----------------------------------------------------------

    async def _poll_messages(self) -> bool:
        limit = self.options.max_concurrent_calls
        # Receive when at least half the slots are free (at least one), so that a busy listener
        # locks messages in groups instead of one receive per finished invocation.
        while self._processing and limit - len(self._processing) < max(1, limit // 2) and not self._stopping:
            await asyncio.wait(set(self._processing), return_when=asyncio.FIRST_COMPLETED)
        free = limit - len(self._processing)
        if self._stopping:
            return False
        messages = await self.broker.receive(self.path, free)
        for message in messages:
            self._spawn(self._process_one(message))
        return bool(messages)

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work, name=f"servicebus:{self.function.name}")
        self._processing.add(task)
        task.add_done_callback(self._processing.discard)
        self.max_in_flight = max(self.max_in_flight, len(self._processing))

    async def _process_one(self, message: ReceivedMessage, renew: bool = True) -> None:
        renewal = None
        if renew and self.options.max_auto_lock_renewal_duration != 0:
            renewal = LockRenewal(self.broker, self.path, message, self.runtime.clock,
                                  self.options.max_auto_lock_renewal_duration)
        try:
            result = await self.settler.invoke(build_single(self.function, message, self.path))
        finally:
            if renewal is not None:
                await renewal.stop()
        await self.settler.settle([message], result)

    # -- single dispatch with sessions -------------------------------------------------------------

    async def _poll_session(self) -> bool:
        if self._stopping:
            return False
        session = await self.broker.accept_session(self.path)
        if session is None:
            return False
        renewer = asyncio.get_running_loop().create_task(self._renew_session(session))
        try:
            await self._drain_session(session)
        finally:
            renewer.cancel()
            await asyncio.gather(renewer, return_exceptions=True)
            await self._release(session)
        return True

    async def _drain_session(self, session: SessionLock) -> None:
        idle_timeout = self.options.effective_session_idle_timeout
        clock = self.runtime.clock
        idle_since = clock.monotonic()
        wake = asyncio.Event()
        self._session_wakes.add(wake)
        try:
            while not self._stopping:
                messages = await self.broker.receive(self.path, self.options.max_concurrent_calls_per_session,
                                                     session=session)
                if messages:
                    # In order: a message is not started before the previous ones of the session finished.
                    await asyncio.gather(*(self._process_one(m, renew=False) for m in messages))
                    idle_since = clock.monotonic()
                    continue
                remaining = idle_timeout - (clock.monotonic() - idle_since)
                if remaining <= 0:
                    return
                wake.clear()
                await clock.wait(wake, min(remaining, MAX_POLL))
        finally:
            self._session_wakes.discard(wake)

    async def _renew_session(self, session: SessionLock) -> None:
        clock = self.runtime.clock
        while True:
            await clock.sleep(renew_delay((session.locked_until - clock.now()).total_seconds()))
            try:
                session = await self.broker.renew_session_lock(session)
            except LOST:
                return

    async def _release(self, session: SessionLock) -> None:
        try:
            await self.broker.release_session(session)
        except ServiceBusError as exc:
            log.debug("releasing session '%s' failed: %s", session.session_id, exc.code)

    # -- batch dispatch ----------------------------------------------------------------------------

    async def _poll_batch(self) -> bool:
        return await self._receive_into_batch(None)

    async def _poll_batch_sessions(self) -> bool:
        if self._stopping:
            return False
        session = self._cache_session
        if session is None:
            session = await self.broker.accept_session(self.path)
            if session is None:
                return False
            self._cache_session = session
        try:
            found = await self._receive_into_batch(session)
        except SessionLockLost:
            self._cache.clear()  # the cached messages' locks went with the session
            self._cache_session = None
            return True
        if not found and not self._cache:
            await self._release(session)  # drained: close the session receiver
            self._cache_session = None
            return True
        return found

    async def _receive_into_batch(self, session: SessionLock | None) -> bool:
        options = self.options
        want = options.max_message_batch_size - len(self._cache)
        messages = await self.broker.receive(self.path, want, session=session) if want > 0 else []
        clock = self.runtime.clock
        if options.min_message_batch_size <= 1:
            if messages:
                await self._dispatch_batch(messages, session)
            return bool(messages)
        self._cache.extend(messages)
        if self._cache and self._cache_deadline is None:
            self._cache_deadline = clock.monotonic() + options.max_batch_wait_time
        due = self._cache_deadline is not None and clock.monotonic() >= self._cache_deadline
        if len(self._cache) >= options.min_message_batch_size or (self._cache and due):
            await self._dispatch_batch(self._take_cache(options.max_message_batch_size), session)
            return True
        return bool(messages)

    def _take_cache(self, count: int) -> list[ReceivedMessage]:
        batch, self._cache = self._cache[:count], self._cache[count:]
        self._cache_deadline = None if not self._cache else self._cache_deadline
        return batch

    async def _dispatch_batch(self, messages: list[ReceivedMessage], session: SessionLock | None) -> None:
        task = asyncio.get_running_loop().create_task(self._run_batch(messages))
        self._processing.add(task)
        self.max_in_flight = max(self.max_in_flight, len(self._processing))
        try:
            await task
        finally:
            self._processing.discard(task)

    async def _run_batch(self, messages: list[ReceivedMessage]) -> None:
        result = await self.settler.invoke(build_batch(self.function, messages, self.path))
        await self.settler.settle(messages, result)

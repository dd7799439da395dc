"""`OutboxDispatcher`: lease due outbox rows and send them to their queues.

Per row (one failing row never stops the batch):
1. `prepare(row)` (optional) and the size check run *before* the send call: a failure there
   means the message certainly was not sent -> DispatchFailed, back-off `min(300, 2**attempts)`.
2. `send(queue_name, payload)` returns the queue message id. Any failure *during* the call
   (timeout, disconnect, cancellation) -> DispatchUnknown: it may have been enqueued.
3. After a successful send, `mark_dispatched`; if that fails -> DispatchUnknown (the message is
   in the queue, the row says otherwise; the row is re-sent later and the worker's job lease
   absorbs the duplicate). If even that mark fails, the row's lease runs out and the next
   lease turns it into DispatchUnknown.

Wake-ups: a timer calls `dispatch_once()` (every 10 s in the reference app); `notify()` asks for
an immediate pass and is safe from any thread. `attach(signal)` subscribes `notify` to a
`CommitSignal` (by default the process-wide `outbox.after_commit`) so an intake commit in the
same process triggers a dispatch right away. A woken pass drains the outbox (it repeats while
batches come back full or more wake-ups arrived) and wake-ups arriving meanwhile are coalesced.

Every wake-up is counted from the `notify()` call until the pass that serves it has finished:
`idle()` waits for that, and the optional `activity` hook (`enter()` / `exit()`, called once per
wake-up) lets a host count the work as in flight. Under funchost the default hook is the host's
activity counter, so the test harness's idle detection sees dispatches started by commits;
without funchost there is no hook and the dispatcher works the same.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
import threading
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from funchost.reliability import logfields as lf
from funchost.reliability import metrics as m
from funchost.reliability.logfields import log_event, short_error
from funchost.reliability.outbox import CommitSignal, OutboxRow, after_commit

log = logging.getLogger("funchost.reliability.dispatcher")

Send = Callable[[str, str], Awaitable[str | None]]
Prepare = Callable[[OutboxRow], Any]

MAX_QUEUE_MESSAGE_BYTES = 64 * 1024


class ActivityHook(Protocol):
    """Told about every wake-up: `enter()` when it is requested, `exit()` when served."""

    def enter(self) -> None: ...

    def exit(self) -> None: ...


@dataclass(frozen=True)
class CallbackActivity:
    enter: Callable[[], None]
    exit: Callable[[], None]


def host_activity() -> ActivityHook | None:
    """The funchost host's in-flight work counter, or None when funchost's runtime is absent."""
    try:
        from funchost.runtime.activity import enter_busy, exit_busy
    except ImportError:  # pragma: no cover - deployed without the funchost host
        return None
    return CallbackActivity(enter_busy, exit_busy)


_DEFAULT = object()


@dataclass(frozen=True)
class DispatcherOptions:
    batch_size: int = 50
    lease_seconds: float = 120.0          # longer than a batch of sends takes
    send_timeout: float | None = 30.0     # a send still running after this is DispatchUnknown
    unknown_recheck_seconds: float = 60.0  # when a DispatchUnknown row is re-sent
    interval_seconds: float = 10.0        # `run()` polling period without wake-ups
    max_message_bytes: int = MAX_QUEUE_MESSAGE_BYTES


@dataclass(frozen=True)
class BatchResult:
    leased: int = 0
    dispatched: int = 0
    failed: int = 0
    unknown: int = 0
    lease_lost: int = 0


def default_dispatcher_id() -> str:
    instance = os.environ.get("WEBSITE_INSTANCE_ID") or socket.gethostname()
    return f"{instance[:40]}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class OutboxDispatcher:
    def __init__(self, store: Any, send: Send, *, dispatcher_id: str | None = None,
                 options: DispatcherOptions = DispatcherOptions(), prepare: Prepare | None = None,
                 metrics: m.Metrics | None = None, activity: ActivityHook | None | object = _DEFAULT) -> None:
        self.store = store
        self.send = send
        self.dispatcher_id = dispatcher_id or default_dispatcher_id()
        self.options = options
        self.prepare = prepare
        self.metrics = metrics if metrics is not None else m.default_metrics
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._running = False
        self._inflight: asyncio.Task[BatchResult] | None = None
        self._again = False
        self.activity: ActivityHook | None = host_activity() if activity is _DEFAULT else activity  # type: ignore[assignment]
        self._count_lock = threading.Lock()
        self._pending = 0  # wake-ups requested and not yet served (any thread)
        self._held = 0     # of those, the ones that reached the loop (loop thread only)

    # -- one pass --------------------------------------------------------------------------------

    async def dispatch_once(self) -> BatchResult:
        """Lease one batch and handle each row; returns the counts (also logged)."""
        outbox = self.store.outbox
        rows: list[OutboxRow] = await asyncio.to_thread(
            outbox.lease_due, self.dispatcher_id, self.options.batch_size, self.options.lease_seconds)
        counts = {"dispatched": 0, "failed": 0, "unknown": 0, "lease_lost": 0}
        for row in rows:
            try:
                outcome = await self._dispatch_one(row)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - per-item handling: never stop the batch
                outcome = "unknown"
                log_event(log, logging.ERROR, "Outbox item handling failed",
                          OutboxId=row.outbox_id, JobId=row.job_id, DispatcherId=self.dispatcher_id,
                          Error=short_error(exc))
            counts[outcome] += 1
        result = BatchResult(leased=len(rows), **counts)
        if rows:
            log_event(log, logging.INFO, "Outbox dispatch batch finished", DispatcherId=self.dispatcher_id,
                      Leased=result.leased, Dispatched=result.dispatched, Failed=result.failed,
                      Unknown=result.unknown, LeaseLost=result.lease_lost)
        return result

    async def _dispatch_one(self, row: OutboxRow) -> str:
        outbox = self.store.outbox
        ids = {lf.OUTBOX_ID: row.outbox_id, lf.JOB_ID: row.job_id, lf.DISPATCHER_ID: self.dispatcher_id}
        try:  # -- before the send call: failures here mean "not sent"
            if self.prepare is not None:
                prepared = self.prepare(row)
                if inspect.isawaitable(prepared):
                    await prepared
            size = len(row.payload.encode("utf-8"))
            if size > self.options.max_message_bytes:
                raise ValueError(f"payload is {size} bytes, over the queue message limit")
        except Exception as exc:  # noqa: BLE001
            await asyncio.to_thread(outbox.mark_failed, row.outbox_id, self.dispatcher_id, short_error(exc))
            self.metrics.incr(m.OUTBOX_FAILED_TOTAL)
            log_event(log, logging.WARNING, "Outbox dispatch failed before queue send attempt",
                      **ids, Error=short_error(exc))
            return "failed"
        try:  # -- the send call: any failure leaves the outcome unknown
            call = self.send(row.queue_name, row.payload)
            message_id = await (asyncio.wait_for(call, self.options.send_timeout)
                                if self.options.send_timeout else call)
        except BaseException as exc:
            await self._mark_unknown(row, exc, ids)
            if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
                raise
            return "unknown"
        try:  # -- after a successful send
            applied = await asyncio.to_thread(
                outbox.mark_dispatched, row.outbox_id, self.dispatcher_id, message_id)
        except Exception as exc:  # noqa: BLE001
            await self._mark_unknown(row, exc, {**ids, lf.QUEUE_MESSAGE_ID: message_id})
            return "unknown"
        if not applied:
            log_event(log, logging.WARNING, "Outbox row was sent but its lease had been taken over",
                      **ids, QueueMessageId=message_id)
            return "lease_lost"
        self.metrics.incr(m.OUTBOX_DISPATCHED_TOTAL)
        log_event(log, logging.INFO, "Outbox dispatched", **ids, QueueName=row.queue_name,
                  QueueMessageId=message_id)
        return "dispatched"

    async def _mark_unknown(self, row: OutboxRow, exc: BaseException, ids: dict[str, Any]) -> None:
        self.metrics.incr(m.OUTBOX_UNKNOWN_TOTAL)
        try:
            await asyncio.shield(asyncio.to_thread(
                self.store.outbox.mark_unknown, row.outbox_id, self.dispatcher_id, short_error(exc),
                self.options.unknown_recheck_seconds))
        except Exception as mark_exc:  # noqa: BLE001 - the lease expiry covers this case
            ids = {**ids, "MarkError": short_error(mark_exc)}
        log_event(log, logging.ERROR, "Outbox dispatch state is unknown after queue send attempt",
                  **ids, Error=short_error(exc))

    # -- wake-ups --------------------------------------------------------------------------------

    def attach(self, signal: CommitSignal | None = None,
               loop: asyncio.AbstractEventLoop | None = None) -> Callable[[], None]:
        """Bind to `loop` (default: the running loop) and subscribe `notify` to `signal`.

        Returns the unsubscribe function.
        """
        self._loop = loop or asyncio.get_running_loop()
        return (signal if signal is not None else after_commit).subscribe(self.notify)

    def notify(self) -> None:
        """Ask for a dispatch pass now. Thread-safe; a no-op until bound to a loop."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        self._enter()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._on_wake()
            return
        try:
            loop.call_soon_threadsafe(self._on_wake)
        except RuntimeError:  # the loop closed meanwhile: nobody will serve this wake-up
            self._exit(1)

    @property
    def pending_wakeups(self) -> int:
        """Wake-ups requested by `notify()` whose pass has not finished yet."""
        return self._pending

    def _enter(self) -> None:
        with self._count_lock:
            self._pending += 1
        if self.activity is not None:
            self.activity.enter()

    def _exit(self, count: int) -> None:
        if count <= 0:
            return
        with self._count_lock:
            self._pending -= count
        if self.activity is not None:
            for _ in range(count):
                self.activity.exit()

    def _release(self, count: int) -> None:
        self._held -= count
        self._exit(count)

    def _on_wake(self) -> None:
        self._held += 1
        if self._running and self._wake is not None:
            self._wake.set()  # `run()` is waiting or mid-pass: it serves this wake-up next
            return
        if self._inflight is not None and not self._inflight.done():
            self._again = True  # coalesce: one more pass after the current one
            return
        self._inflight = asyncio.get_running_loop().create_task(self._kick())

    async def _kick(self) -> BatchResult:
        """Drain: repeat while batches come back full or wake-ups arrived during a pass."""
        result = BatchResult()
        try:
            while True:
                self._again = False
                served = self._held
                try:
                    result = await self.dispatch_once()
                except Exception as exc:  # noqa: BLE001 - the timer retries; the store may be briefly unavailable
                    log_event(log, logging.ERROR, "Outbox dispatch pass failed",
                              DispatcherId=self.dispatcher_id, Error=short_error(exc))
                    result = BatchResult()
                self._release(served)
                if not self._again and result.leased < self.options.batch_size:
                    return result
        finally:
            self._release(self._held)

    async def idle(self) -> None:
        """Wait until every wake-up requested so far has been served (tests, shutdown)."""
        while True:
            task = self._inflight
            if task is not None and not task.done():
                await asyncio.wait({task})
            elif self._pending > 0 and self._loop is not None and not self._loop.is_closed():
                await asyncio.sleep(0)  # a wake-up is on its way to the loop, or `run()` serves it
            else:
                return

    async def run(self, stop: asyncio.Event, clock: Any = None) -> None:
        """Dispatch until `stop` is set: a full batch repeats at once, otherwise wait for
        `notify()` or `interval_seconds`. `clock` needs `wait(event, timeout)` (funchost.clock)."""
        from funchost.clock import SystemClock

        clock = clock or SystemClock()
        self._loop = self._loop or asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._running = True
        relay = asyncio.ensure_future(self._relay_stop(stop, self._wake))
        try:
            while not stop.is_set():
                self._wake.clear()
                served = self._held
                try:
                    result = await self.dispatch_once()
                except Exception as exc:  # noqa: BLE001 - the store may be briefly unavailable
                    log_event(log, logging.ERROR, "Outbox dispatch pass failed",
                              DispatcherId=self.dispatcher_id, Error=short_error(exc))
                    result = BatchResult()
                self._release(served)
                if result.leased >= self.options.batch_size or stop.is_set():
                    continue
                await clock.wait(self._wake, self.options.interval_seconds)
        finally:
            relay.cancel()
            self._running = False
            self._release(self._held)  # wake-ups that arrived after the last pass: stopping

    @staticmethod
    async def _relay_stop(stop: asyncio.Event, wake: asyncio.Event) -> None:
        await stop.wait()
        wake.set()

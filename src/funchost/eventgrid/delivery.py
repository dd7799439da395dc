"""The delivery engine: at-least-once delivery with Event Grid's retry schedule.

One `PollLoop` leases due delivery rows from the store, batches them per subscription
(``maxEventsPerBatch``, ``preferredBatchSizeInKilobytes``), sends each batch to its destination
and records the outcome: success (200-204) ends the row; a failure schedules the next attempt
after 10 s, 30 s, 1 min, 5 min, 10 min, 30 min, 1 h, 3 h, 6 h and then every 12 h, until
``maxDeliveryAttempts`` or ``eventTimeToLiveInMinutes`` runs out, whichever comes first. Some
status codes are not retried (azure-semantics 6.1, current table). Given-up events are written to
the dead-letter container five minutes later, or dropped (and counted) without one. Every wait is
on the runtime clock, so under a manual clock the whole schedule runs in milliseconds.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import defaultdict
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from funchost.clock import Clock
from funchost.eventgrid import SCHEMA_CLOUDEVENTS, SCHEMA_EVENTGRID
from funchost.eventgrid.config import EventGridConfig, SubscriptionConfig, delivery_schema
from funchost.eventgrid.deadletter import DeadLetterWriter, annotate
from funchost.eventgrid.destinations import Outcome, Sender
from funchost.eventgrid.schema import to_cloud_event
from funchost.listeners.poll_loop import PollLoop
from funchost.storage.eventgrid import (
    DEADLETTERED,
    DEADLETTERING,
    DELIVERED,
    DROPPED,
    PENDING,
    DeliveryRow,
    EventGridStore,
)

log = logging.getLogger("funchost.eventgrid")

RETRY_SCHEDULE = (10.0, 30.0, 60.0, 300.0, 600.0, 1800.0, 3600.0, 3 * 3600.0, 6 * 3600.0)
STEADY_RETRY = 12 * 3600.0
DEAD_LETTER_DELAY = 300.0  # between the last attempt and the dead-letter write
DEAD_LETTER_RETRY = 60.0
DEAD_LETTER_GIVE_UP = 4 * 3600.0  # dead-letter location unavailable this long -> dropped
LEASE_SECONDS = 120.0  # > the 30 s response timeout; a dead host's rows come back after this
IDLE_WAIT = 3600.0
# Current docs: these failures are not retried (dead-letter at once, else drop).
NO_RETRY_WEBHOOK = frozenset({400, 401, 403, 413})
NO_RETRY_AZURE_RESOURCE = frozenset({400, 403, 413})

MAX_ATTEMPTS_EXCEEDED = "MaxDeliveryAttemptsExceeded"
TTL_EXCEEDED = "TimeToLiveExceeded"
CLIENT_ERROR = "UndeliverableDueToClientError"
SUBSCRIPTION_DELETED = "SubscriptionDeleted"
DEAD_LETTER_UNAVAILABLE = "DeadLetterDestinationUnavailable"


def retry_delay(attempts: int) -> float:
    """Delay before the next attempt after `attempts` (>= 1) failed attempts."""
    index = attempts - 1
    return RETRY_SCHEDULE[index] if index < len(RETRY_SCHEDULE) else STEADY_RETRY


def is_retryable(status: int | None, destination_type: str) -> bool:
    if status is None:
        return True
    codes = NO_RETRY_WEBHOOK if destination_type == "webhook" else NO_RETRY_AZURE_RESOURCE
    return status not in codes


def batches(rows: list[DeliveryRow], max_events: int, preferred_kb: int) -> list[list[DeliveryRow]]:
    """Never more than `max_events`; stop adding once the next event would pass the preferred
    size (a single larger event still goes alone). No waiting to fill a batch."""
    limit = preferred_kb * 1024
    out: list[list[DeliveryRow]] = []
    current: list[DeliveryRow] = []
    size = 0
    for row in rows:
        if current and (len(current) >= max_events or size + row.size > limit):
            out.append(current)
            current, size = [], 0
        current.append(row)
        size += row.size
    if current:
        out.append(current)
    return out


def shape(row: DeliveryRow, schema: str) -> dict[str, Any]:
    """The event as the subscription receives it."""
    if schema == SCHEMA_CLOUDEVENTS and row.schema == SCHEMA_EVENTGRID:
        return to_cloud_event(row.event)
    return row.event


class _UntilNextDue:
    """Delay strategy for the poll loop: sleep until the engine's next due row."""

    def __init__(self) -> None:
        self.wait = 0.0

    def next_delay(self, succeeded: bool) -> float:
        return self.wait


class DeliveryEngine:
    def __init__(
        self,
        store: EventGridStore,
        config: EventGridConfig,
        senders: Mapping[str, Sender],
        clock: Clock,
        *,
        dead_letters: DeadLetterWriter | None = None,
        owner: str | None = None,
        idle_poll: float | None = None,
        max_in_flight: int = 64,
    ) -> None:
        self.store = store
        self.config = config
        self.senders = senders
        self.clock = clock
        self.dead_letters = dead_letters
        self.owner = owner or f"engine-{uuid.uuid4()}"
        self.idle_poll = idle_poll  # cap on waits so writes by other processes are noticed
        self.max_in_flight = max_in_flight
        self._strategy = _UntilNextDue()
        self._loop = PollLoop("eventgrid.delivery", self._poll, self._strategy, clock, on_error=self._on_error)
        self._tasks: set[asyncio.Task[None]] = set()
        self._in_flight = 0

    # -- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        self._loop.start()

    def notify(self) -> None:
        self._loop.notify()

    async def stop(self) -> None:
        """Lease nothing new; let in-flight deliveries finish (each is bounded by 30 s)."""
        await self._loop.stop()
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @property
    def idle(self) -> bool:
        return self._in_flight == 0

    # -- the loop --------------------------------------------------------------------------------

    def _now(self) -> float:
        return self.clock.now().timestamp()

    async def _poll(self) -> bool:
        capacity = self.max_in_flight - self._in_flight
        if capacity <= 0:
            self._strategy.wait = IDLE_WAIT  # a finishing delivery calls notify()
            return False
        now = self._now()
        rows = await self.store.lease_due(self.owner, now + 1e-6, LEASE_SECONDS, capacity)
        if rows:
            self._dispatch(rows)
            return True
        due = await self.store.next_due()
        wait = IDLE_WAIT if due is None else max(0.0, due - self._now())
        if self.idle_poll is not None:
            wait = min(wait, self.idle_poll)
        self._strategy.wait = max(wait, 0.001)
        return False

    def _on_error(self, exc: BaseException) -> bool:
        log.warning("eventgrid.poll_failed error=%s", type(exc).__name__)
        self._strategy.wait = 1.0
        return True

    def _dispatch(self, rows: list[DeliveryRow]) -> None:
        groups: dict[str, list[DeliveryRow]] = defaultdict(list)
        for row in rows:
            groups[row.subscription].append(row)
        for name, group in groups.items():
            sub = self.config.subscription(name)
            if sub is None:
                self._spawn(self._finish(group, DROPPED, SUBSCRIPTION_DELETED))
                continue
            dying = [r for r in group if r.state == DEADLETTERING]
            if dying:
                self._spawn(self._dead_letter(sub, dying))
            now = self._now() + 1e-6
            expired = [r for r in group if r.state == PENDING and now >= r.expires]
            if expired:
                self._spawn(self._give_up(sub, expired, TTL_EXCEEDED))
            live = [r for r in group if r.state == PENDING and now < r.expires]
            for batch in batches(live, sub.max_events_per_batch, sub.preferred_batch_kb):
                self._spawn(self._deliver(sub, batch))

    def _spawn(self, work: Any) -> None:
        self._in_flight += 1

        async def run() -> None:
            try:
                await work
            except Exception:
                log.exception("eventgrid.delivery_error")
            finally:
                self._in_flight -= 1
                self.notify()

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- one batch -------------------------------------------------------------------------------

    async def _deliver(self, sub: SubscriptionConfig, rows: list[DeliveryRow]) -> None:
        topic = self.config.topic(sub.topic)
        schema = delivery_schema(sub, topic) if topic is not None else rows[0].schema
        events = [shape(r, schema) for r in rows]
        sender = self.senders.get(sub.destination.type)
        attempt_time = self._now()
        if sender is None:
            outcome = Outcome(False, None, "GenericError", f"no sender for {sub.destination.type}")
        else:
            outcome = await sender.send(sub, events, schema, min(r.attempts for r in rows))
        now = self._now()
        if outcome.succeeded:
            await self.store.update(self.owner, [
                (r.id, {"state": DELIVERED, "attempts": r.attempts + 1, "last_attempt": attempt_time,
                        "last_outcome": outcome.outcome, "last_status": outcome.status, "finished": now})
                for r in rows])
            for r in rows:
                log.info("eventgrid.delivered subscription=%s event=%s attempt=%d", sub.name,
                         r.event.get("id"), r.attempts + 1)
            return
        changes: list[tuple[int, dict[str, Any]]] = []
        given_up: list[tuple[DeliveryRow, str]] = []
        for r in rows:
            attempts = r.attempts + 1
            base = {"attempts": attempts, "last_attempt": attempt_time, "last_outcome": outcome.outcome,
                    "last_status": outcome.status}
            reason = None
            if not is_retryable(outcome.status, sub.destination.type):
                reason = CLIENT_ERROR
            elif attempts >= r.max_attempts:
                reason = MAX_ATTEMPTS_EXCEEDED
            if reason is not None:
                changes.append((r.id, {**base, **self._give_up_values(sub, reason, now)}))
                given_up.append((r, reason))
                continue
            # Past the TTL the next attempt never happens: the row gives up when the TTL ends.
            next_attempt = min(now + retry_delay(attempts), r.expires)
            changes.append((r.id, {**base, "next_attempt": next_attempt}))
            log.warning("eventgrid.delivery_failed subscription=%s event=%s attempt=%d outcome=%s status=%s "
                        "retry_in=%.0fs", sub.name, r.event.get("id"), attempts, outcome.outcome,
                        outcome.status, next_attempt - now)
        await self.store.update(self.owner, changes)
        for r, reason in given_up:
            self._log_give_up(sub, r, reason)

    def _give_up_values(self, sub: SubscriptionConfig, reason: str, now: float) -> dict[str, Any]:
        if sub.dead_letter is not None:
            return {"state": DEADLETTERING, "reason": reason, "gave_up": now,
                    "next_attempt": now + DEAD_LETTER_DELAY}
        return {"state": DROPPED, "reason": reason, "gave_up": now, "finished": now}

    def _log_give_up(self, sub: SubscriptionConfig, row: DeliveryRow, reason: str) -> None:
        action = "dead_lettering" if sub.dead_letter is not None else "dropped"
        log.error("eventgrid.%s subscription=%s event=%s reason=%s attempts=%d", action, sub.name,
                  row.event.get("id"), reason, row.attempts)

    async def _give_up(self, sub: SubscriptionConfig, rows: list[DeliveryRow], reason: str) -> None:
        now = self._now()
        await self.store.update(self.owner, [(r.id, self._give_up_values(sub, reason, now)) for r in rows])
        for r in rows:
            self._log_give_up(sub, r, reason)

    async def _finish(self, rows: list[DeliveryRow], state: str, reason: str) -> None:
        now = self._now()
        await self.store.update(self.owner, [(r.id, {"state": state, "reason": reason, "finished": now})
                                             for r in rows])

    async def _dead_letter(self, sub: SubscriptionConfig, rows: list[DeliveryRow]) -> None:
        now = self._now()
        target = sub.dead_letter
        if target is None or self.dead_letters is None:
            await self._finish(rows, DROPPED, rows[0].reason or MAX_ATTEMPTS_EXCEEDED)
            return
        topic = self.config.topic(sub.topic)
        schema = delivery_schema(sub, topic) if topic is not None else rows[0].schema
        events = [annotate(shape(r, schema), schema, reason=r.reason or MAX_ATTEMPTS_EXCEEDED,
                           attempts=r.attempts, outcome=r.last_outcome, status=r.last_status,
                           published=r.published, last_attempt=r.last_attempt) for r in rows]
        try:
            location = await self.dead_letters.write(sub.name, target, events, datetime.fromtimestamp(now, UTC))
        except Exception as exc:
            expired = [r for r in rows if now - (r.gave_up or now) >= DEAD_LETTER_GIVE_UP]
            waiting = [r for r in rows if r not in expired]
            log.warning("eventgrid.dead_letter_failed subscription=%s error=%s", sub.name, type(exc).__name__)
            await self.store.update(self.owner, [
                *((r.id, {"state": DROPPED, "reason": DEAD_LETTER_UNAVAILABLE, "finished": now}) for r in expired),
                *((r.id, {"next_attempt": now + DEAD_LETTER_RETRY}) for r in waiting)])
            return
        await self.store.update(self.owner, [(r.id, {"state": DEADLETTERED, "location": location, "finished": now})
                                             for r in rows])
        log.error("eventgrid.dead_lettered subscription=%s events=%d blob=%s", sub.name, len(rows), location)

"""Service Bus links: senders to queues and topics, receivers of queues, subscriptions and DLQs.

Receivers deliver while the client has credit, locking each message as it goes out (peek-lock:
unsettled, the tag is the lock token) or deleting it (receive-and-delete: pre-settled). The
client's dispositions settle through the broker and are echoed, since azure-servicebus 7.15
waits for the echo: accepted = complete, modified = abandon (or defer when undeliverable-here),
rejected = dead-letter (reason and description from the error's info), released = abandon.
A lock that is gone is echoed as `rejected(com.microsoft:message-lock-lost)`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from funchost.amqp.codec.outcomes import Accepted, Modified, Rejected, Released
from funchost.amqp.links import Delivery, Link, ReceivingHandler
from funchost.amqp.sb_encode import message_bytes
from funchost.amqp.sb_messages import lock_tag, to_outgoing, unpack
from funchost.amqp.values import error, keyed, text
from funchost.errors import StorageError
from funchost.servicebus.namespaces import ServiceBusNamespace
from funchost.storage.servicebus import SessionLock, split_dead_letter

log = logging.getLogger("funchost.amqp")

POLL_SECONDS = 1.0
RECEIVE_BATCH = 64
CONDITIONS = {
    "MessagingEntityNotFound": "amqp:not-found",
    "MessageLockLost": "com.microsoft:message-lock-lost",
    "SessionLockLost": "com.microsoft:session-lock-lost",
    "SessionCannotBeLocked": "com.microsoft:session-cannot-be-locked",
    "MessageNotFound": "com.microsoft:message-not-found",
    "MessageSizeExceeded": "amqp:link:message-size-exceeded",
    "MessagingEntityAlreadyExists": "com.microsoft:entity-already-exists",
    "BadRequest": "com.microsoft:argument-error",
}


def condition_of(exc: Exception) -> str:
    return CONDITIONS.get(getattr(exc, "code", ""), "amqp:internal-error")


class SbSender(ReceivingHandler):
    """A client sender to a queue or topic: each delivery (one message or a batch) is one send."""

    def __init__(self, namespace: ServiceBusNamespace, entity: str, notify: Callable[[str], None]) -> None:
        self.namespace = namespace
        self.entity = entity
        self.notify = notify

    async def attached(self, link: Link) -> None:
        return None

    async def received(self, link: Link, delivery: Delivery) -> Any:
        try:
            messages = [to_outgoing(m) for m in unpack(delivery.payload, delivery.message_format)]
        except Exception:
            return Rejected(error("amqp:decode-error", "the message is not a valid AMQP message"))
        try:
            await self.namespace.broker.send(self.entity, messages)
        except StorageError as exc:
            return Rejected(error(condition_of(exc), str(exc)))
        self.notify(self.entity)
        return Accepted()


class SbReceiver:
    def __init__(self, namespace: ServiceBusNamespace, path: str, session: SessionLock | None,
                 subscribe: Callable[[str, Callable[[], None]], Callable[[], None]]) -> None:
        self.namespace = namespace
        self.broker = namespace.broker
        self.path = path
        self.session = session
        self._subscribe = subscribe
        self._wake = asyncio.Event()
        self._task: asyncio.Task[Any] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    async def attached(self, link: Link) -> None:
        name, _ = split_dead_letter(self.path)
        parts = name.split("/")
        self._unsubscribe = self._subscribe(parts[0], self._wake.set)
        self._task = link.session.connection.spawn(self._deliver(link))

    async def received(self, link: Link, delivery: Delivery) -> Any:
        return Rejected(error("amqp:not-allowed", "a receiver's link does not take messages"))

    def credit_changed(self, link: Link) -> None:
        self._wake.set()

    async def _deliver(self, link: Link) -> None:
        while not link.closed:
            await link.wait_for_credit()
            if link.closed:
                return
            self._wake.clear()
            try:
                messages = await self._take(link, min(link.credit, RECEIVE_BATCH))
            except StorageError as exc:
                await link.detach(condition_of(exc), str(exc))
                return
            for message in messages:
                await self._send(link, message)
            if not messages:
                if link.drain:
                    await link.finish_drain()
                    continue
                try:
                    await asyncio.wait_for(self._wake.wait(), POLL_SECONDS)
                except TimeoutError:
                    pass

    async def _take(self, link: Link, count: int) -> list[Any]:
        if not link.pre_settled:
            return await self.broker.receive(self.path, count, session=self.session)
        if self.session is None:
            return await self.broker.receive_and_delete(self.path, count)
        messages = await self.broker.receive(self.path, count, session=self.session)
        for m in messages:
            await self.broker.complete(self.path, m.lock_token or "")
        return messages

    async def _send(self, link: Link, message: Any) -> None:
        locked = not link.pre_settled and self.session is None
        token = message.lock_token
        tag = lock_tag(token) if token else message.sequence_number.to_bytes(16, "big")
        await link.send(message_bytes(message, locked=locked), tag, settled=link.pre_settled, item=token)

    async def settled(self, link: Link, state: Any, item: Any) -> Any:
        if not isinstance(state, dict) or not state or item is None:
            return None
        outcome, values = next(iter(state.items()))
        try:
            return await self._settle(str(outcome), values or [], item)
        except StorageError as exc:
            return Rejected(error(condition_of(exc), str(exc)))

    async def _settle(self, outcome: str, values: list[Any], token: str) -> Any:
        if outcome == "accepted":
            await self.broker.complete(self.path, token)
            return Accepted()
        if outcome == "rejected":
            info = keyed((values[0] or [None, None, None])[2] if values and isinstance(values[0], list) else None)
            await self.broker.dead_letter(self.path, token, text(info.get("DeadLetterReason")),
                                          text(info.get("DeadLetterErrorDescription")))
            return Rejected(None)
        if outcome == "modified":
            failed, undeliverable, annotations = (list(values) + [None, None, None])[:3]
            changes = {k: (text(v) if isinstance(v, bytes) else v) for k, v in keyed(annotations).items()} or None
            if undeliverable:
                await self.broker.defer(self.path, token, changes)
            else:
                await self.broker.abandon(self.path, token, changes)
            return Modified(failed, undeliverable, None)
        await self.broker.abandon(self.path, token)
        return Released()

    async def detached(self, link: Link) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._task is not None:
            self._task.cancel()
        if self.session is not None:
            try:
                await self.broker.release_session(self.session)
            except StorageError:
                pass


def locked_until_ticks(when: datetime) -> int:
    """.NET ticks (what `com.microsoft:locked-until-utc` carries)."""
    return 621355968000000000 + int((when - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 10 ** 7)

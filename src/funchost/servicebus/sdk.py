"""A real Service Bus namespace behind the broker Protocol, through azure-servicebus (async).

Used when a connection is a real namespace connection string or `<Name>__fullyQualifiedNamespace`
(identity: `DefaultAzureCredential`). The trigger's rules stay the same above this layer; the
service keeps the broker rules. The SDK settles through the received message object, so the
adapter keeps `lock token -> (receiver, message)` for the messages it handed out, as the
extension's actions cache does. Session receivers are opened with NEXT_AVAILABLE_SESSION.

Entity declarations (Config.json) do not apply to a real namespace; create, list and purge go
through `ServiceBusAdministrationClient` (needs Manage rights) or receive-and-delete.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from funchost.settings.messaging_connections import MessagingConnection
from funchost.storage.servicebus import (
    EntityInfo,
    EntityProperties,
    InvalidServiceBusInput,
    MessageLockLost,
    MessageNotFound,
    MessageSizeExceeded,
    MessagingEntityAlreadyExists,
    MessagingEntityNotFound,
    OutgoingMessage,
    ReceivedMessage,
    Rule,
    ServiceBusError,
    SessionCannotBeLocked,
    SessionLock,
    SessionLockLost,
    split_dead_letter,
)

RECEIVE_WAIT = 1.0  # seconds a receive waits for a first message


def _sdk() -> Any:
    try:
        import azure.servicebus.aio as aio  # noqa: F401
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise InvalidServiceBusInput("a real Service Bus namespace needs the azure-servicebus package "
                                     "(pip install 'funchost[servicebus]')") from exc
    import azure.servicebus as sb

    return sb


def translate(exc: BaseException) -> ServiceBusError:
    """An SDK exception as the funchost error with the same ServiceBusFailureReason."""
    from azure.servicebus import exceptions as e

    mapping: list[tuple[type[BaseException], type[ServiceBusError]]] = [
        (e.MessageLockLostError, MessageLockLost), (e.SessionLockLostError, SessionLockLost),
        (e.MessagingEntityNotFoundError, MessagingEntityNotFound),
        (e.MessagingEntityAlreadyExistsError, MessagingEntityAlreadyExists),
        (e.SessionCannotBeLockedError, SessionCannotBeLocked), (e.MessageNotFoundError, MessageNotFound),
        (e.MessageSizeExceededError, MessageSizeExceeded),
    ]
    for sdk_type, ours in mapping:
        if isinstance(exc, sdk_type):
            return ours(str(exc))
    return ServiceBusError(str(exc), code=type(exc).__name__)


def to_sdk_message(message: OutgoingMessage) -> Any:
    sb = _sdk()
    return sb.ServiceBusMessage(
        message.body, application_properties=dict(message.application_properties) or None,
        session_id=message.session_id, message_id=message.message_id or uuid.uuid4().hex,
        scheduled_enqueue_time_utc=message.scheduled_enqueue_time, content_type=message.content_type,
        correlation_id=message.correlation_id, subject=message.subject, partition_key=message.partition_key,
        to=message.to, reply_to=message.reply_to, reply_to_session_id=message.reply_to_session_id,
        time_to_live=timedelta(seconds=message.time_to_live) if message.time_to_live is not None else None)


def _text(value: Any) -> Any:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def from_sdk_message(message: Any, *, locked: bool = True) -> ReceivedMessage:
    """A received azure.servicebus message as the trigger sees it."""
    properties = {_text(k): _text(v) for k, v in (message.application_properties or {}).items()}
    ttl = message.time_to_live
    expires = message.expires_at_utc
    return ReceivedMessage(
        body=b"".join(message.body) if not isinstance(message.body, bytes) else message.body,
        message_id=str(message.message_id), sequence_number=int(message.sequence_number or 0),
        enqueued_time=message.enqueued_time_utc or datetime.now(UTC),
        expires_at=expires if expires is not None and expires.year < 9999 else None,
        delivery_count=int(message.delivery_count or 0),
        lock_token=str(message.lock_token) if locked and message.lock_token else None,
        locked_until=message.locked_until_utc if locked else None,
        state=str(getattr(message.state, "name", "active")).lower(),
        content_type=message.content_type, correlation_id=message.correlation_id, subject=message.subject,
        to=message.to, reply_to=message.reply_to, reply_to_session_id=message.reply_to_session_id,
        session_id=message.session_id, partition_key=message.partition_key,
        application_properties=properties, time_to_live=ttl.total_seconds() if ttl else None,
        scheduled_enqueue_time=message.scheduled_enqueue_time_utc,
        dead_letter_reason=message.dead_letter_reason,
        dead_letter_error_description=message.dead_letter_error_description,
        dead_letter_source=message.dead_letter_source)


def receiver_target(path: str) -> dict[str, Any]:
    """Keyword arguments naming a queue or `<topic>/Subscriptions/<sub>` (and its DLQ) for the SDK."""
    name, dlq = split_dead_letter(path)
    parts = name.split("/")
    target: dict[str, Any] = {}
    if len(parts) == 3 and parts[1].lower() == "subscriptions":
        target.update(topic_name=parts[0], subscription_name=parts[2])
    else:
        target["queue_name"] = name
    if dlq:
        target["sub_queue"] = _sdk().ServiceBusSubQueue.DEAD_LETTER
    return target


class SdkServiceBusBroker:
    def __init__(self, connection: MessagingConnection) -> None:
        self.namespace = connection.fully_qualified_namespace or "servicebus"
        self._connection = connection
        self._client: Any = None
        self._credential: Any = None
        self._receivers: dict[tuple[str, str | None], Any] = {}
        self._held: dict[str, tuple[Any, Any]] = {}  # lock token -> (receiver, sdk message)
        self._sessions: dict[str, Any] = {}  # session token -> session receiver

    def _get_client(self) -> Any:
        if self._client is None:
            from azure.servicebus.aio import ServiceBusClient

            if self._connection.connection_string:
                self._client = ServiceBusClient.from_connection_string(self._connection.connection_string)
            else:
                from azure.identity.aio import DefaultAzureCredential

                self._credential = DefaultAzureCredential()
                self._client = ServiceBusClient(self.namespace, self._credential)
        return self._client

    def _receiver(self, path: str, mode: str = "peek") -> Any:
        key = (path.lower(), mode)
        if key not in self._receivers:
            sb = _sdk()
            kwargs = receiver_target(path)
            kwargs["receive_mode"] = (sb.ServiceBusReceiveMode.RECEIVE_AND_DELETE if mode == "delete"
                                      else sb.ServiceBusReceiveMode.PEEK_LOCK)
            kwargs["max_wait_time"] = RECEIVE_WAIT
            client = self._get_client()
            if "topic_name" in kwargs:
                self._receivers[key] = client.get_subscription_receiver(**kwargs)
            else:
                self._receivers[key] = client.get_queue_receiver(**kwargs)
        return self._receivers[key]

    async def _call(self, coroutine: Any) -> Any:
        from azure.servicebus.exceptions import ServiceBusError as SdkError

        try:
            return await coroutine
        except SdkError as exc:
            raise translate(exc) from exc

    # -- entities (administration client) --------------------------------------------------------

    def _admin(self) -> Any:
        from azure.servicebus.aio.management import ServiceBusAdministrationClient

        if self._connection.connection_string:
            return ServiceBusAdministrationClient.from_connection_string(self._connection.connection_string)
        from azure.identity.aio import DefaultAzureCredential

        return ServiceBusAdministrationClient(self.namespace, DefaultAzureCredential())

    async def create_queue(self, name: str, properties: EntityProperties | None = None) -> None:
        async with self._admin() as admin:
            await self._call(admin.create_queue(name))

    async def create_topic(self, name: str, properties: EntityProperties | None = None) -> None:
        async with self._admin() as admin:
            await self._call(admin.create_topic(name))

    async def create_subscription(self, topic: str, name: str, properties: EntityProperties | None = None,
                                  rules: Sequence[Rule] | None = None) -> None:
        async with self._admin() as admin:
            await self._call(admin.create_subscription(topic, name))

    async def apply_entities(self, queues: Mapping[str, Any], topics: Mapping[str, Any]) -> None:
        raise InvalidServiceBusInput("Config.json entity declarations apply to the embedded Service Bus only")

    async def get_entity(self, path: str) -> EntityInfo:
        """Reachability check: a peek on the entity (works with Listen rights)."""
        receiver = self._receiver(path)
        await self._call(receiver.peek_messages(max_message_count=1))
        kind = "subscription" if "topic_name" in receiver_target(path) else "queue"
        return EntityInfo(path, kind, EntityProperties())

    async def list_entities(self) -> list[EntityInfo]:
        infos: list[EntityInfo] = []
        async with self._admin() as admin:
            async for queue in admin.list_queues():
                infos.append(EntityInfo(queue.name, "queue", EntityProperties()))
        return infos

    # -- sending ---------------------------------------------------------------------------------

    async def send(self, entity: str, messages: Sequence[OutgoingMessage]) -> list[int]:
        async with self._get_client().get_queue_sender(entity) as sender:
            scheduled = [m for m in messages if m.scheduled_enqueue_time is not None]
            immediate = [to_sdk_message(m) for m in messages if m.scheduled_enqueue_time is None]
            if immediate:
                await self._call(sender.send_messages(immediate))
            numbers: list[int] = []
            for message in scheduled:
                numbers += await self._call(sender.schedule_messages(to_sdk_message(message),
                                                                     message.scheduled_enqueue_time))
        return [0] * len(immediate) + numbers

    async def cancel_scheduled(self, entity: str, sequence_numbers: Sequence[int]) -> None:
        async with self._get_client().get_queue_sender(entity) as sender:
            await self._call(sender.cancel_scheduled_messages(list(sequence_numbers)))

    # -- receiving -------------------------------------------------------------------------------

    async def receive(self, path: str, max_messages: int = 1, *, session: SessionLock | None = None
                      ) -> list[ReceivedMessage]:
        receiver = self._sessions[session.token] if session is not None else self._receiver(path)
        messages = await self._call(receiver.receive_messages(max_message_count=max_messages,
                                                              max_wait_time=RECEIVE_WAIT))
        out = []
        for message in messages:
            converted = from_sdk_message(message)
            if converted.lock_token:
                self._held[converted.lock_token] = (receiver, message)
            out.append(converted)
        return out

    async def receive_and_delete(self, path: str, max_messages: int = 1) -> list[ReceivedMessage]:
        receiver = self._receiver(path, "delete")
        messages = await self._call(receiver.receive_messages(max_message_count=max_messages,
                                                              max_wait_time=RECEIVE_WAIT))
        return [from_sdk_message(m, locked=False) for m in messages]

    async def peek(self, path: str, max_messages: int = 32, from_sequence: int = 0) -> list[ReceivedMessage]:
        messages = await self._call(self._receiver(path).peek_messages(max_message_count=max_messages,
                                                                       sequence_number=from_sequence))
        return [from_sdk_message(m, locked=False) for m in messages]

    async def receive_deferred(self, path: str, sequence_numbers: Sequence[int],
                               *, session: SessionLock | None = None) -> list[ReceivedMessage]:
        receiver = self._sessions[session.token] if session is not None else self._receiver(path)
        messages = await self._call(receiver.receive_deferred_messages(list(sequence_numbers)))
        out = []
        for message in messages:
            converted = from_sdk_message(message)
            self._held[converted.lock_token or ""] = (receiver, message)
            out.append(converted)
        return out

    # -- settlement ------------------------------------------------------------------------------

    def _take(self, lock_token: str, keep: bool = False) -> tuple[Any, Any]:
        held = self._held.get(lock_token) if keep else self._held.pop(lock_token, None)
        if held is None:
            raise MessageLockLost(f"LockToken {lock_token} not found.")
        return held

    async def complete(self, path: str, lock_token: str) -> None:
        receiver, message = self._take(lock_token)
        await self._call(receiver.complete_message(message))

    async def abandon(self, path: str, lock_token: str, properties_to_modify: Mapping[str, Any] | None = None
                      ) -> None:
        receiver, message = self._take(lock_token)
        await self._call(receiver.abandon_message(message))

    async def dead_letter(self, path: str, lock_token: str, reason: str | None = None,
                          description: str | None = None,
                          properties_to_modify: Mapping[str, Any] | None = None) -> None:
        receiver, message = self._take(lock_token)
        await self._call(receiver.dead_letter_message(message, reason=reason, error_description=description))

    async def defer(self, path: str, lock_token: str, properties_to_modify: Mapping[str, Any] | None = None
                    ) -> None:
        receiver, message = self._take(lock_token)
        await self._call(receiver.defer_message(message))

    async def renew_lock(self, path: str, lock_token: str) -> datetime:
        receiver, message = self._take(lock_token, keep=True)
        until: datetime = await self._call(receiver.renew_message_lock(message))
        return until

    # -- sessions --------------------------------------------------------------------------------

    async def accept_session(self, path: str, session_id: str | None = None) -> SessionLock | None:
        sb = _sdk()
        from azure.servicebus.exceptions import OperationTimeoutError

        kwargs = receiver_target(path)
        kwargs.update(session_id=session_id or sb.NEXT_AVAILABLE_SESSION, max_wait_time=RECEIVE_WAIT)
        client = self._get_client()
        receiver = (client.get_subscription_receiver(**kwargs) if "topic_name" in kwargs
                    else client.get_queue_receiver(**kwargs))
        try:
            await receiver.__aenter__()
        except OperationTimeoutError:
            await receiver.close()
            return None
        except Exception as exc:
            await receiver.close()
            raise translate(exc) from exc
        token = str(uuid.uuid4())
        self._sessions[token] = receiver
        return SessionLock(path, receiver.session.session_id, token, receiver.session.locked_until_utc)

    async def renew_session_lock(self, session: SessionLock) -> SessionLock:
        receiver = self._sessions[session.token]
        until = await self._call(receiver.session.renew_lock())
        return SessionLock(session.entity, session.session_id, session.token, until)

    async def release_session(self, session: SessionLock) -> None:
        receiver = self._sessions.pop(session.token, None)
        if receiver is not None:
            await receiver.close()

    async def get_session_state(self, session: SessionLock) -> bytes | None:
        state: bytes | None = await self._call(self._sessions[session.token].session.get_state())
        return state

    async def set_session_state(self, session: SessionLock, state: bytes | None) -> None:
        await self._call(self._sessions[session.token].session.set_state(state))

    async def purge(self, path: str) -> int:
        total = 0
        while batch := await self.receive_and_delete(path, 100):
            total += len(batch)
        return total

    async def aclose(self) -> None:
        for receiver in [*self._receivers.values(), *self._sessions.values()]:
            await receiver.close()
        self._receivers.clear()
        self._sessions.clear()
        if self._client is not None:
            await self._client.close()
        if self._credential is not None:
            await self._credential.close()

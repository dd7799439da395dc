"""`<entity>/$management`: the Service Bus operations the SDKs do over request/response.

Renew lock, peek, schedule and cancel, receive deferred messages by sequence number, settle by
lock token (`update-disposition`, also the 7.15 client's fallback), and the session operations.
Responses carry `statusCode` 200 (204 for an empty peek), or the error's status with the AMQP
condition the SDK maps to its exception.
"""

from __future__ import annotations

import uuid
from typing import Any

from funchost.amqp.codec import encode
from funchost.amqp.codec.decode import decode_payload
from funchost.amqp.codec.message import Message
from funchost.amqp.codec.types import AMQPTypes
from funchost.amqp.links import Link
from funchost.amqp.requests import RequestNode, status
from funchost.amqp.sb_encode import message_bytes
from funchost.amqp.sb_links import SbReceiver, condition_of
from funchost.amqp.sb_messages import to_amqp, to_outgoing, token_text
from funchost.amqp.values import array, keyed, text, timestamp
from funchost.errors import StorageError
from funchost.servicebus.namespaces import ServiceBusNamespace
from funchost.storage.servicebus import SessionLock

PREFIX = "com.microsoft:"


class Failure(Exception):
    def __init__(self, code: int, condition: str, description: str) -> None:
        super().__init__(description)
        self.code, self.condition = code, condition


def management_node(namespace: ServiceBusNamespace, path: str) -> RequestNode:
    operations = SbOperations(namespace, path)

    async def respond(link: Link, request: Message) -> tuple[dict[str | bytes, Any], Any]:
        application = keyed(request.application_properties)
        operation = (text(application.get("operation")) or "").removeprefix(PREFIX)
        handler = getattr(operations, operation.replace("-", "_"), None)
        if handler is None:
            return status(501, f"operation '{operation}' is not supported", condition="amqp:not-implemented"), None
        try:
            result = await handler(link, keyed(request.value))
        except StorageError as exc:
            return status(exc.status, str(exc), condition=condition_of(exc)), None
        except Failure as exc:
            return status(exc.code, str(exc), condition=exc.condition), None
        except (TypeError, ValueError, KeyError) as exc:
            return status(400, f"invalid request: {exc}", condition="com.microsoft:argument-error"), None
        if result is None:
            return status(204, "No Content"), {}
        return status(200, "OK"), result

    return RequestNode(respond)


def _payload(message: Message) -> bytes:
    return bytes(encode.encode_payload(bytearray(), message))


class SbOperations:
    def __init__(self, namespace: ServiceBusNamespace, path: str) -> None:
        self.namespace = namespace
        self.broker = namespace.broker
        self.path = path

    async def renew_lock(self, link: Link, body: dict[str, Any]) -> Any:
        expirations = [await self.broker.renew_lock(self.path, token_text(t)) for t in body["lock-tokens"]]
        return {"expirations": array(AMQPTypes.timestamp, [timestamp(e)["VALUE"] for e in expirations])}

    async def peek_message(self, link: Link, body: dict[str, Any]) -> Any:
        start, count = int(body.get("from-sequence-number") or 0), int(body.get("message-count") or 1)
        session = text(body.get("session-id"))
        found = await self.broker.peek(self.path, count if session is None else max(count, 256), start)
        if session is not None:
            found = [m for m in found if m.session_id == session][:count]
        if not found:
            return None
        return {"messages": [{"message": message_bytes(m, locked=False)} for m in found]}

    async def schedule_message(self, link: Link, body: dict[str, Any]) -> Any:
        messages = [to_outgoing(decode_payload(memoryview(keyed(m)["message"]))) for m in body["messages"]]
        numbers = await self.broker.send(self.path, messages)
        link.session.connection.router.notify_servicebus(self.path)
        return {"sequence-numbers": array(AMQPTypes.long, numbers)}

    async def cancel_scheduled_message(self, link: Link, body: dict[str, Any]) -> Any:
        await self.broker.cancel_scheduled(self.path, [int(n) for n in body["sequence-numbers"]])
        return {}

    async def receive_by_sequence_number(self, link: Link, body: dict[str, Any]) -> Any:
        session = self._session(link, body) if body.get("session-id") is not None else None
        numbers = [int(n) for n in body["sequence-numbers"]]
        found = await self.broker.receive_deferred(self.path, numbers, session=session)
        delete = int(body.get("receiver-settle-mode", 1) or 0) == 0
        result = []
        for m in found:
            if delete and m.lock_token:
                await self.broker.complete(self.path, m.lock_token)
            message = to_amqp(m, locked=not delete)
            entry: dict[str, Any] = {}
            if not delete and m.lock_token:
                # 7.15 reads `lock-token` beside the message; earlier clients the x-opt-lock-token annotation
                entry["lock-token"] = uuid.UUID(m.lock_token)
                message = message._replace(delivery_annotations={"x-opt-lock-token": uuid.UUID(m.lock_token)})
            entry["message"] = _payload(message)
            result.append(entry)
        return {"messages": result}

    async def update_disposition(self, link: Link, body: dict[str, Any]) -> Any:
        outcome = text(body.get("disposition-status")) or ""
        changes = {k: (text(v) if isinstance(v, bytes) else v)
                   for k, v in keyed(body.get("properties-to-modify")).items()} or None
        for raw in body["lock-tokens"]:
            token = token_text(raw)
            if outcome == "completed":
                await self.broker.complete(self.path, token)
            elif outcome == "abandoned":
                await self.broker.abandon(self.path, token, changes)
            elif outcome == "defered":
                await self.broker.defer(self.path, token, changes)
            elif outcome == "suspended":
                await self.broker.dead_letter(self.path, token, text(body.get("deadletter-reason")),
                                              text(body.get("deadletter-description")), changes)
            else:
                raise Failure(400, "com.microsoft:argument-error", f"unknown disposition-status '{outcome}'")
        return {}

    async def renew_session_lock(self, link: Link, body: dict[str, Any]) -> Any:
        receiver, lock = self._receiver(link, body)
        receiver.session = await self.broker.renew_session_lock(lock)
        return {"expiration": timestamp(receiver.session.locked_until)}

    async def get_session_state(self, link: Link, body: dict[str, Any]) -> Any:
        state = await self.broker.get_session_state(self._session(link, body))
        return {"session-state": state}

    async def set_session_state(self, link: Link, body: dict[str, Any]) -> Any:
        state = body.get("session-state")
        await self.broker.set_session_state(self._session(link, body), bytes(state) if state is not None else None)
        return {}

    def _session(self, link: Link, body: dict[str, Any]) -> SessionLock:
        return self._receiver(link, body)[1]

    def _receiver(self, link: Link, body: dict[str, Any]) -> tuple[SbReceiver, SessionLock]:
        wanted = text(body.get("session-id"))
        for session in link.session.connection.sessions.values():
            for other in session.links.values():
                handler = other.handler
                if isinstance(handler, SbReceiver) and handler.session is not None and not other.closed and \
                        handler.session.session_id == wanted and handler.path.lower() == self.path.lower():
                    return handler, handler.session
        raise Failure(410, "com.microsoft:session-lock-lost",
                      f"the session '{wanted}' is not held by a receiver on this connection")

"""`harness.queues`: put, look at and count queue messages from a test, as a user would."""

from __future__ import annotations

import json
from typing import Any

from funchost.errors import QueueNotFound
from funchost.runtime.contracts import Runtime
from funchost.storage.queue_send import send_message
from funchost.storage.queues import QueueMessage, QueueService
from funchost.triggers.queue.messages import POISON_SUFFIX, UndecodableMessage, decode_text, encode_body


def _body_bytes(body: str | bytes | dict[str, Any] | list[Any]) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode("utf-8")
    return json.dumps(body).encode("utf-8")


class QueueTools:
    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def service(self, connection: str | None = None) -> QueueService:
        return self.runtime.storage.queues(connection)

    async def create(self, queue: str, connection: str | None = None) -> None:
        await self.service(connection).create_queue(queue)

    async def send(self, queue: str, body: str | bytes | dict[str, Any] | list[Any], encoding: str = "base64",
                   connection: str | None = None, *, raw: bool = False) -> QueueMessage:
        """Put one message (creating the queue), encoded like the trigger expects by default.

        `raw=True` puts `body` (a str) as the message text unchanged, e.g. to send text that is
        not valid Base64. Local listeners of the queue are woken, as for an output binding.
        """
        text = body if raw and isinstance(body, str) else encode_body(_body_bytes(body), encoding)
        return await send_message(self.service(connection), queue, text, faults=self.runtime.faults)

    async def peek(self, queue: str, max_messages: int = 32, connection: str | None = None) -> list[QueueMessage]:
        try:
            return await self.service(connection).peek_messages(queue, max_messages=max_messages)
        except QueueNotFound:
            return []

    async def count(self, queue: str, connection: str | None = None) -> int:
        """Messages in the queue, visible or not (0 if the queue does not exist)."""
        try:
            props = await self.service(connection).get_queue_properties(queue)
        except QueueNotFound:
            return 0
        return props.approximate_message_count

    async def poison(self, queue: str, encoding: str = "base64", connection: str | None = None) -> list[str]:
        """Decoded bodies of the visible messages in ``<queue>-poison`` (raw text if undecodable)."""
        bodies = []
        for message in await self.peek(queue + POISON_SUFFIX, connection=connection):
            try:
                bodies.append(decode_text(message.content, encoding).decode("utf-8", errors="replace"))
            except UndecodableMessage:
                bodies.append(message.content)
        return bodies

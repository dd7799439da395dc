"""Request/response nodes (`$cbs`, `<entity>/$management`, `$management`): a pair of links.

The client attaches a receiver and a sender to the same node address; requests arrive on the
sender, responses go back on the receiver of that node (or the link that `reply-to` names: JS
sends its receiver's link name, Python sets none). A response's `correlation-id` is the
request's `message-id` with the same AMQP type, or the Python client never matches it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from funchost.amqp.codec.decode import decode_payload
from funchost.amqp.codec.message import Message, Properties
from funchost.amqp.codec.outcomes import Accepted, Rejected
from funchost.amqp.links import Delivery, Link, ReceivingHandler
from funchost.amqp.values import echo_id, error, text

Responder = Callable[[Link, Message], Awaitable[tuple[dict[str | bytes, Any], Any]]]


class RequestNode(ReceivingHandler):
    """Both links of a node pair: the receiving one answers with `respond`, the sending one waits."""

    def __init__(self, respond: Responder) -> None:
        self.respond = respond

    async def attached(self, link: Link) -> None:
        return None

    async def received(self, link: Link, delivery: Delivery) -> Any:
        try:
            request = decode_payload(memoryview(delivery.payload))
        except Exception:
            return Rejected(error("amqp:decode-error", "the request is not an AMQP message"))
        application, body = await self.respond(link, request)
        reply = _reply_link(link, request)
        if reply is None:
            return Rejected(error("amqp:precondition-failed", "no receiving link for the response"))
        properties = request.properties
        request_id = echo_id(properties.message_id) if properties is not None else None
        response = Message(properties=Properties(correlation_id=request_id), application_properties=dict(application),
                           value=body)
        await reply.send(response, reply.delivery_count.to_bytes(4, "big"), settled=True)
        return Accepted()


def _reply_link(link: Link, request: Message) -> Link | None:
    reply_to = text(request.properties.reply_to) if request.properties is not None else None
    candidates = [lk for s in link.session.connection.sessions.values() for lk in s.links.values()
                  if lk.sends and not lk.closed]
    if reply_to:
        for other in candidates:
            if reply_to in (other.name, other.target_address):
                return other
    for other in link.session.links.values():
        if other.sends and not other.closed and other.source_address == link.node:
            return other
    return None


def status(code: int, description: str, *, condition: str | None = None) -> dict[str | bytes, Any]:
    """Status keys in every spelling the clients read (Python CBS, Python SB management, JS)."""
    values: dict[str | bytes, Any] = {"status-code": code, "status-description": description, "statusCode": code,
                              "statusDescription": description}
    if condition:
        values["error-condition"] = values["errorCondition"] = condition
    return values

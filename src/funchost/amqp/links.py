"""A link as the endpoint sees it, and the interface of what stands behind one (a node).

The client's role decides the direction: a client *receiver* attaches a link on which the
endpoint sends (`Link.sends`), a client *sender* one on which it receives. A `LinkHandler` is
the node's behaviour for one link (Service Bus entity, event hub partition, `$cbs`, a management
node); the session does the AMQP bookkeeping (handles, credit, delivery ids, settlement).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from funchost.amqp.codec.message import Message
from funchost.amqp.values import address_path, keyed, text

if TYPE_CHECKING:
    from funchost.amqp.session import Session

# A delivery the endpoint sent and the client has not settled: what the handler needs to settle it.
Unsettled = Any


@dataclass
class Delivery:
    """A message the client sent, reassembled from its transfer frames."""

    delivery_id: int
    tag: bytes
    message_format: int
    settled: bool
    payload: bytes


class LinkHandler(Protocol):
    async def attached(self, link: Link) -> None:
        """After the endpoint's attach went out: grant credit, start delivering."""

    async def received(self, link: Link, delivery: Delivery) -> Any:
        """A message on a receiving link; returns the outcome (an `outcomes` value)."""

    def credit_changed(self, link: Link) -> None:
        """The client's flow changed the credit (or asked to drain) of a sending link."""

    async def settled(self, link: Link, state: Any, item: Unsettled) -> Any:
        """The client settled a delivery of a sending link; returns the outcome to echo, or None."""

    async def detached(self, link: Link) -> None:
        """The link is gone (detach, end, close or a dropped socket)."""


class ReceivingHandler:
    """The sending-side callbacks of a handler whose link only receives (senders of messages to an
    entity, request nodes): nothing is ever sent on it, so there is no credit, settlement or
    delivery task to look after."""

    def credit_changed(self, link: Link) -> None:
        return None

    async def settled(self, link: Link, state: Any, item: Unsettled) -> Any:
        return None

    async def detached(self, link: Link) -> None:
        return None


@dataclass(eq=False)
class Link:
    session: Session
    name: str
    remote_handle: int
    handle: int
    sends: bool  # the endpoint sends on it (the client is a receiver)
    source: list[Any] | None
    target: list[Any] | None
    snd_settle_mode: int
    rcv_settle_mode: int
    properties: dict[str, Any]
    desired_capabilities: list[str]
    delivery_count: int = 0
    credit: int = 0
    drain: bool = False
    handler: LinkHandler | None = None
    reply_source: list[Any] | None = None  # what the attach reply carries, when not the client's source
    reply_properties: dict[str, Any] | None = None
    max_message_size: int = 1024 * 1024
    closed: bool = False
    credit_event: asyncio.Event = field(default_factory=asyncio.Event)
    partial: Delivery | None = None
    chunks: list[bytes] = field(default_factory=list)

    @classmethod
    def from_attach(cls, session: Session, fields: list[Any], handle: int) -> Link:
        source = fields[5] if isinstance(fields[5], list) else None
        target = fields[6] if isinstance(fields[6], list) else None
        desired = fields[12] if isinstance(fields[12], list) else ([fields[12]] if fields[12] else [])
        return cls(session=session, name=text(fields[0]) or "", remote_handle=int(fields[1]), handle=handle,
                   sends=bool(fields[2]), source=source, target=target,
                   snd_settle_mode=int(fields[3] if fields[3] is not None else 2),
                   rcv_settle_mode=int(fields[4] or 0), properties=keyed(fields[13]),
                   desired_capabilities=[text(c) or "" for c in desired],
                   delivery_count=int(fields[9] or 0))

    @property
    def source_address(self) -> str:
        return address_path(self.source[0]) if self.source else ""

    @property
    def target_address(self) -> str:
        return address_path(self.target[0]) if self.target else ""

    @property
    def node(self) -> str:
        """The endpoint-side node: where a client receiver reads from, or a client sender writes to."""
        return self.source_address if self.sends else self.target_address

    @property
    def filters(self) -> dict[str, Any]:
        return keyed(self.source[7]) if self.source and len(self.source) > 7 else {}

    @property
    def pre_settled(self) -> bool:
        return self.snd_settle_mode == 1

    # -- sending (the endpoint's side of a client receiver) --

    async def send(self, message: Message | bytes, tag: bytes, *, settled: bool, item: Unsettled = None,
                   message_format: int = 0) -> None:
        """One delivery; uses one credit."""
        self.credit -= 1
        self.delivery_count += 1
        await self.session.send_delivery(self, message, tag, settled=settled, item=item,
                                         message_format=message_format)

    async def wait_for_credit(self) -> None:
        while self.credit <= 0 and not self.closed:
            self.credit_event.clear()
            await self.credit_event.wait()

    async def finish_drain(self) -> None:
        """Nothing more to deliver: spend the remaining credit and tell the client."""
        if self.drain:
            self.delivery_count += max(self.credit, 0)
            self.credit = 0
            await self.session.send_flow(self, drain=True)

    async def detach(self, condition: str | None = None, description: str | None = None) -> None:
        await self.session.detach_link(self, condition, description)

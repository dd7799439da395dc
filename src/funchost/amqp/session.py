"""One AMQP session: channels, link handles, delivery ids, windows, settlement.

The endpoint advertises a session window it never lets run dry (the Python clients stop sending
when their view of it reaches 0, see the `_pyamqp` session's `_incoming_flow`), grants link credit
to client senders and tops it up at half, and reassembles multi-frame transfers per link.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from funchost.amqp.codec import encode
from funchost.amqp.codec.endpoints import Source, Target
from funchost.amqp.codec.message import Message
from funchost.amqp.codec.performatives import (
    AttachFrame,
    BeginFrame,
    DetachFrame,
    DispositionFrame,
    EndFrame,
    FlowFrame,
)
from funchost.amqp.frames import FrameError, transfer_frames
from funchost.amqp.links import Delivery, Link, LinkHandler
from funchost.amqp.values import error

if TYPE_CHECKING:
    from funchost.amqp.connection import Connection

log = logging.getLogger("funchost.amqp")

WINDOW = 2 ** 31 - 1
LINK_CREDIT = 1000
MAX_LINKS_PER_SESSION = 1024
MAX_MESSAGE_SIZE = 1024 * 1024 + 64 * 1024  # the largest delivery taken in (1 MB events plus the envelope)
DECODE = "amqp:decode-error"


class Session:
    def __init__(self, connection: Connection, channel: int, remote_channel: int, next_incoming_id: int) -> None:
        self.connection = connection
        self.channel = channel
        self.remote_channel = remote_channel
        self.next_incoming_id = next_incoming_id
        self.next_outgoing_id = 0
        self.next_delivery_id = 0
        self.links: dict[int, Link] = {}  # by the client's handle
        self.unsettled: dict[int, tuple[Link, Any]] = {}  # delivery id -> (link, handler's item)
        self.ended = False

    def begin_frame(self) -> BeginFrame:
        return BeginFrame(self.remote_channel, self.next_outgoing_id, WINDOW, WINDOW, 2 ** 32 - 1, None, None, None)

    # -- frames from the client --

    async def attach(self, fields: list[Any]) -> None:
        if fields[1] in self.links:
            raise FrameError("amqp:session:handle-in-use", f"handle {fields[1]} is in use")
        if len(self.links) >= MAX_LINKS_PER_SESSION:
            raise FrameError("amqp:resource-limit-exceeded", "too many links on one session")
        used = {link.handle for link in self.links.values()}
        handle = next(h for h in range(len(used) + 1) if h not in used)
        link = Link.from_attach(self, fields, handle)
        self.links[link.remote_handle] = link
        if self.connection.router.slow(link):
            self.connection.spawn(self._resolve(link))  # e.g. waiting for a session to accept
        else:
            await self._resolve(link)

    async def _resolve(self, link: Link) -> None:
        found = await self.connection.router.resolve(link)
        if link.closed:
            return
        if isinstance(found, tuple):
            await self._refuse(link, *found)
            return
        link.handler = found
        await self._accept(link, found)

    async def _accept(self, link: Link, handler: LinkHandler) -> None:
        self.write_attach(link, link.reply_source or link.source, link.target, link.reply_properties,
                          link.max_message_size)
        if not link.sends:
            link.credit = LINK_CREDIT
            await self.send_flow(link)
        await handler.attached(link)

    def write_attach(self, link: Link, source: Any, target: Any, properties: Any = None,
                     max_message_size: int = MAX_MESSAGE_SIZE) -> None:
        src = Source(*(source + [None] * 11)[:11]) if source is not None else None
        tgt = Target(*(target + [None] * 7)[:7]) if target is not None else None
        if src is not None and src.filters:
            src = src._replace(filters=self._filters(src.filters))
        self.connection.write(self.channel, AttachFrame(
            link.name, link.handle, not link.sends, link.snd_settle_mode, link.rcv_settle_mode, src, tgt, None, False,
            0 if link.sends else None, max_message_size, None, None, properties))

    @staticmethod
    def _filters(filters: Any) -> Any:
        if not isinstance(filters, dict):
            return None
        return {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in filters.items()}

    async def _refuse(self, link: Link, condition: str, description: str) -> None:
        """Attach with no terminus, then detach with the error (how the service refuses a link)."""
        self.write_attach(link, None, None)
        await self.detach_link(link, condition, description)

    async def flow(self, fields: list[Any]) -> None:
        if fields[4] is None:
            return  # a session-only flow: the endpoint does not limit its sending by the client's window
        link = self.links.get(fields[4])
        if link is None or not link.sends:
            return
        delivery_count = fields[5] if fields[5] is not None else link.delivery_count
        link.credit = max(int(delivery_count) + int(fields[6] or 0) - link.delivery_count, 0)
        link.drain = bool(fields[8])
        link.credit_event.set()
        if link.handler is not None:
            link.handler.credit_changed(link)
        if fields[9]:
            await self.send_flow(link)

    async def transfer(self, fields: list[Any]) -> None:
        self.next_incoming_id += 1
        link = self.links.get(fields[0])
        if link is None or link.sends:
            raise FrameError("amqp:session:unattached-handle", f"transfer on unknown handle {fields[0]}")
        payload = bytes(fields[11]) if fields[11] is not None else b""
        if link.partial is None:
            link.partial = Delivery(int(fields[1] or 0), bytes(fields[2] or b""), int(fields[3] or 0),
                                    bool(fields[4]), b"")
            link.chunks = []
        link.chunks.append(payload)
        if sum(map(len, link.chunks)) > MAX_MESSAGE_SIZE:
            link.partial, link.chunks = None, []
            await self.detach_link(link, "amqp:link:message-size-exceeded",
                                   f"a message larger than {MAX_MESSAGE_SIZE} bytes")
            return
        if fields[5] or fields[9]:  # more to come, or aborted
            if fields[9]:
                link.partial, link.chunks = None, []
            return
        delivery, link.partial = link.partial, None
        delivery.payload, link.chunks = b"".join(link.chunks), []
        await self._deliver(link, delivery)

    async def _deliver(self, link: Link, delivery: Delivery) -> None:
        link.delivery_count += 1
        link.credit -= 1
        assert link.handler is not None
        outcome = await link.handler.received(link, delivery)
        if not delivery.settled and outcome is not None:
            self.connection.write(self.channel, DispositionFrame(True, delivery.delivery_id, None, True, outcome,
                                                                 None))
        if link.credit < LINK_CREDIT // 2 and not link.closed:
            link.credit = LINK_CREDIT
            await self.send_flow(link)

    async def disposition(self, fields: list[Any]) -> None:
        if not fields[0]:
            return  # the client settling what it sent: the endpoint settles those at once
        first = int(fields[1])
        last = int(fields[2]) if fields[2] is not None else first
        if last - first > 10000:
            raise FrameError("amqp:invalid-field", "a disposition range of more than 10000 deliveries")
        for delivery_id in range(first, last + 1):
            entry = self.unsettled.pop(delivery_id, None)
            if entry is None:
                continue
            link, item = entry
            assert link.handler is not None
            echo = await link.handler.settled(link, fields[4], item)
            if not fields[3] and echo is not None:
                self.connection.write(self.channel, DispositionFrame(False, delivery_id, None, True, echo, None))

    async def detach(self, fields: list[Any]) -> None:
        link = self.links.get(fields[0])
        if link is not None:
            await self.detach_link(link, None, None)

    # -- frames to the client --

    async def send_flow(self, link: Link, *, drain: bool = False) -> None:
        self.connection.write(self.channel, FlowFrame(
            self.next_incoming_id, WINDOW, self.next_outgoing_id, WINDOW, link.handle, link.delivery_count,
            link.credit, None, drain or None, None, None))

    async def send_delivery(self, link: Link, message: Message | bytes, tag: bytes, *, settled: bool,
                            item: Any, message_format: int = 0) -> None:
        payload = message if isinstance(message, bytes) else bytes(encode.encode_payload(bytearray(), message))
        delivery_id = self.next_delivery_id
        self.next_delivery_id += 1
        if not settled:
            self.unsettled[delivery_id] = (link, item)
        fields = [link.handle, delivery_id, tag, message_format, settled, False, None, None, None, None, None]
        frames = transfer_frames(self.channel, fields, payload, self.connection.peer_max_frame_size)
        self.next_outgoing_id += len(frames)
        for frame in frames:
            self.connection.write_raw(frame)
        await self.connection.drain()

    async def detach_link(self, link: Link, condition: str | None, description: str | None) -> None:
        if link.closed:
            return
        link.closed = True
        link.credit_event.set()
        self.links.pop(link.remote_handle, None)
        err = error(condition, description) if condition else None
        self.connection.write(self.channel, DetachFrame(link.handle, True, err))
        await self._forget(link)

    async def _forget(self, link: Link) -> None:
        for delivery_id, (owner, _) in list(self.unsettled.items()):
            if owner is link:
                del self.unsettled[delivery_id]
        if link.handler is not None:
            try:
                await link.handler.detached(link)
            except Exception:
                log.exception("AMQP link %s: cleaning up failed", link.name)

    async def end(self, *, reply: bool) -> None:
        """The session ends (its links with it); `reply` answers the client's end."""
        if self.ended:
            return
        self.ended = True
        for link in list(self.links.values()):
            link.closed = True
            link.credit_event.set()
            await self._forget(link)
        self.links.clear()
        if reply:
            self.connection.write(self.channel, EndFrame(None))

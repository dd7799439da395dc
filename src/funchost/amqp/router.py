"""From a link's address to what stands behind it, with the connection's authorisation.

`$cbs` is open to all; every other node needs a put-token whose audience covers it (an entity's
`$management` is covered by the entity's token). One endpoint serves both brokers: addresses
with `/ConsumerGroups/` or `/Partitions/` and existing event hubs go to Event Hubs, the rest to
Service Bus (see `eventhubs_links.is_event_hubs`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from funchost.amqp.cbs import cbs_node
from funchost.amqp.links import Link, LinkHandler
from funchost.amqp.sas import covers
from funchost.amqp.sb_links import SbReceiver, SbSender, condition_of, locked_until_ticks
from funchost.amqp.sb_management import management_node
from funchost.amqp.values import long, text
from funchost.errors import StorageError
from funchost.runtime.signals import Signals
from funchost.servicebus.namespaces import ServiceBusNamespace
from funchost.storage.servicebus import SessionLock, split_dead_letter
from funchost.triggers.servicebus.listener import signal_topic

if TYPE_CHECKING:
    from funchost.amqp.eventhubs_links import EventHubsNodes

SESSION_FILTER = "com.microsoft:session-filter"
SESSION_WAIT_SECONDS = 65.0  # the SDKs' default wait for NEXT_AVAILABLE_SESSION
Refusal = tuple[str, str]


class Router:
    def __init__(self, servicebus: ServiceBusNamespace, signals: Signals, keys: Mapping[str, str],
                 eventhubs: EventHubsNodes | None = None, container_id: str = "funchost") -> None:
        self.servicebus = servicebus
        self.signals = signals
        self.keys = dict(keys)
        self.eventhubs = eventhubs
        self.container_id = container_id
        self._cbs = cbs_node(self.keys)

    def check_plain(self, response: Any) -> bool:
        """SASL PLAIN: `\\0<key name>\\0<key>`."""
        parts = bytes(response or b"").split(b"\0")
        return len(parts) == 3 and self.keys.get(parts[1].decode("utf-8", "replace")) == parts[2].decode(
            "utf-8", "replace")

    def notify_servicebus(self, entity: str) -> None:
        name = split_dead_letter(entity)[0].split("/")[0]
        self.signals.publish(signal_topic(self.servicebus.broker.namespace, name))

    def _subscribe(self, entity: str, callback: Callable[[], None]) -> Callable[[], None]:
        return self.signals.subscribe(signal_topic(self.servicebus.broker.namespace, entity), callback)

    def slow(self, link: Link) -> bool:
        return link.sends and SESSION_FILTER in link.filters

    async def resolve(self, link: Link) -> LinkHandler | Refusal:
        node = link.node
        if node == "$cbs":
            return self._cbs
        authorized = link.session.connection.authorized
        if self.eventhubs is not None and await self.eventhubs.claims(link):
            found: LinkHandler | Refusal = await self.eventhubs.resolve(link, authorized)
            return found
        if not covers(authorized, node):
            return ("amqp:unauthorized-access", f"no token authorises '{node}': put one on $cbs first")
        try:
            return await self._servicebus(link, node)
        except StorageError as exc:
            return (condition_of(exc), str(exc))

    async def _servicebus(self, link: Link, node: str) -> LinkHandler | Refusal:
        if node.lower().endswith("/$management"):
            entity = node[: -len("/$management")]
            await self.servicebus.ensure_entity(entity)
            return management_node(self.servicebus, entity)
        await self.servicebus.ensure_entity(node)
        if not link.sends:
            return SbSender(self.servicebus, node, self.notify_servicebus)
        link.reply_properties = {}
        session: SessionLock | None = None
        if SESSION_FILTER in link.filters:
            found = await self._accept_session(link, node)
            if isinstance(found, tuple):
                return found
            session = found
            source = list(link.source or [])
            source[7] = {SESSION_FILTER: session.session_id}
            link.reply_source = source
            link.reply_properties = {"com.microsoft:locked-until-utc": long(locked_until_ticks(session.locked_until))}
        return SbReceiver(self.servicebus, node, session, self._subscribe)

    async def _accept_session(self, link: Link, node: str) -> SessionLock | Refusal:
        wanted = text(link.filters.get(SESSION_FILTER))
        timeout = link.properties.get("com.microsoft:timeout")
        wait = int(timeout) / 1000 if isinstance(timeout, int) else SESSION_WAIT_SECONDS
        deadline = time.monotonic() + wait
        while True:
            session = await self.servicebus.broker.accept_session(node, wanted)
            if session is not None:
                return session
            if time.monotonic() >= deadline or link.closed:
                return ("com.microsoft:timeout", "no session is available within the operation's time")
            await asyncio.sleep(min(0.5, max(deadline - time.monotonic(), 0.01)))


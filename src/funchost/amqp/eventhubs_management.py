"""Event Hubs `$management`: `READ` of a hub's or a partition's properties.

The Python client opens a connection per request and puts the SAS token in the request's
`security_token` property; it reads `status-code` and the body's keys (`partition_ids`,
`last_enqueued_offset` as a string, ...), see azure-eventhub `_client_base._management_request`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from funchost.amqp.codec.message import Message
from funchost.amqp.links import Link
from funchost.amqp.requests import RequestNode, status
from funchost.amqp.sas import TokenRejected, check_token, covers
from funchost.amqp.values import keyed, long, text, timestamp
from funchost.errors import StorageError

if TYPE_CHECKING:
    from funchost.amqp.eventhubs_links import EventHubsNodes


def eventhubs_management_node(nodes: EventHubsNodes) -> RequestNode:
    async def respond(link: Link, request: Message) -> tuple[dict[str | bytes, Any], Any]:
        application = keyed(request.application_properties)
        hub = text(application.get("name")) or ""
        token = text(application.get("security_token"))
        authorized = link.session.connection.authorized
        try:
            if token:
                authorized = authorized | {check_token(token, link.session.connection.router.keys,
                                                       time.time()).path}
        except TokenRejected as exc:
            return status(exc.status, exc.description, condition="amqp:unauthorized-access"), None
        if not covers(authorized, hub):
            return status(401, f"no token authorises '{hub}'", condition="amqp:unauthorized-access"), None
        kind = text(application.get("type")) or ""
        try:
            if kind == "com.microsoft:eventhub":
                return status(200, "OK"), await _hub(nodes, hub)
            if kind == "com.microsoft:partition":
                return status(200, "OK"), await _partition(nodes, hub, text(application.get("partition")) or "")
        except StorageError as exc:
            from funchost.amqp.eventhubs_links import condition_of

            return status(404 if condition_of(exc) == "amqp:not-found" else 400, str(exc),
                          condition=condition_of(exc)), None
        return status(400, f"unknown READ type '{kind}'", condition="com.microsoft:argument-error"), None

    return RequestNode(respond)


async def _hub(nodes: EventHubsNodes, name: str) -> dict[str, Any]:
    hub = await nodes.open_hub(name)
    return {"name": hub.name, "type": "com.microsoft:eventhub", "created_at": timestamp(hub.created_at),
            "partition_count": len(hub.partition_ids), "partition_ids": list(hub.partition_ids)}


async def _partition(nodes: EventHubsNodes, name: str, partition: str) -> dict[str, Any]:
    hub = await nodes.open_hub(name)
    p = await nodes.broker.partition_properties(hub.name, partition)
    return {"name": hub.name, "type": "com.microsoft:partition", "partition": p.partition_id,
            "begin_sequence_number": long(p.beginning_sequence_number),
            "last_enqueued_sequence_number": long(p.last_enqueued_sequence_number),
            "last_enqueued_offset": str(p.last_enqueued_offset),
            "last_enqueued_time_utc": timestamp(p.last_enqueued_time or 0.0),
            "is_partition_empty": p.is_empty}

"""Event Hubs: the hubs of the embedded broker with their partitions, and per hub and consumer
group the checkpoints, owners and unprocessed events of each partition.

The same figures as ``funchost eventhubs list`` and ``funchost eventhubs checkpoints``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from funchost.dashboard.markup import Markup, join, table, tag
from funchost.dashboard.page import NotFound, Page, View, uses_binding
from funchost.storage.eventhubs import DEFAULT_CONSUMER_GROUP, EventHubNotFound

if TYPE_CHECKING:
    from funchost.testing.eventhubs import EventHubTools


def _tools(view: View) -> EventHubTools:
    # Imported when the page is drawn: the testing package loads its harness (and httpx), which
    # a host's start should not wait for.
    from funchost.testing.eventhubs import EventHubTools

    return EventHubTools(view.runtime)


async def _list(view: View) -> Markup:
    tools = _tools(view)
    broker = tools.service.broker(tools.target("any").connection)
    rows = []
    for hub in await broker.list_hubs():
        retained = 0
        for pid in hub.partition_ids:
            retained += (await broker.partition_properties(hub.name, pid)).retained_events
        groups = [tag("li", tag("a", g, href=view.href(hub.name, group=g))) for g in hub.consumer_groups]
        rows.append([tag("a", hub.name, href=view.href(hub.name)), str(len(hub.partition_ids)), str(retained),
                     tag("ul", groups, class_="plain")])
    return join(tag("h1", "Event Hubs"), tag("p", "The embedded broker of this data folder."),
                table("Event hubs", ["Hub", "Partitions", "Retained events", "Consumer groups (checkpoints)"], rows,
                      empty="No event hubs yet.", live="eventhubs"))


async def _hub(view: View, name: str) -> Markup:
    tools = _tools(view)
    group = view.query.get("group") or DEFAULT_CONSUMER_GROUP
    try:
        broker, hub = await tools.service.open_hub(tools.target(name))
    except EventHubNotFound:
        raise NotFound(f"There is no event hub named '{name}'.") from None
    checkpoints = await tools.checkpoints(hub.name, group)
    owners = await tools.owners(hub.name, group)
    rows = []
    for pid in hub.partition_ids:
        p = await broker.partition_properties(hub.name, pid)
        c = checkpoints.get(pid)
        done = c.sequence_number if c is not None and c.sequence_number is not None else -1
        unprocessed = max(0, p.last_enqueued_sequence_number - max(done, p.beginning_sequence_number - 1))
        rows.append([pid, str(p.beginning_sequence_number), str(p.last_enqueued_sequence_number),
                     "-" if c is None or c.sequence_number is None else str(c.sequence_number),
                     "-" if c is None or c.offset is None else str(c.offset), str(unprocessed),
                     owners.get(pid) or "-"])
    return join(tag("h1", f"Event hub {hub.name}"), tag("p", tag("a", "All event hubs", href=view.href())),
                tag("p", f"Consumer group {group}."),
                table(f"Partitions of {hub.name} for consumer group {group}",
                      ["Partition", "First sequence", "Last sequence", "Checkpoint sequence", "Checkpoint offset",
                       "Unprocessed", "Owner"], rows, empty="No partitions.", live="eventhub-partitions"))


async def render(view: View) -> Markup:
    return await _hub(view, view.path[0]) if view.path else await _list(view)


PAGE = Page("eventhubs", "Event Hubs", render,
            applies=lambda runtime: uses_binding(runtime, "eventHubTrigger", "eventHub"))

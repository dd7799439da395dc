"""From a topic's accepted events to delivery rows: which subscriptions each event matches."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from funchost.eventgrid.config import EventGridConfig
from funchost.eventgrid.filters import matches
from funchost.storage.eventgrid import NewEvent, Target


def route(config: EventGridConfig, topic: str, events: Sequence[dict[str, Any]], schema: str) -> list[NewEvent]:
    subs = config.subscriptions_of(topic)
    routed = []
    for event in events:
        targets = tuple(
            Target(s.name, s.retry.max_delivery_attempts, s.retry.event_time_to_live_minutes * 60.0)
            for s in subs
            if matches(s.filter, event, schema)
        )
        routed.append(NewEvent(event, targets))
    return routed

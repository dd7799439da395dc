"""Event Grid: topics, subscriptions with their delivery counts, recent deliveries and dead letters.

From the host's Event Grid service (its configuration) and its durable store (the deliveries).
Topic keys are never shown, nor webhook URLs (they may carry a key): a webhook destination is
"webhook", as the start-up listing says.
"""

from __future__ import annotations

from datetime import UTC, datetime

from funchost.dashboard.markup import Markup, join, pretty, table, tag, when
from funchost.dashboard.page import Page, View
from funchost.eventgrid.service import EventGridService
from funchost.storage.eventgrid import DEADLETTERED, DEADLETTERING, DROPPED, DeliveryRow

RECENT = 50
GAVE_UP = (DEADLETTERING, DEADLETTERED, DROPPED)


def _delivery_rows(rows: list[DeliveryRow]) -> list[list[object]]:
    return [[when(r.published), r.subscription, r.state, f"{r.attempts}/{r.max_attempts}",
             r.last_outcome or "-" if r.last_status is None else f"{r.last_outcome or ''} ({r.last_status})",
             r.reason or "-", tag("details", tag("summary", str(r.event.get("id", r.id))), tag("pre", pretty(r.event)))]
            for r in rows]


async def render(view: View) -> Markup:
    service = view.runtime.services.find(EventGridService)
    if service is None:
        return join(tag("h1", "Event Grid"), tag("p", "The Event Grid service is not running in this host."))
    config = service.config
    topics = [[t.name, t.kind, t.input_schema, service.topic_endpoint(t.name) if t.kind == "custom"
               else "blob store events"] for t in config.topics.values()]
    stats = {s.subscription: s for s in await service.store.stats()}
    subscriptions = []
    for sub in config.subscriptions:
        s = stats.get(sub.name)
        nxt = datetime.fromtimestamp(s.next_attempt, UTC).strftime("%Y-%m-%d %H:%M:%S") if s and s.pending and \
            s.next_attempt else "-"
        subscriptions.append([sub.name, sub.topic, sub.destination.describe(),
                              sub.dead_letter.container if sub.dead_letter else "-",
                              str(s.delivered if s else 0), str(s.pending if s else 0), str(s.retrying if s else 0),
                              str(s.deadlettered + s.deadlettering if s else 0), str(s.dropped if s else 0), nxt])
    deliveries = await service.store.deliveries()
    recent = list(reversed(deliveries[-RECENT:]))
    dead = list(reversed([d for d in deliveries if d.state in GAVE_UP][-RECENT:]))
    headers = ["Published (UTC)", "Subscription", "State", "Attempts", "Last outcome", "Reason", "Event"]
    return join(
        tag("h1", "Event Grid"),
        tag("section", tag("h2", "Topics", id="topics-heading"),
            table("Topics", ["Topic", "Kind", "Schema", "Endpoint"], topics, empty="No topics."),
            aria_labelledby="topics-heading"),
        tag("section", tag("h2", "Subscriptions", id="subs-heading"),
            table("Subscriptions and their deliveries", ["Subscription", "Topic", "Destination", "Dead-letter container",
                                                         "Delivered", "Pending", "Retrying", "Dead-lettered",
                                                         "Dropped", "Next attempt (UTC)"],
                  subscriptions, empty="No subscriptions.", live="eventgrid-subscriptions"),
            aria_labelledby="subs-heading"),
        tag("section", tag("h2", "Recent deliveries", id="deliveries-heading"),
            table(f"The last {RECENT} deliveries, newest first", headers, _delivery_rows(recent),
                  empty="No deliveries yet.", live="eventgrid-deliveries"),
            aria_labelledby="deliveries-heading"),
        tag("section", tag("h2", "Dead letters", id="dead-heading"),
            table("Deliveries given up (dead-lettered or dropped), newest first", headers, _delivery_rows(dead),
                  empty="No dead letters.", live="eventgrid-dead"),
            aria_labelledby="dead-heading"),
    )


PAGE = Page("eventgrid", "Event Grid", render,
            applies=lambda runtime: any(f.trigger_type == "eventGridTrigger" or any(b.type == "eventGrid"
                                                                                    for b in f.bindings)
                                        for f in runtime.functions.values()))

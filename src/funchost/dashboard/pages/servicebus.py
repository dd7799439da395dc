"""Service Bus: the entities of the embedded namespace with their counts, an entity's messages
and dead letters (peeked, with the dead-letter reason), and redrive of its dead letters.

Only the embedded namespace of the data folder is shown: a real namespace's entities are Azure's
(Service Bus Explorer in the portal). Message bodies are shown as UTF-8 text, escaped.
"""

from __future__ import annotations

from collections.abc import Mapping

from funchost.dashboard.markup import Markup, join, moment, table, tag
from funchost.dashboard.page import ActionFailed, NotFound, Page, View, uses_binding
from funchost.servicebus.namespaces import ServiceBusNamespace, embedded_namespace
from funchost.servicebus.redrive import default_target, redrive
from funchost.storage.servicebus import MessagingEntityNotFound, ReceivedMessage, split_dead_letter

PEEK = 32
BODY_CHARS = 2_000


def _namespace(view: View) -> ServiceBusNamespace:
    runtime = view.runtime
    return embedded_namespace(runtime.storage, runtime.app_dir, runtime.settings)


def _body(m: ReceivedMessage) -> str:
    text = m.body.decode("utf-8", errors="replace")
    return text if len(text) <= BODY_CHARS else text[:BODY_CHARS] + f"... ({len(text) - BODY_CHARS} more)"


async def _list(view: View) -> Markup:
    namespace = _namespace(view)
    await namespace.prepare()
    entities = await namespace.broker.list_entities()
    rows = [[tag("a", e.path, href=view.href("entity", path=e.path)), e.kind,
             *(["-"] * 5 if e.kind == "topic" else [str(e.active), str(e.scheduled), str(e.deferred), str(e.locked),
                                                     str(e.dead_letter)])] for e in entities]
    return join(tag("h1", "Service Bus"),
                tag("p", "The embedded namespace of this data folder."),
                table("Queues, topics and subscriptions", ["Entity", "Kind", "Active", "Scheduled", "Deferred",
                                                           "Locked", "Dead-lettered"],
                      rows, empty="No entities yet.", live="servicebus-entities"))


def _messages(caption: str, messages: list[ReceivedMessage], live: str, dead: bool) -> Markup:
    headers = ["Sequence", "Message id", "Enqueued (UTC)", "Delivery count", "Body"]
    if dead:
        headers.append("Dead-letter reason")
    rows = [[str(m.sequence_number), m.message_id, moment(m.enqueued_time), str(m.delivery_count),
             tag("pre", _body(m)),
             *([join(m.dead_letter_reason or "-", tag("br"), m.dead_letter_error_description or "")] if dead else [])]
            for m in messages]
    return table(caption, headers, rows, empty="No messages.", live=live)


async def _entity(view: View) -> Markup:
    path, _ = split_dead_letter(view.query.get("path", ""))
    namespace = _namespace(view)
    await namespace.prepare()
    try:
        info = await namespace.broker.get_entity(path)
    except MessagingEntityNotFound:
        raise NotFound(f"The namespace has no entity '{path}'.") from None
    if info.kind == "topic":
        subs = [e for e in await namespace.broker.list_entities()
                if e.kind == "subscription" and e.path.lower().startswith(path.lower() + "/")]
        return join(tag("h1", f"Topic {path}"), tag("p", tag("a", "All entities", href=view.href())),
                    tag("ul", [tag("li", tag("a", s.path, href=view.href("entity", path=s.path))) for s in subs]))
    active = await namespace.broker.peek(path, PEEK)
    dead = await namespace.broker.peek(f"{path}/$deadletterqueue", PEEK)
    action = view.form("redrive", "Redrive dead letters", fields={"path": path},
                       describe=f"Send the dead letters of {path} again to {default_target(path)}") \
        if info.dead_letter else None
    return join(
        tag("h1", f"{info.kind.capitalize()} {path}"),
        tag("p", tag("a", "All entities", href=view.href())),
        tag("p", f"{info.active} active, {info.scheduled} scheduled, {info.deferred} deferred, {info.locked} locked, "
                 f"{info.dead_letter} dead-lettered; max delivery count {info.properties.max_delivery_count}.",
            data_live="servicebus-counts", id="live-servicebus-counts"),
        action,
        tag("section", tag("h2", "Messages (peeked)", id="sb-messages"),
            _messages(f"First {PEEK} messages of {path}", active, "servicebus-messages", dead=False),
            aria_labelledby="sb-messages"),
        tag("section", tag("h2", "Dead-letter queue", id="sb-dead"),
            _messages(f"First {PEEK} dead-lettered messages of {path}", dead, "servicebus-dead", dead=True),
            aria_labelledby="sb-dead"),
    )


async def render(view: View) -> Markup:
    if view.path == ("entity",):
        return await _entity(view)
    if view.path:
        raise NotFound("No such Service Bus page.")
    return await _list(view)


async def redrive_action(view: View, form: Mapping[str, str]) -> str:
    path = form.get("path", "")
    if not path:
        raise ActionFailed("no entity named in the request")
    source, target, moved = await redrive(_namespace(view).broker, path)
    return f"Moved {moved} message(s) from '{source}' to '{target}'."


PAGE = Page("servicebus", "Service Bus", render, actions={"redrive": redrive_action},
            applies=lambda runtime: uses_binding(runtime, "serviceBusTrigger", "serviceBus"))

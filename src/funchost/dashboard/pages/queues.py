"""Queues: depth, oldest message and poison count of each queue; a queue's messages (peeked,
never received) and its poison queue's; redrive the poison messages, clear either queue.

Bodies are shown as the trigger would decode them (base64 text when it decodes to UTF-8, the
stored text otherwise), escaped like everything else on the page.
"""

from __future__ import annotations

from collections.abc import Mapping

from funchost.dashboard.markup import Markup, age, join, moment, table, tag
from funchost.dashboard.page import ActionFailed, NotFound, Page, View
from funchost.dashboard.pages.storage_accounts import QUEUE_TYPES, account_name, chosen, connections
from funchost.errors import QueueNotFound
from funchost.storage.queues import QueueMessage, QueueService
from funchost.triggers.queue.messages import POISON_SUFFIX, UndecodableMessage, decode_text
from funchost.triggers.queue.redrive import poison_count, redrive

PEEK = 32  # the most Peek Messages returns
BODY_CHARS = 2_000


def body_text(content: str) -> str:
    try:
        text = decode_text(content, "base64").decode("utf-8")
    except (UndecodableMessage, UnicodeDecodeError):
        text = content
    return text if len(text) <= BODY_CHARS else text[:BODY_CHARS] + f"... ({len(text) - BODY_CHARS} more)"


def _service(view: View, connection: str | None) -> tuple[str, QueueService]:
    name = chosen(view, QUEUE_TYPES, connection)
    return name, view.runtime.storage.queues(name)


async def _rows(view: View, connection: str, service: QueueService) -> list[list[object]]:
    names = await service.list_queues()
    now = view.runtime.clock.now()
    rows: list[list[object]] = []
    for name in names:
        if name.endswith(POISON_SUFFIX) and name[: -len(POISON_SUFFIX)] in names:
            continue  # shown as the poison column of its queue
        depth = (await service.get_queue_properties(name)).approximate_message_count
        oldest = await service.oldest_insertion_time(name)
        poison = await poison_count(service, name)
        rows.append([tag("a", name, href=view.href(name, connection=connection)), str(depth),
                     age((now - oldest).total_seconds()) if oldest else "-", "-" if poison is None else str(poison)])
    return rows


async def _list(view: View) -> Markup:
    sections = []
    for connection in connections(view, QUEUE_TYPES):
        service = view.runtime.storage.queues(connection)
        account = account_name(view, connection, "queue")
        heading_id = f"queues-{connection}"
        sections.append(tag("section", tag("h2", f"{connection} (account {account})", id=heading_id),
                            table(f"Queues of {connection}", ["Queue", "Messages", "Oldest", "Poison"],
                                  await _rows(view, connection, service), empty="No queues yet.",
                                  live=f"queues-{connection}"),
                            aria_labelledby=heading_id))
    return join(tag("h1", "Queues"), sections)


def _messages(caption: str, messages: list[QueueMessage], live: str) -> Markup:
    return table(caption, ["Id", "Inserted (UTC)", "Dequeue count", "Body"],
                 [[m.id, moment(m.insertion_time), str(m.dequeue_count), tag("pre", body_text(m.content))]
                  for m in messages], empty="No visible messages.", live=live)


async def _queue(view: View, name: str) -> Markup:
    connection, service = _service(view, view.query.get("connection"))
    try:
        depth = (await service.get_queue_properties(name)).approximate_message_count
    except QueueNotFound:
        raise NotFound(f"There is no queue named '{name}' in {connection}.") from None
    messages = await service.peek_messages(name, max_messages=PEEK)
    poison = await poison_count(service, name)
    poisoned = await service.peek_messages(name + POISON_SUFFIX, max_messages=PEEK) if poison else []
    fields = {"queue": name, "connection": connection}
    actions = [view.form("clear", "Clear queue", fields=fields, danger=True, describe=f"Clear queue {name}",
                         confirm=f"Delete every message in '{name}'?")]
    if poison:
        actions.insert(0, view.form("redrive", "Redrive poison messages", fields=fields,
                                    describe=f"Move the messages of {name}{POISON_SUFFIX} back to {name}"))
        actions.append(view.form("clear-poison", "Clear poison queue", fields=fields, danger=True,
                                 describe=f"Clear queue {name}{POISON_SUFFIX}",
                                 confirm=f"Delete every message in '{name}{POISON_SUFFIX}'?"))
    return join(
        tag("h1", f"Queue {name}"),
        tag("p", tag("a", "All queues", href=view.href())),
        tag("div", tag("p", f"{depth} message(s); poison queue: "
                       + ("none" if poison is None else f"{poison} message(s)"), id="queue-depth"),
            data_live="queue-summary", id="live-queue-summary"),
        tag("div", actions, class_="actions"),
        tag("section", tag("h2", "Messages (peeked)", id="messages-heading"),
            _messages(f"First {PEEK} visible messages of {name}", messages, "messages"),
            aria_labelledby="messages-heading"),
        tag("section", tag("h2", f"Poison queue {name}{POISON_SUFFIX}", id="poison-heading"),
            _messages(f"First {PEEK} visible messages of {name}{POISON_SUFFIX}", poisoned, "poison"),
            aria_labelledby="poison-heading"),
    )


async def render(view: View) -> Markup:
    return await _queue(view, view.path[0]) if view.path else await _list(view)


def _queue_field(form: Mapping[str, str]) -> str:
    name = form.get("queue", "")
    if not name:
        raise ActionFailed("no queue named in the request")
    return name


async def redrive_action(view: View, form: Mapping[str, str]) -> str:
    name = _queue_field(form)
    _, service = _service(view, form.get("connection"))
    moved = await redrive(service, name)
    return f"Moved {moved} message(s) from '{name}{POISON_SUFFIX}' to '{name}'."


async def clear_action(view: View, form: Mapping[str, str]) -> str:
    name = _queue_field(form)
    _, service = _service(view, form.get("connection"))
    await service.clear_messages(name)
    return f"Cleared '{name}'."


async def clear_poison_action(view: View, form: Mapping[str, str]) -> str:
    name = _queue_field(form)
    _, service = _service(view, form.get("connection"))
    await service.clear_messages(name + POISON_SUFFIX)
    return f"Cleared '{name}{POISON_SUFFIX}'."


PAGE = Page("queues", "Queues", render,
            actions={"redrive": redrive_action, "clear": clear_action, "clear-poison": clear_poison_action})

"""Durable Functions: the task hub's orchestration instances (newest first, filtered by status and
id prefix) and entities; one instance's status with its history as a timeline; raise an event,
terminate, purge.

Listed when the app has durable functions (the Durable service runs). The actions are the
management API's (`DurableClient`, as ``POST .../raiseEvent``, ``.../terminate`` and
``DELETE .../instances/{id}`` use it), with its rules: an event or a termination for a finished
instance is refused with the extension's message. The timeline is the history the management
API returns with ``showHistory=true&showHistoryOutput=true`` (each scheduled task folded into its
completion), so it reads as the portal's Durable Functions Monitor shows it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from funchost.dashboard.markup import Markup, definitions, join, moment, pretty, table, tag
from funchost.dashboard.page import ActionFailed, NotFound, Page, View
from funchost.durable import history as h
from funchost.durable.client import DurableClient, Gone
from funchost.durable.client import NotFound as InstanceNotFound
from funchost.durable.service import DurableService
from funchost.durable.shim import compact
from funchost.durable.status import history_payload, parse_token
from funchost.runtime.contracts import Runtime
from funchost.storage.durable import ALL_STATUSES, COMPLETED_STATUSES, ENTITY, InstanceQuery, InstanceRecord

SHOWN = 100  # instances listed (the newest)
SCANNED = 5_000  # instances read to find the newest (the store lists oldest first)
VALUE_CHARS = 2_000
FORM_VALUE_LIMIT = 16 * 1024  # event data from a form


def _service(runtime: Runtime) -> DurableService | None:
    return runtime.services.find(DurableService)


def _client(view: View) -> DurableClient:
    service = _service(view.runtime)
    if service is None:
        raise NotFound("This app has no durable functions.")
    return service.client


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= VALUE_CHARS else text[:VALUE_CHARS] + f"... ({len(text) - VALUE_CHARS} more)"


async def _newest(client: DurableClient, query: InstanceQuery) -> tuple[list[InstanceRecord], bool]:
    """The newest `SHOWN` instances matching `query`, newest first; True when more were left out."""
    found: list[InstanceRecord] = []
    token: str | None = None
    while len(found) < SCANNED:
        page = await client.query(InstanceQuery(statuses=query.statuses, prefix=query.prefix, kind=query.kind,
                                                top=1000, continuation=token))
        found += page.instances
        token = page.continuation
        if token is None:
            break
    found.sort(key=lambda r: (r.created_time, r.instance_id), reverse=True)
    return found[:SHOWN], len(found) > SHOWN or token is not None


def _filters(view: View, status: str, prefix: str) -> Markup:
    options = [tag("option", "any", value="", selected=not status)]
    options += [tag("option", s, value=s, selected=s == status) for s in sorted(ALL_STATUSES)]
    return tag("form",
               tag("div", tag("label", "Status", for_="filter-status"),
                   tag("select", options, id="filter-status", name="status")),
               tag("div", tag("label", "Instance id starts with", for_="filter-prefix"),
                   tag("input", id="filter-prefix", name="prefix", value=prefix, type="text")),
               tag("button", "Filter", type="submit"),
               method="get", action=view.href(), class_="filters", role="search", aria_label="Filter instances")


async def _list(view: View) -> Markup:
    client = _client(view)
    status = view.query.get("status", "")
    problem = None
    if status and status not in ALL_STATUSES:
        problem = f"Unknown runtime status '{status}' (expected one of {', '.join(sorted(ALL_STATUSES))})."
        status = ""
    prefix = view.query.get("prefix", "")
    query = InstanceQuery(statuses=frozenset({status}) if status else frozenset(), prefix=prefix or None)
    instances, more = await _newest(client, query)
    rows = [[tag("a", r.instance_id, href=view.href(r.instance_id)), r.name, r.status, moment(r.created_time),
             moment(r.last_updated_time), tag("code", _short(parse_token(r.output))) if r.output is not None else "-"]
            for r in instances]
    entities, more_entities = await _newest(client, InstanceQuery(kind=ENTITY))
    entity_rows = [[r.instance_id, r.name, "yes" if r.entity_exists else "no",
                    tag("code", _short(parse_token(r.entity_state))) if r.entity_state is not None else "-",
                    moment(r.last_updated_time)] for r in entities]
    return join(
        tag("h1", "Durable Functions"),
        tag("p", f"Task hub '{client.hub.name}'."),
        _filters(view, status, prefix),
        tag("p", problem, role="alert", class_="notice error") if problem else None,
        tag("section", tag("h2", "Orchestration instances", id="instances-heading"),
            table("Orchestration instances, newest first", ["Instance", "Name", "Status", "Created (UTC)",
                                                             "Updated (UTC)", "Output"],
                  rows, empty="No instances" + (" for this filter." if status or prefix else " yet."),
                  live="instances"),
            tag("p", f"The newest {SHOWN} are shown.") if more else None,
            aria_labelledby="instances-heading"),
        tag("section", tag("h2", "Entities", id="entities-heading"),
            table("Entities", ["Entity id", "Name", "Exists", "State", "Updated (UTC)"], entity_rows,
                  empty="No entities yet.", live="entities"),
            tag("p", f"The newest {SHOWN} are shown.") if more_entities else None,
            aria_labelledby="entities-heading"),
    )


def _timestamp(text: Any) -> datetime | None:
    try:
        return h.parse_time(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _offset(start: datetime | None, at: datetime | None) -> str:
    if start is None or at is None:
        return ""
    return f"+{(at - start).total_seconds():.3f} s"


def _event_item(event: Mapping[str, Any], start: datetime | None) -> Markup:
    kind = str(event.get("EventType", ""))
    at = _timestamp(event.get("Timestamp"))
    name = event.get("FunctionName") or event.get("Name")
    scheduled = _timestamp(event.get("ScheduledTime"))
    facts: list[tuple[str, Any]] = []
    if scheduled is not None and at is not None:
        facts.append(("Took", f"{(at - scheduled).total_seconds():.3f} s (scheduled {_offset(start, scheduled)})"))
    for key, label in (("FireAt", "Fires at"), ("OrchestrationStatus", "Status"), ("InstanceId", "Instance"),
                       ("Reason", "Reason"), ("Input", "Input"), ("Result", "Result"), ("Details", "Details")):
        value = event.get(key)
        if value is not None and value != "":
            facts.append((label, tag("pre", _short(parse_token(value) if isinstance(value, str) else value))))
    failed = kind in ("TaskFailed", "SubOrchestrationInstanceFailed", "ExecutionFailed") or (
        kind == "ExecutionCompleted" and event.get("OrchestrationStatus") in ("Failed", "Terminated"))
    return tag("li",
               tag("p", moment(at), " ", tag("span", _offset(start, at), class_="offset"), " ",
                   tag("strong", kind), f" {name}" if name else ""),
               definitions(facts) if facts else None,
               class_="event failed" if failed else "event")


def _timeline(events: list[dict[str, Any]]) -> Markup:
    if not events:
        return tag("p", "No history yet (the instance has not started).", class_="empty", data_live="history",
                   id="live-history")
    start = _timestamp(events[0].get("Timestamp"))
    return tag("ol", [_event_item(e, start) for e in events], class_="timeline", aria_label="History",
               data_live="history", id="live-history")


def _actions(view: View, record: InstanceRecord) -> Markup:
    fields = {"instance": record.instance_id}
    parts: list[Markup] = []
    if record.status not in COMPLETED_STATUSES:
        hidden = {"csrf": view.csrf, "back": view.here(), **fields}
        parts.append(tag(
            "form",
            [tag("input", type="hidden", name=k, value=v) for k, v in hidden.items()],
            tag("div", tag("label", "Event name", for_="raise-name"),
                tag("input", id="raise-name", name="event", type="text", required=True)),
            tag("div", tag("label", "Data (JSON)", for_="raise-data"),
                tag("input", id="raise-data", name="data", type="text", value="null")),
            tag("button", "Raise event", type="submit"),
            method="post", action=view.href("raise"), class_="action wide", aria_label="Raise an event"))
        parts.append(view.form("terminate", "Terminate", fields=fields, danger=True,
                               describe=f"Terminate instance {record.instance_id}",
                               confirm=f"Terminate '{record.instance_id}'?"))
    parts.append(view.form("purge", "Purge", fields={**fields, "back": view.href()}, danger=True,
                           describe=f"Delete instance {record.instance_id} and its history",
                           confirm=f"Delete '{record.instance_id}' and its history?"))
    # Live: the forms for a running instance go once it finishes.
    return tag("div", parts, class_="actions", data_live="actions", id="live-actions")


async def _instance(view: View, instance_id: str) -> Markup:
    client = _client(view)
    record = await client.get(instance_id)
    if record is None:
        raise NotFound(f"There is no orchestration instance '{instance_id}' in task hub '{client.hub.name}'.")
    raw = await client.hub.store.get_history(instance_id)
    events = history_payload(raw, show_input=True, show_history_output=True)
    facts: list[tuple[str, Any]] = [
        ("Name", record.name), ("Status", record.status), ("Created (UTC)", moment(record.created_time)),
        ("Updated (UTC)", moment(record.last_updated_time)),
        ("Input", tag("pre", pretty(parse_token(record.input)))),
        ("Custom status", tag("pre", pretty(parse_token(record.custom_status)))),
        ("Output", tag("pre", pretty(parse_token(record.output)))),
    ]
    if record.parent_instance_id:
        facts.insert(2, ("Parent", tag("a", record.parent_instance_id, href=view.href(record.parent_instance_id))))
    return join(
        tag("h1", f"Instance {instance_id}"),
        tag("p", tag("a", "All instances", href=view.href())),
        tag("div", definitions(facts), data_live="instance", id="live-instance"),
        _actions(view, record),
        tag("section", tag("h2", "History", id="history-heading"), _timeline(events),
            aria_labelledby="history-heading"),
    )


async def render(view: View) -> Markup:
    return await _instance(view, view.path[0]) if view.path else await _list(view)


def _instance_field(form: Mapping[str, str]) -> str:
    instance_id = form.get("instance", "")
    if not instance_id:
        raise ActionFailed("no instance named in the request")
    return instance_id


async def raise_action(view: View, form: Mapping[str, str]) -> str:
    instance_id = _instance_field(form)
    event = form.get("event", "").strip()
    if not event:
        raise ActionFailed("an event needs a name")
    text = form.get("data", "").strip() or "null"
    if len(text) > FORM_VALUE_LIMIT:
        raise ActionFailed(f"the event data is longer than {FORM_VALUE_LIMIT} characters")
    try:
        data = compact(json.loads(text))
    except ValueError:
        raise ActionFailed(f"the event data must be JSON (text in double quotes), got {text[:80]!r}") from None
    try:
        await _client(view).raise_event(instance_id, event, data)
    except (InstanceNotFound, Gone) as exc:
        raise ActionFailed(str(exc)) from None
    return f"Raised '{event}' for '{instance_id}'."


async def terminate_action(view: View, form: Mapping[str, str]) -> str:
    instance_id = _instance_field(form)
    try:
        await _client(view).terminate(instance_id, "Terminated from the dashboard")
    except (InstanceNotFound, Gone) as exc:
        raise ActionFailed(str(exc)) from None
    return f"Termination of '{instance_id}' requested."


async def purge_action(view: View, form: Mapping[str, str]) -> str:
    instance_id = _instance_field(form)
    try:
        deleted = await _client(view).purge(instance_id)
    except InstanceNotFound as exc:
        raise ActionFailed(str(exc)) from None
    return f"Purged '{instance_id}' ({deleted} instance deleted)."


PAGE = Page("durable", "Durable", render,
            actions={"raise": raise_action, "terminate": terminate_action, "purge": purge_action},
            applies=lambda runtime: _service(runtime) is not None)

"""The Event Grid output binding (``eventGrid``, ``@app.event_grid_output``).

As in the extension, ``topicEndpointUri`` and ``topicKeySetting`` name app settings holding the
topic's URL and key (or ``connection`` names a prefix with ``__topicEndpointUri``). When the URL
is this host's own topic endpoint (``http://localhost:<port>/eventgrid/topics/<t>/api/events``),
or the setting simply names a local topic, events are published in-process after the key is
checked; any other URL gets a POST with ``aeg-sas-key``, as the extension's publisher client does.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlparse

import httpx
from azure.functions.meta import Datum

from funchost.errors import AppLoadError, ConfigError, InvocationError
from funchost.eventgrid.endpoints import TOPICS_PREFIX
from funchost.eventgrid.schema import PublishError
from funchost.eventgrid.service import EventGridService
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime

_LOCAL_HOSTS = {"localhost", "127.0.0.1", "::1", "[::1]"}


def _setting(binding: BindingSpec, runtime: Runtime, prop: str) -> tuple[str, str | None]:
    name = binding.get(prop)
    if not name:
        return "", None
    return str(name), runtime.settings.get(str(name))


def target(binding: BindingSpec, runtime: Runtime) -> tuple[str, str | None]:
    """(endpoint URL or local topic name, key) from the binding's settings."""
    connection = binding.get("connection")
    if connection:
        url = runtime.settings.get(f"{connection}__topicEndpointUri") or runtime.settings.get(f"{connection}")
        if not url:
            raise ConfigError(f"app setting '{connection}__topicEndpointUri' is not defined",
                              path=f"eventGrid output '{binding.name}'.connection")
        return url, None
    uri_name, url = _setting(binding, runtime, "topicEndpointUri")
    key_name, key = _setting(binding, runtime, "topicKeySetting")
    if url is None:
        raise ConfigError(f"The 'TopicEndpointUri' property must be the name of an application setting containing "
                          f"the Topic Endpoint URI; '{uri_name}' is not defined",
                          path=f"eventGrid output '{binding.name}'.topicEndpointUri")
    if key is None:
        raise ConfigError(f"The 'TopicKeySetting' property must be the name of an application setting containing "
                          f"the Topic Key; '{key_name}' is not defined",
                          path=f"eventGrid output '{binding.name}'.topicKeySetting")
    return url, key


def local_topic(url: str) -> str | None:
    """The topic name when `url` is a local topic endpoint or a bare topic name."""
    if "://" not in url:
        return url.strip() or None
    parsed = urlparse(url)
    if (parsed.hostname or "").lower() not in _LOCAL_HOSTS:
        return None
    parts = parsed.path[len(TOPICS_PREFIX):].strip("/").split("/") if parsed.path.startswith(TOPICS_PREFIX) else []
    if len(parts) == 4 and parts[0] == "topics" and parts[2:] == ["api", "events"]:
        return parts[1]
    return None


def events_of(datum: Datum) -> list[dict[str, Any]]:
    if datum.type == "bytes":
        value: Any = json.loads(bytes(datum.value))
    elif datum.type in ("string", "json"):
        value = json.loads(datum.value) if isinstance(datum.value, str | bytes) else datum.value
    else:
        raise InvocationError(f"an Event Grid output cannot be written from a '{datum.type}' value")
    items = value if isinstance(value, list) else [value]
    events = []
    for item in items:
        if isinstance(item, str):  # a list of JSON strings
            item = json.loads(item)
        if not isinstance(item, dict):
            raise InvocationError("each Event Grid output event must be a JSON object")
        events.append(item)
    return events


class EventGridOutputSupport:
    binding_type = "eventGrid"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        try:
            target(binding, runtime)
        except ConfigError as exc:
            raise AppLoadError(str(exc), file=function.script_file, line=function.source_line,
                               function=function.name) from None

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        raise ConfigError("eventGrid is an output binding only")

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        events = events_of(datum)
        if not events:
            return
        url, key = target(binding, runtime)
        topic = local_topic(url)
        service = runtime.services.find(EventGridService)
        if topic is not None and service is not None:
            await self._local(service, topic, key, events)
            return
        if topic is not None and "://" not in url:
            raise InvocationError(f"Event Grid topic '{topic}' is local but the Event Grid service is not running")
        await self._remote(url, key, events)

    async def _local(self, service: EventGridService, topic: str, key: str | None, events: list[dict[str, Any]]) -> None:
        keys = service.keys.get(topic)
        if key is not None and keys is not None and key not in keys.all():
            raise InvocationError(f"the key in the topic key setting is not a key of Event Grid topic '{topic}'")
        try:
            await service.publish(topic, events)
        except PublishError as exc:
            raise InvocationError(f"Event Grid rejected the events ({exc.status}): {exc.message}") from None

    async def _remote(self, url: str, key: str | None, events: list[dict[str, Any]]) -> None:
        headers = {"content-type": "application/json; charset=utf-8"}
        if key:
            headers["aeg-sas-key"] = key
        async with httpx.AsyncClient(timeout=100.0) as client:
            response = await client.post(url, content=json.dumps(events), headers=headers)
        if response.status_code != 200:
            raise InvocationError(f"Event Grid publish to the topic endpoint answered {response.status_code}")


SUPPORT: BindingSupport = EventGridOutputSupport()

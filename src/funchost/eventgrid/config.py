"""eventgrid.json: the topics and event subscriptions of the local Event Grid.

Property names follow the Azure resource model (``inputSchema``, ``eventDeliverySchema``,
``retryPolicy.maxDeliveryAttempts``, ``filter.advancedFilters``...), so a subscription reads
like its ARM template. Without the file there is a custom topic ``default`` (Event Grid
schema), a custom topic ``cloudevents`` (CloudEvents 1.0) and a system topic ``storage`` for the
blob store of ``AzureWebJobsStorage``; every Event-Grid-triggered function subscribes to each.
The format is described by ``eventgrid.schema.json`` next to this module and docs/eventgrid.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError
from funchost.eventgrid import SCHEMA_CLOUDEVENTS, SCHEMA_EVENTGRID, custom_topic_id, storage_account_id
from funchost.eventgrid.filters import SubscriptionFilter, parse_filter
from funchost.settings.sections import SectionReader

FILE_NAME = "eventgrid.json"
SCHEMA_FILE = Path(__file__).with_name("eventgrid.schema.json")

DEFAULT_TOPIC = "default"
DEFAULT_CLOUDEVENTS_TOPIC = "cloudevents"
DEFAULT_STORAGE_TOPIC = "storage"

DEFAULT_MAX_DELIVERY_ATTEMPTS = 30
DEFAULT_EVENT_TTL_MINUTES = 1440
DEFAULT_MAX_EVENTS_PER_BATCH = 1
DEFAULT_PREFERRED_BATCH_KB = 64

_SCHEMAS = {SCHEMA_EVENTGRID.lower(): SCHEMA_EVENTGRID, SCHEMA_CLOUDEVENTS.lower(): SCHEMA_CLOUDEVENTS}
_TOPIC_TYPES = {"custom": "custom", "storage": "storage"}
_DESTINATIONS = {"function": "function", "azurefunction": "function", "webhook": "webhook",
                 "storagequeue": "storageQueue"}
# Topic and subscription names: 3-64 characters, letters, digits and hyphens (as on Azure);
# names generated for functions may also hold underscores, as function names can.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{1,63}$")


@dataclass(frozen=True)
class TopicConfig:
    name: str
    kind: str = "custom"  # "custom" | "storage" (system topic of a storage account)
    input_schema: str = SCHEMA_EVENTGRID
    connection: str | None = None  # storage topics: the storage connection (account)

    def resource_id(self, account: str | None = None) -> str:
        if self.kind == "storage":
            return storage_account_id(account or "devstoreaccount1")
        return custom_topic_id(self.name)


@dataclass(frozen=True)
class Destination:
    type: str  # "function" | "webhook" | "storageQueue"
    function_name: str | None = None
    endpoint_url: str | None = None
    queue_name: str | None = None
    connection: str | None = None
    queue_message_ttl: int | None = None  # seconds, storage queue destinations

    def describe(self) -> str:
        if self.type == "function":
            return f"function {self.function_name}"
        if self.type == "storageQueue":
            return f"storage queue {self.queue_name}"
        return "webhook"  # the URL may carry a key: never printed


@dataclass(frozen=True)
class DeadLetterConfig:
    container: str
    connection: str | None = None


@dataclass(frozen=True)
class RetryPolicy:
    max_delivery_attempts: int = DEFAULT_MAX_DELIVERY_ATTEMPTS
    event_time_to_live_minutes: int = DEFAULT_EVENT_TTL_MINUTES


@dataclass(frozen=True)
class SubscriptionConfig:
    name: str
    topic: str
    destination: Destination
    filter: SubscriptionFilter = field(default_factory=SubscriptionFilter)
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    dead_letter: DeadLetterConfig | None = None
    delivery_schema: str | None = None  # None = the topic's input schema
    max_events_per_batch: int = DEFAULT_MAX_EVENTS_PER_BATCH
    preferred_batch_kb: int = DEFAULT_PREFERRED_BATCH_KB


@dataclass(frozen=True)
class EventGridConfig:
    topics: Mapping[str, TopicConfig]
    subscriptions: tuple[SubscriptionConfig, ...]
    from_file: bool = False

    def topic(self, name: str) -> TopicConfig | None:
        found = self.topics.get(name)
        if found is None:
            for key, topic in self.topics.items():
                if key.lower() == name.lower():
                    return topic
        return found

    def subscriptions_of(self, topic: str) -> list[SubscriptionConfig]:
        return [s for s in self.subscriptions if s.topic.lower() == topic.lower()]

    def subscription(self, name: str) -> SubscriptionConfig | None:
        return next((s for s in self.subscriptions if s.name.lower() == name.lower()), None)


def delivery_schema(sub: SubscriptionConfig, topic: TopicConfig) -> str:
    return sub.delivery_schema or topic.input_schema


# --- loading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlobEventFunction:
    """A blob trigger with the Event Grid source: what its default subscription needs."""

    name: str
    container: str
    connection: str | None = None


def load_config(app_dir: Path, eventgrid_functions: Iterable[str],
                blob_functions: Iterable[BlobEventFunction] = ()) -> EventGridConfig:
    """eventgrid.json when present, else the defaults subscribed by `eventgrid_functions` (and the
    blob triggers with the Event Grid source: a function destination may name those too)."""
    path = Path(app_dir) / FILE_NAME
    blob_functions = tuple(blob_functions)
    if not path.exists():
        return default_config(eventgrid_functions, blob_functions)
    try:
        raw = json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=FILE_NAME) from exc
    return parse_config(raw, known_functions={*eventgrid_functions, *(f.name for f in blob_functions)})


def default_config(eventgrid_functions: Iterable[str],
                   blob_functions: Iterable[BlobEventFunction] = ()) -> EventGridConfig:
    topics = {
        DEFAULT_TOPIC: TopicConfig(DEFAULT_TOPIC),
        DEFAULT_CLOUDEVENTS_TOPIC: TopicConfig(DEFAULT_CLOUDEVENTS_TOPIC, input_schema=SCHEMA_CLOUDEVENTS),
        DEFAULT_STORAGE_TOPIC: TopicConfig(DEFAULT_STORAGE_TOPIC, kind="storage"),
    }
    subs = [
        SubscriptionConfig(f"{topic}-{fn}", topic, Destination("function", function_name=fn))
        for fn in sorted(eventgrid_functions)
        for topic in topics
    ]
    for blob_fn in sorted(blob_functions, key=lambda f: f.name):
        subs.append(_blob_subscription(blob_fn, topics))
    return EventGridConfig(topics, tuple(subs))


def _blob_subscription(function: BlobEventFunction, topics: dict[str, TopicConfig]) -> SubscriptionConfig:
    """What the portal's tutorial sets up (blob-trigger spec 7.6): the account's system topic,
    BlobCreated only, filtered to the trigger's container (the extension does not filter)."""
    connection = (function.connection or "").strip()
    topic = DEFAULT_STORAGE_TOPIC
    if connection and connection.lower() != "azurewebjobsstorage":
        topic = "storage-" + re.sub(r"[^A-Za-z0-9-]", "-", connection)[:55]
        topics.setdefault(topic, TopicConfig(topic, kind="storage", connection=connection))
    flt = SubscriptionFilter(included_event_types=("Microsoft.Storage.BlobCreated",),
                             subject_begins_with=f"/blobServices/default/containers/{function.container}/")
    return SubscriptionConfig(f"blobs-{function.name}", topic, Destination("function", function_name=function.name),
                              flt)


def parse_config(raw: Any, *, known_functions: set[str] | None = None) -> EventGridConfig:
    root = SectionReader(raw, FILE_NAME + ": ")
    root.raw("$schema")
    topics = _topics(root)
    raw_subs = root.raw("subscriptions", [])
    path = root.key_path("subscriptions")
    if not isinstance(raw_subs, list):
        raise ConfigError("must be an array of subscriptions", path=path)
    subs: list[SubscriptionConfig] = []
    for i, item in enumerate(raw_subs):
        sub = _subscription(SectionReader(item, f"{path}[{i}]"), topics, known_functions)
        if any(s.name.lower() == sub.name.lower() for s in subs):
            raise ConfigError(f"duplicate subscription name {sub.name!r}", path=f"{path}[{i}].name")
        subs.append(sub)
    root.finish()
    return EventGridConfig(topics, tuple(subs), from_file=True)


def _topics(root: SectionReader) -> dict[str, TopicConfig]:
    raw = root.raw("topics", {})
    path = root.key_path("topics")
    if not isinstance(raw, Mapping):
        raise ConfigError("must be an object of topic name: topic", path=path)
    topics: dict[str, TopicConfig] = {}
    for name, body in raw.items():
        where = f"{path}.{name}"
        _check_name(name, where)
        reader = SectionReader(body, where)
        kind = reader.string("type", "custom", choices=_TOPIC_TYPES) or "custom"
        schema = reader.string("inputSchema", SCHEMA_EVENTGRID, choices=_SCHEMAS) or SCHEMA_EVENTGRID
        connection = reader.string("connection", None)
        if kind == "storage" and schema != SCHEMA_EVENTGRID:
            raise ConfigError("system topics publish in the Event Grid schema", path=reader.key_path("inputSchema"))
        if kind == "custom" and connection is not None:
            raise ConfigError("only storage topics take a connection", path=reader.key_path("connection"))
        reader.finish()
        topics[name] = TopicConfig(name, kind, schema, connection)
    return topics


def _subscription(reader: SectionReader, topics: Mapping[str, TopicConfig],
                  known_functions: set[str] | None) -> SubscriptionConfig:
    name = reader.string("name", None)
    if name is None:
        raise ConfigError("'name' is required", path=reader.key_path("name"))
    _check_name(name, reader.key_path("name"))
    topic = reader.string("topic", None)
    if topic is None:
        raise ConfigError("'topic' is required", path=reader.key_path("topic"))
    if not any(t.lower() == topic.lower() for t in topics):
        raise ConfigError(f"unknown topic {topic!r} (declared: {sorted(topics)})", path=reader.key_path("topic"))
    topic = next(t for t in topics if t.lower() == topic.lower())
    destination = _destination(reader.section("destination"), known_functions)
    schema = reader.string("eventDeliverySchema", None, choices=_SCHEMAS)
    if topics[topic].input_schema == SCHEMA_CLOUDEVENTS and schema == SCHEMA_EVENTGRID:
        raise ConfigError("a CloudEvents topic delivers CloudEvents only",
                          path=reader.key_path("eventDeliverySchema"))
    flt_reader = reader.section("filter")
    flt = parse_filter(flt_reader)
    flt_reader.finish()
    retry_reader = reader.section("retryPolicy")
    retry = RetryPolicy(
        retry_reader.integer("maxDeliveryAttempts", DEFAULT_MAX_DELIVERY_ATTEMPTS, minimum=1, maximum=30),
        retry_reader.integer("eventTimeToLiveInMinutes", DEFAULT_EVENT_TTL_MINUTES, minimum=1, maximum=1440),
    )
    retry_reader.finish()
    dead_letter = None
    if reader.has("deadLetterDestination"):
        dl = reader.section("deadLetterDestination")
        container = dl.string("container", None)
        if not container:
            raise ConfigError("'container' is required", path=dl.key_path("container"))
        dead_letter = DeadLetterConfig(container, dl.string("connection", None))
        dl.finish()
    batch = reader.integer("maxEventsPerBatch", DEFAULT_MAX_EVENTS_PER_BATCH, minimum=1, maximum=5000)
    kb = reader.integer("preferredBatchSizeInKilobytes", DEFAULT_PREFERRED_BATCH_KB, minimum=1, maximum=1024)
    reader.finish()
    return SubscriptionConfig(name, topic, destination, flt, retry, dead_letter, schema, batch, kb)


def _destination(reader: SectionReader, known_functions: set[str] | None) -> Destination:
    kind = reader.string("type", None, choices=_DESTINATIONS)
    if kind is None:
        raise ConfigError("'type' is required (function, webhook or storageQueue)", path=reader.key_path("type"))
    if kind == "function":
        fn = reader.string("functionName", None)
        if not fn:
            raise ConfigError("'functionName' is required", path=reader.key_path("functionName"))
        if known_functions is not None and fn not in known_functions:
            raise ConfigError(f"no Event Grid triggered function named {fn!r} (found: {sorted(known_functions)})",
                              path=reader.key_path("functionName"))
        result = Destination("function", function_name=fn)
    elif kind == "webhook":
        url = reader.string("endpointUrl", None)
        if not url or not url.lower().startswith(("http://", "https://")):
            raise ConfigError("'endpointUrl' must be an http(s) URL", path=reader.key_path("endpointUrl"))
        result = Destination("webhook", endpoint_url=url)
    else:
        queue = reader.string("queueName", None)
        if not queue:
            raise ConfigError("'queueName' is required", path=reader.key_path("queueName"))
        ttl = reader.integer("queueMessageTimeToLiveInSeconds", 7 * 24 * 3600, minimum=-1)
        result = Destination("storageQueue", queue_name=queue, connection=reader.string("connection", None),
                             queue_message_ttl=ttl)
    reader.finish()
    return result


def _check_name(name: str, path: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{name!r} is not a valid name (3-64 letters, digits, hyphens)", path=path)

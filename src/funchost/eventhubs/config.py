"""Event hubs defined in the Event Hubs emulator's `Config.json` format.

Looked for, in order: the app setting ``FUNCHOST_EVENTHUBS_CONFIG`` (a path, relative to the app
folder), then ``<app>/Config.json`` when that file has ``UserConfig.NamespaceConfig`` (the Event
Hubs emulator's shape; a Service Bus emulator file in the same place is left alone). Shape, from
the emulator's `Config-schema.json`::

    {"UserConfig": {"NamespaceConfig": [{"Type": "EventHub", "Name": "emulatorNs1",
        "Entities": [{"Name": "eh1", "PartitionCount": "2", "ConsumerGroups": [{"Name": "cg1"}]}]}],
     "LoggingConfig": {"Type": "File"}}}

With a config, only its hubs exist and each has `$Default` plus the listed consumer groups (as in
the emulator); without one, a hub is created on first use with `DEFAULT_PARTITION_COUNT`
partitions and consumer groups are created on first use.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError, InvalidResourceName
from funchost.storage.eventhubs import (
    DEFAULT_CONSUMER_GROUP,
    validate_consumer_group_name,
    validate_hub_name,
    validate_partition_count,
)

SETTING = "FUNCHOST_EVENTHUBS_CONFIG"
FILE_NAME = "Config.json"
MAX_ENTITIES = 10
MAX_CONSUMER_GROUPS = 20


@dataclass(frozen=True)
class HubDefinition:
    name: str
    partition_count: int
    consumer_groups: tuple[str, ...]


@dataclass(frozen=True)
class EventHubsConfig:
    path: Path
    namespace: str
    hubs: Mapping[str, HubDefinition]  # by lower-cased name

    def find(self, hub: str) -> HubDefinition | None:
        return self.hubs.get(hub.lower())


def find_config(app_dir: Path, settings: Mapping[str, str]) -> EventHubsConfig | None:
    """The app's Event Hubs config, or None. Raises ConfigError for an invalid file."""
    configured = settings.get(SETTING)
    if configured:
        path = Path(configured)
        path = path if path.is_absolute() else Path(app_dir) / path
        if not path.is_file():
            raise ConfigError(f"the file '{path}' does not exist", path=SETTING)
        return load_config(path, _read(path))
    path = Path(app_dir) / FILE_NAME
    if not path.is_file():
        return None
    raw = _read(path)
    user = raw.get("UserConfig") if isinstance(raw, dict) else None
    if not isinstance(user, dict) or "NamespaceConfig" not in user:
        return None  # not an Event Hubs emulator file (e.g. the Service Bus emulator's)
    return load_config(path, raw)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=path.name) from exc


def load_config(path: Path, raw: Any) -> EventHubsConfig:
    where = path.name

    def fail(message: str, at: str) -> ConfigError:
        return ConfigError(message, path=f"{where}: {at}")

    user = raw.get("UserConfig") if isinstance(raw, dict) else None
    if not isinstance(user, dict):
        raise fail("must be an object", "UserConfig")
    namespaces = user.get("NamespaceConfig")
    if not isinstance(namespaces, list) or len(namespaces) != 1:
        raise fail("must be an array with exactly one namespace", "UserConfig.NamespaceConfig")
    ns = namespaces[0]
    at = "UserConfig.NamespaceConfig[0]"
    if not isinstance(ns, dict):
        raise fail("must be an object", at)
    if ns.get("Type") != "EventHub":
        raise fail(f"must be \"EventHub\", got {ns.get('Type')!r}", f"{at}.Type")
    name = ns.get("Name")
    if not isinstance(name, str) or not name:
        raise fail("must be a non-empty string", f"{at}.Name")
    entities = ns.get("Entities")
    if not isinstance(entities, list) or not 1 <= len(entities) <= MAX_ENTITIES:
        raise fail(f"must be an array of 1 to {MAX_ENTITIES} event hubs", f"{at}.Entities")
    hubs: dict[str, HubDefinition] = {}
    for i, entity in enumerate(entities):
        hub = _hub(entity, f"{at}.Entities[{i}]", fail)
        if hub.name.lower() in hubs:
            raise fail(f"the event hub '{hub.name}' is defined twice", f"{at}.Entities[{i}].Name")
        hubs[hub.name.lower()] = hub
    return EventHubsConfig(path, name, hubs)


def _hub(entity: Any, at: str, fail: Any) -> HubDefinition:
    if not isinstance(entity, dict):
        raise fail("must be an object", at)
    name = entity.get("Name")
    try:
        validate_hub_name(name)  # type: ignore[arg-type]  # not a str: rejected here
    except InvalidResourceName as exc:
        raise fail(str(exc), f"{at}.Name") from None
    raw_count = entity.get("PartitionCount")
    try:
        count = int(raw_count) if isinstance(raw_count, str | int) and not isinstance(raw_count, bool) else None
    except ValueError:
        count = None
    if count is None:
        raise fail(f"must be a number of partitions (e.g. \"2\"), got {raw_count!r}", f"{at}.PartitionCount")
    try:
        validate_partition_count(count)
    except InvalidResourceName as exc:
        raise fail(str(exc), f"{at}.PartitionCount") from None
    groups_raw = entity.get("ConsumerGroups", [])
    if not isinstance(groups_raw, list) or len(groups_raw) > MAX_CONSUMER_GROUPS:
        raise fail(f"must be an array of at most {MAX_CONSUMER_GROUPS} consumer groups", f"{at}.ConsumerGroups")
    groups: list[str] = []
    for j, group in enumerate(groups_raw):
        group_name = group.get("Name") if isinstance(group, dict) else None
        where = f"{at}.ConsumerGroups[{j}].Name"
        if isinstance(group_name, str) and group_name.lower() == DEFAULT_CONSUMER_GROUP.lower():
            raise fail("$Default exists in every event hub and cannot be listed", where)
        try:
            validate_consumer_group_name(group_name)  # type: ignore[arg-type]
        except InvalidResourceName as exc:
            raise fail(str(exc), where) from None
        groups.append(group_name)  # type: ignore[arg-type]
    return HubDefinition(str(name), count, tuple(groups))

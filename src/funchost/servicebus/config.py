"""Service Bus entities declared in the emulator's `Config.json` format.

Looked for, in order: the file named by the app setting `FUNCHOST_SERVICEBUS_CONFIG` (relative
to the app folder), `<app>/servicebus/Config.json`, then `<app>/Config.json` when it is a
Service Bus file (it has `UserConfig.Namespaces`; the Event Hubs emulator's file has
`UserConfig.NamespaceConfig` instead). `//` and `/* */` comments are allowed, as in the
emulator's sample. Without such a file, entities are created on first use with the service's
defaults. Keys are matched case-insensitively; unknown keys are errors naming their path.

Source: Azure/azure-service-bus-emulator-installer `ServiceBus-Emulator/Config/Config.json`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.storage.servicebus import (
    CorrelationFilter,
    EntityProperties,
    Rule,
    ServiceBusError,
    SqlFilter,
    validate_entity_name,
    validate_subscription_name,
)
from funchost.storage.servicebus_rules import validate_rule

CONFIG_SETTING = "FUNCHOST_SERVICEBUS_CONFIG"
DEFAULT_NAMESPACE = "sbemulatorns"

_QUEUE_KEYS = {"deadletteringonmessageexpiration", "defaultmessagetimetolive", "duplicatedetectionhistorytimewindow",
               "forwarddeadletteredmessagesto", "forwardto", "lockduration", "maxdeliverycount",
               "requiresduplicatedetection", "requiressession"}
_TOPIC_KEYS = {"defaultmessagetimetolive", "duplicatedetectionhistorytimewindow", "requiresduplicatedetection"}
_SUBSCRIPTION_KEYS = {"deadletteringonmessageexpiration", "defaultmessagetimetolive", "forwarddeadletteredmessagesto",
                      "forwardto", "lockduration", "maxdeliverycount", "requiressession"}
_CORRELATION_KEYS = {"contenttype": "content_type", "correlationid": "correlation_id", "label": "subject",
                     "subject": "subject", "messageid": "message_id", "replyto": "reply_to",
                     "replytosessionid": "reply_to_session_id", "sessionid": "session_id", "to": "to"}
_DURATION = re.compile(r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?"
                       r"(?:(?P<s>\d+(?:\.\d+)?)S)?)?$", re.IGNORECASE)

SubscriptionDecl = tuple[EntityProperties, tuple[Rule, ...]]
TopicDecl = tuple[EntityProperties, dict[str, SubscriptionDecl]]


@dataclass(frozen=True)
class ServiceBusConfig:
    source: Path
    namespace: str
    queues: dict[str, EntityProperties] = field(default_factory=dict)
    topics: dict[str, TopicDecl] = field(default_factory=dict)

    def declares(self, path: str) -> bool:
        """Is `queue`, `topic` or `topic/Subscriptions/sub` declared (case-insensitively)?"""
        lowered = path.lower()
        if lowered in {q.lower() for q in self.queues}:
            return True
        for topic, (_, subscriptions) in self.topics.items():
            if lowered == topic.lower():
                return True
            if any(lowered == f"{topic}/subscriptions/{sub}".lower() for sub in subscriptions):
                return True
        return False


def find_config(app_dir: Path, settings: AppSettings) -> Path | None:
    configured = settings.get(CONFIG_SETTING)
    if configured:
        path = (Path(app_dir) / configured).resolve()
        if not path.is_file():
            raise ConfigError(f"the Service Bus entity file '{configured}' does not exist", path=CONFIG_SETTING)
        return path
    nested = Path(app_dir) / "servicebus" / "Config.json"
    if nested.is_file():
        return nested
    top = Path(app_dir) / "Config.json"
    if top.is_file():
        try:
            raw = _load_json(top)
        except ConfigError:
            return top  # reported when parsed
        user = _get(raw, "UserConfig") if isinstance(raw, dict) else None
        if isinstance(user, dict) and _get(user, "Namespaces") is not None:
            return top
    return None


def load_config(app_dir: Path, settings: AppSettings) -> ServiceBusConfig | None:
    path = find_config(app_dir, settings)
    return None if path is None else parse_config(_load_json(path), path)


def _strip_comments(text: str) -> str:
    out, i, in_string = [], 0, False
    while i < len(text):
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
            out.append(c)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = len(text) if end < 0 else end + 2
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def _load_json(path: Path) -> Any:
    try:
        return json.loads(_strip_comments(path.read_text(encoding="utf-8-sig")))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=path.name) from exc


def _get(obj: dict[str, Any], key: str) -> Any:
    for k, v in obj.items():
        if k.lower() == key.lower():
            return v
    return None


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError("must be a JSON object", path=where)
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError("must be a JSON array", path=where)
    return value


def parse_duration(value: Any, where: str) -> float:
    """ISO 8601 durations as the emulator uses them (`PT1M`, `PT20S`, `P1D`, `PT1H30M`)."""
    match = _DURATION.match(value) if isinstance(value, str) and value not in ("P", "PT") else None
    if match is None:
        raise ConfigError(f"must be an ISO 8601 duration such as 'PT1M', got {value!r}", path=where)
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return parts.get("d", 0) * 86400 + parts.get("h", 0) * 3600 + parts.get("m", 0) * 60 + parts.get("s", 0)


def _properties(raw: Any, allowed: set[str], where: str) -> EntityProperties:
    props = _object(raw if raw is not None else {}, where)
    values: dict[str, Any] = {}
    for key, value in props.items():
        path = f"{where}.{key}"
        lowered = key.lower()
        if lowered not in allowed:
            raise ConfigError("unknown property", path=path)
        if lowered in ("deadletteringonmessageexpiration", "requiresduplicatedetection", "requiressession"):
            if not isinstance(value, bool):
                raise ConfigError(f"must be true or false, got {value!r}", path=path)
            name = {"deadletteringonmessageexpiration": "dead_lettering_on_message_expiration",
                    "requiresduplicatedetection": "requires_duplicate_detection",
                    "requiressession": "requires_session"}[lowered]
            values[name] = value
        elif lowered == "maxdeliverycount":
            if isinstance(value, bool) or not isinstance(value, int):
                raise ConfigError(f"must be an integer, got {value!r}", path=path)
            values["max_delivery_count"] = value
        elif lowered in ("forwardto", "forwarddeadletteredmessagesto"):
            if value not in (None, "") and not isinstance(value, str):
                raise ConfigError(f"must be an entity name, got {value!r}", path=path)
            values["forward_to" if lowered == "forwardto" else "forward_dead_lettered_messages_to"] = value or None
        else:
            seconds = parse_duration(value, path)
            name = {"lockduration": "lock_duration", "defaultmessagetimetolive": "default_message_ttl",
                    "duplicatedetectionhistorytimewindow": "duplicate_detection_window"}[lowered]
            values[name] = seconds
    try:
        return EntityProperties(**values)
    except ServiceBusError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], path=where) from None


def _rule(raw: Any, where: str) -> Rule:
    item = _object(raw, where)
    name = _get(item, "Name")
    if not isinstance(name, str) or not name:
        raise ConfigError("a rule needs a Name", path=where)
    props = _object(_get(item, "Properties") or {}, f"{where}.Properties")
    kind = str(_get(props, "FilterType") or "").lower()
    action_raw = _get(props, "Action")
    action = None
    if action_raw is not None:
        action = _get(_object(action_raw, f"{where}.Properties.Action"), "SqlExpression")
    flt: CorrelationFilter | SqlFilter
    if kind == "correlation":
        spec = _object(_get(props, "CorrelationFilter") or {}, f"{where}.Properties.CorrelationFilter")
        fields: dict[str, Any] = {}
        for key, value in spec.items():
            if key.lower() == "properties":
                fields["properties"] = dict(_object(value, f"{where}.Properties.CorrelationFilter.Properties"))
            elif key.lower() in _CORRELATION_KEYS:
                fields[_CORRELATION_KEYS[key.lower()]] = value
            else:
                raise ConfigError("unknown correlation filter property",
                                  path=f"{where}.Properties.CorrelationFilter.{key}")
        flt = CorrelationFilter(**fields)
    elif kind == "sql":
        sql = _object(_get(props, "SqlFilter") or {}, f"{where}.Properties.SqlFilter")
        flt = SqlFilter(str(_get(sql, "SqlExpression") or ""))
    else:
        raise ConfigError("FilterType must be 'Correlation' or 'Sql'", path=f"{where}.Properties.FilterType")
    rule = Rule(name, flt, action)
    try:
        validate_rule(rule)
    except ServiceBusError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], path=where) from None
    return rule


def parse_config(raw: Any, source: Path) -> ServiceBusConfig:
    root = source.name
    user = _object(_get(_object(raw, root), "UserConfig"), f"{root}: UserConfig")
    namespaces = _list(_get(user, "Namespaces"), f"{root}: UserConfig.Namespaces")
    if len(namespaces) != 1:
        raise ConfigError("declare exactly one namespace (the emulator serves one)", path=f"{root}: UserConfig.Namespaces")
    where = f"{root}: UserConfig.Namespaces[0]"
    namespace = _object(namespaces[0], where)
    name = _get(namespace, "Name") or DEFAULT_NAMESPACE
    queues: dict[str, EntityProperties] = {}
    for i, item in enumerate(_list(_get(namespace, "Queues"), f"{where}.Queues")):
        qwhere = f"{where}.Queues[{i}]"
        queue = _object(item, qwhere)
        queues[_name(queue, qwhere)] = _properties(_get(queue, "Properties"), _QUEUE_KEYS, f"{qwhere}.Properties")
    topics: dict[str, TopicDecl] = {}
    for i, item in enumerate(_list(_get(namespace, "Topics"), f"{where}.Topics")):
        twhere = f"{where}.Topics[{i}]"
        topic = _object(item, twhere)
        props = _properties(_get(topic, "Properties"), _TOPIC_KEYS, f"{twhere}.Properties")
        subscriptions: dict[str, SubscriptionDecl] = {}
        for j, sub_item in enumerate(_list(_get(topic, "Subscriptions"), f"{twhere}.Subscriptions")):
            swhere = f"{twhere}.Subscriptions[{j}]"
            sub = _object(sub_item, swhere)
            sub_props = _properties(_get(sub, "Properties"), _SUBSCRIPTION_KEYS, f"{swhere}.Properties")
            rules = tuple(_rule(r, f"{swhere}.Rules[{k}]")
                          for k, r in enumerate(_list(_get(sub, "Rules"), f"{swhere}.Rules")))
            subscriptions[_name(sub, swhere, "subscription")] = (sub_props, rules)
        topics[_name(topic, twhere, "topic")] = (props, subscriptions)
    return ServiceBusConfig(source, str(name), queues, topics)


def _name(obj: dict[str, Any], where: str, kind: str = "queue") -> str:
    name = _get(obj, "Name")
    if not isinstance(name, str) or not name:
        raise ConfigError("needs a Name", path=where)
    try:
        if kind == "subscription":
            validate_subscription_name(name)
        else:
            validate_entity_name(name, kind)
    except ServiceBusError as exc:
        raise ConfigError(str(exc).split(": ", 1)[-1], path=f"{where}.Name") from None
    return name

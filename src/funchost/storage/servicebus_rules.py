"""Which subscriptions of a topic get a copy of a message, and what their rule actions change.

A subscription receives a message when any of its rules matches (no rules: nothing matches;
a new subscription has `$Default`, a true filter). Correlation filters compare each set field
for equality (application properties too); SQL filters use `servicebus_sql`. The actions of
the matching rules are applied, in rule order, to that subscription's copy only. One copy per
subscription even when several rules match (docs/servicebus.md notes this as unconfirmed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from funchost.storage.servicebus import CorrelationFilter, OutgoingMessage, Rule, SqlFilter, TrueFilter
from funchost.storage.servicebus_sql import SYSTEM_PROPERTIES, Action, Node, compile_action, compile_filter

_CORRELATION_FIELDS = ("correlation_id", "message_id", "to", "reply_to", "subject", "session_id",
                       "reply_to_session_id", "content_type")
_SETTABLE = {"message_id", "correlation_id", "to", "reply_to", "subject", "session_id", "reply_to_session_id",
             "content_type", "partition_key"}


@lru_cache(maxsize=512)
def _filter(expression: str) -> Node:
    return compile_filter(expression)


@lru_cache(maxsize=512)
def _action(text: str) -> Action:
    return compile_action(text)


def validate_rule(rule: Rule) -> None:
    """Parse a rule's SQL now, so a bad Config.json is reported at load, not at the first send."""
    if isinstance(rule.filter, SqlFilter):
        _filter(rule.filter.expression)
    if rule.action:
        _action(rule.action)


def view(message: OutgoingMessage, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The property bag SQL sees: `sys.<field>` for system properties, bare names for the rest."""
    bag: dict[str, Any] = dict(message.application_properties)
    for field in set(SYSTEM_PROPERTIES.values()):
        if hasattr(message, field):
            bag["sys." + field] = getattr(message, field)
    bag["sys.size"] = len(message.body)
    bag.update(extra or {})
    return bag


def _correlation_matches(flt: CorrelationFilter, message: OutgoingMessage) -> bool:
    for field in _CORRELATION_FIELDS:
        wanted = getattr(flt, field)
        if wanted is not None and getattr(message, field) != wanted:
            return False
    for key, wanted in flt.properties.items():
        if message.application_properties.get(key) != wanted:
            return False
    return True


def matches(rule: Rule, message: OutgoingMessage, extra: dict[str, Any] | None = None) -> bool:
    if isinstance(rule.filter, TrueFilter):
        return True
    if isinstance(rule.filter, CorrelationFilter):
        return _correlation_matches(rule.filter, message)
    return _filter(rule.filter.expression)(view(message, extra)) is True


def route(rules: Sequence[Rule], message: OutgoingMessage, extra: dict[str, Any] | None = None
          ) -> OutgoingMessage | None:
    """The subscription's copy of `message`, or None when no rule matches."""
    matched = [rule for rule in rules if matches(rule, message, extra)]
    if not matched:
        return None
    actions = [rule.action for rule in matched if rule.action]
    if not actions:
        return message
    bag = view(message, extra)
    for text in actions:
        _action(text)(bag)
    changes: dict[str, Any] = {}
    for field in _SETTABLE:
        value = bag.get("sys." + field)
        if value != getattr(message, field):
            changes[field] = None if value is None else str(value)
    properties = {key: value for key, value in bag.items()
                  if not key.startswith("sys.") and (extra is None or key not in extra)}
    return dataclasses.replace(message, application_properties=properties, **changes)

"""Subscription filters, evaluated as Event Grid does (azure-semantics 6.5).

Event types and subject prefix/suffix first, then every advanced filter (AND). Within one
advanced filter the values are OR-ed. String comparisons are case-insensitive. A value of the
wrong type is ignored, so a key that only holds ignored values counts as missing: missing keys
fail every operator except NumberNotIn, StringNotIn (pass) and IsNullOrUndefined (true).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from funchost.errors import ConfigError
from funchost.eventgrid import SCHEMA_CLOUDEVENTS
from funchost.settings.sections import SectionReader

MAX_ADVANCED_FILTERS = 25
MAX_FILTER_VALUES = 25
MAX_STRING_VALUE = 512

_SINGLE_NUMBER = {"NumberLessThan", "NumberGreaterThan", "NumberLessThanOrEquals", "NumberGreaterThanOrEquals"}
_NUMBER_LIST = {"NumberIn", "NumberNotIn"}
_RANGES = {"NumberInRange", "NumberNotInRange"}
_STRINGS = {"StringContains", "StringNotContains", "StringBeginsWith", "StringNotBeginsWith",
            "StringEndsWith", "StringNotEndsWith", "StringIn", "StringNotIn"}
_NO_VALUE = {"IsNullOrUndefined", "IsNotNull"}
OPERATORS = sorted(_SINGLE_NUMBER | _NUMBER_LIST | _RANGES | _STRINGS | _NO_VALUE | {"BoolEquals"})
_CANONICAL = {op.lower(): op for op in OPERATORS}
# A missing key (or one holding only values of another type) passes these.
_PASS_WHEN_MISSING = {"NumberNotIn", "StringNotIn"}

_EVENTGRID_ENVELOPE = {"id": "id", "topic": "topic", "subject": "subject", "eventtype": "eventType",
                       "dataversion": "dataVersion", "eventtime": "eventTime", "metadataversion": "metadataVersion"}


@dataclass(frozen=True)
class AdvancedFilter:
    operator: str
    key: str
    values: tuple[Any, ...] = ()  # single-valued operators hold one element

    @property
    def negated(self) -> bool:
        return "Not" in self.operator and self.operator != "IsNotNull"


@dataclass(frozen=True)
class SubscriptionFilter:
    included_event_types: tuple[str, ...] | None = None  # None = all
    subject_begins_with: str = ""
    subject_ends_with: str = ""
    is_subject_case_sensitive: bool = False
    enable_advanced_filtering_on_arrays: bool = False
    advanced_filters: tuple[AdvancedFilter, ...] = ()


# --- parsing -------------------------------------------------------------------------------------


def parse_filter(reader: SectionReader) -> SubscriptionFilter:
    types = reader.raw("includedEventTypes")
    included: tuple[str, ...] | None = None
    if types is not None:
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise ConfigError("must be an array of event type strings", path=reader.key_path("includedEventTypes"))
        if not any(t.lower() == "all" for t in types):
            included = tuple(types)
    begins = reader.string("subjectBeginsWith", "") or ""
    ends = reader.string("subjectEndsWith", "") or ""
    case_sensitive = reader.boolean("isSubjectCaseSensitive", False)
    arrays = reader.boolean("enableAdvancedFilteringOnArrays", False)
    raw_filters = reader.raw("advancedFilters", [])
    path = reader.key_path("advancedFilters")
    if not isinstance(raw_filters, list):
        raise ConfigError("must be an array", path=path)
    if len(raw_filters) > MAX_ADVANCED_FILTERS:
        raise ConfigError(f"at most {MAX_ADVANCED_FILTERS} advanced filters per subscription, got {len(raw_filters)}",
                          path=path)
    advanced = tuple(_parse_advanced(SectionReader(item, f"{path}[{i}]")) for i, item in enumerate(raw_filters))
    total = sum(max(1, len(f.values)) if f.operator not in _NO_VALUE else 0 for f in advanced)
    if total > MAX_FILTER_VALUES:
        raise ConfigError(f"at most {MAX_FILTER_VALUES} filter values in total per subscription, got {total}",
                          path=path)
    return SubscriptionFilter(included, begins, ends, case_sensitive, arrays, advanced)


def _parse_advanced(reader: SectionReader) -> AdvancedFilter:
    op_raw = reader.string("operatorType", None)
    if op_raw is None:
        raise ConfigError("'operatorType' is required", path=reader.key_path("operatorType"))
    operator = _CANONICAL.get(op_raw.lower())
    if operator is None:
        raise ConfigError(f"unknown operator {op_raw!r} (expected one of {OPERATORS})",
                          path=reader.key_path("operatorType"))
    key = reader.string("key", None)
    if not key:
        raise ConfigError("'key' is required", path=reader.key_path("key"))
    if operator in _NO_VALUE:
        values: tuple[Any, ...] = ()
    elif operator in _SINGLE_NUMBER or operator == "BoolEquals":
        values = (_single(reader, operator),)
    else:
        values = _list(reader, operator)
    reader.finish()
    return AdvancedFilter(operator, key, values)


def _single(reader: SectionReader, operator: str) -> Any:
    value = reader.raw("value")
    path = reader.key_path("value")
    if operator == "BoolEquals":
        if not isinstance(value, bool):
            raise ConfigError(f"BoolEquals needs a boolean 'value', got {value!r}", path=path)
        return value
    if not _is_number(value):
        raise ConfigError(f"{operator} needs a numeric 'value', got {value!r}", path=path)
    return value


def _list(reader: SectionReader, operator: str) -> tuple[Any, ...]:
    values = reader.raw("values")
    path = reader.key_path("values")
    if not isinstance(values, list) or not values:
        raise ConfigError(f"{operator} needs a non-empty 'values' array", path=path)
    for i, value in enumerate(values):
        where = f"{path}[{i}]"
        if operator in _RANGES:
            if (not isinstance(value, list) or len(value) != 2 or not all(_is_number(v) for v in value)
                    or value[0] > value[1]):
                raise ConfigError(f"{operator} values are [low, high] number pairs, got {value!r}", path=where)
        elif operator in _NUMBER_LIST:
            if not _is_number(value):
                raise ConfigError(f"{operator} values must be numbers, got {value!r}", path=where)
        elif not isinstance(value, str):
            raise ConfigError(f"{operator} values must be strings, got {value!r}", path=where)
        elif len(value) > MAX_STRING_VALUE:
            raise ConfigError(f"string filter values are limited to {MAX_STRING_VALUE} characters", path=where)
    return tuple(tuple(v) if isinstance(v, list) else v for v in values)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


# --- evaluation ----------------------------------------------------------------------------------


def matches(flt: SubscriptionFilter, event: Mapping[str, Any], schema: str) -> bool:
    """Whether `event` (in its input `schema`) passes the subscription filter."""
    cloud = schema == SCHEMA_CLOUDEVENTS
    event_type = event.get("type" if cloud else "eventType") or ""
    if flt.included_event_types is not None:
        if not any(event_type.lower() == t.lower() for t in flt.included_event_types):
            return False
    subject = event.get("subject") or ""
    if not isinstance(subject, str):
        subject = ""
    begins, ends = flt.subject_begins_with, flt.subject_ends_with
    if not flt.is_subject_case_sensitive:
        subject, begins, ends = subject.lower(), begins.lower(), ends.lower()
    if not subject.startswith(begins) or not subject.endswith(ends):
        return False
    return all(_advanced(f, event, cloud, flt.enable_advanced_filtering_on_arrays) for f in flt.advanced_filters)


_MISSING = object()


def resolve_key(event: Mapping[str, Any], key: str, cloud: bool) -> Any:
    """The value at `key`: envelope fields by name, `data.a.b` by path (no escaping of dots)."""
    parts = key.split(".")
    head = parts[0]
    if len(parts) == 1:
        if not cloud:
            name = _EVENTGRID_ENVELOPE.get(head.lower())
            return event.get(name, _MISSING) if name else _MISSING
        return _lookup(event, head)
    value: Any = event
    for part in parts:
        if not isinstance(value, Mapping):
            return _MISSING
        value = _lookup(value, part)
        if value is _MISSING:
            return _MISSING
    return value


def _lookup(obj: Mapping[str, Any], name: str) -> Any:
    if name in obj:
        return obj[name]
    lowered = name.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == lowered:
            return v
    return _MISSING


def _advanced(flt: AdvancedFilter, event: Mapping[str, Any], cloud: bool, arrays: bool) -> bool:
    value = resolve_key(event, flt.key, cloud)
    if flt.operator == "IsNullOrUndefined":
        return value is _MISSING or value is None
    if flt.operator == "IsNotNull":
        return value is not _MISSING and value is not None
    if value is _MISSING or value is None:
        candidates: list[Any] = []
    elif isinstance(value, list) and arrays:
        candidates = list(value)
    else:
        candidates = [value]
    test, accepts = _TESTS[flt.operator]
    typed = [c for c in candidates if accepts(c)]
    if not typed:
        return flt.operator in _PASS_WHEN_MISSING
    if flt.negated:
        # "Not" operators fail as soon as any element matches any value.
        return not any(test(c, v) for c in typed for v in flt.values)
    return any(test(c, v) for c in typed for v in flt.values)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _in_range(c: Any, r: Any) -> bool:
    return bool(r[0] <= c <= r[1])


Test = Callable[[Any, Any], bool]
_TESTS: dict[str, tuple[Test, Callable[[Any], bool]]] = {
    "NumberIn": (lambda c, v: c == v, _is_number),
    "NumberNotIn": (lambda c, v: c == v, _is_number),
    "NumberLessThan": (lambda c, v: c < v, _is_number),
    "NumberGreaterThan": (lambda c, v: c > v, _is_number),
    "NumberLessThanOrEquals": (lambda c, v: c <= v, _is_number),
    "NumberGreaterThanOrEquals": (lambda c, v: c >= v, _is_number),
    "NumberInRange": (_in_range, _is_number),
    "NumberNotInRange": (_in_range, _is_number),
    "BoolEquals": (lambda c, v: c is v, _is_bool),
    "StringContains": (lambda c, v: v.lower() in c.lower(), _is_str),
    "StringNotContains": (lambda c, v: v.lower() in c.lower(), _is_str),
    "StringBeginsWith": (lambda c, v: c.lower().startswith(v.lower()), _is_str),
    "StringNotBeginsWith": (lambda c, v: c.lower().startswith(v.lower()), _is_str),
    "StringEndsWith": (lambda c, v: c.lower().endswith(v.lower()), _is_str),
    "StringNotEndsWith": (lambda c, v: c.lower().endswith(v.lower()), _is_str),
    "StringIn": (lambda c, v: c.lower() == v.lower(), _is_str),
    "StringNotIn": (lambda c, v: c.lower() == v.lower(), _is_str),
}

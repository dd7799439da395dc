"""Subscription filters: every advanced operator, missing keys, arrays, subject and type filters."""

from __future__ import annotations

from typing import Any

import pytest

from funchost.errors import ConfigError
from funchost.eventgrid.filters import AdvancedFilter, SubscriptionFilter, matches, parse_filter
from funchost.settings.sections import SectionReader

EVENT = {"id": "1", "subject": "/Blobs/Images/Cat.PNG", "eventType": "Microsoft.Storage.BlobCreated",
         "eventTime": "2024-05-01T10:00:00Z", "dataVersion": "2",
         "data": {"size": 10, "ratio": 0.5, "ok": True, "name": "Report-2024.pdf", "tags": ["red", "blue"],
                  "sizes": [1, 50], "nested": {"deep": "Value"}}}


def adv(op: str, key: str, *values: Any) -> SubscriptionFilter:
    return SubscriptionFilter(advanced_filters=(AdvancedFilter(op, key, tuple(values)),))


@pytest.mark.parametrize("op,key,values,expected", [
    ("NumberIn", "data.size", (5, 10), True),
    ("NumberIn", "data.size", (5,), False),
    ("NumberNotIn", "data.size", (5,), True),
    ("NumberNotIn", "data.size", (10,), False),
    ("NumberLessThan", "data.size", (11,), True),
    ("NumberLessThan", "data.size", (10,), False),
    ("NumberGreaterThan", "data.size", (9,), True),
    ("NumberGreaterThan", "data.size", (10,), False),
    ("NumberLessThanOrEquals", "data.size", (10,), True),
    ("NumberLessThanOrEquals", "data.size", (9,), False),
    ("NumberGreaterThanOrEquals", "data.size", (10,), True),
    ("NumberGreaterThanOrEquals", "data.size", (11,), False),
    ("NumberInRange", "data.ratio", ((0, 0.5), (2, 3)), True),  # bounds inclusive
    ("NumberInRange", "data.ratio", ((0.6, 1),), False),
    ("NumberNotInRange", "data.ratio", ((0.6, 1),), True),
    ("NumberNotInRange", "data.ratio", ((0, 1),), False),
    ("BoolEquals", "data.ok", (True,), True),
    ("BoolEquals", "data.ok", (False,), False),
    ("StringContains", "data.name", ("PORT",), True),  # case-insensitive
    ("StringContains", "data.name", ("xyz",), False),
    ("StringNotContains", "data.name", ("xyz",), True),
    ("StringNotContains", "data.name", ("report",), False),
    ("StringBeginsWith", "data.name", ("nope", "report"), True),  # values are OR-ed
    ("StringBeginsWith", "data.name", ("2024",), False),
    ("StringNotBeginsWith", "data.name", ("2024",), True),
    ("StringNotBeginsWith", "data.name", ("REPORT",), False),
    ("StringEndsWith", "data.name", (".PDF",), True),
    ("StringEndsWith", "data.name", (".png",), False),
    ("StringNotEndsWith", "data.name", (".png",), True),
    ("StringNotEndsWith", "data.name", (".pdf",), False),
    ("StringIn", "data.name", ("report-2024.PDF",), True),
    ("StringIn", "data.name", ("report",), False),
    ("StringNotIn", "data.name", ("report",), True),
    ("StringNotIn", "data.name", ("REPORT-2024.pdf",), False),
    ("IsNullOrUndefined", "data.missing", (), True),
    ("IsNullOrUndefined", "data.name", (), False),
    ("IsNotNull", "data.name", (), True),
    ("IsNotNull", "data.missing", (), False),
    ("StringIn", "Subject", ("/blobs/images/cat.png",), True),  # envelope keys
    ("StringIn", "EventType", ("microsoft.storage.blobcreated",), True),
    ("StringIn", "DataVersion", ("2",), True),
    ("StringIn", "data.nested.deep", ("value",), True),
])
def test_each_operator(op: str, key: str, values: tuple[Any, ...], expected: bool) -> None:
    assert matches(adv(op, key, *values), EVENT, "EventGridSchema") is expected


@pytest.mark.parametrize("op,values,expected", [
    ("NumberIn", (1,), False), ("NumberNotIn", (1,), True), ("StringNotIn", ("a",), True),
    ("StringNotContains", ("a",), False), ("NumberLessThan", (5,), False), ("BoolEquals", (True,), False),
    ("NumberNotInRange", ((0, 1),), False),
])
def test_missing_key_fails_all_but_notin(op: str, values: tuple[Any, ...], expected: bool) -> None:
    assert matches(adv(op, "data.absent", *values), EVENT, "EventGridSchema") is expected


def test_value_of_another_type_is_ignored_like_a_missing_key() -> None:
    assert not matches(adv("NumberIn", "data.name", 1), EVENT, "EventGridSchema")
    assert matches(adv("StringNotIn", "data.size", "10"), EVENT, "EventGridSchema")


def test_arrays_need_the_flag_and_not_operators_fail_on_any_element() -> None:
    flt = adv("StringIn", "data.tags", "blue")
    assert not matches(flt, EVENT, "EventGridSchema")
    on = SubscriptionFilter(enable_advanced_filtering_on_arrays=True, advanced_filters=flt.advanced_filters)
    assert matches(on, EVENT, "EventGridSchema")
    neg = SubscriptionFilter(enable_advanced_filtering_on_arrays=True,
                             advanced_filters=(AdvancedFilter("StringNotIn", "data.tags", ("blue",)),))
    assert not matches(neg, EVENT, "EventGridSchema")
    nums = SubscriptionFilter(enable_advanced_filtering_on_arrays=True,
                              advanced_filters=(AdvancedFilter("NumberGreaterThan", "data.sizes", (40,)),))
    assert matches(nums, EVENT, "EventGridSchema")


def test_filters_are_and_ed() -> None:
    both = SubscriptionFilter(advanced_filters=(AdvancedFilter("NumberIn", "data.size", (10,)),
                                                AdvancedFilter("BoolEquals", "data.ok", (False,))))
    assert not matches(both, EVENT, "EventGridSchema")


def test_subject_filters_case_insensitive_by_default() -> None:
    assert matches(SubscriptionFilter(subject_begins_with="/blobs/images/", subject_ends_with=".png"), EVENT,
                   "EventGridSchema")
    strict = SubscriptionFilter(subject_ends_with=".png", is_subject_case_sensitive=True)
    assert not matches(strict, EVENT, "EventGridSchema")
    assert matches(SubscriptionFilter(subject_ends_with=".PNG", is_subject_case_sensitive=True), EVENT,
                   "EventGridSchema")


def test_included_event_types() -> None:
    assert matches(SubscriptionFilter(included_event_types=("microsoft.storage.blobcreated",)), EVENT,
                   "EventGridSchema")
    assert not matches(SubscriptionFilter(included_event_types=("Microsoft.Storage.BlobDeleted",)), EVENT,
                       "EventGridSchema")


def test_cloudevents_keys() -> None:
    ce = {"specversion": "1.0", "id": "1", "source": "/my/app", "type": "t", "myext": "x", "data": {"a": 1}}
    assert matches(adv("StringIn", "source", "/MY/APP"), ce, "CloudEventSchemaV1_0")
    assert matches(adv("StringIn", "myext", "x"), ce, "CloudEventSchemaV1_0")
    assert matches(adv("NumberIn", "data.a", 1), ce, "CloudEventSchemaV1_0")
    assert matches(SubscriptionFilter(included_event_types=("T",)), ce, "CloudEventSchemaV1_0")


def parse(raw: Any) -> SubscriptionFilter:
    return parse_filter(SectionReader(raw, "eventgrid.json: subscriptions[0].filter"))


def test_limits_and_bad_filters_are_config_errors_with_paths() -> None:
    many = {"advancedFilters": [{"operatorType": "IsNotNull", "key": f"data.k{i}"} for i in range(26)]}
    with pytest.raises(ConfigError, match="at most 25 advanced filters"):
        parse(many)
    values = {"advancedFilters": [{"operatorType": "StringIn", "key": "subject", "values": [str(i) for i in range(26)]}]}
    with pytest.raises(ConfigError, match="at most 25 filter values"):
        parse(values)
    with pytest.raises(ConfigError, match=r"advancedFilters\[0\].values\[0\]: string filter values are limited"):
        parse({"advancedFilters": [{"operatorType": "StringIn", "key": "subject", "values": ["x" * 513]}]})
    with pytest.raises(ConfigError, match=r"advancedFilters\[0\].operatorType: unknown operator 'StringLike'"):
        parse({"advancedFilters": [{"operatorType": "StringLike", "key": "subject", "values": ["x"]}]})
    with pytest.raises(ConfigError, match="numeric 'value'"):
        parse({"advancedFilters": [{"operatorType": "NumberLessThan", "key": "data.x", "value": "3"}]})
    assert parse({"includedEventTypes": ["All"]}).included_event_types is None

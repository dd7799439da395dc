"""Binding path expressions, as the WebJobs BindingTemplate resolves them."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from funchost.bindings.expressions import (
    ExpressionError,
    ExpressionResolver,
    format_datetime,
    parameter_names,
)

NOW = datetime(2026, 3, 4, 5, 6, 7, 891234, tzinfo=UTC)
GUID = uuid.UUID("0f8fad5b-d9cb-469f-a165-70867728950e")


def resolver(**data: object) -> ExpressionResolver:
    return ExpressionResolver(data, now=NOW, method_name="copy", new_guid=lambda: GUID)


def test_names_are_case_insensitive():
    assert resolver(QueueTrigger="inv-1").resolve("in/{queueTrigger}.pdf") == "in/inv-1.pdf"


def test_dotted_names_walk_json_objects_and_json_text():
    r = resolver(data={"Blob": {"Name": "a.txt"}}, body='{"id": 7}')
    assert r.resolve("c/{data.blob.name}") == "c/a.txt"
    assert r.resolve("c/{body.id}") == "c/7"


def test_rand_guid_is_one_value_per_resolver_with_formats():
    r = resolver()
    assert r.resolve("c/{rand-guid}/{rand-guid}") == f"c/{GUID}/{GUID}"
    assert r.resolve("c/{rand-guid:N}") == f"c/{GUID.hex}"
    assert r.resolve("c/{sys.randguid:B}") == f"c/{{{GUID}}}"
    fresh = ExpressionResolver({}, now=NOW)
    assert fresh.resolve("{rand-guid}") != ExpressionResolver({}, now=NOW).resolve("{rand-guid}")


def test_datetime_default_and_custom_formats():
    r = resolver()
    assert r.resolve("logs/{DateTime}") == "logs/2026-03-04T05-06-07Z"
    assert r.resolve("logs/{datetime:yyyy}/{DateTime:MM}/{DateTime:dd}/{DateTime:HH-mm-ss.fff}") == \
        "logs/2026/03/04/05-06-07.891"
    assert r.resolve("{sys.utcnow}") == "2026-03-04T05:06:07.8912340Z"
    assert r.resolve("{sys.methodname}") == "copy"


def test_binding_data_named_datetime_wins_over_the_system_value():
    assert resolver(DateTime="given").resolve("{DateTime}") == "given"


def test_escaped_braces_and_values_of_other_types():
    r = resolver(n=3, flag=True, items=[1, 2])
    assert r.resolve("{{literal}}-{n}-{flag}-{items}") == "{literal}-3-True-[1,2]"


def test_missing_value_fails_like_the_host():
    with pytest.raises(ExpressionError, match="No value for named parameter 'name'"):
        resolver().resolve("c/{name}")
    with pytest.raises(ExpressionError):
        resolver(data={"a": 1}).resolve("c/{data.b}")


@pytest.mark.parametrize("bad", ["c/{name", "c/name}", "c/{}", "c/{a b}"])
def test_malformed_templates(bad):
    with pytest.raises(ExpressionError):
        parameter_names(bad)


def test_format_datetime_twelve_hour_clock_and_literals():
    evening = datetime(2026, 1, 2, 18, 5, 0, tzinfo=UTC)
    assert format_datetime(evening, "h:mm tt 'at' yy") == "6:05 PM at 26"

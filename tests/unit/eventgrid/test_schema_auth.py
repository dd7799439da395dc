"""Publish validation (precise 400 messages, 413, stamping) and topic key / SAS authorization."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from azure.eventgrid import generate_sas

from funchost.eventgrid.auth import AuthError, KeyRing, TopicKeys, authorize, new_key
from funchost.eventgrid.schema import PublishError, parse_events
from funchost.storage.secrets import FileSecrets

TOPIC = "/subscriptions/0/resourceGroups/funchost/providers/Microsoft.EventGrid/topics/orders"
GOOD = {"id": "1", "subject": "s", "eventType": "T", "eventTime": "2024-05-01T10:00:00.1234567Z", "data": {}}


def eg(body: Any, ctype: str = "application/json") -> list[dict[str, Any]]:
    return parse_events(json.dumps(body).encode(), ctype, "EventGridSchema", TOPIC)


def ce(body: Any, ctype: str = "application/cloudevents-batch+json") -> list[dict[str, Any]]:
    return parse_events(json.dumps(body).encode(), ctype, "CloudEventSchemaV1_0", TOPIC)


@pytest.mark.parametrize("body,message", [
    ({"id": "1"}, "The request body must be a JSON array of events (Event Grid schema), got a JSON object."),
    ([], "The request body holds no events."),
    (["x"], "Event at index 0 must be a JSON object."),
    ([GOOD, {**GOOD, "id": None}], "Event at index 1: required property 'id' was not set."),
    ([{k: v for k, v in GOOD.items() if k != "subject"}], "Event at index 0: required property 'subject' was not set."),
    ([{k: v for k, v in GOOD.items() if k != "eventType"}], "Event at index 0: required property 'eventType' was not set."),
    ([{k: v for k, v in GOOD.items() if k != "eventTime"}], "Event at index 0: required property 'eventTime' was not set."),
    ([{**GOOD, "eventType": 5}], "Event at index 0: property 'eventType' must be a string."),
    ([{**GOOD, "id": " "}], "Event at index 0: required property 'id' is empty."),
    ([{**GOOD, "eventTime": "yesterday"}],
     "Event at index 0: property 'eventTime' is not a valid ISO 8601 date-time: 'yesterday'."),
    ([{**GOOD, "metadataVersion": "2"}], "Event at index 0: property 'metadataVersion' must be \"1\", got '2'."),
    ([{**GOOD, "topic": "/other"}], "Event at index 0: property 'topic' is '/other' but the event was published to "
                                    f"'{TOPIC}'; omit 'topic' and Event Grid stamps it."),
])
def test_eventgrid_schema_errors(body: Any, message: str) -> None:
    with pytest.raises(PublishError) as info:
        eg(body)
    assert info.value.status == 400
    assert info.value.message == message
    assert info.value.body()["error"]["code"] == "BadRequest"


def test_invalid_json_and_empty_body() -> None:
    with pytest.raises(PublishError, match="not valid JSON"):
        parse_events(b"[{", "application/json", "EventGridSchema", TOPIC)
    with pytest.raises(PublishError, match="body is empty"):
        parse_events(b"  ", "application/json", "EventGridSchema", TOPIC)


def test_stamping() -> None:
    [stamped] = eg([GOOD])
    assert stamped["topic"] == TOPIC and stamped["dataVersion"] == "" and stamped["metadataVersion"] == "1"
    [kept] = eg([{**GOOD, "dataVersion": "2.0", "topic": TOPIC.upper()}])
    assert kept["dataVersion"] == "2.0" and kept["topic"] == TOPIC


def test_one_megabyte_limit_is_413() -> None:
    big = [{**GOOD, "data": "x" * (1024 * 1024)}]
    with pytest.raises(PublishError) as info:
        eg(big)
    assert info.value.status == 413 and info.value.code == "PayloadTooLarge"
    just_under = [{**GOOD, "data": "x" * (1024 * 1024 - 200)}]
    assert len(eg(just_under)) == 1


def test_cloudevents_topic_rejects_and_accepts() -> None:
    good = {"specversion": "1.0", "id": "1", "source": "/app", "type": "t", "data": {"a": 1}}
    assert ce(good, "application/cloudevents+json") == [good]
    assert ce([good, good]) == [good, good]
    cases = [
        ({**good, "specversion": "0.3"}, "CloudEvent at index 0: attribute 'specversion' must be \"1.0\", got '0.3'."),
        ({k: v for k, v in good.items() if k != "source"}, "CloudEvent at index 0: required attribute 'source' was not set."),
        ({**good, "data_base64": "AA=="}, "CloudEvent at index 0: 'data' and 'data_base64' are mutually exclusive."),
        ({**good, "time": "noon"}, "CloudEvent at index 0: attribute 'time' is not a valid RFC 3339 timestamp: 'noon'."),
        ({**good, "My_Ext": 1}, "CloudEvent at index 0: extension attribute name 'My_Ext' must be lower-case "
                                "letters and digits only."),
    ]
    for body, message in cases:
        with pytest.raises(PublishError) as info:
            ce([body])
        assert info.value.message == message
    with pytest.raises(PublishError, match="carries one event as a JSON object"):
        ce([good], "application/cloudevents+json")


def test_eventgrid_topic_rejects_cloudevents_content_type() -> None:
    with pytest.raises(PublishError, match="accepts the Event Grid schema; CloudEvents were sent"):
        eg([GOOD], "application/cloudevents-batch+json")


# --- auth ----------------------------------------------------------------------------------------

KEYS = TopicKeys(new_key(), new_key())
PATH = "/eventgrid/topics/orders/api/events"
ENDPOINT = "http://localhost:7071" + PATH
NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def check(headers: dict[str, str], query: dict[str, str] | None = None) -> None:
    authorize(headers, query or {}, KEYS, PATH, NOW)


def test_key_in_header_or_query_either_key() -> None:
    check({"aeg-sas-key": KEYS.key1})
    check({"aeg-sas-key": KEYS.key2})
    check({}, {"aeg-sas-key": KEYS.key1})
    with pytest.raises(AuthError, match="not authorized"):
        check({"aeg-sas-key": new_key()})
    with pytest.raises(AuthError, match="does not carry"):
        check({})


def test_sas_token_from_the_official_sdk() -> None:
    token = generate_sas(ENDPOINT, KEYS.key2, NOW + timedelta(hours=1))
    check({"aeg-sas-token": token})
    check({"authorization": f"SharedAccessSignature {token}"})
    # the host part is not compared (localhost vs 127.0.0.1 vs a tunnel)
    check({"aeg-sas-token": generate_sas("http://127.0.0.1:9/" + PATH.lstrip("/"), KEYS.key1, NOW + timedelta(1))})


def test_sas_token_rejections() -> None:
    with pytest.raises(AuthError, match="expired"):
        check({"aeg-sas-token": generate_sas(ENDPOINT, KEYS.key1, NOW - timedelta(seconds=1))})
    with pytest.raises(AuthError, match="signature does not match"):
        check({"aeg-sas-token": generate_sas(ENDPOINT, new_key(), NOW + timedelta(hours=1))})
    other = ENDPOINT.replace("orders", "other")
    with pytest.raises(AuthError, match="another resource"):
        check({"aeg-sas-token": generate_sas(other, KEYS.key1, NOW + timedelta(hours=1))})
    token = generate_sas(ENDPOINT, KEYS.key1, NOW + timedelta(hours=1))
    tampered = token.replace("e=2024", "e=2099")
    with pytest.raises(AuthError, match="signature does not match"):
        check({"aeg-sas-token": tampered})
    with pytest.raises(AuthError, match="form r="):
        check({"aeg-sas-token": "garbage"})


def test_dotnet_expiry_format_is_accepted() -> None:
    from funchost.eventgrid.auth import parse_expiry

    assert parse_expiry("5/1/2024 11:00:00 AM +00:00") == datetime(2024, 5, 1, 11, 0, tzinfo=UTC)


def test_keys_are_created_once_and_kept(tmp_path: Any) -> None:
    first = KeyRing(FileSecrets(tmp_path)).ensure(["orders"])
    again = KeyRing(FileSecrets(tmp_path)).ensure(["orders", "more"])
    assert again["orders"] == first["orders"] and "more" in again
    assert first["orders"].key1 != first["orders"].key2


def test_a_body_or_event_nested_too_deeply_is_400() -> None:
    with pytest.raises(PublishError, match="nested too deeply") as raised:
        parse_events(b"[" * 100_000, "application/json", "EventGridSchema", TOPIC)
    assert raised.value.status == 400


def test_a_sas_signature_with_any_characters_is_refused_not_an_error() -> None:
    token = generate_sas(ENDPOINT, KEYS.key1, NOW + timedelta(hours=1))
    for signature in ("%C3%A9t%C3%A9", "\u00e9", "%ED%A0%80", "%ZZ"):
        forged = token[:token.index("&s=") + 3] + signature
        with pytest.raises(AuthError, match="signature does not match"):
            check({"aeg-sas-token": forged})

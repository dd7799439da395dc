"""The lean path for Service Bus and Event Hubs gives what the library's converters give.

`func.ServiceBusMessage` / `func.EventHubEvent` built straight from the received messages (one,
and batches of 1..N) are compared, property by property, with `ServiceBusMessageInConverter` /
`EventHubTriggerConverter.decode` of the Datums the worker would receive, on generated messages:
bodies of any bytes, application properties of every JSON type, missing and empty optional
fields, times in several zones, no expiry, delivery counts, sessions, partition keys.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any, List  # noqa: UP035 - the annotation apps use

import azure.functions as func
import pytest
from azure.functions.eventhub import EventHubTriggerConverter
from azure.functions.meta import Datum
from azure.functions.servicebus import ServiceBusMessageInConverter
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from funchost.indexing.spec import BindingSpec, FunctionSpec, ParameterSpec
from funchost.invocation import arguments
from funchost.invocation.contracts import InvocationRequest
from funchost.invocation.native import NativeDatum
from funchost.storage.eventhubs import ReceivedEvent
from funchost.storage.servicebus import ReceivedMessage
from funchost.triggers.eventhub.events import PartitionInfo, batch_request, single_request
from funchost.triggers.servicebus.messages import build_batch, build_single

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BATCH_SETTINGS = settings(SETTINGS, max_examples=150)  # up to 8 messages each

_ZONES = st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)), timezone(-timedelta(hours=8)),
                          timezone(timedelta(hours=13, minutes=45))])
_times = st.one_of(st.datetimes(min_value=datetime(2, 1, 1), max_value=datetime(9998, 12, 31), timezones=_ZONES),
                   st.datetimes(max_value=datetime(1000, 1, 1), timezones=st.just(UTC)))  # early years, no overflow
_text = st.text(max_size=12)
_optional_text = st.one_of(st.none(), st.just(""), _text)
_bodies = st.one_of(st.binary(max_size=40), st.text(max_size=20).map(str.encode),
                    st.sampled_from([b"", b'{"name": "x", "n": 2}', b"\xff\xfe", b"caf\xc3\xa9"]))
_property_values = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(-2**63, 2**63 - 1),
                             st.floats(allow_nan=True, allow_infinity=True), _text)
_properties = st.dictionaries(_text, _property_values, max_size=5)


@st.composite
def received_messages(draw: st.DrawFn) -> ReceivedMessage:
    return ReceivedMessage(
        body=draw(_bodies), message_id=draw(st.one_of(st.just(""), _text, st.uuids().map(lambda u: u.hex))),
        sequence_number=draw(st.integers(0, 2**63 - 1)), enqueued_time=draw(_times),
        expires_at=draw(st.one_of(st.none(), _times, st.just(datetime.max.replace(tzinfo=UTC)))),
        delivery_count=draw(st.integers(0, 2**31 - 1)), lock_token=draw(st.one_of(st.none(), _text)),
        locked_until=draw(st.one_of(st.none(), _times)), state=draw(st.sampled_from(["active", "deferred"])),
        content_type=draw(_optional_text), correlation_id=draw(_optional_text), subject=draw(_optional_text),
        to=draw(_optional_text), reply_to=draw(_optional_text), reply_to_session_id=draw(_optional_text),
        session_id=draw(_optional_text), partition_key=draw(_optional_text),
        transaction_partition_key=draw(_optional_text), application_properties=draw(_properties),
        time_to_live=draw(st.one_of(st.none(), st.floats(0, 1e6))),
        scheduled_enqueue_time=draw(st.one_of(st.none(), _times)),
        dead_letter_reason=draw(_optional_text), dead_letter_error_description=draw(_optional_text),
        dead_letter_source=draw(_optional_text))


@st.composite
def received_events(draw: st.DrawFn) -> ReceivedEvent:
    return ReceivedEvent(
        partition_id=draw(st.sampled_from(["0", "1", "31"])), sequence_number=draw(st.integers(0, 2**63 - 1)),
        offset=draw(st.integers(0, 2**63 - 1)), enqueued_time=draw(_times), body=draw(_bodies),
        partition_key=draw(_optional_text), properties=draw(_properties),
        content_type=draw(st.one_of(st.none(), _text)), correlation_id=draw(st.one_of(st.none(), _text)),
        message_id=draw(st.one_of(st.none(), _text)))


def _function(binding_type: str, data_type: str | None, cardinality: str, annotation: Any) -> FunctionSpec:
    trigger = BindingSpec("msg", binding_type, "in", data_type, {"cardinality": cardinality}, is_trigger=True)
    parameter = ParameterSpec("msg", annotation, trigger)
    return FunctionSpec("f", lambda msg: None, trigger, (trigger,), (parameter,), None, None, False,
                        "function_app.py", ".", None)


def _shown(value: Any) -> str:
    """repr: the type shows (1 vs True vs 1.0), a datetime's zone shows, NaN equals NaN."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {_shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_shown(v) for v in value) + "]"
    return repr(value)


_SB_PROPERTIES = [
    "application_properties", "content_type", "correlation_id", "dead_letter_error_description",
    "dead_letter_reason", "dead_letter_source", "delivery_count", "enqueued_sequence_number",
    "enqueued_time_utc", "expires_at_utc", "expiration_time", "label", "locked_until", "lock_token",
    "message_id", "partition_key", "reply_to", "reply_to_session_id", "scheduled_enqueue_time",
    "scheduled_enqueue_time_utc", "sequence_number", "session_id", "state", "subject", "time_to_live", "to",
    "transaction_partition_key", "user_properties", "metadata",
]
_EH_PROPERTIES = ["partition_key", "sequence_number", "offset", "enqueued_time", "iothub_metadata", "metadata"]


def _view(message: Any, names: list[str]) -> dict[str, str]:
    view = {"type": repr(type(message)), "body": repr(message.get_body())}
    view.update({name: _shown(getattr(message, name)) for name in names})
    return view


def _outcome(decode: Callable[[], Any], names: list[str]) -> Any:
    try:
        result = decode()
    except Exception as exc:  # noqa: BLE001 - the same error either way is part of the identity
        return ("error", type(exc).__name__, str(exc))
    if isinstance(result, list):
        return [_view(item, names) for item in result]
    return _view(result, names)


def _both(request: InvocationRequest, converter: Any, names: list[str]) -> tuple[Any, Any]:
    value = request.trigger_value
    assert isinstance(value, NativeDatum) and value.converter is converter
    generic = Datum(value.value, value.type)
    metadata = {name: request.trigger_metadata[name] for name in request.trigger_metadata}
    expected = _outcome(lambda: converter.decode(generic, trigger_metadata=metadata), names)
    return _outcome(value.decode, names), expected


# -- Service Bus -----------------------------------------------------------------------------------


@SETTINGS
@given(received_messages(), st.sampled_from([None, "binary", "string"]))
def test_service_bus_message_built_directly_equals_the_converters(message: ReceivedMessage,
                                                                  data_type: str | None) -> None:
    function = _function("serviceBusTrigger", data_type, "one", func.ServiceBusMessage)
    direct, expected = _both(build_single(function, message, "q"), ServiceBusMessageInConverter, _SB_PROPERTIES)
    assert direct == expected


@BATCH_SETTINGS
@given(st.lists(received_messages(), min_size=1, max_size=8), st.sampled_from([None, "binary", "string"]))
def test_service_bus_batch_built_directly_equals_the_converters(messages: list[ReceivedMessage],
                                                                data_type: str | None) -> None:
    function = _function("serviceBusTrigger", data_type, "many", List[func.ServiceBusMessage])  # noqa: UP006
    direct, expected = _both(build_batch(function, messages, "q"), ServiceBusMessageInConverter, _SB_PROPERTIES)
    assert direct == expected


def test_each_message_gets_its_own_property_dicts() -> None:
    message = ReceivedMessage(body=b"x", message_id="m", sequence_number=1, enqueued_time=datetime(2026, 1, 1, tzinfo=UTC),
                              expires_at=None, delivery_count=1, lock_token="t", locked_until=None, state="active",
                              application_properties={"a": 1})
    function = _function("serviceBusTrigger", None, "many", List[func.ServiceBusMessage])  # noqa: UP006
    first, second = build_batch(function, [message, message], "q").trigger_value.decode()  # type: ignore[attr-defined]
    dicts = [first.application_properties, first.user_properties, second.application_properties,
             second.user_properties]
    assert all(d == {"a": 1} for d in dicts) and len({id(d) for d in dicts}) == 4
    assert dicts[0] is not message.application_properties


def test_the_admin_apis_year_one_message_reads_as_year_one() -> None:
    # `POST /admin/functions/{name}` enqueues at DateTime.MinValue; Json.NET writes four-digit years.
    first = datetime(1, 1, 1, tzinfo=UTC)
    message = ReceivedMessage(body=b"x", message_id="", sequence_number=0, enqueued_time=first, expires_at=None,
                              delivery_count=0, lock_token="t", locked_until=None, state="active")
    for cardinality, build in (("one", build_single), ("many", lambda f, m, p: build_batch(f, [m], p))):
        function = _function("serviceBusTrigger", None, cardinality, func.ServiceBusMessage)
        direct, expected = _both(build(function, message, "q"), ServiceBusMessageInConverter, _SB_PROPERTIES)
        assert direct == expected
        request = build(function, message, "q")
        generic = Datum(request.trigger_value.value, request.trigger_value.type)
        decoded = ServiceBusMessageInConverter.decode(generic, trigger_metadata=request.trigger_metadata)
        first_message = decoded[0] if isinstance(decoded, list) else decoded
        assert first_message.enqueued_time_utc == datetime(1, 1, 1)


# -- Event Hubs ------------------------------------------------------------------------------------

_PARTITION = PartitionInfo("localhost", "hub", "$Default", "0")


@SETTINGS
@given(received_events(), st.sampled_from([None, "binary", "string"]), st.booleans())
def test_event_hub_event_built_directly_equals_the_converters(event: ReceivedEvent, data_type: str | None,
                                                              with_partition: bool) -> None:
    function = _function("eventHubTrigger", data_type, "one", func.EventHubEvent)
    request = single_request(function, _PARTITION if with_partition else None, event)
    direct, expected = _both(request, EventHubTriggerConverter, _EH_PROPERTIES)
    assert direct == expected


@BATCH_SETTINGS
@given(st.lists(received_events(), min_size=1, max_size=8), st.sampled_from([None, "binary", "string"]))
def test_event_hub_batch_built_directly_equals_the_converters(events: list[ReceivedEvent],
                                                              data_type: str | None) -> None:
    function = _function("eventHubTrigger", data_type, "many", List[func.EventHubEvent])  # noqa: UP006
    direct, expected = _both(batch_request(function, _PARTITION, events), EventHubTriggerConverter, _EH_PROPERTIES)
    assert direct == expected


def test_a_string_batch_with_an_empty_body_fails_as_the_library_does() -> None:
    events = [ReceivedEvent("0", n, n, datetime(2026, 1, 1, tzinfo=UTC), body) for n, body in enumerate([b"a", b""])]
    function = _function("eventHubTrigger", None, "many", List[func.EventHubEvent])  # noqa: UP006
    direct, expected = _both(batch_request(function, _PARTITION, events), EventHubTriggerConverter, _EH_PROPERTIES)
    assert direct == expected == ("error", "AssertionError", "Number of bodies and metadata mismatched")


# -- the plan takes the direct way for the library's types, the generic way for the others ----------


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the converter was called")


_SB_MESSAGE = ReceivedMessage(body=b'{"n": 1}', message_id="m", sequence_number=7,
                              enqueued_time=datetime(2026, 1, 1, tzinfo=UTC), expires_at=None, delivery_count=2,
                              lock_token="t", locked_until=None, state="active")
_EVENT = ReceivedEvent("0", 7, 70, datetime(2026, 1, 1, tzinfo=UTC), b'{"n": 1}')


@pytest.mark.parametrize(("binding_type", "converter", "cardinality", "annotation", "build"), [
    ("serviceBusTrigger", ServiceBusMessageInConverter, "one", func.ServiceBusMessage,
     lambda f: build_single(f, _SB_MESSAGE, "q")),
    ("serviceBusTrigger", ServiceBusMessageInConverter, "many", List[func.ServiceBusMessage],  # noqa: UP006
     lambda f: build_batch(f, [_SB_MESSAGE] * 3, "q")),
    ("eventHubTrigger", EventHubTriggerConverter, "one", func.EventHubEvent,
     lambda f: single_request(f, _PARTITION, _EVENT)),
    ("eventHubTrigger", EventHubTriggerConverter, "many", list[func.EventHubEvent],
     lambda f: batch_request(f, _PARTITION, [_EVENT] * 3)),
])
def test_the_plan_builds_the_librarys_types_without_the_converter(
        monkeypatch: pytest.MonkeyPatch, binding_type: str, converter: Any, cardinality: str, annotation: Any,
        build: Callable[[FunctionSpec], InvocationRequest]) -> None:
    monkeypatch.setattr(converter, "decode", _refuse)
    function = _function(binding_type, None, cardinality, annotation)
    request = build(function)
    decoded = arguments.decoder_for(function.parameters[0])(request.trigger_value, request.trigger_metadata)
    items = decoded if isinstance(decoded, list) else [decoded]
    assert [item.get_body() for item in items] == [b'{"n": 1}'] * len(items)
    assert items[0].sequence_number == 7


@pytest.mark.parametrize(("annotation", "expected"), [(str, '{"n": 1}'), (bytes, b'{"n": 1}')])
def test_str_and_bytes_parameters_keep_the_generic_value(annotation: Any, expected: Any) -> None:
    for function, request in (
            (f := _function("serviceBusTrigger", None, "one", annotation), build_single(f, _SB_MESSAGE, "q")),
            (g := _function("eventHubTrigger", None, "one", annotation), single_request(g, _PARTITION, _EVENT))):
        decoded = arguments.decoder_for(function.parameters[0])(request.trigger_value, request.trigger_metadata)
        assert decoded == expected

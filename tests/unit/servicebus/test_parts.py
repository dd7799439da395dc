"""The pure parts of the Service Bus support: connections, options, metadata, SQL, the SDK layer."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import List  # noqa: UP035

import azure.functions as func
import pytest
from azure.functions.servicebus import ServiceBusMessageInConverter

from funchost.errors import ConfigError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.servicebus.namespaces import resolve_connection
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import parse_host_json
from funchost.settings.messaging_connections import EMBEDDED_ABSENT, EMBEDDED_EMULATOR
from funchost.storage.servicebus import InvalidServiceBusInput, OutgoingMessage, ReceivedMessage
from funchost.storage.servicebus_sql import compile_action, compile_filter
from funchost.triggers.servicebus.messages import build_batch, build_single, dotnet_datetime
from funchost.triggers.servicebus.options import ServiceBusOptions

EMULATOR = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")
REAL = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=listen;SharedAccessKey=c2VjcmV0"


# -- connections ------------------------------------------------------------------------------------


def test_emulator_string_and_absent_setting_mean_embedded_real_ones_mean_the_sdk():
    settings = AppSettings({"Emu": EMULATOR, "AzureWebJobsReal": REAL, "Id__fullyQualifiedNamespace": "x.servicebus.windows.net"},
                           environ={})
    emulator = resolve_connection("Emu", settings)
    assert emulator.embedded and emulator.embedded_reason == EMBEDDED_EMULATOR
    assert emulator.fully_qualified_namespace == "localhost"
    absent = resolve_connection(None, settings)
    assert absent.embedded and absent.embedded_reason == EMBEDDED_ABSENT
    assert absent.setting_name == "AzureWebJobsServiceBus"
    real = resolve_connection("Real", settings)  # the AzureWebJobs prefix rule
    assert not real.embedded and real.fully_qualified_namespace == "contoso.servicebus.windows.net"
    assert "c2VjcmV0" not in repr(real)
    identity = resolve_connection("Id", settings)
    assert identity.is_identity and identity.fully_qualified_namespace == "x.servicebus.windows.net"


def test_on_azure_an_absent_setting_is_the_extensions_error():
    settings = AppSettings({"WEBSITE_INSTANCE_ID": "abc"}, environ={})
    with pytest.raises(ConfigError, match="ServiceBus connection string 'AzureWebJobsServiceBus' is missing or empty"):
        resolve_connection(None, settings)


@pytest.mark.parametrize("value", ["not a connection string", "Endpoint=https://x/;SharedAccessKeyName=a;SharedAccessKey=b",
                                   "Endpoint=sb://x.servicebus.windows.net/"])
def test_malformed_connection_strings_are_rejected(value):
    with pytest.raises(ConfigError):
        resolve_connection("SB", AppSettings({"SB": value}, environ={}))


# -- host.json -------------------------------------------------------------------------------------


def test_host_json_service_bus_defaults_and_validation():
    options = parse_host_json({"version": "2.0"}).extension("serviceBus")
    assert isinstance(options, ServiceBusOptions)
    assert (options.max_concurrent_sessions, options.max_message_batch_size, options.max_auto_lock_renewal_duration,
            options.auto_complete_messages, options.effective_session_idle_timeout) == (8, 1000, 300.0, True, 60.0)
    assert options.max_concurrent_calls % 16 == 0  # 16 x processor count
    custom = parse_host_json({"version": "2.0", "extensions": {"serviceBus": {
        "maxAutoLockRenewalDuration": "-00:00:00.0010000", "sessionIdleTimeout": "00:00:05",
        "clientRetryOptions": {"mode": "fixed", "maxRetries": 1}}}}).extension("serviceBus")
    assert custom.max_auto_lock_renewal_duration is None and custom.effective_session_idle_timeout == 5
    assert custom.client_retry.mode == "Fixed"
    with pytest.raises(ConfigError, match="maxConcurrentCalls: must be >= 1"):
        parse_host_json({"version": "2.0", "extensions": {"serviceBus": {"maxConcurrentCalls": 0}}})
    typo = parse_host_json({"version": "2.0", "extensions": {"serviceBus": {"prefetchCont": 1}}})
    assert any("did you mean 'prefetchCount'" in w for w in typo.warnings)


# -- trigger metadata ------------------------------------------------------------------------------


def _function(cardinality: str | None = None) -> FunctionSpec:
    props = {"queueName": "q", **({"cardinality": cardinality} if cardinality else {})}
    trigger = BindingSpec("msg", "serviceBusTrigger", "in", None, props, True)
    return FunctionSpec("f", lambda msg: None, trigger, (trigger,), (), None, None, False, "f.py", ".", 1)


def _received(body: str, seq: int, **kwargs: object) -> ReceivedMessage:
    base = dict(body=body.encode(), message_id=f"id-{seq}", sequence_number=seq,
                enqueued_time=datetime(2026, 1, 2, 3, 4, 5, 123400, tzinfo=UTC),
                expires_at=datetime(2026, 1, 3, 3, 4, 5, tzinfo=UTC), delivery_count=seq, lock_token=f"tok-{seq}",
                locked_until=datetime(2026, 1, 2, 3, 5, 5, tzinfo=UTC), state="active")
    base.update(kwargs)
    return ReceivedMessage(**base)  # type: ignore[arg-type]


def test_datetimes_render_as_json_net_does():
    when = datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC)
    assert dotnet_datetime(when, offset=False) == "2026-01-02T03:04:05.12"
    assert dotnet_datetime(when.replace(microsecond=0), offset=True) == "2026-01-02T03:04:05+00:00"
    assert dotnet_datetime(None, offset=True) == "9999-12-31T23:59:59.9999999+00:00"


def test_single_message_decodes_with_the_librarys_converter():
    message = _received("hi", 7, session_id="s", application_properties={"a": 1}, content_type="text/plain")
    request = build_single(_function(), message, "q")
    decoded = ServiceBusMessageInConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)
    assert isinstance(decoded, func.ServiceBusMessage)
    assert (decoded.get_body(), decoded.message_id, decoded.sequence_number, decoded.delivery_count) == (b"hi", "id-7", 7, 7)
    assert decoded.session_id == "s" and decoded.user_properties == {"a": 1} and decoded.lock_token == "tok-7"
    assert decoded.enqueued_time_utc == datetime(2026, 1, 2, 3, 4, 5, 123400)  # DateTime: no offset on Azure
    assert decoded.locked_until is None and decoded.time_to_live is None
    assert request.reason == "New ServiceBus message detected on 'q'."
    assert request.trigger_metadata["DeliveryCount"].type == "json"  # an int goes through Json.NET
    assert json.loads(request.trigger_metadata["ExpiresAt"].value) == "2026-01-03T03:04:05+00:00"


def test_batch_arrays_are_equal_length_in_batch_order_and_decode_as_a_list():
    messages = [_received("a", 1, partition_key="p1"), _received("b", 2, content_type="application/json")]
    request = build_batch(_function("many"), messages, "q")
    decoded = ServiceBusMessageInConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)
    assert [m.get_body() for m in decoded] == [b"a", b"b"]
    assert [m.sequence_number for m in decoded] == [1, 2]
    # QUIRK of the host: null entries are left out of string arrays, so the array shifts.
    assert [m.content_type for m in decoded] == ["application/json", None]
    assert [m.transaction_partition_key for m in decoded] == ["p1", None]  # QUIRK: the PartitionKey array
    meta = request.trigger_metadata
    assert meta["SequenceNumberArray"].type == "collection_sint64"
    assert meta["MessageIdArray"].type == "collection_string"
    lengths = {name: len(value.python_value) for name, value in meta.items()}
    assert lengths["ContentTypeArray"] == 1 and lengths["UserPropertiesArray"] == lengths["SequenceNumberArray"] == 2
    # The library accepts typing.List (not the builtin list[...]) as a batch annotation.
    assert ServiceBusMessageInConverter.check_input_type_annotation(List[func.ServiceBusMessage])  # noqa: UP006


# -- SQL filters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("expression", "props", "expected"), [
    ("sys.Label = 'x' OR color = 'red'", {"sys.subject": "x"}, True),
    ("color <> 'red'", {}, False),  # unknown = NULL: not a match
    ("NOT (color = 'red')", {"color": "blue"}, True),
    ("size IS NULL", {}, True),
    ("qty * 2 >= 10 AND qty % 2 = 1", {"qty": 5}, True),
    ("name LIKE 'a\\_%' ESCAPE '\\'", {"name": "a_b"}, True),
    ("name NOT LIKE 'a%'", {"name": "ba"}, True),
    ("region NOT IN ('eu', 'us')", {"region": "ap"}, True),
    ("[odd name] = 'y'", {"odd name": "y"}, True),
    ("user.flag = TRUE", {"flag": True}, True),
    ("1 = 1", {}, True),
])
def test_sql_filter_subset(expression, props, expected):
    assert (compile_filter(expression)(props) is True) is expected


@pytest.mark.parametrize("bad", ["", "a =", "a = 'x' extra", "sys.Unknown = 1", "EXISTS(", "a NOT = 1"])
def test_sql_filter_errors_name_the_problem(bad):
    with pytest.raises(InvalidServiceBusInput):
        compile_filter(bad)


def test_sql_actions_set_and_remove():
    bag = {"a": 1, "b": 2}
    compile_action("SET a = a + 1; REMOVE b; SET sys.To = 'x'")(bag)
    assert bag == {"a": 2, "sys.to": "x"}
    with pytest.raises(InvalidServiceBusInput):
        compile_action("SET sys.SequenceNumber = 1")


# -- the azure-servicebus layer (no network) ---------------------------------------------------------


def test_outgoing_messages_become_sdk_messages_with_every_property():
    pytest.importorskip("azure.servicebus")
    from funchost.servicebus.sdk import to_sdk_message

    when = datetime(2026, 5, 1, tzinfo=UTC)
    sdk = to_sdk_message(OutgoingMessage(b"body", message_id="m", content_type="application/json",
                                         correlation_id="c", subject="s", to="t", reply_to="r",
                                         reply_to_session_id="rs", session_id="sess", partition_key="sess",
                                         application_properties={"k": "v"}, time_to_live=90,
                                         scheduled_enqueue_time=when))
    assert (sdk.message_id, sdk.content_type, sdk.correlation_id, sdk.subject, sdk.to, sdk.reply_to) == \
        ("m", "application/json", "c", "s", "t", "r")
    assert (sdk.session_id, sdk.reply_to_session_id, sdk.partition_key) == ("sess", "rs", "sess")
    assert sdk.time_to_live == timedelta(seconds=90) and sdk.scheduled_enqueue_time_utc == when
    assert sdk.application_properties == {"k": "v"} and b"".join(sdk.body) == b"body"


def test_received_sdk_messages_and_errors_are_translated():
    pytest.importorskip("azure.servicebus")
    from azure.servicebus import ServiceBusReceivedMessage
    from azure.servicebus._pyamqp.message import Message, Properties
    from azure.servicebus.exceptions import MessageLockLostError, SessionCannotBeLockedError

    from funchost.servicebus.sdk import from_sdk_message, receiver_target, translate
    from funchost.storage.servicebus import MessageLockLost, SessionCannotBeLocked

    amqp = Message(data=[b"payload"], properties=Properties(message_id=b"mid", content_type=b"text/plain"),
                   application_properties={b"k": b"v"},
                   message_annotations={b"x-opt-sequence-number": 42, b"x-opt-enqueued-time": 1767225600000})
    converted = from_sdk_message(ServiceBusReceivedMessage(amqp, receiver=object()), locked=False)
    assert (converted.body, converted.message_id, converted.sequence_number) == (b"payload", "mid", 42)
    assert converted.content_type == "text/plain" and converted.application_properties == {"k": "v"}
    assert converted.enqueued_time == datetime(2026, 1, 1, tzinfo=UTC)
    assert isinstance(translate(MessageLockLostError(message="gone")), MessageLockLost)
    assert isinstance(translate(SessionCannotBeLockedError(message="held")), SessionCannotBeLocked)
    assert receiver_target("t/Subscriptions/s") == {"topic_name": "t", "subscription_name": "s"}
    assert receiver_target("q/$DeadLetterQueue")["queue_name"] == "q"

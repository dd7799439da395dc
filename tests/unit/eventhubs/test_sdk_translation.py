"""The real-namespace broker's translation layer over azure-eventhub (no service needed).

What is NOT exercised here (no Event Hubs namespace in CI): the receive loop against a live
service, CBS authentication, identity credentials, and the SDK's own retries.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

pytest.importorskip("azure.eventhub")

from azure.eventhub import EventData  # noqa: E402

from funchost.eventhubs.sdk import (  # noqa: E402
    client_arguments,
    partition_properties,
    received_event,
    sdk_event,
    sdk_position,
)
from funchost.settings.messaging_connections import from_connection_string  # noqa: E402
from funchost.storage.eventhubs import EventPosition, EventToSend  # noqa: E402

REAL = "Endpoint=sb://contoso.servicebus.windows.net/;SharedAccessKeyName=r;SharedAccessKey=k"


def test_positions() -> None:
    when = datetime(2024, 1, 1, tzinfo=UTC)
    assert sdk_position(EventPosition.earliest()) == ("-1", False)
    assert sdk_position(EventPosition.latest()) == ("@latest", False)
    assert sdk_position(EventPosition.after_sequence(41)) == (41, False)
    assert sdk_position(EventPosition("sequence", 41, True)) == (41, True)
    assert sdk_position(EventPosition.after_offset(4096)) == ("4096", False)
    assert sdk_position(EventPosition.enqueued_at_or_after(when)) == (when, True)


def test_outgoing_event_carries_body_properties_and_ids() -> None:
    data = sdk_event(EventToSend(b"body", {"a": 1}, content_type="text/plain", correlation_id="c", message_id="m"))
    assert (data.body_as_str(), data.properties, data.content_type, data.correlation_id, data.message_id) == (
        "body", {"a": 1}, "text/plain", "c", "m")


def test_received_event_from_service_annotations() -> None:
    data = EventData(b"payload")
    data.properties = {b"kind": b"x", "n": 2}
    enqueued = datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC)
    data._raw_amqp_message.annotations = {  # what the service stamps on a received event
        b"x-opt-sequence-number": 12, b"x-opt-offset": b"4096",
        b"x-opt-enqueued-time": int(enqueued.timestamp() * 1000), b"x-opt-partition-key": b"device-1"}
    event = received_event(data, "3")
    assert (event.partition_id, event.sequence_number, event.offset, event.partition_key, event.body) == (
        "3", 12, 4096, "device-1", b"payload")
    assert event.enqueued_time == enqueued and event.properties == {"kind": "x", "n": 2}


def test_partition_properties_and_client_arguments() -> None:
    props = partition_properties("h", {"id": "1", "beginning_sequence_number": 5, "last_enqueued_sequence_number": 9,
                                       "last_enqueued_offset": "800", "last_enqueued_time_utc": None,
                                       "is_empty": False})
    assert (props.beginning_sequence_number, props.last_enqueued_offset, props.retained_events) == (5, 800, 5)
    empty = partition_properties("h", {"id": "0", "beginning_sequence_number": 0, "last_enqueued_sequence_number": -1,
                                       "is_empty": True})
    assert empty.is_empty and empty.beginning_sequence_number == -1
    args = client_arguments(from_connection_string("EH", REAL), "orders")
    assert args == {"conn_str": REAL, "eventhub_name": "orders"}

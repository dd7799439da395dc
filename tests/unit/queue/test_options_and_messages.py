"""host.json extensions.queues parsing, message decoding and the Datums the worker receives."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
from azure.functions.queue import QueueMessageInConverter

from funchost.errors import ConfigError, InvalidInput
from funchost.settings.host_json import parse_host_json
from funchost.settings.sections import SectionReader
from funchost.storage.queues import QueueMessage
from funchost.triggers.queue import SUPPORT
from funchost.triggers.queue.messages import UndecodableMessage, build_request, decode_text, poison_queue_name
from funchost.triggers.queue.options import parse, receive_visibility

from .conftest import queue_function


def options(section: dict, environ: dict | None = None):
    reader = SectionReader(section, "host.json: extensions.queues")
    parsed = parse(reader, environ or {"WEBSITE_SKU": "Dynamic"})
    reader.finish()  # as host.json loading does: unknown keys are errors
    return parsed


def test_defaults():
    o = options({})
    assert (o.batch_size, o.new_batch_threshold, o.max_polling_interval) == (16, 8, 60.0)
    assert (o.visibility_timeout, o.max_dequeue_count, o.message_encoding) == (0.0, 5, "base64")
    assert o.polling_maximum(development=True) == 2.0 and o.polling_maximum(development=False) == 60.0


@pytest.mark.parametrize("batch, expected", [(1, 0), (5, 2), (32, 16)])
def test_new_batch_threshold_uses_integer_division(batch, expected):
    assert options({"batchSize": batch}).new_batch_threshold == expected


def test_threshold_scales_with_processor_count_off_consumption(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 4)
    assert options({}, environ={"WEBSITE_SKU": "ElasticPremium"}).new_batch_threshold == 32
    assert options({}, environ={"WEBSITE_SKU": "dynamic"}).new_batch_threshold == 8


@pytest.mark.parametrize("section", [
    {"batchSize": 0}, {"batchSize": 33}, {"maxPollingInterval": "00:00:00.05"}, {"maxDequeueCount": 0},
    {"messageEncoding": "utf8"}, {"newBatchThreshold": -1}, {"batchsise": 4},
])
def test_invalid_values_name_the_key(section):
    with pytest.raises(ConfigError) as info:
        options(section)
    assert "extensions.queues" in str(info.value)


def test_explicit_polling_interval_survives_development():
    o = options({"maxPollingInterval": "00:00:10", "MessageEncoding": "None"})
    assert o.polling_maximum(development=True) == 10.0 and o.message_encoding == "none"


def test_host_json_wires_the_parser():
    host = parse_host_json({"version": "2.0", "extensions": {"queues": {"batchSize": 4}}})
    assert host.extension("queues").batch_size == 4


def test_receive_visibility_setting():
    assert receive_visibility({}) == 600.0
    assert receive_visibility({"FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "5"}) == 5.0
    with pytest.raises(ConfigError):
        receive_visibility({"FUNCHOST_QUEUE_RECEIVE_VISIBILITY": "soon"})


def test_poison_queue_names():
    assert poison_queue_name("orders") == "orders-poison"
    assert poison_queue_name("orders-poison") is None
    assert poison_queue_name("a" * 57) is None  # 64 characters would be invalid


def test_base64_decoding_is_strict_but_tolerates_whitespace():
    assert decode_text(base64.b64encode(b"hi").decode() + "\n", "base64") == b"hi"
    with pytest.raises(UndecodableMessage):
        decode_text("hello world", "base64")
    assert decode_text("hello world", "none") == b"hello world"


def _message(dequeue_count=2):
    now = datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    return QueueMessage("id-1", "", dequeue_count, now, now + timedelta(days=7), now + timedelta(minutes=10), "pr-1")


def test_library_converter_builds_func_queue_message():
    body = json.dumps({"name": "blob.txt", "size": 3}).encode()
    request = build_request(queue_function(), _message(), body, "work", datetime.now(UTC))
    msg = QueueMessageInConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)
    assert msg.get_json() == {"name": "blob.txt", "size": 3}
    assert (msg.id, msg.dequeue_count, msg.pop_receipt) == ("id-1", 2, "pr-1")
    assert msg.insertion_time == datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=UTC)
    assert msg.expiration_time - msg.insertion_time == timedelta(days=7)
    assert request.trigger_value.type == "string"
    assert request.binding_data["name"] == "blob.txt"  # JSON body properties are binding data
    assert request.binding_data["QueueTrigger"] == body.decode()
    assert request.reason == "New queue message detected on 'work'."
    assert request.details == {"MessageId": "id-1", "DequeueCount": 2, "InsertedOn": _message().insertion_time}


def test_binary_data_type_gets_bytes_and_invalid_utf8_has_no_queue_trigger():
    body = b"\xff\xfe"
    request = build_request(queue_function(data_type="binary"), _message(), body, "work", datetime.now(UTC))
    assert request.trigger_value.type == "bytes" and request.trigger_value.value == body
    assert "QueueTrigger" not in request.binding_data and "QueueTrigger" not in request.trigger_metadata


def test_never_expiring_message_reports_max_expiration():
    message = QueueMessage("id", "", 1, datetime.now(UTC), None, None, "pr")
    request = build_request(queue_function(), message, b"x", "work", datetime.now(UTC))
    msg = QueueMessageInConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)
    assert msg.expiration_time.year == 9999


async def test_admin_request_builds_a_message_like_invocation(rig_factory):
    rig = rig_factory()
    request = await SUPPORT.admin_request(queue_function(), rig.runtime, {"input": "manual"})
    msg = QueueMessageInConverter.decode(request.trigger_value, trigger_metadata=request.trigger_metadata)
    assert msg.get_body() == b"manual" and msg.dequeue_count == 0 and msg.id
    with pytest.raises(InvalidInput):
        await SUPPORT.admin_request(queue_function(), rig.runtime, {"nothing": 1})


def test_validate_lowercases_and_rejects_bad_names(rig_factory):
    rig = rig_factory()
    SUPPORT.validate(queue_function("MixedCase"), rig.runtime)
    from funchost.errors import AppLoadError

    with pytest.raises(AppLoadError):
        SUPPORT.validate(queue_function("bad--name"), rig.runtime)
    with pytest.raises(AppLoadError):
        SUPPORT.validate(queue_function("x"), rig.runtime)

"""host.json options, the emulator Config.json, and bad input naming the function."""

from __future__ import annotations

import json
import sys

import pytest

from funchost.errors import ConfigError
from funchost.eventhubs.config import find_config
from funchost.settings.host_json import parse_host_json
from funchost.testing import HostHarness, write_app
from funchost.triggers.eventhub.options import EventHubsOptions


def options(section: dict) -> EventHubsOptions:  # type: ignore[type-arg]
    return parse_host_json({"version": "2.0", "extensions": {"eventHubs": section}}).extension("eventHubs")  # type: ignore[no-any-return]


def test_defaults_are_extension_6x() -> None:
    o = parse_host_json({"version": "2.0"}).extension("eventHubs")
    assert (o.max_event_batch_size, o.min_event_batch_size, o.max_wait_time, o.batch_checkpoint_frequency,
            o.partition_ownership_expiration, o.load_balancing_update_interval, o.initial_offset.type) == (
        100, 1, 60.0, 1, 120.0, 30.0, "fromStart")


@pytest.mark.parametrize(("section", "message"), [
    ({"maxEventBatchSize": 0}, "Batch size must be larger than 0."),
    ({"batchCheckpointFrequency": 0}, "Batch checkpoint frequency must be larger than 0."),
    ({"maxWaitTime": "00:10:01"}, "Max Wait Time must be less than or equal to 10 minutes."),
    ({"minEventBatchSize": 20, "maxEventBatchSize": 10}, "must not be larger than maxEventBatchSize"),
    ({"initialOffsetOptions": {"type": "fromEnqueuedTime"}}, "is required when type is fromEnqueuedTime"),
    ({"initialOffsetOptions": {"type": "sometime"}}, "must be one of fromStart"),
])
def test_invalid_options_name_the_key(section: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=message):
        options(section)


def test_enqueued_time_and_client_options() -> None:
    o = options({"initialOffsetOptions": {"type": "FromEnqueuedTime", "enqueuedTimeUtc": "2024-01-02T03:04:05Z"},
                 "transportType": "amqpWebSockets", "clientRetryOptions": {"maximumRetries": 5}})
    assert o.initial_offset.type == "fromEnqueuedTime" and o.initial_offset.enqueued_time is not None


CONFIG = {"UserConfig": {"NamespaceConfig": [{"Type": "EventHub", "Name": "emulatorNs1", "Entities": [
    {"Name": "eh1", "PartitionCount": "2", "ConsumerGroups": [{"Name": "cg1"}]}]}], "LoggingConfig": {"Type": "File"}}}


def test_config_json_in_the_emulator_format(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "Config.json").write_text(json.dumps(CONFIG))
    config = find_config(tmp_path, {})
    assert config is not None and config.find("EH1") is not None
    assert (config.hubs["eh1"].partition_count, config.hubs["eh1"].consumer_groups) == (2, ("cg1",))
    (tmp_path / "Config.json").write_text(json.dumps({"UserConfig": {"Namespaces": []}}))  # Service Bus's
    assert find_config(tmp_path, {}) is None


@pytest.mark.parametrize(("entity", "message"), [
    ({"Name": "eh1", "PartitionCount": "lots"}, "PartitionCount: must be a number"),
    ({"Name": "eh1", "PartitionCount": "64"}, "between 1 and 32"),
    ({"Name": "-bad", "PartitionCount": "1"}, "Entities\\[0\\].Name"),
    ({"Name": "eh1", "PartitionCount": "1", "ConsumerGroups": [{"Name": "$default"}]}, "\\$Default exists"),
])
def test_invalid_config_json_names_the_place(tmp_path, entity: dict, message: str) -> None:  # type: ignore[no-untyped-def,type-arg]
    raw = {"UserConfig": {"NamespaceConfig": [{"Type": "EventHub", "Name": "ns", "Entities": [entity]}]}}
    (tmp_path / "Config.json").write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match=message):
        find_config(tmp_path, {})


APP = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.event_hub_message_trigger(arg_name="event", event_hub_name="%HUB%", connection="EH", consumer_group="%GROUP%")
def work(event: str) -> None:
    SEEN.append(event)
"""


async def start(tmp_path, settings, config=None):  # type: ignore[no-untyped-def]
    files = {"Config.json": json.dumps(config)} if config else None
    app = write_app(tmp_path / "app", APP, settings=settings, files=files)
    host = HostHarness(app, data_dir=tmp_path / "data")
    await host.start()
    return host


@pytest.mark.parametrize(("settings", "message"), [
    ({"HUB": "bad name", "GROUP": "$Default"}, "event hub name 'bad name' is invalid"),
    ({"HUB": "eh1", "GROUP": "bad group"}, "consumer group name 'bad group' is invalid"),
    ({"HUB": "missing", "GROUP": "$Default"}, "'missing' is not defined in Config.json"),
    ({"HUB": "eh1", "GROUP": "nope"}, "consumer group 'nope' of event hub 'eh1' is not defined"),
])
async def test_bad_trigger_input_names_the_function(tmp_path, settings, message) -> None:  # type: ignore[no-untyped-def]
    host = await start(tmp_path, settings, CONFIG)  # the function is in error; the app starts
    try:
        [reason] = host.runtime.function_errors.of("work")
    finally:
        await host.stop()
    assert message in reason


async def test_configured_hub_has_its_partitions_and_group(tmp_path) -> None:  # type: ignore[no-untyped-def]
    host = await start(tmp_path, {"HUB": "eh1", "GROUP": "cg1"}, CONFIG)
    try:
        hub = await host.eventhubs.hub("eh1")
        assert hub.partition_ids == ("0", "1") and set(hub.consumer_groups) == {"$Default", "cg1"}
        await host.eventhubs.send("eh1", [b"\xff\xfeok"])  # not UTF-8: a str parameter gets U+FFFD, as .NET decodes
        await host.advance(1)
        assert sys.modules["function_app"].SEEN == ["\ufffd\ufffdok"]
    finally:
        await host.stop()


async def test_oversized_output_fails_the_invocation_with_the_collectors_message(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    code = APP + """
@app.route(route="big", auth_level=func.AuthLevel.ANONYMOUS)
@app.event_hub_output(arg_name="out", event_hub_name="sink", connection="EH")
def big(req: func.HttpRequest, out: func.Out[bytes]) -> str:
    out.set(b"x" * (1024 * 1024 + 1))
    return "sent"
"""
    app = write_app(tmp_path / "app", code, settings={"HUB": "h", "GROUP": "$Default"})
    async with HostHarness(app, data_dir=tmp_path / "data") as host:
        response = await host.http("GET", "/api/big")
        assert response.status_code == 500
        assert "Event is too large. Event is approximately 1048577b and max size is 1048576b" in caplog.text
        assert await host.eventhubs.events("sink") == []

"""Bad input gets the service's error or a message naming the function; the rest of the app runs."""

from __future__ import annotations

import json
import sys

import pytest

from funchost.errors import AppLoadError
from funchost.testing import HostHarness, write_app
from funchost.triggers.servicebus import SUPPORT

CONFIG = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns",
                                         "Queues": [{"Name": "carts", "Properties": {"RequiresSession": True}},
                                                    {"Name": "orders"}],
                                         "Topics": [{"Name": "events", "Subscriptions": [{"Name": "audit"}]}]}]}}

MIXED = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.service_bus_queue_trigger(arg_name="msg", queue_name="carts", connection="ServiceBus")
def no_sessions(msg: func.ServiceBusMessage) -> None:
    SEEN.append("no_sessions")

@app.service_bus_topic_trigger(arg_name="msg", topic_name="events", subscription_name="missing",
                               connection="ServiceBus")
def unknown_subscription(msg: func.ServiceBusMessage) -> None:
    SEEN.append("unknown")

@app.service_bus_queue_trigger(arg_name="msg", queue_name="orders", connection="ServiceBus")
def healthy(msg: func.ServiceBusMessage) -> None:
    SEEN.append("healthy:" + msg.get_body().decode())

@app.service_bus_queue_trigger(arg_name="text", queue_name="texts", connection="ServiceBus")
def wants_text(text: str) -> None:
    SEEN.append("text:" + text)
"""


async def test_mismatched_or_unknown_entities_put_only_that_function_in_error(tmp_path):
    app = write_app(tmp_path / "app", MIXED, files={"Config.json": json.dumps(CONFIG)})
    async with HostHarness(app) as host:
        errors = {row.name: " ".join(row.errors) for row in host.host.describe_functions()}
        assert "requires sessions" in errors["no_sessions"] and "is_sessions_enabled" in errors["no_sessions"]
        assert "MessagingEntityNotFound" in errors["unknown_subscription"]
        assert "events/Subscriptions/missing" in errors["unknown_subscription"]
        assert errors["healthy"] == ""
        await host.servicebus.send("orders", "still runs")
        await host.advance(1)
        assert sys.modules["function_app"].SEEN == ["healthy:still runs"]


async def test_an_undeclared_entity_cannot_be_sent_to_when_config_json_declares_entities(tmp_path):
    from funchost.storage.servicebus import MessagingEntityNotFound

    app = write_app(tmp_path / "app", MIXED, files={"Config.json": json.dumps(CONFIG)})
    async with HostHarness(app) as host:
        with pytest.raises(MessagingEntityNotFound):
            await host.servicebus.send("texts", "x")


async def test_a_body_that_is_not_utf8_fails_a_str_parameter_and_is_dead_lettered(tmp_path):
    app = write_app(tmp_path / "app", MIXED)
    async with HostHarness(app) as host:
        await host.servicebus.send("texts", b"\xff\xfe not text")
        await host.advance(1)
        assert host.servicebus.abandoned("wants_text") == 10
        [dead] = await host.servicebus.peek("texts/$deadletterqueue")
        assert dead.body == b"\xff\xfe not text"  # kept, not lost


@pytest.mark.parametrize(("decorator", "expected"), [
    ('@app.service_bus_queue_trigger(arg_name="m", queue_name="-bad-", connection="ServiceBus")',
     "invalid queue name '-bad-'"),
    ('@app.service_bus_topic_trigger(arg_name="m", topic_name="t", subscription_name="a/b", connection="SB")',
     "invalid subscription name 'a/b'"),
    ('@app.generic_trigger(arg_name="m", type="serviceBusTrigger", connection="SB")',
     "set queue_name, or topic_name and subscription_name"),
    ('@app.generic_trigger(arg_name="m", type="serviceBusTrigger", queue_name="q", cardinality="lots")',
     "cardinality must be 'one' or 'many'"),
])
async def test_invalid_trigger_properties_name_the_function(tmp_path, decorator, expected):
    code = f"import azure.functions as func\napp = func.FunctionApp()\n\n{decorator}\ndef broken(m: str) -> None:\n    pass\n"
    app = write_app(tmp_path / "app", code)
    async with HostHarness(app) as host:  # the function is in error; the app starts
        [reason] = host.runtime.function_errors.of("broken")
    assert expected in reason


@pytest.mark.parametrize(("config", "expected"), [
    ("{ not json", "Config.json: invalid JSON at line 1"),
    (json.dumps({"UserConfig": {"Namespaces": [{"Queues": [{"Name": "q", "Properties": {"LockDuration": "1m"}}]}]}}),
     "Queues[0].Properties.LockDuration: must be an ISO 8601 duration"),
    (json.dumps({"UserConfig": {"Namespaces": [{"Queues": [{"Name": "q", "Properties": {"MaxDeliveryCnt": 3}}]}]}}),
     "Queues[0].Properties.MaxDeliveryCnt: unknown property"),
    (json.dumps({"UserConfig": {"Namespaces": [{"Topics": [{"Name": "t", "Subscriptions": [{"Name": "s", "Rules": [
        {"Name": "r", "Properties": {"FilterType": "Sql", "SqlFilter": {"SqlExpression": "a = "}}}]}]}]}]}}),
     "Rules[0]: SQL expression"),
])
async def test_an_invalid_config_json_is_reported_with_its_path(tmp_path, config, expected):
    code = ("import azure.functions as func\napp = func.FunctionApp()\n\n"
            "@app.service_bus_queue_trigger(arg_name='m', queue_name='q', connection='ServiceBus')\n"
            "def reader(m: str) -> None:\n    pass\n")
    app = write_app(tmp_path / "app", code, files={"Config.json": config})
    async with HostHarness(app, settings={"FUNCHOST_SERVICEBUS_CONFIG": "Config.json"}) as host:
        [reason] = host.runtime.function_errors.of("reader")
    assert expected in reason


def test_a_real_namespace_without_credentials_is_a_config_error():
    from funchost.indexing.spec import BindingSpec, FunctionSpec
    from funchost.settings.app_settings import AppSettings

    trigger = BindingSpec("m", "serviceBusTrigger", "in", None, {"queueName": "q", "connection": "SB"}, True)
    function = FunctionSpec("f", lambda m: None, trigger, (trigger,), (), None, None, False, "f.py", ".", 1)

    class FakeRuntime:
        settings = AppSettings({"SB": "Endpoint=sb://contoso.servicebus.windows.net/;EntityPath=q"}, environ={})
        app_dir = "."

    with pytest.raises(AppLoadError, match="SharedAccessKeyName"):
        SUPPORT.validate(function, FakeRuntime())  # type: ignore[arg-type]


async def test_an_absent_setting_means_embedded_and_is_said_once(tmp_path, caplog):
    code = ("import azure.functions as func\napp = func.FunctionApp()\n\n"
            "@app.service_bus_queue_trigger(arg_name='m', queue_name='a', connection='NotSet')\n"
            "def first(m: str) -> None:\n    pass\n\n"
            "@app.service_bus_queue_trigger(arg_name='m', queue_name='b', connection='NotSet')\n"
            "def second(m: str) -> None:\n    pass\n")
    caplog.set_level("INFO", logger="funchost.servicebus")
    async with HostHarness(write_app(tmp_path / "app", code)) as host:
        said = [r.getMessage() for r in caplog.records if "is not set: using the embedded Service Bus" in r.getMessage()]
        assert len(said) == 1 and "'NotSet'" in said[0]
        rows = host.host.describe_functions()
        assert [(r.name, r.description, r.errors) for r in rows] == [
            ("first", "serviceBusTrigger", []), ("second", "serviceBusTrigger", [])]

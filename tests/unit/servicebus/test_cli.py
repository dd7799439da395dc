"""`funchost servicebus ...` on an app's data folder, as a user runs it."""

from __future__ import annotations

import json

from funchost.cli import main
from funchost.testing import write_app

APP = "import azure.functions as func\napp = func.FunctionApp()\n"
CONFIG = {"UserConfig": {"Namespaces": [{"Name": "sbemulatorns", "Queues": [
    {"Name": "orders", "Properties": {"MaxDeliveryCount": 1}}],
    "Topics": [{"Name": "events", "Subscriptions": [{"Name": "audit"}]}]}]}}


def run(capsys, *args: str) -> tuple[int, list[str]]:
    code = main(list(args))
    out = capsys.readouterr().out
    return code, [line for line in out.splitlines() if line.strip()]


def test_send_peek_list_dlq_and_redrive(tmp_path, capsys):
    app = write_app(tmp_path / "app", APP, files={"Config.json": json.dumps(CONFIG)})
    common = ["--app", str(app)]
    code, lines = run(capsys, "servicebus", "send", "orders", "hello", "--count", "2", "--property", "n=1",
                      "--session-id", "s1", *common, "--output", "json")
    assert code == 0 and json.loads(lines[0])["sequenceNumbers"] == [1, 2]
    code, lines = run(capsys, "servicebus", "peek", "orders", *common, "--output", "json")
    records = [json.loads(line) for line in lines]
    assert [r["body"] for r in records] == ["hello", "hello"]
    assert records[0]["applicationProperties"] == {"n": 1} and records[0]["sessionId"] == "s1"

    # Dead-letter one message through the broker (MaxDeliveryCount 1), then look and redrive.
    import asyncio

    from funchost.clock import SystemClock
    from funchost.servicebus.namespaces import embedded_namespace
    from funchost.settings.app_settings import AppSettings
    from funchost.storage.host_storage import open_storage

    async def poison() -> None:
        storage = open_storage("embedded", app / ".funchost", AppSettings({}, environ={}), SystemClock())
        broker = embedded_namespace(storage, app, AppSettings({}, environ={})).broker
        [m] = await broker.receive("orders")
        await broker.abandon("orders", m.lock_token)
        await storage.aclose()

    asyncio.run(poison())
    code, lines = run(capsys, "servicebus", "dlq", "orders", *common)
    assert "reason=MaxDeliveryCountExceeded" in lines[0]
    code, lines = run(capsys, "servicebus", "list", *common, "--output", "json")
    rows = {r["path"]: r for r in map(json.loads, lines)}
    assert (rows["orders"]["active"], rows["orders"]["deadLetter"]) == (1, 1)
    assert set(rows) == {"orders", "events", "events/Subscriptions/audit"}
    code, lines = run(capsys, "servicebus", "redrive", "orders", *common)
    assert lines == ["moved 1 message(s) from 'orders/$deadletterqueue' to 'orders'"]
    code, lines = run(capsys, "servicebus", "list", *common)
    assert lines[0].startswith("ENTITY") and any(line.split()[:3] == ["orders", "queue", "2"] for line in lines)


def test_unknown_entities_are_reported_clearly(tmp_path, capsys):
    app = write_app(tmp_path / "app", APP, files={"Config.json": json.dumps(CONFIG)})
    code = main(["servicebus", "send", "nope", "x", "--app", str(app)])
    err = capsys.readouterr().err
    assert code == 1 and "MessagingEntityNotFound" in err and "'nope'" in err


def test_without_config_entities_are_created_on_first_send(tmp_path, capsys):
    app = write_app(tmp_path / "app", APP)
    assert main(["servicebus", "send", "fresh", "x", "--app", str(app), "--ttl", "60", "--delay", "30"]) == 0
    capsys.readouterr()
    code, lines = run(capsys, "servicebus", "list", "--app", str(app), "--output", "json")
    [row] = [json.loads(line) for line in lines]
    assert (row["path"], row["scheduled"], row["active"]) == ("fresh", 1, 0)

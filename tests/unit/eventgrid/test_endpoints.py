"""The host-level surface through the in-process harness: publishing endpoint, the Functions
webhook (azure-semantics 6.8), blob events, and the webhook sender's handshake and headers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx

from funchost.clock import ManualClock
from funchost.eventgrid.config import SubscriptionConfig
from funchost.eventgrid.destinations import WebhookSender
from funchost.eventgrid.service import EventGridService
from funchost.storage.sqlite.eventgrid import SqliteEventStore
from funchost.testing.harness import HostHarness, write_app

from .helpers import Rig, config, event, sub

APP = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.event_grid_trigger(arg_name="event")
def on_event(event: func.EventGridEvent):
    if (event.get_json() or {}).get("fail"):
        raise ValueError("asked to fail")
    SEEN.append((event.id, event.event_type, event.subject))
"""


def seen() -> list[Any]:
    return sys.modules["function_app"].SEEN  # type: ignore[no-any-return]


async def test_publish_endpoint_blob_events_and_webhook(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        service = host.runtime.services.find(EventGridService)
        key = service.keys["default"].key1
        ok = [{"id": "p1", "subject": "s", "eventType": "Custom", "eventTime": "2024-05-01T10:00:00Z", "data": {}}]
        r = await host.http("POST", "/eventgrid/topics/default/api/events", json=ok)
        assert r.status_code == 401
        r = await host.http("POST", "/eventgrid/topics/default/api/events", json=[{"id": "x"}],
                            headers={"aeg-sas-key": key})
        assert r.status_code == 400 and "required property 'subject'" in r.json()["error"]["message"]
        r = await host.http("POST", "/eventgrid/topics/nope/api/events", json=ok, headers={"aeg-sas-key": key})
        assert r.status_code == 404
        r = await host.http("POST", "/eventgrid/topics/default/api/events", json=ok, headers={"aeg-sas-key": key})
        assert r.status_code == 200 and r.content == b""
        await host.advance(1)
        assert ("p1", "Custom", "s") in seen()

        blobs = host.runtime.storage.blobs()
        await blobs.create_container("images", exist_ok=True)
        await blobs.upload_blob("images", "cat.png", b"meow")
        await host.advance(1)
        assert any(s[1:] == ("Microsoft.Storage.BlobCreated", "/blobServices/default/containers/images/blobs/cat.png")
                   for s in seen())

        hook = "/runtime/webhooks/eventgrid?functionName=on_event"
        r = await host.http("POST", hook, json=[], headers={"aeg-event-type": "Unsubscribe"})
        assert r.status_code == 401  # keys: the eventgrid_extension system key or the master key
        system_key = host.runtime.services.keys.system_key("eventgrid_extension")
        r = await host.http("POST", hook + "&code=" + system_key, json=[], headers={"aeg-event-type": "Unsubscribe"})
        assert r.status_code == 202
        validation = [{"id": "v", "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent", "subject": "",
                       "eventTime": "2024-05-01T10:00:00Z", "data": {"validationCode": "abc-123"}}]
        r = await host.http("POST", hook, json=validation, headers={"aeg-event-type": "SubscriptionValidation"}, key="master")
        assert r.status_code == 200 and r.json() == {"validationResponse": "abc-123"}
        cloud_validation = {"specversion": "1.0", "id": "v", "source": "s", "type": "t",
                            "data": json.dumps({"validationCode": "ce-9"})}
        r = await host.http("POST", hook, json=cloud_validation, headers={"aeg-event-type": "SubscriptionValidation"}, key="master")
        assert r.json() == {"validationResponse": "ce-9"}
        two = [event(1, id="w1"), event(2, id="w2")]
        r = await host.http("POST", hook, json=two, headers={"aeg-event-type": "Notification"}, key="master")
        assert r.status_code == 202 and {"w1", "w2"} <= {s[0] for s in seen()}
        r = await host.http("POST", hook, json=event(3, id="w3"), headers={"aeg-event-type": "notification"}, key="master")
        assert r.status_code == 202 and "w3" in {s[0] for s in seen()}  # an object is wrapped in an array
        r = await host.http("POST", hook, json=[event(4, data={"fail": True})], headers={"aeg-event-type": "Notification"}, key="master")
        assert r.status_code == 500 and "asked to fail" in r.text
        r = await host.http("POST", hook, json=[], headers={"aeg-event-type": "Unsubscribe"}, key="master")
        assert r.status_code == 202
        r = await host.http("POST", hook, json=[], key="master")
        assert r.status_code == 400
        r = await host.http("POST", "/runtime/webhooks/eventgrid?functionName=missing", json=[],
                            headers={"aeg-event-type": "Notification"}, key="master")
        assert r.status_code == 404 and r.text == "cannot find function: 'missing'"


def receiver(log: list[tuple[str, dict[str, str], Any]], status: int = 200, echo: bool = True) -> Any:
    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        payload = json.loads(body) if body else None
        log.append((scope["method"], headers, payload))
        out = b""
        code = status
        if headers.get("aeg-event-type") == "SubscriptionValidation":
            code = 200
            if echo:
                out = json.dumps({"validationResponse": payload[0]["data"]["validationCode"]}).encode()
        await send({"type": "http.response.start", "status": code, "headers": []})
        await send({"type": "http.response.body", "body": out})

    return app


async def test_webhook_handshake_then_notification_headers(tmp_path: Path) -> None:
    log: list[Any] = []
    clock = ManualClock()
    store = SqliteEventStore(tmp_path / "eventgrid")
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver(log)), base_url="http://example.invalid")
    hook = WebhookSender(store, clock, client)
    rig = await Rig(tmp_path, config(sub(name="hooked")), {"webhook": hook}, clock=clock, store=store).start()
    await rig.publish(event(1), event(2))
    kinds = [h["aeg-event-type"] for _, h, _ in log]
    assert kinds == ["SubscriptionValidation", "Notification", "Notification"]
    _, headers, body = log[1]
    assert headers["aeg-subscription-name"] == "HOOKED" and headers["aeg-delivery-count"] == "0"
    assert headers["aeg-metadata-version"] == "1" and headers["aeg-data-version"] == "1.0"
    assert headers["content-type"] == "application/json; charset=utf-8"
    assert isinstance(body, list) and len(body) == 1
    await rig.publish(event(3))
    assert [h["aeg-event-type"] for _, h, _ in log][-1] == "Notification"  # validated once per endpoint
    assert sum(h["aeg-event-type"] == "SubscriptionValidation" for _, h, _ in log) == 1
    await rig.stop()
    await hook.aclose()


async def test_failed_handshake_is_a_failed_attempt(tmp_path: Path) -> None:
    log: list[Any] = []
    clock = ManualClock()
    store = SqliteEventStore(tmp_path / "eventgrid")
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=receiver(log, echo=False)),
                               base_url="http://example.invalid")
    hook = WebhookSender(store, clock, client)
    rig = await Rig(tmp_path, config(sub()), {"webhook": hook}, clock=clock, store=store).start()
    await rig.publish(event(1))
    [row] = await rig.rows()
    assert (row.state, row.last_outcome) == ("pending", "ValidationFailed")
    assert [h["aeg-event-type"] for _, h, _ in log] == ["SubscriptionValidation"]
    await rig.stop()
    await hook.aclose()


async def test_cloudevents_subscription_of_eventgrid_topic_gets_mapped_events(tmp_path: Path) -> None:
    log: list[Any] = []
    clock = ManualClock()
    store = SqliteEventStore(tmp_path / "eventgrid")

    async def app(scope: Any, receive: Any, send: Any) -> None:
        body = (await receive()).get("body", b"")
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        log.append((scope["method"], headers, json.loads(body) if body else None))
        out = [(b"webhook-allowed-origin", b"*")] if scope["method"] == "OPTIONS" else []
        await send({"type": "http.response.start", "status": 200, "headers": out})
        await send({"type": "http.response.body", "body": b""})

    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://example.invalid")
    hook = WebhookSender(store, clock, client)
    ce_sub = SubscriptionConfig(**{**sub().__dict__, "delivery_schema": "CloudEventSchemaV1_0"})
    rig = await Rig(tmp_path, config(ce_sub), {"webhook": hook}, clock=clock, store=store).start()
    await rig.publish(event(5))
    assert [m for m, _, _ in log] == ["OPTIONS", "POST"]
    _, headers, body = log[1]
    assert headers["content-type"] == "application/cloudevents+json; charset=utf-8"
    assert body["specversion"] == "1.0" and body["type"] == "Order.Created" and body["source"].endswith("/orders")
    await rig.stop()
    await hook.aclose()


async def test_webhook_answers_400_to_a_body_it_cannot_read(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        hook = "/runtime/webhooks/eventgrid?functionName=on_event"
        for kind, body, reason in [
            ("Notification", b"{nope", "invalid JSON"),
            ("Notification", b"[" * 100_000, "nested too deeply"),
            ("Notification", b'"text"', "JSON object or array"),
            ("Notification", b"[1, 2]", "Each event must be a JSON object"),
            ("SubscriptionValidation", b"{nope", "invalid validation request"),
            ("SubscriptionValidation", b'[{"data": 5}]', "invalid validation request"),
            ("SubscriptionValidation", b"[" * 100_000, "nested too deeply"),
        ]:
            r = await host.http("POST", hook, content=body, headers={"aeg-event-type": kind}, key="master")
            assert r.status_code == 400 and reason in r.text, (kind, body[:20], r.status_code, r.text)
        r = await host.http("POST", "/eventgrid/topics/default/api/events", content=b"[" * 100_000,
                            headers={"aeg-sas-key": eventgrid_service(host).keys["default"].key1})
        assert r.status_code == 400 and "nested too deeply" in r.json()["error"]["message"]


def eventgrid_service(host: HostHarness) -> EventGridService:
    service = host.runtime.services.find(EventGridService)
    assert service is not None
    return service

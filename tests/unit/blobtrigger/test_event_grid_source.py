"""The blob trigger's Event Grid source: the embedded broker's storage topic and the webhook."""

from __future__ import annotations

import json
import sys

import pytest

from funchost.testing import write_app

APP = """
import azure.functions as func

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="blob", path="uploads/{name}", connection="AzureWebJobsStorage",
                  source=func.BlobSource.EVENT_GRID)
def on_upload(blob: func.InputStream) -> None:
    body = blob.read()
    SEEN.append((blob.name, body))
    if body.startswith(b"fail"):
        raise RuntimeError("cannot handle " + blob.name)
"""


def seen():
    return sys.modules["function_app"].SEEN


@pytest.fixture
def app_dir(tmp_path):
    return write_app(tmp_path / "app", APP)


def blob_created(container: str, name: str, etag: str = "0x8DC9A1B2C3D4E5F", blob_type: str = "BlockBlob") -> dict:
    return {"id": "1", "topic": "/subscriptions/x/resourceGroups/y/providers/Microsoft.Storage/storageAccounts/acct",
            "eventType": "Microsoft.Storage.BlobCreated",
            "subject": f"/blobServices/default/containers/{container}/blobs/{name}", "eventTime": "2024-05-01T10:00:04Z",
            "data": {"api": "PutBlob", "eTag": etag, "contentLength": 4, "blobType": blob_type,
                     "url": f"https://acct.blob.core.windows.net/{container}/{name}"},
            "dataVersion": "", "metadataVersion": "1"}


async def test_upload_runs_the_function_through_the_embedded_storage_topic(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.blobs.upload("uploads", "report.pdf", b"%PDF")
    await host.blobs.upload("elsewhere", "ignored.txt", b"not this container")
    await host.advance(1)
    await host.wait_until_idle()
    assert seen() == [("uploads/report.pdf", b"%PDF")]
    assert await host.blobs.receipts() == []  # no receipts on this source
    await host.advance(30)
    assert len(seen()) == 1


async def test_failures_end_in_the_poison_queue(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    props = await host.blobs.upload("uploads", "bad.bin", b"fail")
    for _ in range(6):
        await host.advance(2)
    await host.wait_until_idle()
    assert len(seen()) == 5
    [poisoned] = await host.blobs.poison()
    assert poisoned["FunctionId"] == "Host.Functions.on_upload" and poisoned["ETag"] == props.etag


async def test_webhook_validation_notification_and_keys(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    await host.blobs.upload("uploads", "hook.txt", b"from the hook")
    await host.advance(1)
    await host.wait_until_idle()
    seen().clear()
    url = "/runtime/webhooks/blobs?functionName=Host.Functions.on_upload"
    validation = [{"id": "v", "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
                   "data": {"validationCode": "512d38b6"}}]
    response = await host.http("POST", url, json=validation, headers={"aeg-event-type": "SubscriptionValidation"})
    assert response.status_code == 401  # the blobs_extension system key or the master key is needed
    response = await host.http("POST", url, json=validation, key="master",
                               headers={"aeg-event-type": "SubscriptionValidation"})
    assert (response.status_code, response.json()) == (200, {"validationResponse": "512d38b6"})
    system_key = host.runtime.services.keys.system_key("blobs_extension")
    event = blob_created("uploads", "hook.txt")
    response = await host.http("POST", url + f"&code={system_key}", content=json.dumps([event]),
                               headers={"aeg-event-type": "Notification"})
    assert response.status_code == 202
    await host.advance(1)
    await host.wait_until_idle()
    assert seen() == [("uploads/hook.txt", b"from the hook")]  # the current content, no ETag check
    response = await host.http("POST", url, key="master", headers={"aeg-event-type": "Other"}, content=b"[]")
    assert response.status_code == 400


async def test_webhook_event_for_a_missing_blob_is_dropped_and_bad_events_fail(funchost_app, app_dir):
    host = await funchost_app(app_dir)
    url = "/runtime/webhooks/blobs?functionName=Host.Functions.on_upload"
    headers = {"aeg-event-type": "Notification"}
    response = await host.http("POST", url, key="master", json=[blob_created("uploads", "gone.txt")], headers=headers)
    assert response.status_code == 202
    await host.advance(2)
    await host.wait_until_idle()
    assert seen() == [] and await host.blobs.poison() == [] and await host.blobs.pending() == 0
    response = await host.http("POST", url, key="master", headers=headers,
                               json=[blob_created("uploads", "x.txt", blob_type="blockblob")])
    assert response.status_code == 500 and "Requested value 'blockblob' was not found." in response.text


def test_default_subscriptions_of_event_grid_sourced_blob_functions():
    from funchost.eventgrid.config import BlobEventFunction, default_config, parse_config

    config = default_config([], [BlobEventFunction("on_upload", "uploads"),
                                 BlobEventFunction("other_account", "docs", "OtherStorage")])
    first, second = config.subscriptions
    assert (first.name, first.topic, first.destination.function_name) == ("blobs-on_upload", "storage", "on_upload")
    assert first.filter.included_event_types == ("Microsoft.Storage.BlobCreated",)
    assert first.filter.subject_begins_with == "/blobServices/default/containers/uploads/"
    assert (second.topic, config.topics[second.topic].connection) == ("storage-OtherStorage", "OtherStorage")
    declared = parse_config({"topics": {"storage": {"type": "storage"}},
                             "subscriptions": [{"name": "mine", "topic": "storage",
                                                "destination": {"type": "function", "functionName": "on_upload"}}]},
                            known_functions={"on_upload"})
    assert declared.subscriptions[0].destination.function_name == "on_upload"


async def test_function_destination_without_a_started_blob_listener_is_a_retried_404():
    from types import SimpleNamespace

    from funchost.clock import ManualClock
    from funchost.eventgrid.config import Destination, SubscriptionConfig
    from funchost.eventgrid.destinations import FunctionSender

    invoked = []
    blob_function = SimpleNamespace(name="on_upload", trigger_type="blobTrigger")
    invoker = SimpleNamespace(invoke=lambda request: invoked.append(request))
    sender = FunctionSender(invoker, {"on_upload": blob_function}.get, ManualClock())
    sub = SubscriptionConfig("s", "storage", Destination("function", function_name="on_upload"))
    outcome = await sender.send(sub, [blob_created("uploads", "a.txt")], "EventGridSchema", 1)
    assert (outcome.succeeded, outcome.status) == (False, 404) and invoked == []

"""The Python worker's Event Hubs end-to-end flows (its `eventhub_functions` and
`eventhub_batch_functions` v2 apps use these bindings), on a real `funchost start` with the
emulator's connection string: HTTP -> eventHub output -> eventHubTrigger -> blob output -> HTTP.

The worker's apps also have functions that build SDK producer clients (`metadata_output`,
`metadata_output_batch`): those need the AMQP endpoint, which the tests turn off, and are not driven
here (`test_amqp_hosts.py` drives them over it); `NEEDS_AMQP` names them, and the host warns once at start.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost, wait_until

pytestmark = pytest.mark.acceptance

EMULATOR = ("Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;"
            "UseDevelopmentEmulator=true;")
NEEDS_AMQP = {"metadata_output"}

APP = '''
import json
import os

import azure.functions as func
from azure.eventhub import EventData
from azure.eventhub.aio import EventHubProducerClient

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
CONN = "AzureWebJobsEventHubConnectionString"


@app.route(route="eventhub_output")
@app.event_hub_output(arg_name="event", event_hub_name="ci-eventhub-one", connection=CONN)
def eventhub_output(req: func.HttpRequest, event: func.Out[str]):
    event.set(req.get_body().decode("utf-8"))
    return "OK"


@app.event_hub_message_trigger(arg_name="event", event_hub_name="ci-eventhub-one", connection=CONN)
@app.blob_output(arg_name="$return", path="tests/eventhub-triggered.txt", connection="AzureWebJobsStorage")
def eventhub_trigger(event: func.EventHubEvent) -> bytes:
    return event.get_body()


@app.route(route="get_eventhub_triggered")
@app.blob_input(arg_name="file", path="tests/eventhub-triggered.txt", connection="AzureWebJobsStorage")
def get_eventhub_triggered(req: func.HttpRequest, file: func.InputStream) -> str:
    return file.read().decode("utf-8")


@app.route(route="eventhub_output_batch", binding_arg_name="out")
@app.event_hub_output(arg_name="$return", connection=CONN, event_hub_name="ci-eventhub-batch")
def eventhub_output_batch(req: func.HttpRequest, out: func.Out[str]) -> str:
    return req.get_body().decode("utf-8")


@app.event_hub_message_trigger(arg_name="events", event_hub_name="ci-eventhub-batch", connection=CONN,
                               data_type="string", cardinality="many")
@app.blob_output(arg_name="$return", path="tests/eventhub-batch-triggered.txt", connection="AzureWebJobsStorage")
def eventhub_multiple(events) -> str:
    return json.dumps([json.loads(e.get_body()) for e in events])


@app.route(route="get_eventhub_batch_triggered")
@app.blob_input(arg_name="entries", path="tests/eventhub-batch-triggered.txt", connection="AzureWebJobsStorage")
def get_eventhub_batch_triggered(req: func.HttpRequest, entries: func.InputStream):
    return func.HttpResponse(status_code=200, body=entries.read().decode("utf-8"))


@app.route(route="metadata_output")
async def metadata_output(req: func.HttpRequest):
    client = EventHubProducerClient.from_connection_string(os.getenv(CONN), eventhub_name="ci-eventhub-metadata")
    batch = await client.create_batch()
    batch.add(EventData(req.get_body().decode("utf-8")))
    try:
        await client.send_batch(batch)
    finally:
        await client.close()
    return "OK"
'''


def write(app: Path) -> Path:
    app.mkdir(parents=True)
    (app / "function_app.py").write_text(APP)
    (app / "host.json").write_text(json.dumps({"version": "2.0"}))
    (app / "local.settings.json").write_text(json.dumps({"IsEncrypted": False, "Values": {
        "FUNCTIONS_WORKER_RUNTIME": "python", "AzureWebJobsStorage": "UseDevelopmentStorage=true",
        "AzureWebJobsEventHubConnectionString": EMULATOR}}))
    return app


def test_the_workers_binding_flows_pass(tmp_path: Path) -> None:
    pytest.importorskip("azure.eventhub")  # the app imports it, as the worker's does
    app = write(tmp_path / "app")
    host = start_funchost(app, data_dir=tmp_path / "data")
    try:
        url = host.base_url + "/api/"
        doc = {"id": str(round(time.time()))}
        response = httpx.post(url + "eventhub_output", content=json.dumps(doc))
        assert (response.status_code, response.text) == (200, "OK")

        def triggered() -> bool:
            r = httpx.get(url + "get_eventhub_triggered")
            return r.status_code == 200 and r.json() == doc

        wait_until(triggered, "the event to reach the blob", 20, [host])
        docs = [{"PartitionKey": doc["id"], "RowKey": i} for i in range(3)]
        assert httpx.post(url + "eventhub_output_batch", content=json.dumps(docs)).status_code == 200

        def batch_triggered() -> bool:
            r = httpx.get(url + "get_eventhub_batch_triggered")
            return r.status_code == 200 and sorted(e["RowKey"] for e in r.json()) == [0, 1, 2]

        wait_until(batch_triggered, "the three events to arrive in one batch", 20, [host])
        assert "need an AMQP endpoint" in host.output()
        assert all(f"{name}: [" in host.output() for name in NEEDS_AMQP)  # listed, not in error
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output

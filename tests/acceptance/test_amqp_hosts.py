"""The AMQP endpoint of a real `funchost start`: SDK clients and the app's triggers share the brokers."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from azure.eventhub import EventData, EventHubConsumerClient, EventHubProducerClient
from azure.servicebus import ServiceBusClient, ServiceBusMessage
from tests.acceptance.support import CLI, free_port, start_funchost, stop_funchost

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

WAIT = 60.0

SERVICEBUS_APP = """
import azure.functions as func

app = func.FunctionApp()

@app.service_bus_queue_trigger(arg_name="msg", connection="SbConnection", queue_name="inbox")
@app.service_bus_queue_output(arg_name="out", connection="SbConnection", queue_name="outbox")
def relay(msg: func.ServiceBusMessage, out: func.Out[str]) -> None:
    out.set(msg.get_body().decode("utf-8").upper() + f"|{msg.delivery_count}|{msg.user_properties.get('k')}")
"""

EVENTHUBS_APP = """
import azure.functions as func

app = func.FunctionApp()

@app.event_hub_message_trigger(arg_name="event", connection="EhConnection", event_hub_name="ehin")
@app.event_hub_output(arg_name="out", connection="EhConnection", event_hub_name="ehout")
def relay(event: func.EventHubEvent, out: func.Out[str]) -> None:
    out.set(event.get_body().decode("utf-8").upper())
"""


def emulator(port: int) -> str:
    return (f"Endpoint=sb://localhost:{port};SharedAccessKeyName=RootManageSharedAccessKey;"
            "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")


def test_an_sdk_message_triggers_the_function_and_its_output_reaches_an_sdk_receiver(tmp_path: Path) -> None:
    amqp = free_port()
    app = write_app(tmp_path / "app", SERVICEBUS_APP, settings={"SbConnection": emulator(amqp)})
    host = start_funchost(app, "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data")
    try:
        assert host.wait_for_output(f"amqp://127.0.0.1:{amqp}")
        with ServiceBusClient.from_connection_string(emulator(amqp)) as client:
            with client.get_queue_sender("inbox") as sender:
                sender.send_messages(ServiceBusMessage("hello", application_properties={"k": "v"}))
            with client.get_queue_receiver("outbox", max_wait_time=WAIT) as receiver:
                (message,) = receiver.receive_messages(max_wait_time=WAIT)
                assert str(message) == "HELLO|1|v"
                receiver.complete_message(message)
    finally:
        code, output = stop_funchost(host)
    assert "Executed 'Functions.relay' (Succeeded" in output


def test_an_sdk_event_triggers_the_function_and_its_output_reaches_an_sdk_consumer(tmp_path: Path) -> None:
    amqp = free_port()
    app = write_app(tmp_path / "app", EVENTHUBS_APP, settings={"EhConnection": emulator(amqp)})
    host = start_funchost(app, "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data")
    try:
        assert host.wait_for_output(f"amqp://127.0.0.1:{amqp}")
        got: list[str] = []
        done = threading.Event()
        consumer = EventHubConsumerClient.from_connection_string(emulator(amqp), consumer_group="$Default",
                                                                 eventhub_name="ehout")

        def on_event(context: Any, event: Any) -> None:
            if event is not None:
                got.append(event.body_as_str())
                done.set()

        thread = threading.Thread(target=lambda: consumer.receive(on_event=on_event, starting_position="-1"),
                                  daemon=True)
        thread.start()
        with EventHubProducerClient.from_connection_string(emulator(amqp), eventhub_name="ehin") as producer:
            batch = producer.create_batch()
            batch.add(EventData("ping"))
            producer.send_batch(batch)
        done.wait(WAIT)
        consumer.close()
        thread.join(WAIT)
        assert got == ["PING"]
    finally:
        stop_funchost(host)


def serve(data: Path, port: int) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", CLI, "amqp", "serve", "--data", str(data), "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def read_until(process: subprocess.Popen[str], text: str) -> str:
    seen = ""
    deadline = time.monotonic() + WAIT
    assert process.stdout is not None
    while time.monotonic() < deadline and text not in seen:
        line = process.stdout.readline()
        if not line:
            break
        seen += line
    return seen


def test_the_standalone_endpoint_is_shared_by_a_data_folder_and_refused_to_another(tmp_path: Path) -> None:
    port = free_port()
    first = serve(tmp_path / "data", port)
    try:
        assert "Press Ctrl+C" in read_until(first, "Press Ctrl+C")
        second = serve(tmp_path / "data", port)
        try:
            assert "served by another process of this data folder" in read_until(second, "Press Ctrl+C")
        finally:
            second.terminate()
            second.wait(30)
        other = serve(tmp_path / "other", port)
        output, _ = other.communicate(timeout=WAIT)
        assert other.returncode == 1 and "different data folder" in output
        with ServiceBusClient.from_connection_string(emulator(port)) as client:
            with client.get_queue_sender("q") as sender:
                sender.send_messages(ServiceBusMessage("via the standalone endpoint"))
            with client.get_queue_receiver("q") as receiver:
                (message,) = receiver.receive_messages(max_wait_time=WAIT)
                assert str(message) == "via the standalone endpoint"
    finally:
        first.terminate()
        first.wait(30)


# The Python worker's Event Hubs end-to-end app (tests/endtoend/eventhub_functions/eventhub_functions_stein,
# with the current decorator names blob_input / blob_output / event_hub_message_trigger):
# its functions that build an SDK producer (`metadata_output`) and the trigger they feed.
WORKER_METADATA_APP = """
import json
import os
import typing

from azure.eventhub import EventData
from azure.eventhub.aio import EventHubProducerClient

import azure.functions as func

app = func.FunctionApp()


@app.function_name(name="get_metadata_triggered")
@app.route(route="get_metadata_triggered")
@app.blob_input(arg_name="file", path="python-worker-tests/test-metadata-triggered.txt",
               connection="AzureWebJobsStorage")
async def get_metadata_triggered(req: func.HttpRequest, file: func.InputStream) -> str:
    return func.HttpResponse(body=file.read().decode('utf-8'), status_code=200, mimetype='application/json')


@app.function_name(name="metadata_output")
@app.route(route="metadata_output")
async def metadata_output(req: func.HttpRequest):
    event_dict = json.loads(req.get_body().decode('utf-8'))
    client = EventHubProducerClient.from_connection_string(
        os.getenv('AzureWebJobsEventHubConnectionString'),
        eventhub_name='python-worker-ci-eventhub-one-metadata')
    event_data_batch = await client.create_batch()
    event_data_batch.add(EventData(event_dict.get('body')))
    try:
        await client.send_batch(event_data_batch)
    finally:
        await client.close()
    return 'OK'


@app.function_name(name="metadata_trigger")
@app.event_hub_message_trigger(arg_name="event", event_hub_name="python-worker-ci-eventhub-one-metadata",
                          connection="AzureWebJobsEventHubConnectionString")
@app.blob_output(arg_name="$return", path="python-worker-tests/test-metadata-triggered.txt",
                connection="AzureWebJobsStorage")
async def metadata_trigger(event: func.EventHubEvent) -> bytes:
    event_dict: typing.Mapping[str, typing.Any] = {
        'body': event.get_body().decode('utf-8'),
        'partition_key': event.partition_key,
        'sequence_number': event.sequence_number,
        'offset': event.offset,
        'metadata': event.metadata
    }
    return json.dumps(event_dict)
"""


def test_the_workers_event_hubs_metadata_flow(tmp_path: Path) -> None:
    """test_eventhub_functions.test_eventhub_trigger_with_metadata: an SDK producer inside a function."""
    import httpx
    from tests.acceptance.support import wait_until

    amqp = free_port()
    app = write_app(tmp_path / "app", WORKER_METADATA_APP,
                    settings={"AzureWebJobsEventHubConnectionString": emulator(amqp)})
    host = start_funchost(app, "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data")
    try:
        number = str(round(time.time()) % 1000)
        response = httpx.post(host.base_url + "/api/metadata_output", content=f'{{"body": "{number}"}}',
                              headers=host.admin_headers, timeout=WAIT)
        assert response.status_code == 200 and "OK" in response.text

        def triggered() -> bool:
            r = httpx.get(host.base_url + "/api/get_metadata_triggered", headers=host.admin_headers, timeout=WAIT)
            return r.status_code == 200 and r.json().get("body") == number

        wait_until(triggered, "the SDK's event to trigger metadata_trigger", WAIT, [host])
        event = httpx.get(host.base_url + "/api/get_metadata_triggered", headers=host.admin_headers,
                          timeout=WAIT).json()
        assert event["partition_key"] is None
        assert event["sequence_number"] >= 0 and event["offset"] is not None
        system = event["metadata"]["SystemProperties"]
        assert system["PartitionKey"] is None and system["SequenceNumber"] >= 0 and system["Offset"] is not None
    finally:
        stop_funchost(host)


# The worker's eventhub_batch_functions app: `metadata_output_batch` (a sync SDK producer) feeding
# `metadata_multiple` (cardinality many), as upstream but with the current decorator names.
WORKER_METADATA_BATCH_APP = """
import json
import os
import typing
import azure.functions as func
from azure.eventhub import EventHubProducerClient, EventData

app = func.FunctionApp()


@app.function_name(name="get_metadata_batch_triggered")
@app.route(route="get_metadata_batch_triggered")
@app.blob_input(arg_name="file", path="python-worker-tests/test-metadata-batch-triggered.txt",
                connection="AzureWebJobsStorage")
def get_metadata_batch_triggered(req: func.HttpRequest, file: func.InputStream) -> str:
    return func.HttpResponse(body=file.read().decode('utf-8'), status_code=200, mimetype='application/json')


@app.function_name(name="metadata_multiple")
@app.event_hub_message_trigger(arg_name="events", event_hub_name="python-worker-ci-eventhub-batch-metadata",
                               connection="AzureWebJobsEventHubConnectionString", data_type="binary",
                               cardinality="many")
@app.blob_output(arg_name="$return", path="python-worker-tests/test-metadata-batch-triggered.txt",
                 connection="AzureWebJobsStorage")
def metadata_multiple(events: typing.List[func.EventHubEvent]) -> bytes:
    event_list = []
    for event in events:
        event_dict: typing.Mapping[str, typing.Any] = {
            'body': event.get_body().decode('utf-8'),
            'enqueued_time': event.enqueued_time.isoformat(),
            'partition_key': event.partition_key,
            'sequence_number': event.sequence_number,
            'offset': event.offset,
            'metadata': event.metadata
        }
        event_list.append(event_dict)
    return json.dumps(event_list)


@app.function_name(name="metadata_output_batch")
@app.route(route="metadata_output_batch")
def main(req: func.HttpRequest):
    count = int(req.params.get('count', '1'))
    event_dict = json.loads(req.get_body().decode('utf-8'))
    client = EventHubProducerClient.from_connection_string(
        os.getenv('AzureWebJobsEventHubConnectionString'),
        eventhub_name='python-worker-ci-eventhub-batch-metadata')
    event_data_batch = client.create_batch()
    random_number = int(event_dict.get('body', '0'))
    for i in range(count):
        event_data_batch.add(EventData(str(random_number + i)))
    with client:
        client.send_batch(event_data_batch)
    return 'OK'
"""


def test_the_workers_event_hubs_batch_metadata_flow(tmp_path: Path) -> None:
    """test_eventhub_batch_functions.test_eventhub_multiple_with_metadata."""
    from datetime import UTC, datetime

    import httpx
    from tests.acceptance.support import wait_until

    amqp = free_port()
    app = write_app(tmp_path / "app", WORKER_METADATA_BATCH_APP,
                    settings={"AzureWebJobsEventHubConnectionString": emulator(amqp)})
    host = start_funchost(app, "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data")
    try:
        start = datetime.now(UTC)
        number = str(round(time.time()) % 1000)
        response = httpx.post(host.base_url + "/api/metadata_output_batch?count=10", content=f'{{"body": "{number}"}}',
                              headers=host.admin_headers, timeout=WAIT)
        assert response.status_code == 200 and "OK" in response.text
        end = datetime.now(UTC)

        def triggered() -> bool:
            r = httpx.get(host.base_url + "/api/get_metadata_batch_triggered", headers=host.admin_headers,
                          timeout=WAIT)
            return r.status_code == 200 and len(r.json()) > 1

        wait_until(triggered, "the SDK's batch to trigger metadata_multiple", WAIT, [host])
        events = httpx.get(host.base_url + "/api/get_metadata_batch_triggered", headers=host.admin_headers,
                           timeout=WAIT).json()
        for index, event in enumerate(events):
            assert start < datetime.fromisoformat(event["enqueued_time"]).replace(tzinfo=UTC) < end
            assert event["partition_key"] is None and event["sequence_number"] >= 0 and event["offset"] is not None
            system = event["metadata"]["SystemPropertiesArray"][index]
            assert system["PartitionKey"] is None and system["SequenceNumber"] >= 0 and system["Offset"] is not None
    finally:
        stop_funchost(host)


def test_a_second_app_starts_beside_the_app_whose_host_serves_the_amqp_port(tmp_path: Path) -> None:
    """Two apps (two data folders) on one machine, both with the endpoint on by default: the second
    starts, leaves the port to the first app's host and says so, as with the storage endpoints."""
    amqp = free_port()
    first = start_funchost(write_app(tmp_path / "one", SERVICEBUS_APP, settings={"SbConnection": emulator(amqp)}),
                           "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data-one")
    try:
        second = start_funchost(write_app(tmp_path / "two", EVENTHUBS_APP, settings={"EhConnection": emulator(amqp)}),
                                "--no-storage-endpoints", "--amqp-port", str(amqp), data_dir=tmp_path / "data-two")
        code, output = stop_funchost(second)
    finally:
        stop_funchost(first)
    assert code == 0, output
    assert f"The AMQP endpoint on port {amqp} is served by the host of another data folder" in output

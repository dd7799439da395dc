"""The official azure-eventgrid publisher client against a running in-process host, with the
topic key (AzureKeyCredential) and with a SAS token (generate_sas + AzureSasCredential)."""

from __future__ import annotations

import asyncio
import socket
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.core.credentials import AzureKeyCredential, AzureSasCredential
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError
from azure.core.messaging import CloudEvent
from azure.eventgrid import EventGridEvent, EventGridPublisherClient, generate_sas

from funchost.eventgrid.service import EventGridService
from funchost.host import Host, HostConfig
from funchost.testing.harness import write_app

APP = """
import azure.functions as func
app = func.FunctionApp()
SEEN = []

@app.event_grid_trigger(arg_name="event")
def on_event(event):
    SEEN.append((event.id, getattr(event, "event_type", None) or getattr(event, "type", None)))
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def wait_for(predicate, timeout: float = 10.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.05)
    return False


async def test_publisher_client_with_key_and_sas(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    host = Host(HostConfig(app_dir=app, data_dir=tmp_path / "data", port=free_port(), apply_environment=False))
    host.load()
    await host.start()
    try:
        service = host.runtime.services.find(EventGridService)  # type: ignore[union-attr]
        endpoint = f"http://127.0.0.1:{host.port}/eventgrid/topics/default/api/events"
        key = service.keys["default"].key1
        seen = sys.modules["function_app"].SEEN

        def send_with_key() -> None:
            client = EventGridPublisherClient(endpoint, AzureKeyCredential(key))
            client.send([EventGridEvent(subject="orders/1", event_type="Order.Created", data={"n": 1},
                                        data_version="1.0")])

        def send_with_sas() -> None:
            token = generate_sas(endpoint, service.keys["default"].key2, datetime.now(UTC) + timedelta(hours=1))
            client = EventGridPublisherClient(endpoint, AzureSasCredential(token))
            client.send(EventGridEvent(subject="orders/2", event_type="Order.Paid", data={}, data_version="1.0"))

        await asyncio.to_thread(send_with_key)
        await asyncio.to_thread(send_with_sas)
        assert await wait_for(lambda: {t for _, t in seen} >= {"Order.Created", "Order.Paid"}), seen

        def send_cloud_event() -> None:
            ce_endpoint = endpoint.replace("/default/", "/cloudevents/")
            client = EventGridPublisherClient(ce_endpoint, AzureKeyCredential(service.keys["cloudevents"].key1))
            client.send(CloudEvent(source="/tests", type="Ce.Happened", data={"x": 1}))

        await asyncio.to_thread(send_cloud_event)
        assert await wait_for(lambda: len(seen) >= 3), seen

        def send_with_wrong_key() -> None:
            client = EventGridPublisherClient(endpoint, AzureKeyCredential("d3Jvbmc="))
            client.send([EventGridEvent(subject="x", event_type="T", data={}, data_version="1")])

        with pytest.raises((ClientAuthenticationError, HttpResponseError)):
            await asyncio.to_thread(send_with_wrong_key)
    finally:
        await host.stop()

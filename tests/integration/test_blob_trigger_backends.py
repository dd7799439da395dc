"""Blob-trigger behaviour through the in-process host on embedded storage and on Azurite.

The unit tests (`tests/unit/blobtrigger/`) drive the same rules on a ManualClock; here the
backends run on the real clock, blobs are written from outside the host (the official
``azure.storage.blob`` client on Azurite and, as ``rest``, on the embedded store through the host's
own storage endpoints while a host serves them; the embedded `BlobService` otherwise) and every
wait is a bounded poll. Each test has its own host ID and containers, so receipts and the internal queue are
its own on a shared Azurite.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from tests.acceptance.support import free_port
from tests.integration.support_queue_apps import eventually

from funchost.clock import SystemClock
from funchost.errors import ContainerNotFound, QueueNotFound
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.testing import HostHarness, write_app
from funchost.triggers.queue.messages import decode_text

BACKENDS = ["embedded", "rest", pytest.param("azurite", marks=pytest.mark.azurite)]

APP = """
import azure.functions as func

app = func.FunctionApp()
EVENTS = []
URIS = []

@app.blob_trigger(arg_name="blob", path="%IN_CONTAINER%/{name}", connection="AzureWebJobsStorage")
def on_blob(blob: func.InputStream) -> None:
    URIS.append(blob.uri)
    body = blob.read()
    EVENTS.append(("poll", blob.name, body))
    if body.startswith(b"fail"):
        raise RuntimeError("failing on purpose")

@app.blob_trigger(arg_name="blob", path="%EG_CONTAINER%/{name}", connection="AzureWebJobsStorage",
                  source=func.BlobSource.EVENT_GRID)
def on_event(blob: func.InputStream) -> None:
    EVENTS.append(("eventgrid", blob.name, blob.read()))
"""


class BlobBackend:
    """One storage backend as seen from outside the host."""

    def __init__(self, name: str, data_dir: Path, connection_string: str | None,
                 rest_ports: list[int] | None = None) -> None:
        self.name = name
        self.data_dir = data_dir
        self.connection_string = connection_string
        self.storage_kind = "azure" if connection_string and rest_ports is None else "embedded"
        self.served = False  # "rest": the SDK reaches the embedded store only while a host serves it
        suffix = uuid.uuid4().hex[:10]
        self.host_id = f"bt-{suffix}"
        self.container, self.eg_container = f"in-{suffix}", f"eg-{suffix}"
        self.settings = {"AzureWebJobsStorage": connection_string or "UseDevelopmentStorage=true",
                         "AzureFunctionsWebHost__hostid": self.host_id, "IN_CONTAINER": self.container,
                         "EG_CONTAINER": self.eg_container}
        if rest_ports is not None:
            self.settings["FUNCHOST_STORAGE_ENDPOINTS"] = ",".join(map(str, rest_ports))
        self.blob_endpoint = (connection_string.split("BlobEndpoint=")[1].split(";")[0].rstrip("/")
                              if connection_string else "http://127.0.0.1:10000/devstoreaccount1")
        self.storage: HostStorage = open_storage(self.storage_kind, data_dir, AppSettings(self.settings, environ={}),
                                                 SystemClock())

    async def upload(self, container: str, name: str, data: bytes) -> str:
        """Write a blob as another application would; returns its (quoted) ETag."""
        if self.connection_string is None or (self.storage_kind == "embedded" and not self.served):
            service = self.storage.blobs()
            await service.create_container(container, exist_ok=True)
            return (await service.upload_blob(container, name, data)).etag
        from azure.core.exceptions import ResourceExistsError
        from azure.storage.blob.aio import BlobServiceClient

        async with BlobServiceClient.from_connection_string(self.connection_string) as client:
            try:
                await client.create_container(container)
            except ResourceExistsError:
                pass
            result = await client.get_blob_client(container, name).upload_blob(data, overwrite=True)
        etag = str(result["etag"])
        return etag if etag.startswith('"') else f'"{etag}"'

    async def poison(self) -> list[dict[str, Any]]:
        try:
            messages = await self.storage.queues().peek_messages("webjobs-blobtrigger-poison", max_messages=32)
        except QueueNotFound:
            return []
        found = [json.loads(decode_text(m.content, "base64")) for m in messages]
        return [m for m in found if m["ContainerName"] in (self.container, self.eg_container)]

    async def aclose(self) -> None:
        if self.storage_kind == "azure":
            for container in (self.container, self.eg_container):
                try:
                    await self.storage.blobs().delete_container(container)
                except ContainerNotFound:
                    pass
            try:
                await self.storage.queues().delete_queue(f"azure-webjobs-blobtrigger-{self.host_id}")
            except QueueNotFound:
                pass
        await self.storage.aclose()


@pytest.fixture(params=BACKENDS)
async def backend(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[BlobBackend]:
    connection = request.getfixturevalue("azurite").connection_string if request.param == "azurite" else None
    ports = None
    if request.param == "rest":
        ports = [free_port(), free_port(), free_port()]
        connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                      f"BlobEndpoint=http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT};"
                      f"QueueEndpoint=http://127.0.0.1:{ports[1]}/{DEVSTORE_ACCOUNT}")
    blobs = BlobBackend(str(request.param), tmp_path / "data", connection, ports)
    yield blobs
    await blobs.aclose()


Start = Callable[[], Awaitable[tuple[HostHarness, list[tuple[str, str, bytes]]]]]


@pytest.fixture
async def start_host(backend: BlobBackend, tmp_path: Path) -> AsyncIterator[Start]:
    started: list[HostHarness] = []
    app = write_app(tmp_path / "app", APP)

    async def start() -> tuple[HostHarness, list[tuple[str, str, bytes]]]:
        harness = HostHarness(app, data_dir=backend.data_dir, storage=backend.storage_kind, clock=SystemClock(),
                              settings=backend.settings)
        await harness.start()
        started.append(harness)
        backend.served = True
        return harness, sys.modules["function_app"].EVENTS

    yield start
    backend.served = False
    for harness in reversed(started):
        await harness.stop()


def polled(events: list[tuple[str, str, bytes]]) -> list[tuple[str, bytes]]:
    return [(name, body) for source, name, body in events if source == "poll"]


async def test_new_blob_once_and_a_rewrite_once_more(backend: BlobBackend, start_host: Start) -> None:
    host, events = await start_host()
    await backend.upload(backend.container, "a.txt", b"same")
    await eventually(lambda: _async(len(polled(events)) == 1), "the first run", timeout=15)
    await backend.upload(backend.container, "a.txt", b"same")  # same content, new ETag
    await eventually(lambda: _async(len(polled(events)) == 2), "the run of the rewrite", timeout=15)
    await _quiet(host, 3)
    assert polled(events) == [(f"{backend.container}/a.txt", b"same")] * 2
    # the Uri binding data names the Blob endpoint the store is reached at (the one served, on "rest")
    assert sys.modules["function_app"].URIS == [f"{backend.blob_endpoint}/{backend.container}/a.txt"] * 2


async def test_existing_blobs_run_at_first_start_and_not_after_a_restart(backend: BlobBackend, start_host: Start,
                                                                          ) -> None:
    for i in range(3):
        await backend.upload(backend.container, f"old-{i}.txt", b"old")
    host, events = await start_host()
    await eventually(lambda: _async(len(polled(events)) == 3), "the existing blobs", timeout=15)
    await host.stop()
    host, events = await start_host()
    await _quiet(host, 5)  # two discovery intervals on Azurite's scan
    assert polled(events) == []


async def test_two_hosts_on_shared_storage_run_each_blob_once(backend: BlobBackend, start_host: Start) -> None:
    first, _ = await start_host()
    first_events = sys.modules["function_app"].EVENTS
    second, second_events = await start_host()
    names = [f"doc-{i}.txt" for i in range(12)]
    for name in names:
        await backend.upload(backend.container, name, name.encode())
    everything = lambda: polled(first_events) + polled(second_events)  # noqa: E731
    await eventually(lambda: _async(len(everything()) >= 12), "every blob", timeout=30)
    await _quiet(first, 3)
    assert sorted(name for name, _ in everything()) == sorted(f"{backend.container}/{n}" for n in names)


async def test_failing_function_five_attempts_then_poison(backend: BlobBackend, start_host: Start) -> None:
    host, events = await start_host()
    etag = await backend.upload(backend.container, "bad.txt", b"fail please")
    await eventually(backend.poison, "the poison message", timeout=30)
    assert len(polled(events)) == 5
    assert await backend.poison() == [{"Type": "BlobTrigger", "FunctionId": "Host.Functions.on_blob",
                                       "BlobType": "BlockBlob", "ContainerName": backend.container,
                                       "BlobName": "bad.txt", "ETag": etag}]


async def test_event_grid_source(backend: BlobBackend, start_host: Start) -> None:
    """Embedded: the embedded Event Grid's storage topic. Azurite has no Event Grid: the event a real
    subscription would send arrives on the webhook."""
    host, events = await start_host()
    etag = await backend.upload(backend.eg_container, "ev.txt", b"evented")
    if backend.storage_kind == "azure":
        event = {"id": "1", "eventType": "Microsoft.Storage.BlobCreated", "subject": "s", "eventTime": "t",
                 "data": {"eTag": etag.strip('"'), "blobType": "BlockBlob",
                          "url": f"http://127.0.0.1:10000/devstoreaccount1/{backend.eg_container}/ev.txt"}}
        response = await host.http("POST", "/runtime/webhooks/blobs?functionName=Host.Functions.on_event",
                                   key="master", json=[event], headers={"aeg-event-type": "Notification"})
        assert response.status_code == 202
    await eventually(lambda: _async(any(e[0] == "eventgrid" for e in events)), "the Event Grid run", timeout=15)
    assert [e for e in events if e[0] == "eventgrid"] == [("eventgrid", f"{backend.eg_container}/ev.txt", b"evented")]


async def _async(value: Any) -> Any:
    return value


async def _quiet(host: HostHarness, seconds: float) -> None:
    import asyncio

    await asyncio.sleep(seconds)
    await host.wait_until_idle()

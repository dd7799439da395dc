"""`funchost start` serves the embedded storage over the Storage REST API: an unmodified app that
builds SDK clients from `AzureWebJobsStorage` works with no Azurite anywhere, and what it writes
is what the triggers see. Several hosts on one data folder share the endpoints; a host of another
data folder uses them too, as a second app uses the one Azurite of the machine."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from azure.data.tables import TableClient
from azure.storage.blob import BlobServiceClient
from tests.acceptance.support import copy_example, free_port, start_funchost, stop_funchost

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

pytestmark = pytest.mark.acceptance


def connection_string(ports: list[int]) -> str:
    blob, queue, table = (f"http://127.0.0.1:{p}/{DEVSTORE_ACCOUNT}" for p in ports)
    return (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
            f"BlobEndpoint={blob};QueueEndpoint={queue};TableEndpoint={table}")


def test_sdk_clients_of_an_unmodified_app_reach_the_embedded_storage(tmp_path: Path) -> None:
    app = copy_example("sdkclients", tmp_path)
    data = tmp_path / "data"
    ports = [free_port(), free_port(), free_port()]
    storage = connection_string(ports)
    # The app's own connection string points at the ports chosen for this test (the default
    # UseDevelopmentStorage=true means 10000-10002, which parallel test runs must not take).
    env = {"AzureWebJobsStorage": storage}
    flags = ("--storage-ports", ",".join(map(str, ports)))
    host = start_funchost(app, *flags, data_dir=data, env=env)
    try:
        written = httpx.post(f"{host.base_url}/api/notes/first", content=b"hello notes", timeout=30)
        assert written.status_code == 201, host.output()
        blob = BlobServiceClient.from_connection_string(storage).get_blob_client("notes", "first.txt")
        assert blob.download_blob().readall() == b"hello notes"
        entity = TableClient.from_connection_string(storage, table_name="Notes").get_entity("notes", "first")
        assert entity["length"] == 11
        assert host.wait_for_output("note queued: first", timeout=20), host.output()
        assert host.wait_for_output("note blob event Microsoft.Storage.BlobCreated "
                                    "/blobServices/default/containers/notes/blobs/first.txt", timeout=20), host.output()
        read = httpx.get(f"{host.base_url}/api/notes/first", timeout=30)
        assert read.json() == {"text": "hello notes", "length": 11}

        second = start_funchost(app, *flags, data_dir=data, env=env)  # same data folder: shares the ports
        try:
            assert second.wait_for_output("served by another process of this data folder", timeout=5)
            assert httpx.get(f"{second.base_url}/api/notes/first", timeout=30).json()["length"] == 11
        finally:
            code, output = stop_funchost(second)
        assert code == 0, output

        # Another data folder (another app): uses the serving host's account through its endpoints,
        # as Core Tools apps share one Azurite (test_storage_apps.py has two apps talking).
        other = start_funchost(app, *flags, data_dir=tmp_path / "other", env=env)
        try:
            assert "(storage: azure," in other.output() and "another data folder" in other.output()
            assert httpx.get(f"{other.base_url}/api/notes/first", timeout=30).json()["length"] == 11
        finally:
            code, output = stop_funchost(other)
        assert code == 0, output
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output

"""SDK-type blob bindings: the package's clients talk to storage themselves.

`BlobClient` / `StorageStreamDownloader` on the trigger and a `ContainerClient` input, as an app
runs them on Azure, against two stores:

* ``azurite``: the app's `AzureWebJobsStorage` points at Azurite (`--storage azure`);
* ``rest``: embedded storage, the connection string pointing at the host's own storage
  endpoints (docs/storage-endpoints.md): the clients' reads and writes are the embedded store's,
  so what the function writes through its `ContainerClient` is what the host's `BlobService` sees.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from tests.acceptance.support import free_port
from tests.integration.support_queue_apps import eventually

from funchost.clock import SystemClock
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY
from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
import azurefunctions.extensions.bindings.blob as blob

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="client", path="%IN%/{name}", connection="AzureWebJobsStorage")
@app.blob_input(arg_name="archive", path="%ARCHIVE%", connection="AzureWebJobsStorage")
def with_clients(client: blob.BlobClient, archive: blob.ContainerClient) -> None:
    body = client.download_blob().readall()
    archive.upload_blob(client.blob_name, body, overwrite=True)
    SEEN.append(("client", client.blob_name, body, sorted(b.name for b in archive.list_blobs()),
                 client.url))

@app.blob_trigger(arg_name="stream", path="%STREAMED%/{name}", connection="AzureWebJobsStorage")
def with_downloader(stream: blob.StorageStreamDownloader) -> None:
    SEEN.append(("downloader", stream.name, b"".join(stream.chunks())))
"""

STORES = ["rest", pytest.param("azurite", marks=pytest.mark.azurite)]


def embedded_endpoint_settings() -> tuple[dict[str, str], str]:
    """Settings serving the embedded store on free ports, and the Blob endpoint they name."""
    ports = [free_port(), free_port(), free_port()]
    blob_endpoint = f"http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT}"
    connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                  f"BlobEndpoint={blob_endpoint};QueueEndpoint=http://127.0.0.1:{ports[1]}/{DEVSTORE_ACCOUNT}")
    return {"AzureWebJobsStorage": connection, "FUNCHOST_STORAGE_ENDPOINTS": ",".join(map(str, ports))}, blob_endpoint


@pytest.mark.parametrize("store", STORES)
async def test_sdk_types_on_the_trigger_and_blob_input(store: str, request: pytest.FixtureRequest,
                                                        tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {"IN": f"sdkin-{suffix}", "ARCHIVE": f"sdkarc-{suffix}", "STREAMED": f"sdkdl-{suffix}"}
    if store == "azurite":
        azurite = request.getfixturevalue("azurite")
        storage, endpoint_settings = "azure", {"AzureWebJobsStorage": azurite.connection_string}
        blob_endpoint = azurite.blob_endpoint.rstrip("/")
    else:
        storage = "embedded"
        endpoint_settings, blob_endpoint = embedded_endpoint_settings()
    settings = {**endpoint_settings, "AzureFunctionsWebHost__hostid": f"sdk-{suffix}", **names}
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, data_dir=tmp_path / "data", storage=storage, clock=SystemClock(),
                           settings=settings) as host:
        seen = sys.modules["function_app"].SEEN
        blobs = host.runtime.storage.blobs()
        await blobs.create_container(names["ARCHIVE"])
        await host.blobs.upload(names["IN"], "a/report.txt", b"from the trigger blob")
        await host.blobs.upload(names["STREAMED"], "big.bin", b"\x07" * (5 * 1024 * 1024))
        await eventually(lambda: _now(len(seen) == 2), "both SDK-typed functions", timeout=20)
        client_run = next(s for s in seen if s[0] == "client")
        assert client_run == ("client", "a/report.txt", b"from the trigger blob", ["a/report.txt"],
                              f"{blob_endpoint}/{names['IN']}/a/report.txt")
        downloaded = next(s for s in seen if s[0] == "downloader")
        assert downloaded == ("downloader", "big.bin", b"\x07" * (5 * 1024 * 1024))
        # what the function wrote with its ContainerClient is in the store the host reads
        assert (await blobs.download_blob(names["ARCHIVE"], "a/report.txt"))[0] == b"from the trigger blob"
        if store == "azurite":
            for container in names.values():
                await blobs.delete_container(container)


async def _now(value: object) -> object:
    return value

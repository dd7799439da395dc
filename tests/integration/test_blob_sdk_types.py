"""SDK-type blob bindings against Azurite: the package's clients talk to storage themselves.

`BlobClient` / `StorageStreamDownloader` on the trigger and a `ContainerClient` input, with the app's
`AzureWebJobsStorage` pointing at Azurite (`--storage azure`), as an app runs them on Azure.
"""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest
from tests.integration.support_queue_apps import eventually

from funchost.clock import SystemClock
from funchost.testing import HostHarness, write_app

pytestmark = pytest.mark.azurite

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
    SEEN.append(("client", client.blob_name, body, sorted(b.name for b in archive.list_blobs())))

@app.blob_trigger(arg_name="stream", path="%STREAMED%/{name}", connection="AzureWebJobsStorage")
def with_downloader(stream: blob.StorageStreamDownloader) -> None:
    SEEN.append(("downloader", stream.name, b"".join(stream.chunks())))
"""


async def test_sdk_types_on_azurite(azurite, tmp_path: Path) -> None:
    suffix = uuid.uuid4().hex[:8]
    names = {"IN": f"sdkin-{suffix}", "ARCHIVE": f"sdkarc-{suffix}", "STREAMED": f"sdkdl-{suffix}"}
    settings = {"AzureWebJobsStorage": azurite.connection_string, "AzureFunctionsWebHost__hostid": f"sdk-{suffix}",
                **names}
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, data_dir=tmp_path / "data", storage="azure", clock=SystemClock(),
                           settings=settings) as host:
        seen = sys.modules["function_app"].SEEN
        await host.runtime.storage.blobs().create_container(names["ARCHIVE"])
        await host.blobs.upload(names["IN"], "a/report.txt", b"from the trigger blob")
        await host.blobs.upload(names["STREAMED"], "big.bin", b"\x07" * (5 * 1024 * 1024))
        await eventually(lambda: _now(len(seen) == 2), "both SDK-typed functions", timeout=20)
        client_run = next(s for s in seen if s[0] == "client")
        assert client_run == ("client", "a/report.txt", b"from the trigger blob", ["a/report.txt"])
        downloaded = next(s for s in seen if s[0] == "downloader")
        assert downloaded == ("downloader", "big.bin", b"\x07" * (5 * 1024 * 1024))
        for container in names.values():
            await host.runtime.storage.blobs().delete_container(container)


async def _now(value: object) -> object:
    return value

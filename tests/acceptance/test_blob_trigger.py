"""`examples/blobs` on a real `funchost start`: blob triggers on the polling and the Event Grid
source, and the SDK-typed function with its `BlobClient` and `ContainerClient`, on Azurite and on
the embedded storage through the host's own storage endpoints."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.acceptance.support import (
    RunningHost,
    copy_example,
    free_port,
    run_cli,
    start_funchost,
    stop_funchost,
    wait_until,
)
from tests.support.azurite import AzuriteUnavailable, get_server

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

pytestmark = pytest.mark.acceptance


def test_blob_uploaded_by_another_process_runs_the_polling_and_event_grid_triggers(tmp_path: Path) -> None:
    app = copy_example("blobs", tmp_path)
    data = tmp_path / "data"
    host = start_funchost(app, data_dir=data)
    try:
        source = tmp_path / "cat.png"
        source.write_bytes(b"\x89PNG" + b"x" * 200)
        where = ("--app", str(app), "--data", str(data))
        run_cli("blob", "upload", "images", "cat.png", str(source), *where)
        run_cli("blob", "upload", "uploads", "report.txt", str(source), *where)
        assert host.wait_for_output("Executed 'Functions.make_thumbnail' (Succeeded", timeout=20), host.output()
        wait_until(lambda: "cat-small.png" in run_cli("blob", "list", "thumbnails", *where),
                   "the thumbnail", 20, [host])
        assert host.wait_for_output("upload uploads/report.txt arrived through Event Grid", timeout=20), host.output()
        # a restart does not process the blob again (its receipt is in storage)
        code, output = stop_funchost(host)
        assert code == 0, output
        host = start_funchost(app, data_dir=data)
        assert not host.wait_for_output("Executing 'Functions.make_thumbnail'", timeout=5), host.output()
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


@pytest.mark.azurite
def test_sdk_typed_blob_function_on_azurite(tmp_path: Path) -> None:
    try:
        server = get_server()
    except AzuriteUnavailable as exc:
        pytest.fail(f"this test needs Azurite, which is unavailable: {exc}", pytrace=False)
    from azure.storage.blob import BlobServiceClient

    app = copy_example("blobs", tmp_path)
    env = {"AzureWebJobsStorage": server.connection_string,
           "AzureFunctionsWebHost__hostid": f"accept-{uuid.uuid4().hex[:8]}"}
    client = BlobServiceClient.from_connection_string(server.connection_string)
    for container in ("inbox", "archive", "uploads"):
        try:
            client.create_container(container)
        except Exception:  # noqa: BLE001 - exists from an earlier run on a shared Azurite
            pass
    host = start_funchost(app, "--storage", "azure", data_dir=tmp_path / "data", env=env)
    try:
        name = f"letter-{uuid.uuid4().hex[:6]}.txt"
        _archive_through_sdk_types(client, host, name)
        # the Event Grid source through its webhook, as a real subscription would call it
        upload = client.get_blob_client("uploads", name)
        etag = upload.upload_blob(b"evented", overwrite=True)["etag"].strip('"')
        event = {"id": "1", "eventType": "Microsoft.Storage.BlobCreated", "subject": "s", "eventTime": "t",
                 "data": {"eTag": etag, "blobType": "BlockBlob", "url": upload.url}}
        response = httpx.post(f"{host.base_url}/runtime/webhooks/blobs?functionName=Host.Functions.on_upload",
                              json=[event], headers={**host.admin_headers, "aeg-event-type": "Notification"})
        assert response.status_code == 202, response.text
        assert host.wait_for_output(f"upload uploads/{name} arrived through Event Grid", timeout=20), host.output()
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output
    assert server.account_key not in output


def test_sdk_typed_blob_function_on_embedded_storage_endpoints(tmp_path: Path) -> None:
    """The same unmodified app on embedded storage: its SDK clients reach the host's endpoints."""
    from azure.storage.blob import BlobServiceClient

    app = copy_example("blobs", tmp_path)
    ports = [free_port(), free_port(), free_port()]
    connection = (f"DefaultEndpointsProtocol=http;AccountName={DEVSTORE_ACCOUNT};AccountKey={DEVSTORE_KEY};"
                  f"BlobEndpoint=http://127.0.0.1:{ports[0]}/{DEVSTORE_ACCOUNT};"
                  f"QueueEndpoint=http://127.0.0.1:{ports[1]}/{DEVSTORE_ACCOUNT}")
    host = start_funchost(app, "--storage-ports", ",".join(map(str, ports)), data_dir=tmp_path / "data",
                          env={"AzureWebJobsStorage": connection})
    try:
        client = BlobServiceClient.from_connection_string(connection)
        for container in ("inbox", "archive"):
            client.create_container(container)
        _archive_through_sdk_types(client, host, "letter.txt")
        # the copy is in the embedded store itself, as the CLI sees it
        where = ("--app", str(app), "--data", str(tmp_path / "data"))
        assert "letter.txt" in run_cli("blob", "list", "archive", *where)
    finally:
        code, output = stop_funchost(host)
    assert code == 0, output


def _archive_through_sdk_types(client: Any, host: RunningHost, name: str) -> None:
    """A blob uploaded to `inbox` runs `archive` (BlobClient trigger, ContainerClient input)."""
    client.get_blob_client("inbox", name).upload_blob(b"dear archive", overwrite=True)
    wait_until(lambda: client.get_blob_client("archive", name).exists(), "the archived copy", 30, [host])
    assert client.get_blob_client("archive", name).download_blob().readall() == b"dear archive"
    assert host.wait_for_output(f"archived {name} (12 bytes)", timeout=10), host.output()

"""SDK-type blob bindings: what the host sends and how the package's converter binds it.

No storage call is made here (creating a `BlobClient` is local); the clients talking to storage
are exercised against Azurite in tests/integration/test_blob_sdk_types.py.
"""

from __future__ import annotations

import json

from funchost.testing import HostHarness, write_app

APP = """
import azure.functions as func
import azurefunctions.extensions.bindings.blob as blob

app = func.FunctionApp()
SEEN = []

@app.blob_trigger(arg_name="client", path="sdk/{name}", connection="AzureWebJobsStorage")
@app.blob_input(arg_name="box", path="archive", connection="AzureWebJobsStorage")
def typed(client: blob.BlobClient, box: blob.ContainerClient) -> None:
    SEEN.append((type(client).__module__, client.container_name, client.blob_name, box.container_name))

@app.blob_trigger(arg_name="client", path="skipped/{name}", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="out", path="copies/{name}", connection="AzureWebJobsStorage")
def skip_rule(client: blob.BlobClient, out: func.Out[bytes]) -> None:
    SEEN.append(("never", client))
"""


def seen_of(host: HostHarness) -> list:
    return host.runtime.functions["typed"].func.__globals__["SEEN"]


async def test_sdk_clients_name_the_trigger_blob_and_the_input_container(tmp_path):
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        assert host.runtime.function_errors.of("typed") == []
        await host.blobs.upload("sdk", "dir/file.txt", b"content stays in storage")
        await host.advance(2)
        await host.wait_until_idle()
        assert seen_of(host) == [("azure.storage.blob._blob_client", "sdk", "dir/file.txt", "archive")]


async def test_another_bindings_expression_makes_the_host_send_bytes(tmp_path):
    """The host's skip rule: an SDK-typed trigger next to `copies/{name}` fails as on Azure."""
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        await host.blobs.upload("skipped", "x.txt", b"x")
        for _ in range(6):
            await host.advance(2)
        await host.wait_until_idle()
        assert seen_of(host) == []
        [poisoned] = await host.blobs.poison()
        assert poisoned["FunctionId"] == "Host.Functions.skip_rule"


def test_model_binding_data_content():
    from funchost.invocation.deferred import blob_binding_data

    datum = blob_binding_data(None, "images", "in/cat.png")
    assert datum.type == "model_binding_data"
    assert (datum.value.version, datum.value.source, datum.value.content_type) == \
        ("1.0", "AzureStorageBlobs", "application/json")
    assert json.loads(datum.value.content) == {"Connection": "AzureWebJobsStorage", "ContainerName": "images",
                                               "BlobName": "in/cat.png"}


async def test_sdk_clients_on_embedded_storage_without_endpoints_are_named_once(tmp_path, caplog):
    """The endpoints are off in the harness: the trigger's start and the first input bind say so."""
    from funchost.bindings.blob_sdk_reach import unreachable_reason

    app = write_app(tmp_path / "app", APP)
    with caplog.at_level("WARNING", logger="funchost.blobs"):
        async with HostHarness(app) as host:
            await host.blobs.upload("sdk", "a.txt", b"a")
            await host.advance(2)
            await host.wait_until_idle()
            typed = host.runtime.functions["typed"]
            assert unreachable_reason(typed, host.runtime) == (
                "its SDK-type blob parameter 'box' connects to http://127.0.0.1:10000/devstoreaccount1 "
                "(setting 'AzureWebJobsStorage'), but this host serves no storage endpoints "
                "(FUNCHOST_STORAGE_ENDPOINTS is off), so its storage calls will fail; see docs/storage-endpoints.md")
    warnings = [r.getMessage() for r in caplog.records if "'typed'" in r.getMessage()]
    assert len(warnings) == 1 and "serves no storage endpoints" in warnings[0]


async def test_sdk_clients_pointing_elsewhere_than_the_served_endpoint(tmp_path):
    from funchost.bindings.blob_sdk_reach import unreachable_reason

    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app) as host:
        typed, storage = host.runtime.functions["typed"], host.runtime.storage
        storage.blob_origin = "http://127.0.0.1:20000"  # what the endpoints service sets when it serves
        assert unreachable_reason(typed, host.runtime) == (
            "its SDK-type blob parameter 'box' connects to http://127.0.0.1:10000/devstoreaccount1 "
            "(setting 'AzureWebJobsStorage'), but the embedded storage's Blob endpoint is "
            "http://127.0.0.1:20000/devstoreaccount1: give the connection string that BlobEndpoint "
            "(docs/storage-endpoints.md)")
        storage.blob_origin = "http://127.0.0.1:10000"
        assert unreachable_reason(typed, host.runtime) is None
        storage.blob_origin = None

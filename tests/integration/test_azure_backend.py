"""What only the SDK path needs: connection-string forms, SAS, base64 interop, identity config.

Connection forms that point at Azure itself are checked by the endpoint and credential they
produce (nothing calls Azure); every form that can reach Azurite is exercised against it.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential
from azure.storage.blob import AccountSasPermissions, ResourceTypes, Services, generate_account_sas
from azure.storage.queue import TextBase64DecodePolicy, TextBase64EncodePolicy
from azure.storage.queue.aio import QueueClient
from tests.support.azurite import AzuriteServer

from funchost.clock import SystemClock
from funchost.errors import ConfigError, StorageError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_KEY
from funchost.storage.azure import AzureStorage
from funchost.storage.azure.errors import redact


def storage(values: dict[str, str]) -> AzureStorage:
    return AzureStorage(AppSettings(values, environ={}), SystemClock())


# --- connection forms that resolve without a server ------------------------------------------------


def test_use_development_storage_maps_to_the_well_known_azurite_endpoints() -> None:
    backend = storage({"AzureWebJobsStorage": "UseDevelopmentStorage=true"})
    queue, blob = backend.endpoint(None, "queue"), backend.endpoint(None, "blob")
    assert queue.account_url == "http://127.0.0.1:10001/devstoreaccount1"
    assert blob.account_url == "http://127.0.0.1:10000/devstoreaccount1"
    assert isinstance(queue.credential, AzureNamedKeyCredential)
    assert queue.credential.named_key == ("devstoreaccount1", DEVSTORE_KEY)


def test_development_storage_proxy_uri_replaces_the_host() -> None:
    value = "UseDevelopmentStorage=True;DevelopmentStorageProxyUri=http://azurite.internal"
    backend = storage({"AzureWebJobsStorage": value})
    assert backend.endpoint(None, "queue").account_url == "http://azurite.internal:10001/devstoreaccount1"


def test_account_key_string_builds_the_public_endpoints_with_the_suffix() -> None:
    value = "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5;EndpointSuffix=core.chinacloudapi.cn"
    backend = storage({"Orders": value})
    assert backend.endpoint("Orders", "queue").account_url == "https://acme.queue.core.chinacloudapi.cn"
    assert backend.endpoint("Orders", "blob").account_url == "https://acme.blob.core.chinacloudapi.cn"
    assert backend.queues("Orders").account_name == "acme"


def test_azurewebjobs_prefixed_setting_is_found_like_the_host_does() -> None:
    backend = storage({"AzureWebJobsOrders": "AccountName=acme;AccountKey=a2V5"})
    assert backend.endpoint("Orders", "blob").account_url == "https://acme.blob.core.windows.net"


def test_sas_connection_string_uses_a_sas_credential() -> None:
    value = "BlobEndpoint=https://acme.blob.core.windows.net/;SharedAccessSignature=sv=2024&sig=abc%3D"
    endpoint = storage({"AzureWebJobsStorage": value}).endpoint(None, "blob")
    assert endpoint.account_url == "https://acme.blob.core.windows.net"
    assert isinstance(endpoint.credential, AzureSasCredential)
    assert endpoint.credential.signature == "sv=2024&sig=abc%3D"
    assert "sig=" not in repr(endpoint)


def test_a_string_without_the_requested_service_is_a_config_error() -> None:
    backend = storage({"AzureWebJobsStorage": "BlobEndpoint=https://acme.blob.core.windows.net"})
    with pytest.raises(ConfigError, match="queue endpoint"):
        backend.queues()


def test_missing_connection_setting_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match="'Missing'"):
        storage({}).queues("Missing")


def test_documents_are_embedded_only() -> None:
    with pytest.raises(ConfigError, match="embedded"):
        storage({}).documents()


# --- identity-based connections (resolved, never called) -----------------------------------------


async def test_identity_settings_give_service_uris_and_default_azure_credential() -> None:
    from azure.identity.aio import DefaultAzureCredential

    backend = storage(
        {
            "Jobs__queueServiceUri": "https://acme.queue.core.windows.net",
            "Jobs__blobServiceUri": "https://acme.blob.core.windows.net/",
        }
    )
    queues, blobs = backend.queues("Jobs"), backend.blobs("Jobs")
    assert queues.endpoint.account_url == "https://acme.queue.core.windows.net"
    assert blobs.endpoint.account_url == "https://acme.blob.core.windows.net"
    assert queues.account_name == blobs.account_name == "acme"
    assert queues.endpoint.identity and isinstance(queues.endpoint.credential, DefaultAzureCredential)
    await backend.aclose()


async def test_identity_account_name_and_service_uri_alias() -> None:
    backend = storage({"Jobs__accountName": "acme", "Files__serviceUri": "https://files.blob.core.windows.net"})
    assert backend.endpoint("Jobs", "queue").account_url == "https://acme.queue.core.windows.net"
    assert backend.endpoint("Jobs", "blob").account_url == "https://acme.blob.core.windows.net"
    assert backend.endpoint("Files", "blob").account_url == "https://files.blob.core.windows.net"
    await backend.aclose()


async def test_identity_client_secret_selects_a_service_principal() -> None:
    from azure.identity.aio import ClientSecretCredential

    backend = storage(
        {
            "Jobs__queueServiceUri": "https://acme.queue.core.windows.net",
            "Jobs__tenantId": "00000000-0000-0000-0000-000000000001",
            "Jobs__clientId": "00000000-0000-0000-0000-000000000002",
            "Jobs__clientSecret": "not-a-real-secret",
        }
    )
    queues = backend.queues("Jobs")
    assert isinstance(queues.endpoint.credential, ClientSecretCredential)
    assert "not-a-real-secret" not in repr(queues) + repr(queues.endpoint)
    await backend.aclose()


def test_identity_client_secret_without_tenant_is_a_config_error() -> None:
    backend = storage({"Jobs__queueServiceUri": "https://a.queue.core.windows.net", "Jobs__clientSecret": "x"})
    with pytest.raises(ConfigError, match="__tenantId"):
        backend.queues("Jobs")


def test_redact_masks_signatures_and_keys() -> None:
    text = "GET https://a/q?sv=1&sig=SECRET%3D&se=2 AccountKey=KEY123;SharedAccessSignature=sv=1"
    masked = redact(text)
    assert "SECRET" not in masked and "KEY123" not in masked and "sv=1&sig=***" in masked


# --- against Azurite ---------------------------------------------------------------------------------


@pytest.fixture
async def azurite_backend(azurite: AzuriteServer) -> AsyncIterator[AzureStorage]:
    backend = storage({"AzureWebJobsStorage": azurite.connection_string})
    yield backend
    await backend.aclose()


@pytest.mark.azurite
async def test_explicit_azurite_connection_string_round_trip(azurite_backend: AzureStorage) -> None:
    queues = azurite_backend.queues()
    await queues.create_queue("conn-forms")
    await queues.put_message("conn-forms", "hello")
    [message] = await queues.get_messages("conn-forms")
    assert message.content == "hello" and message.dequeue_count == 1
    await queues.delete_queue("conn-forms")


def _account_sas(server: AzuriteServer, permission: AccountSasPermissions) -> str:
    return generate_account_sas(
        server.account_name,
        server.account_key,
        resource_types=ResourceTypes(service=True, container=True, object=True),
        permission=permission,
        expiry=datetime.now(UTC) + timedelta(hours=1),
        services=Services(blob=True, queue=True),
    )


def _sas_string(server: AzuriteServer, sas: str) -> str:
    return f"BlobEndpoint={server.blob_endpoint};QueueEndpoint={server.queue_endpoint};SharedAccessSignature={sas}"


@pytest.mark.azurite
async def test_account_sas_connection_string_works_for_queues_and_blobs(azurite: AzuriteServer) -> None:
    full = AccountSasPermissions(read=True, write=True, delete=True, list=True, add=True, create=True,
                                 update=True, process=True)  # fmt: skip
    backend = storage({"AzureWebJobsStorage": _sas_string(azurite, _account_sas(azurite, full))})
    try:
        queues, blobs = backend.queues(), backend.blobs()
        await queues.create_queue("sas-queue")
        await queues.put_message("sas-queue", "via sas")
        assert [m.content for m in await queues.get_messages("sas-queue")] == ["via sas"]
        await blobs.create_container("sas-container")
        await blobs.upload_blob("sas-container", "a.txt", b"abc")
        data, props = await blobs.download_blob("sas-container", "a.txt")
        assert data == b"abc" and props.size == 3
        await queues.delete_queue("sas-queue")
        await blobs.delete_container("sas-container")
    finally:
        await backend.aclose()


@pytest.mark.azurite
async def test_read_only_sas_is_refused_with_a_403_whose_message_hides_the_signature(
    azurite: AzuriteServer, azurite_backend: AzureStorage
) -> None:
    await azurite_backend.blobs().create_container("sas-readonly")
    sas = _account_sas(azurite, AccountSasPermissions(read=True, list=True))
    backend = storage({"AzureWebJobsStorage": _sas_string(azurite, sas)})
    try:
        with pytest.raises(StorageError) as caught:
            await backend.blobs().upload_blob("sas-readonly", "a.txt", b"abc")
        assert caught.value.status == 403
        signature = sas.split("sig=")[1].split("&")[0]
        assert signature not in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__
    finally:
        await backend.aclose()
        await azurite_backend.blobs().delete_container("sas-readonly")


# --- message encoding interop ------------------------------------------------------------------------


def _sdk_queue(server: AzuriteServer, name: str, **policies: object) -> QueueClient:
    return QueueClient.from_connection_string(server.connection_string, name, **policies)  # type: ignore[arg-type]


@pytest.mark.azurite
async def test_messages_from_a_base64_sdk_client_are_read_as_their_wire_text(
    azurite: AzuriteServer, azurite_backend: AzureStorage
) -> None:
    queues = azurite_backend.queues()
    await queues.create_queue("interop-b64")
    async with _sdk_queue(azurite, "interop-b64", message_encode_policy=TextBase64EncodePolicy()) as sdk:
        await sdk.send_message("héllo <wörld>")
    [message] = await queues.get_messages("interop-b64")
    # The service holds base64 text; funchost's trigger (messageEncoding=base64) decodes it.
    assert base64.b64decode(message.content).decode("utf-8") == "héllo <wörld>"
    await queues.delete_queue("interop-b64")


@pytest.mark.azurite
async def test_plain_text_from_an_sdk_client_is_read_unchanged(
    azurite: AzuriteServer, azurite_backend: AzureStorage
) -> None:
    queues = azurite_backend.queues()
    await queues.create_queue("interop-plain")
    async with _sdk_queue(azurite, "interop-plain") as sdk:
        await sdk.send_message('{"order": 1, "note": "a & b < c"}')
    [message] = await queues.get_messages("interop-plain")
    assert message.content == '{"order": 1, "note": "a & b < c"}'
    await queues.delete_queue("interop-plain")


@pytest.mark.azurite
async def test_base64_text_put_by_funchost_is_decoded_by_a_base64_sdk_client(
    azurite: AzuriteServer, azurite_backend: AzureStorage
) -> None:
    queues = azurite_backend.queues()
    await queues.create_queue("interop-out")
    await queues.put_message("interop-out", base64.b64encode("straße".encode()).decode("ascii"))
    async with _sdk_queue(azurite, "interop-out", message_decode_policy=TextBase64DecodePolicy()) as sdk:
        received = [m async for m in sdk.receive_messages(max_messages=1)]
    assert [m.content for m in received] == ["straße"]
    await queues.delete_queue("interop-out")


@pytest.mark.azurite
async def test_blob_subscribe_is_a_no_op_returning_an_unsubscribe(azurite_backend: AzureStorage) -> None:
    blobs = azurite_backend.blobs()
    seen: list[object] = []
    unsubscribe = blobs.subscribe(seen.append)
    await blobs.create_container("subscribe-noop")
    await blobs.upload_blob("subscribe-noop", "a.txt", b"x")
    unsubscribe()
    assert seen == []  # events come from Event Grid on Azure, not from this process
    await blobs.delete_container("subscribe-noop")


# --- the queue trigger over the SDK path -------------------------------------------------------------

TRIGGER_APP = """
import azure.functions as func

app = func.FunctionApp()


@app.queue_trigger(arg_name="msg", queue_name="{queue}", connection="AzureWebJobsStorage")
@app.blob_output(arg_name="out", path="{queue}/{{id}}.txt", connection="AzureWebJobsStorage")
def seen(msg: func.QueueMessage, out: func.Out[str]) -> None:
    out.set(msg.get_body().decode("utf-8"))
"""


@pytest.mark.azurite
@pytest.mark.parametrize(
    ("encoding", "policy"),
    [("base64", TextBase64EncodePolicy()), ("none", None)],
    ids=["base64-sender", "plain-sender"],
)
async def test_trigger_reads_sdk_messages_under_the_matching_message_encoding(
    azurite: AzuriteServer, tmp_path, encoding: str, policy: object
) -> None:  # type: ignore[no-untyped-def]
    import asyncio
    import uuid

    from funchost.testing.harness import HostHarness, write_app

    queue = f"enc-{encoding}-{uuid.uuid4().hex[:8]}"
    text = "héllo <wörld> & 42"
    kwargs = {"message_encode_policy": policy} if policy is not None else {}
    async with _sdk_queue(azurite, queue, **kwargs) as sdk:
        await sdk.create_queue()
        await sdk.send_message(text)
    settings = {"AzureWebJobsStorage": azurite.connection_string}
    app = write_app(tmp_path / "app", TRIGGER_APP.format(queue=queue), settings=settings,
                    host_json={"version": "2.0", "extensions": {"queues": {"messageEncoding": encoding}}})  # fmt: skip
    harness = HostHarness(app, data_dir=tmp_path / "data", storage="azure", settings=settings)
    backend = storage(settings)
    try:
        await harness.start()
        blobs = backend.blobs()
        found: list[bytes] = []
        for _ in range(100):  # bounded: the trigger polls at start, Azurite answers in real time
            if await blobs.container_exists(queue):
                page = await blobs.list_blobs(queue)
                found = [(await blobs.download_blob(queue, b.name))[0] for b in page.items]
                if found:
                    break
            await asyncio.sleep(0.1)
        assert [f.decode("utf-8") for f in found] == [text]
        assert await backend.queues().queue_exists(f"{queue}-poison") is False
    finally:
        await harness.stop()
        await backend.queues().delete_queue(queue)
        if await backend.blobs().container_exists(queue):
            await backend.blobs().delete_container(queue)
        await backend.aclose()

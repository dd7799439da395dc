"""Shared Key, Shared Key Lite, SAS and public access as the service checks them."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import timedelta
from email.utils import format_datetime

import httpx
import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ResourceNotFoundError
from azure.data.tables import TableSasPermissions, generate_table_sas
from azure.data.tables.aio import TableClient
from azure.storage.blob import (
    AccessPolicy,
    AccountSasPermissions,
    BlobSasPermissions,
    ContainerSasPermissions,
    ResourceTypes,
    generate_account_sas,
    generate_blob_sas,
    generate_container_sas,
)
from azure.storage.blob.aio import BlobClient, BlobServiceClient, ContainerClient
from azure.storage.queue import QueueSasPermissions, generate_queue_sas
from azure.storage.queue.aio import QueueClient

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

WRONG_KEY = base64.b64encode(b"k" * 64).decode()


def wrong_key_string(served) -> str:  # type: ignore[no-untyped-def]
    return served.connection_string.replace(DEVSTORE_KEY, WRONG_KEY)


async def test_wrong_key_is_403_authentication_failed_on_every_service(served):
    bad = wrong_key_string(served)
    async with BlobServiceClient.from_connection_string(bad) as blobs:
        with pytest.raises(ClientAuthenticationError) as info:
            await blobs.create_container("c1")
    assert info.value.status_code == 403 and info.value.error_code == "AuthenticationFailed"
    async with QueueClient.from_connection_string(bad, "q1") as queue:
        with pytest.raises(ClientAuthenticationError):
            await queue.create_queue()
    async with TableClient.from_connection_string(bad, "t1") as table:
        with pytest.raises(ClientAuthenticationError):
            await table.create_table()
    assert await served.blobs(DEVSTORE_ACCOUNT).list_containers() == []


async def test_right_key_with_awkward_names_and_metadata_order(served):
    # x-ms-meta-a_b sorts before x-ms-meta-a1 in the service's collation (not by code point).
    async with BlobServiceClient.from_connection_string(served.connection_string) as blobs:
        container = await blobs.create_container("awkward")
        blob = container.get_blob_client("dir with space/ünïcode+plus%percent.txt")
        await blob.upload_blob(b"x", metadata={"a_b": "1", "a1": "2", "foobar": "3", "Zed": "4"})
        assert await (await blob.download_blob()).readall() == b"x"
        assert (await blob.get_blob_properties()).metadata == {"a_b": "1", "a1": "2", "foobar": "3", "Zed": "4"}  # case kept
        names = [b.name async for b in container.list_blobs(include=["metadata"])]
    assert names == ["dir with space/ünïcode+plus%percent.txt"]


async def test_no_credentials_and_unknown_account(served):
    async with httpx.AsyncClient() as client:
        anonymous = await client.get(f"{served.url('queue')}?comp=list")
        unknown = await client.get(served.url("queue").replace(DEVSTORE_ACCOUNT, "nosuchaccount") + "?comp=list")
    assert (anonymous.status_code, anonymous.headers["x-ms-error-code"]) == (401, "NoAuthenticationInformation")
    assert (unknown.status_code, unknown.headers["x-ms-error-code"]) == (404, "ResourceNotFound")
    assert "<Code>NoAuthenticationInformation</Code>" in anonymous.text


def _lite(served, path: str, date: str) -> str:  # type: ignore[no-untyped-def]
    key = base64.b64decode(DEVSTORE_KEY)
    string = f"{date}\n/{DEVSTORE_ACCOUNT}/{DEVSTORE_ACCOUNT}/{path}"
    return base64.b64encode(hmac.new(key, string.encode(), hashlib.sha256).digest()).decode()


async def test_table_shared_key_lite(served, clock):
    await served.tables(DEVSTORE_ACCOUNT).create_table("lite")
    date = format_datetime(clock.now(), usegmt=True)
    headers = {"x-ms-date": date, "x-ms-version": "2019-02-02", "Accept": "application/json;odata=nometadata",
               "Authorization": f"SharedKeyLite {DEVSTORE_ACCOUNT}:{_lite(served, 'Tables', date)}"}
    async with httpx.AsyncClient() as client:
        ok = await client.get(f"{served.url('table')}/Tables", headers=headers)
        headers["Authorization"] = f"SharedKeyLite {DEVSTORE_ACCOUNT}:{_lite(served, 'Other', date)}"
        bad = await client.get(f"{served.url('table')}/Tables", headers=headers)
    assert ok.status_code == 200 and ok.json() == {"value": [{"TableName": "lite"}]}
    assert (bad.status_code, bad.headers["x-ms-error-code"]) == (403, "AuthenticationFailed")
    assert bad.json()["odata.error"]["code"] == "AuthenticationFailed"


# -- SAS ------------------------------------------------------------------------------------------


async def _blob(served, name: str = "doc.txt") -> None:  # type: ignore[no-untyped-def]
    async with BlobServiceClient.from_connection_string(served.connection_string) as blobs:
        container = await blobs.create_container("sas")
        await container.upload_blob(name, b"secret")


async def test_account_sas_permissions_services_and_resource_types(served, clock):
    await _blob(served)
    expiry = clock.now() + timedelta(hours=1)
    read_only = generate_account_sas(DEVSTORE_ACCOUNT, DEVSTORE_KEY, ResourceTypes(object=True),
                                     AccountSasPermissions(read=True), expiry)
    blob = BlobClient(served.url("blob"), "sas", "doc.txt", credential=read_only)
    async with blob:
        assert await (await blob.download_blob()).readall() == b"secret"
        with pytest.raises(HttpResponseError) as info:
            await blob.upload_blob(b"x", overwrite=True)
    assert (info.value.status_code, info.value.error_code) == (403, "AuthorizationPermissionMismatch")
    async with ContainerClient(served.url("blob"), "sas", credential=read_only) as container:
        with pytest.raises(HttpResponseError) as info:
            [b async for b in container.list_blobs()]
    assert info.value.error_code == "AuthorizationResourceTypeMismatch"
    queue_only = generate_account_sas(DEVSTORE_ACCOUNT, DEVSTORE_KEY, ResourceTypes(object=True),
                                      AccountSasPermissions(read=True), expiry, services="q")
    async with BlobClient(served.url("blob"), "sas", "doc.txt", credential=queue_only) as blob:
        with pytest.raises(HttpResponseError) as info:
            await blob.download_blob()
    assert info.value.error_code == "AuthorizationServiceMismatch"


async def test_service_sas_expiry_on_the_server_clock(served, clock):
    await _blob(served)
    token = generate_blob_sas(DEVSTORE_ACCOUNT, "sas", "doc.txt", account_key=DEVSTORE_KEY,
                              permission=BlobSasPermissions(read=True), expiry=clock.now() + timedelta(minutes=5))
    async with BlobClient(served.url("blob"), "sas", "doc.txt", credential=token) as blob:
        assert await (await blob.download_blob()).readall() == b"secret"
        await clock.advance(301)
        with pytest.raises(ClientAuthenticationError) as info:
            await blob.download_blob()
    assert info.value.error_code == "AuthenticationFailed"
    async with BlobClient(served.url("blob"), "sas", "other.txt", credential=token) as other:
        with pytest.raises(ClientAuthenticationError):  # signed for doc.txt only
            await other.download_blob()


async def test_tampered_ip_and_protocol_rules(served, clock):
    await _blob(served)
    expiry = clock.now() + timedelta(hours=1)

    def sas(**kwargs: object) -> str:
        return generate_blob_sas(DEVSTORE_ACCOUNT, "sas", "doc.txt", account_key=DEVSTORE_KEY,
                                 permission=BlobSasPermissions(read=True), expiry=expiry, **kwargs)

    async with httpx.AsyncClient() as client:
        url = f"{served.url('blob')}/sas/doc.txt?"
        tampered = await client.get(url + sas().replace("sp=r", "sp=rw"))
        elsewhere = await client.get(url + sas(ip="10.1.2.3"))
        https_only = await client.get(url + sas(protocol="https"))
        local = await client.get(url + sas(ip="127.0.0.1"))
    assert tampered.headers["x-ms-error-code"] == "AuthenticationFailed"
    assert elsewhere.headers["x-ms-error-code"] == "AuthorizationSourceIPMismatch"
    assert https_only.headers["x-ms-error-code"] == "AuthorizationProtocolMismatch"
    assert local.status_code == 200 and local.content == b"secret"


async def test_stored_access_policy(served, clock):
    await _blob(served)
    async with ContainerClient.from_connection_string(served.connection_string, "sas") as container:
        policy = AccessPolicy(permission=ContainerSasPermissions(read=True, list=True),
                              expiry=clock.now() + timedelta(hours=1))
        await container.set_container_access_policy({"readers": policy})
    token = generate_container_sas(DEVSTORE_ACCOUNT, "sas", account_key=DEVSTORE_KEY, policy_id="readers")
    async with ContainerClient(served.url("blob"), "sas", credential=token) as container:
        assert [b.name async for b in container.list_blobs()] == ["doc.txt"]
    unknown = generate_container_sas(DEVSTORE_ACCOUNT, "sas", account_key=DEVSTORE_KEY, policy_id="nobody")
    async with ContainerClient(served.url("blob"), "sas", credential=unknown) as container:
        with pytest.raises(ClientAuthenticationError):
            [b async for b in container.list_blobs()]


async def test_queue_and_table_sas(served, clock):
    expiry = clock.now() + timedelta(hours=1)
    async with QueueClient.from_connection_string(served.connection_string, "work") as queue:
        await queue.create_queue()
    add_only = generate_queue_sas(DEVSTORE_ACCOUNT, "work", DEVSTORE_KEY, permission=QueueSasPermissions(add=True),
                                  expiry=expiry)
    async with QueueClient(served.url("queue"), "work", credential=add_only) as queue:
        await queue.send_message("hello")
        with pytest.raises(HttpResponseError) as info:
            await queue.receive_message()
    assert info.value.error_code == "AuthorizationPermissionMismatch"
    tables = served.tables(DEVSTORE_ACCOUNT)
    await tables.create_table("readable")
    await tables.insert_entity("readable", "p", "r", {})
    from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential

    token = generate_table_sas(AzureNamedKeyCredential(DEVSTORE_ACCOUNT, DEVSTORE_KEY), "readable",
                               permission=TableSasPermissions(read=True), expiry=expiry)
    async with TableClient(served.url("table"), "readable", credential=AzureSasCredential(token)) as table:
        assert [e["RowKey"] async for e in table.list_entities()] == ["r"]
        with pytest.raises(HttpResponseError) as info:
            await table.create_entity({"PartitionKey": "p", "RowKey": "new"})
    assert info.value.response.headers["x-ms-error-code"] == "AuthorizationPermissionMismatch"


# -- public access --------------------------------------------------------------------------------


async def test_container_public_access_levels(served):
    async with BlobServiceClient.from_connection_string(served.connection_string) as blobs:
        for name, level in (("private", None), ("blobonly", "blob"), ("everything", "container")):
            container = await blobs.create_container(name, public_access=level)
            await container.upload_blob("a.txt", b"public?")
        props = await blobs.get_container_client("blobonly").get_container_properties()
    assert props.public_access == "blob"
    async with httpx.AsyncClient() as client:
        base = served.url("blob")
        assert (await client.get(f"{base}/blobonly/a.txt")).content == b"public?"
        assert (await client.get(f"{base}/everything/a.txt")).content == b"public?"
        listing = await client.get(f"{base}/everything?restype=container&comp=list")
        assert listing.status_code == 200 and "<Name>a.txt</Name>" in listing.text
        for url in (f"{base}/private/a.txt", f"{base}/blobonly?restype=container&comp=list",
                    f"{base}/private?restype=container"):
            hidden = await client.get(url)
            assert (hidden.status_code, hidden.headers["x-ms-error-code"]) == (404, "ResourceNotFound"), url
        write = await client.put(f"{base}/everything/b.txt", content=b"x", headers={"x-ms-blob-type": "BlockBlob"})
        assert write.status_code == 401
    async with ContainerClient(served.url("blob"), "private") as anonymous:
        with pytest.raises(ResourceNotFoundError):
            await anonymous.get_blob_client("a.txt").download_blob()


async def test_queue_shared_key_lite(served, clock):
    await served.queues(DEVSTORE_ACCOUNT).create_queue("litequeue")
    date = format_datetime(clock.now(), usegmt=True)
    key = base64.b64decode(DEVSTORE_KEY)
    # VERB, Content-MD5, Content-Type, Date, the x-ms-* headers, /account/path (+ ?comp=)
    string = f"GET\n\n\n\nx-ms-date:{date}\nx-ms-version:2026-02-06\n/{DEVSTORE_ACCOUNT}/{DEVSTORE_ACCOUNT}/litequeue?comp=metadata"
    signature = base64.b64encode(hmac.new(key, string.encode(), hashlib.sha256).digest()).decode()
    headers = {"x-ms-date": date, "x-ms-version": "2026-02-06",
               "Authorization": f"SharedKeyLite {DEVSTORE_ACCOUNT}:{signature}"}
    async with httpx.AsyncClient() as client:
        response = await client.get(f"{served.url('queue')}/litequeue?comp=metadata", headers=headers)
    assert (response.status_code, response.headers["x-ms-approximate-messages-count"]) == (200, "0")


async def test_a_second_account_of_the_app(tmp_path):
    from tests.support.endpoints import serve_endpoints

    from funchost.storage_endpoints.accounts import Accounts

    other_key = base64.b64encode(b"o" * 64).decode()
    setting = f"DefaultEndpointsProtocol=http;AccountName=otheracct;AccountKey={other_key}"
    async with serve_endpoints(tmp_path / "data", accounts=Accounts.from_settings({"Other": setting})) as served:
        connection = served.connection_string_for("otheracct", other_key)
        async with BlobServiceClient.from_connection_string(connection) as blobs:
            await (await blobs.create_container("mine")).upload_blob("a.txt", b"other account")
        # the embedded account a binding with connection="Other" uses
        data, _ = await served.blobs("otheracct").download_blob("mine", "a.txt")
        assert data == b"other account"
        assert await served.blobs(DEVSTORE_ACCOUNT).list_containers() == []
        async with BlobServiceClient.from_connection_string(connection.replace(other_key, DEVSTORE_KEY)) as wrong:
            with pytest.raises(ClientAuthenticationError):  # the development key does not open this account
                await wrong.create_container("nope")

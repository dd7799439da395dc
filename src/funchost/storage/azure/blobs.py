"""`BlobService` (block blobs) over the official async SDK (`azure.storage.blob.aio`).

`subscribe()` is a no-op here: on Azure, blob-created / blob-deleted events come from the
storage account's real Event Grid system topic, not from this process (docs/azure-backend.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobProperties as SdkBlobProperties
from azure.storage.blob import ContentSettings
from azure.storage.blob.aio import BlobClient, BlobLeaseClient, BlobServiceClient

from funchost.storage.azure.endpoints import Endpoint
from funchost.storage.azure.errors import translated
from funchost.storage.blobs import BlobChangeListener, BlobListPage, BlobProperties

_DEFAULT_CONTENT_TYPE = "application/octet-stream"


def _aware(value: datetime | None) -> datetime:
    if value is None:
        return datetime.now(UTC)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def _enum_text(value: Any, default: str) -> str:
    if value is None:
        return default
    return str(getattr(value, "value", value))


def _properties(container: str, props: SdkBlobProperties) -> BlobProperties:
    settings = props.content_settings
    md5 = settings.content_md5 if settings is not None else None
    return BlobProperties(
        container=container,
        name=props.name,
        size=int(props.size or 0),
        etag=_quoted(props.etag),
        content_type=(settings.content_type if settings is not None else None) or _DEFAULT_CONTENT_TYPE,
        content_md5=bytes(md5) if md5 else None,
        last_modified=_aware(props.last_modified),
        creation_time=_aware(props.creation_time or props.last_modified),
        metadata=dict(props.metadata or {}),
        version_id=props.version_id,
        lease_state=_enum_text(props.lease.state, "available"),
        lease_status=_enum_text(props.lease.status, "unlocked"),
        blob_type=_enum_text(props.blob_type, "BlockBlob"),
    )


def _total_size(content_range: str | None) -> int | None:
    """`bytes 1-2/5` -> 5."""
    if not content_range or "/" not in content_range:
        return None
    total = content_range.rsplit("/", 1)[1].strip()
    return int(total) if total.isdigit() else None


def _quoted(etag: str) -> str:
    # Get/Put return the ETag header quoted; List Blobs returns it bare. Always quoted here.
    return etag if etag.startswith('"') else f'"{etag}"'


def _if_match(etag: str | None) -> dict[str, Any]:
    return {"etag": etag, "match_condition": MatchConditions.IfNotModified} if etag else {}


class AzureBlobService:
    """One storage account's blob service, reached through `BlobServiceClient`."""

    def __init__(self, endpoint: Endpoint, **client_options: Any) -> None:
        self.account_name = endpoint.account_name
        self.endpoint = endpoint
        self._client = BlobServiceClient(endpoint.account_url, credential=endpoint.credential, **client_options)

    def _blob(self, container: str, name: str) -> BlobClient:
        return self._client.get_blob_client(container, name)

    # --- containers -----------------------------------------------------------------------------

    async def create_container(self, name: str, *, exist_ok: bool = False, versioning: bool = False) -> bool:
        # `versioning` cannot be switched on through the data plane: on Azure it is an account
        # setting (version ids are reported when the account has it on).
        with translated():
            try:
                await self._client.get_container_client(name).create_container()
            except ResourceExistsError:
                if exist_ok:
                    return False
                raise
        return True

    async def delete_container(self, name: str) -> None:
        with translated():
            await self._client.get_container_client(name).delete_container()

    async def container_exists(self, name: str) -> bool:
        with translated():
            return bool(await self._client.get_container_client(name).exists())

    async def list_containers(self, prefix: str | None = None) -> list[str]:
        with translated():
            return [c.name async for c in self._client.list_containers(name_starts_with=prefix)]

    # --- blobs ----------------------------------------------------------------------------------

    async def upload_blob(
        self,
        container: str,
        name: str,
        data: bytes,
        *,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        overwrite: bool = True,
        if_match: str | None = None,
        lease_id: str | None = None,
    ) -> BlobProperties:
        blob = self._blob(container, name)
        with translated():
            await blob.upload_blob(
                data,
                overwrite=overwrite,
                content_settings=ContentSettings(content_type=content_type or _DEFAULT_CONTENT_TYPE),
                metadata=dict(metadata) if metadata else None,
                lease=lease_id,  # type: ignore[arg-type]  # the SDK takes a lease id string too
                **_if_match(if_match),
            )
            return _properties(container, await blob.get_blob_properties())

    async def download_blob(
        self,
        container: str,
        name: str,
        *,
        offset: int = 0,
        length: int | None = None,
        version_id: str | None = None,
        if_match: str | None = None,
    ) -> tuple[bytes, BlobProperties]:
        ranged = offset > 0 or length is not None
        with translated():
            stream = await self._blob(container, name).download_blob(
                offset=offset if ranged else None,
                length=length,
                version_id=version_id,
                **_if_match(if_match),
            )
            data = await stream.readall()
        props = stream.properties
        props.name = name
        total = _total_size(props.content_range)
        if total is not None:
            props.size = total  # the blob's size, not the range's (as get_blob_properties reports it)
        return bytes(data), _properties(container, props)

    async def get_blob_properties(
        self, container: str, name: str, *, version_id: str | None = None
    ) -> BlobProperties:
        with translated():
            props = await self._blob(container, name).get_blob_properties(version_id=version_id)
        return _properties(container, props)

    async def set_blob_metadata(
        self, container: str, name: str, metadata: Mapping[str, str]
    ) -> BlobProperties:
        blob = self._blob(container, name)
        with translated():
            await blob.set_blob_metadata(metadata=dict(metadata))
            return _properties(container, await blob.get_blob_properties())

    async def delete_blob(
        self, container: str, name: str, *, if_match: str | None = None, lease_id: str | None = None
    ) -> None:
        with translated():
            await self._blob(container, name).delete_blob(lease=lease_id, **_if_match(if_match))

    async def list_blobs(
        self,
        container: str,
        *,
        prefix: str | None = None,
        marker: str | None = None,
        max_results: int = 5000,
    ) -> BlobListPage:
        client = self._client.get_container_client(container)
        pages: Any = client.list_blobs(
            name_starts_with=prefix, include=["metadata"], results_per_page=max_results
        ).by_page(continuation_token=marker)
        items: list[BlobProperties] = []
        with translated():
            async for page in pages:
                items = [_properties(container, p) async for p in page]
                break
        return BlobListPage(items=items, next_marker=pages.continuation_token or None)

    # --- leases ---------------------------------------------------------------------------------

    async def acquire_lease(
        self, container: str, name: str, *, duration: int, lease_id: str | None = None
    ) -> str:
        with translated():
            lease = await self._blob(container, name).acquire_lease(
                lease_duration=duration, lease_id=lease_id
            )
        return str(lease.id)

    async def renew_lease(self, container: str, name: str, lease_id: str) -> None:
        with translated():
            await BlobLeaseClient(self._blob(container, name), lease_id).renew()

    async def release_lease(self, container: str, name: str, lease_id: str) -> None:
        with translated():
            await BlobLeaseClient(self._blob(container, name), lease_id).release()

    async def break_lease(self, container: str, name: str, *, break_period: int | None = None) -> int:
        with translated():
            return int(
                await BlobLeaseClient(self._blob(container, name)).break_lease(
                    lease_break_period=break_period
                )
            )

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        """No-op on Azure: Event Grid delivers the storage account's blob events itself."""

        def unsubscribe() -> None:
            return None

        return unsubscribe

    async def aclose(self) -> None:
        await self._client.close()

    def __repr__(self) -> str:
        return f"AzureBlobService(account={self.account_name!r}, url={self.endpoint.account_url!r})"

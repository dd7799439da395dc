"""The blob service Protocol (block blobs), implemented by every backend.

Errors are `funchost.errors` storage errors with Azure codes: ContainerNotFound, BlobNotFound,
ContainerAlreadyExists, PreconditionFailed (412, If-Match / If-None-Match), LeaseConflict (409,
LeaseAlreadyPresent / LeaseIdMismatch / LeaseNotPresent / LeaseLost), InvalidResourceName.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

INFINITE_LEASE = -1


@dataclass(frozen=True)
class BlobProperties:
    container: str
    name: str
    size: int
    etag: str  # quoted, e.g. '"0x8D...."', changes on every write
    content_type: str
    content_md5: bytes | None
    last_modified: datetime
    creation_time: datetime
    metadata: Mapping[str, str] = field(default_factory=dict)
    version_id: str | None = None  # when the container has versioning enabled
    lease_state: str = "available"  # available | leased | expired | breaking | broken
    lease_status: str = "unlocked"  # locked | unlocked
    blob_type: str = "BlockBlob"
    # The other HTTP properties and details the REST API reports (storage/blob_api.py).
    content_encoding: str = ""
    content_language: str = ""
    content_disposition: str = ""
    cache_control: str = ""
    lease_duration: str | None = None  # infinite | fixed, while leased
    committed_block_count: int | None = None  # append blobs


@dataclass(frozen=True)
class BlobListPage:
    items: list[BlobProperties]
    next_marker: str | None


@dataclass(frozen=True)
class BlobChange:
    """A committed change, published to the store's listeners (Event Grid system topic)."""

    kind: str  # "BlobCreated" | "BlobDeleted"
    api: str  # PutBlob | PutBlockList | DeleteBlob
    account: str
    container: str
    name: str
    properties: BlobProperties | None  # None for deletes
    sequencer: str
    url: str  # path style: http://127.0.0.1:10000/<account>/<container>/<blob>


BlobChangeListener = Callable[[BlobChange], None]


class BlobService(Protocol):
    account_name: str

    async def create_container(self, name: str, *, exist_ok: bool = False, versioning: bool = False) -> bool: ...

    async def delete_container(self, name: str) -> None: ...

    async def container_exists(self, name: str) -> bool: ...

    async def list_containers(self, prefix: str | None = None) -> list[str]: ...

    async def upload_blob(
        self,
        container: str,
        name: str,
        data: bytes,
        *,
        content_type: str | None = None,
        metadata: Mapping[str, str] | None = None,
        overwrite: bool = True,  # False = If-None-Match: * (412 / BlobAlreadyExists when present)
        if_match: str | None = None,
        lease_id: str | None = None,
    ) -> BlobProperties: ...

    async def download_blob(
        self,
        container: str,
        name: str,
        *,
        offset: int = 0,
        length: int | None = None,
        version_id: str | None = None,
        if_match: str | None = None,
    ) -> tuple[bytes, BlobProperties]: ...

    async def get_blob_properties(
        self, container: str, name: str, *, version_id: str | None = None
    ) -> BlobProperties: ...

    async def set_blob_metadata(self, container: str, name: str, metadata: Mapping[str, str]) -> BlobProperties: ...

    async def delete_blob(
        self, container: str, name: str, *, if_match: str | None = None, lease_id: str | None = None
    ) -> None: ...

    async def list_blobs(
        self,
        container: str,
        *,
        prefix: str | None = None,
        marker: str | None = None,
        max_results: int = 5000,
    ) -> BlobListPage: ...

    # Leases: duration 15..60 seconds or INFINITE_LEASE (-1).
    async def acquire_lease(
        self, container: str, name: str, *, duration: int, lease_id: str | None = None
    ) -> str: ...

    async def renew_lease(self, container: str, name: str, lease_id: str) -> None: ...

    async def release_lease(self, container: str, name: str, lease_id: str) -> None: ...

    async def break_lease(self, container: str, name: str, *, break_period: int | None = None) -> int: ...

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        """Call `listener` after each committed create/delete. Returns an unsubscribe function."""

    async def aclose(self) -> None: ...


class BlobChangeJournal(Protocol):
    """Committed creates and deletes of an account, in commit order, from any process.

    What the storage system topic of Event Grid (and a polling blob trigger) reads. Cursors are
    the changes' `sequencer`s, which sort as strings; a backend without a journal (Azure, where
    the account's real Event Grid topic reports changes) has none to offer.
    """

    async def changes_since(self, cursor: str | None, limit: int = 100) -> list[BlobChange]:
        """Changes after `cursor` (None: from the oldest kept), oldest first, at most `limit`."""

    async def current_cursor(self) -> str | None:
        """The cursor of the newest change (None when nothing was ever written)."""

    def subscribe(self, listener: BlobChangeListener) -> Callable[[], None]:
        """Call `listener` after each change committed by this process."""

"""The whole Blob service of one account, as the REST API exposes it (extends `BlobService`).

Triggers and bindings need `BlobService`; the storage endpoints (storage_endpoints/blob/) need
more: container properties, public access and stored access policies, container leases, HTTP
properties, staged blocks and block lists, append blobs, server-side copy and hierarchical
listing. Rules and codes as the REST API documents them
(https://learn.microsoft.com/rest/api/storageservices/blob-service-rest-api).

Conditions: `if_match` (an ETag or `*`), `if_none_match` (an ETag or `*`) are checked inside the
write's transaction (412 ConditionNotMet; `*` on an existing blob for a create: 409
BlobAlreadyExists); time conditions are evaluated by the caller on the properties it read. The argument rules
(names, metadata, block ids, lease actions, ...) are in `blob_rules`, applied in front of every
backend by `blob_api_validation.ValidatingBlobApi`.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from funchost.storage.blobs import BlobProperties, BlobService


@dataclass(frozen=True)
class ContainerProperties:
    name: str
    etag: str  # quoted
    last_modified: datetime
    metadata: Mapping[str, str] = field(default_factory=dict)
    public_access: str | None = None  # container | blob | None (private)
    lease_state: str = "available"
    lease_status: str = "unlocked"
    lease_duration: str | None = None


@dataclass(frozen=True)
class SignedIdentifier:
    """A stored access policy of a container (`si` of a service SAS)."""

    id: str
    start: str = ""
    expiry: str = ""
    permission: str = ""


@dataclass(frozen=True)
class HttpHeaders:
    """The blob's six HTTP properties (Put Blob's x-ms-blob-content-*, Set Blob Properties)."""

    content_type: str | None = None
    content_encoding: str = ""
    content_language: str = ""
    content_disposition: str = ""
    cache_control: str = ""
    content_md5: bytes | None = None  # stored as given; Put Blob computes it when absent


@dataclass(frozen=True)
class Block:
    id: str  # base64, as the client sent it
    size: int


@dataclass(frozen=True)
class BlockList:
    committed: Sequence[Block]
    uncommitted: Sequence[Block]
    properties: BlobProperties | None  # None while the blob has only uncommitted blocks


@dataclass(frozen=True)
class ListedPage:
    blobs: Sequence[BlobProperties]
    prefixes: Sequence[str]  # BlobPrefix names (hierarchical listing)
    next_marker: str | None


@dataclass(frozen=True)
class UploadedContent:
    """A request body already in the account's store (`BlobApi.upload_content`), in no blob yet."""

    id: int
    size: int
    md5: bytes


Body = bytes | UploadedContent  # what Put Blob, Put Block and Append Block write


def body_size(body: Body) -> int:
    return body.size if isinstance(body, UploadedContent) else len(body)


@dataclass(frozen=True)
class Write:
    """Conditions and lease of a write (see the module docstring)."""

    if_match: str | None = None
    if_none_match: str | None = None
    lease_id: str | None = None


class BlobApi(BlobService, Protocol):
    # -- containers ------------------------------------------------------------------------------
    async def create_container_with(self, name: str, *, metadata: Mapping[str, str],
                                    public_access: str | None) -> ContainerProperties:
        """409 ContainerAlreadyExists when it exists."""

    async def get_container_properties(self, name: str, *, lease_id: str | None = None) -> ContainerProperties: ...

    async def set_container_metadata(self, name: str, metadata: Mapping[str, str], *,
                                     lease_id: str | None = None) -> ContainerProperties: ...

    async def get_container_acl(self, name: str, *, lease_id: str | None = None
                                ) -> tuple[ContainerProperties, list[SignedIdentifier]]: ...

    async def set_container_acl(self, name: str, public_access: str | None, identifiers: Sequence[SignedIdentifier],
                                *, lease_id: str | None = None) -> ContainerProperties: ...

    async def delete_container_with(self, name: str, *, lease_id: str | None = None) -> None: ...

    async def list_container_properties(self, prefix: str, marker: str, max_results: int
                                        ) -> tuple[list[ContainerProperties], str | None]: ...

    async def container_lease(self, name: str, action: str, *, lease_id: str | None = None,
                              proposed_id: str | None = None, duration: int | None = None,
                              break_period: int | None = None) -> tuple[ContainerProperties, str | None, int]:
        """acquire | renew | change | release | break -> (properties, lease id, seconds until broken)."""

    # -- blobs -----------------------------------------------------------------------------------
    async def upload_content(self, pieces: AsyncIterable[bytes]) -> UploadedContent:
        """Store a body as it arrives, before the write that uses it: a large upload is never
        held in memory and no write lock waits for the client. `put_blob`, `stage_block` and
        `append_block` take it in place of bytes; one no write took is dropped with
        `discard_content` (an iteration that fails leaves nothing behind)."""

    async def discard_content(self, content: UploadedContent) -> None:
        """Drop an uploaded body no write took (nothing happens once a write took it)."""

    async def put_blob(self, container: str, name: str, data: Body, *, blob_type: str, headers: HttpHeaders,
                       metadata: Mapping[str, str], write: Write) -> BlobProperties:
        """Put Blob: BlockBlob with content, or an empty AppendBlob."""

    async def stage_block(self, container: str, name: str, block_id: str, data: Body, *,
                          lease_id: str | None = None) -> None: ...

    async def commit_blocks(self, container: str, name: str, blocks: Sequence[tuple[str, str]], *,
                            headers: HttpHeaders, metadata: Mapping[str, str], write: Write) -> BlobProperties:
        """Put Block List: (`Committed` | `Uncommitted` | `Latest`, block id) in order."""

    async def get_block_list(self, container: str, name: str, *, lease_id: str | None = None) -> BlockList: ...

    async def append_block(self, container: str, name: str, data: Body, *, write: Write,
                           append_position: int | None = None, max_size: int | None = None
                           ) -> tuple[BlobProperties, int]:
        """Returns the properties and the offset the block was appended at."""

    async def set_http_headers(self, container: str, name: str, headers: HttpHeaders, *,
                               write: Write) -> BlobProperties: ...

    async def set_metadata(self, container: str, name: str, metadata: Mapping[str, str], *,
                           write: Write) -> BlobProperties: ...

    async def copy_blob(self, source_container: str, source_name: str, container: str, name: str, *,
                        metadata: Mapping[str, str] | None, write: Write) -> BlobProperties:
        """Synchronous copy within the account (content, HTTP properties, metadata unless given)."""

    async def delete_blob_with(self, container: str, name: str, *, write: Write) -> None: ...

    async def blob_lease(self, container: str, name: str, action: str, *, lease_id: str | None = None,
                         proposed_id: str | None = None, duration: int | None = None,
                         break_period: int | None = None) -> tuple[BlobProperties, str | None, int]: ...

    async def list_blobs_page(self, container: str, *, prefix: str, delimiter: str, marker: str,
                              max_results: int) -> ListedPage: ...

"""Azure's argument rules (`blob_rules`) in front of any backend's whole Blob API (`BlobApi`).

`ValidatingBlobService` checks the calls triggers and bindings make; this adds the calls only the
storage endpoints make (container properties and ACLs, blocks, append blobs, copy, leases by
action), so a backend implements the primitives and answers only what needs its stored state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from funchost.storage import blob_rules
from funchost.storage.blob_api import (
    BlobApi,
    BlockList,
    Body,
    ContainerProperties,
    HttpHeaders,
    ListedPage,
    SignedIdentifier,
    Write,
    body_size,
)
from funchost.storage.blobs import BlobProperties
from funchost.storage.validation import ValidatingBlobService


def _lease(lease_id: str | None) -> None:
    if lease_id:
        blob_rules.canonical_lease_id(lease_id)


def _write(write: Write) -> None:
    _lease(write.lease_id)


class ValidatingBlobApi(ValidatingBlobService):
    """`BlobApi` with the Blob service's argument rules checked first."""

    def __init__(self, inner: BlobApi) -> None:
        super().__init__(inner)
        self.api = inner
        # Bodies have no rules of their own: the writes that use them are checked.
        self.upload_content = inner.upload_content
        self.discard_content = inner.discard_content

    # -- containers ------------------------------------------------------------------------------

    async def create_container_with(self, name: str, *, metadata: Mapping[str, str],
                                    public_access: str | None) -> ContainerProperties:
        blob_rules.check_container_name(name)
        blob_rules.check_public_access(public_access)
        return await self.api.create_container_with(name, metadata=blob_rules.check_metadata(metadata),
                                                    public_access=public_access)

    async def get_container_properties(self, name: str, *, lease_id: str | None = None) -> ContainerProperties:
        _lease(lease_id)
        return await self.api.get_container_properties(name, lease_id=lease_id)

    async def set_container_metadata(self, name: str, metadata: Mapping[str, str], *,
                                     lease_id: str | None = None) -> ContainerProperties:
        _lease(lease_id)
        return await self.api.set_container_metadata(name, blob_rules.check_metadata(metadata), lease_id=lease_id)

    async def get_container_acl(self, name: str, *, lease_id: str | None = None
                                ) -> tuple[ContainerProperties, list[SignedIdentifier]]:
        _lease(lease_id)
        return await self.api.get_container_acl(name, lease_id=lease_id)

    async def set_container_acl(self, name: str, public_access: str | None, identifiers: Sequence[SignedIdentifier],
                                *, lease_id: str | None = None) -> ContainerProperties:
        blob_rules.check_public_access(public_access)
        blob_rules.check_stored_policies(len(identifiers))
        _lease(lease_id)
        return await self.api.set_container_acl(name, public_access, identifiers, lease_id=lease_id)

    async def delete_container_with(self, name: str, *, lease_id: str | None = None) -> None:
        _lease(lease_id)
        await self.api.delete_container_with(name, lease_id=lease_id)

    async def list_container_properties(self, prefix: str, marker: str, max_results: int
                                        ) -> tuple[list[ContainerProperties], str | None]:
        blob_rules.check_max_results(max_results)
        return await self.api.list_container_properties(prefix, marker, max_results)

    async def container_lease(self, name: str, action: str, *, lease_id: str | None = None,
                              proposed_id: str | None = None, duration: int | None = None,
                              break_period: int | None = None) -> tuple[ContainerProperties, str | None, int]:
        blob_rules.check_lease_action(action, lease_id, proposed_id, duration, break_period)
        return await self.api.container_lease(name, action, lease_id=lease_id, proposed_id=proposed_id,
                                              duration=duration, break_period=break_period)

    # -- blobs -----------------------------------------------------------------------------------

    async def put_blob(self, container: str, name: str, data: Body, *, blob_type: str, headers: HttpHeaders,
                       metadata: Mapping[str, str], write: Write) -> BlobProperties:
        blob_rules.check_blob_name(name)
        blob_rules.check_blob_type(blob_type)
        _write(write)
        return await self.api.put_blob(container, name, data, blob_type=blob_type, headers=headers,
                                       metadata=blob_rules.check_metadata(metadata), write=write)

    async def stage_block(self, container: str, name: str, block_id: str, data: Body, *,
                          lease_id: str | None = None) -> None:
        blob_rules.check_blob_name(name)
        blob_rules.check_block_id(block_id)
        _lease(lease_id)
        await self.api.stage_block(container, name, block_id, data, lease_id=lease_id)

    async def commit_blocks(self, container: str, name: str, blocks: Sequence[tuple[str, str]], *,
                            headers: HttpHeaders, metadata: Mapping[str, str], write: Write) -> BlobProperties:
        blob_rules.check_blob_name(name)
        blob_rules.check_block_list(blocks)
        _write(write)
        return await self.api.commit_blocks(container, name, blocks, headers=headers,
                                            metadata=blob_rules.check_metadata(metadata), write=write)

    async def get_block_list(self, container: str, name: str, *, lease_id: str | None = None) -> BlockList:
        _lease(lease_id)
        return await self.api.get_block_list(container, name, lease_id=lease_id)

    async def append_block(self, container: str, name: str, data: Body, *, write: Write,
                           append_position: int | None = None, max_size: int | None = None
                           ) -> tuple[BlobProperties, int]:
        blob_rules.check_append_block(body_size(data))
        _write(write)
        return await self.api.append_block(container, name, data, write=write, append_position=append_position,
                                           max_size=max_size)

    async def set_http_headers(self, container: str, name: str, headers: HttpHeaders, *,
                               write: Write) -> BlobProperties:
        _write(write)
        return await self.api.set_http_headers(container, name, headers, write=write)

    async def set_metadata(self, container: str, name: str, metadata: Mapping[str, str], *,
                           write: Write) -> BlobProperties:
        _write(write)
        return await self.api.set_metadata(container, name, blob_rules.check_metadata(metadata), write=write)

    async def copy_blob(self, source_container: str, source_name: str, container: str, name: str, *,
                        metadata: Mapping[str, str] | None, write: Write) -> BlobProperties:
        blob_rules.check_blob_name(name)
        _write(write)
        checked = blob_rules.check_metadata(metadata) if metadata else None
        return await self.api.copy_blob(source_container, source_name, container, name, metadata=checked,
                                        write=write)

    async def delete_blob_with(self, container: str, name: str, *, write: Write) -> None:
        _write(write)
        await self.api.delete_blob_with(container, name, write=write)

    async def blob_lease(self, container: str, name: str, action: str, *, lease_id: str | None = None,
                         proposed_id: str | None = None, duration: int | None = None,
                         break_period: int | None = None) -> tuple[BlobProperties, str | None, int]:
        blob_rules.check_lease_action(action, lease_id, proposed_id, duration, break_period)
        return await self.api.blob_lease(container, name, action, lease_id=lease_id, proposed_id=proposed_id,
                                         duration=duration, break_period=break_period)

    async def list_blobs_page(self, container: str, *, prefix: str, delimiter: str, marker: str,
                              max_results: int) -> ListedPage:
        blob_rules.check_max_results(max_results)
        return await self.api.list_blobs_page(container, prefix=prefix, delimiter=delimiter, marker=marker,
                                              max_results=max_results)

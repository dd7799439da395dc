"""Azure Blob storage's rules on names, metadata, leases and ranges, checked before any backend.

The service answers 400 for arguments that break these rules; `ValidatingBlobService` applies
them to every backend so an app that works locally does not fail on Azure for a name.
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from collections.abc import Mapping, Sequence

from funchost.errors import InvalidInput, InvalidResourceName, RequestBodyTooLarge, ResourceConflict
from funchost.storage.blobs import INFINITE_LEASE
from funchost.storage.metadata import is_metadata_name

_CONTAINER = re.compile(r"^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}$")
MAX_BLOB_NAME = 1024
MAX_PATH_SEGMENTS = 254
MAX_METADATA_BYTES = 8 * 1024
MIN_LEASE_DURATION, MAX_LEASE_DURATION = 15, 60
MAX_BREAK_PERIOD = 60
MAX_LIST_RESULTS = 5000


def check_container_name(name: str) -> None:
    """3-63 lower-case letters, digits and single hyphens; starts and ends with a letter or digit."""
    if not isinstance(name, str) or not _CONTAINER.match(name):
        raise InvalidResourceName(f"invalid container name {name!r}: use 3-63 lowercase letters, digits "
                                  "and single hyphens, starting and ending with a letter or digit")


def check_blob_name(name: str) -> None:
    """1-1024 characters, at most 254 '/'-separated segments, no control characters."""
    if not isinstance(name, str) or not 1 <= len(name) <= MAX_BLOB_NAME:
        raise InvalidResourceName(f"blob names are 1 to {MAX_BLOB_NAME} characters long")
    if name.count("/") + 1 > MAX_PATH_SEGMENTS:
        raise InvalidResourceName(f"blob names have at most {MAX_PATH_SEGMENTS} path segments")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        raise InvalidResourceName("blob names cannot contain control characters")


def check_metadata(metadata: Mapping[str, str]) -> dict[str, str]:
    """Names are C# identifiers, unique case-insensitively; the whole set is at most 8 KiB."""
    seen: set[str] = set()
    size = 0
    for key, value in metadata.items():
        if not is_metadata_name(key) or key.lower() in seen:
            raise InvalidInput(f"invalid metadata name {key!r}", code="InvalidMetadata")
        seen.add(key.lower())
        size += len(key.encode()) + len(str(value).encode())
    if size > MAX_METADATA_BYTES:
        raise InvalidInput("metadata is larger than 8 KiB", code="MetadataTooLarge")
    return {str(k): str(v) for k, v in metadata.items()}


def canonical_lease_id(lease_id: str) -> str:
    """Lease ids are GUIDs in any format .NET accepts; other strings are a 400."""
    try:
        return str(uuid.UUID(lease_id.strip()))
    except (ValueError, AttributeError) as exc:
        raise InvalidInput(f"lease id {lease_id!r} is not a GUID", code="InvalidHeaderValue") from exc


def check_lease_duration(duration: int) -> None:
    if duration != INFINITE_LEASE and not MIN_LEASE_DURATION <= duration <= MAX_LEASE_DURATION:
        raise InvalidInput(f"lease duration must be {MIN_LEASE_DURATION}..{MAX_LEASE_DURATION} seconds or -1, "
                           f"got {duration}", code="InvalidHeaderValue")


def check_break_period(break_period: int | None) -> None:
    if break_period is not None and not 0 <= break_period <= MAX_BREAK_PERIOD:
        raise InvalidInput(f"break period must be 0..{MAX_BREAK_PERIOD} seconds", code="InvalidHeaderValue")


def check_range(offset: int, length: int | None) -> None:
    if offset < 0 or (length is not None and length < 0):
        raise InvalidInput("offset and length must not be negative", code="InvalidHeaderValue")


def check_max_results(max_results: int) -> None:
    if max_results < 1:
        raise InvalidInput("max_results must be at least 1", code="OutOfRangeQueryParameterValue")


# -- the rest of the Blob REST API (storage/blob_api.py) ------------------------------------------

PUBLIC_ACCESS_LEVELS = ("container", "blob")
BLOB_TYPES = ("BlockBlob", "AppendBlob")  # page blobs are not implemented
MAX_BLOCKS = 50_000  # committed blocks of a blob
MAX_BLOCK_ID_BYTES = 64
MAX_APPEND_BLOCK = 100 * 1024 * 1024
MAX_STORED_POLICIES = 5
LEASE_ACTIONS = ("acquire", "renew", "change", "release", "break")


def check_public_access(level: str | None) -> None:
    if level is not None and level not in PUBLIC_ACCESS_LEVELS:
        raise InvalidInput(f"x-ms-blob-public-access must be 'container' or 'blob', not {level!r}",
                           code="InvalidHeaderValue")


def check_blob_type(blob_type: str) -> None:
    if blob_type not in BLOB_TYPES:
        raise InvalidInput(f"blob type '{blob_type}' is not supported", code="InvalidHeaderValue")


def check_block_id(block_id: str) -> None:
    """Base64 of 1 to 64 bytes."""
    try:
        raw = base64.b64decode(block_id, validate=True)
    except (binascii.Error, ValueError, TypeError):
        raise InvalidInput("the block id is not valid base64", code="InvalidQueryParameterValue") from None
    if not raw or len(raw) > MAX_BLOCK_ID_BYTES:
        raise InvalidInput(f"block ids are 1 to {MAX_BLOCK_ID_BYTES} bytes before base64 encoding",
                           code="OutOfRangeInput")


def check_block_list(blocks: Sequence[tuple[str, str]]) -> None:
    """Put Block List: (`committed` | `uncommitted` | `latest`, block id), at most 50,000."""
    if len(blocks) > MAX_BLOCKS:
        raise ResourceConflict(f"a blob has at most {MAX_BLOCKS} committed blocks", code="BlockCountExceedsLimit")
    for kind, _ in blocks:
        if kind not in ("committed", "uncommitted", "latest"):
            raise InvalidInput(f"unknown block list element {kind!r}", code="InvalidBlockList")


def check_append_block(size: int) -> None:
    if size > MAX_APPEND_BLOCK:
        raise RequestBodyTooLarge(f"an append block is at most {MAX_APPEND_BLOCK} bytes")


def check_stored_policies(count: int) -> None:
    if count > MAX_STORED_POLICIES:
        raise InvalidInput(f"a container has at most {MAX_STORED_POLICIES} stored access policies",
                           code="InvalidXmlDocument")


def check_lease_action(action: str, lease_id: str | None, proposed_id: str | None, duration: int | None,
                       break_period: int | None) -> None:
    """Lease Blob / Lease Container: the action's required ids, and the usual duration rules."""
    if action not in LEASE_ACTIONS:
        raise InvalidInput(f"unknown lease action {action!r}", code="InvalidHeaderValue")
    if action in ("renew", "change", "release") and not lease_id:
        raise InvalidInput("x-ms-lease-id is required", code="MissingRequiredHeader")
    if action == "change" and not proposed_id:
        raise InvalidInput("x-ms-proposed-lease-id is required", code="MissingRequiredHeader")
    for given in (lease_id, proposed_id):
        if given:
            canonical_lease_id(given)
    if action == "acquire":
        check_lease_duration(INFINITE_LEASE if duration is None else duration)
    if action == "break":
        check_break_period(break_period)

"""Blob references: a policy instead of URLs.

Clients and events name a blob by `{containerName, blobName, eTag?, versionId?}`; the storage
account is fixed by configuration. Blob names are case-sensitive in Azure, so every prefix check
is ordinal and case-sensitive (the C# `StringComparison.Ordinal`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from urllib.parse import unquote, urlsplit

from funchost.reliability.canonical import sha256_hex
from funchost.reliability.logfields import unsafe_reason

BLOB_HOST_SUFFIX = ".blob.core.windows.net"


@dataclass(frozen=True)
class BlobReference:
    storage_account: str
    container_name: str
    blob_name: str
    etag: str | None = None
    version_id: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        """The camelCase form used in queue messages and job rows."""
        return {
            "storageAccount": self.storage_account,
            "containerName": self.container_name,
            "blobName": self.blob_name,
            "eTag": self.etag,
            "versionId": self.version_id,
        }

    @classmethod
    def from_dict(cls, data: dict[str, str | None]) -> BlobReference:
        return cls(
            storage_account=str(data.get("storageAccount") or ""),
            container_name=str(data.get("containerName") or ""),
            blob_name=str(data.get("blobName") or ""),
            etag=data.get("eTag") or data.get("etag"),
            version_id=data.get("versionId"),
        )


class Violation(StrEnum):
    """Why a blob reference is refused (HTTP 403 at intake; logged and dropped for events)."""

    MISSING = "missing"
    ACCOUNT_NOT_ALLOWED = "account_not_allowed"
    CONTAINER_NOT_ALLOWED = "container_not_allowed"
    OUTSIDE_TENANT_PREFIX = "outside_tenant_prefix"
    LEADING_SLASH = "leading_slash"
    DOT_DOT = "dot_dot"
    BACKSLASH = "backslash"
    CONTROL_CHARACTER = "control_character"
    CREDENTIAL_LIKE = "credential_like"  # a SAS signature, key or token: a URL pasted as a name


@dataclass(frozen=True)
class BlobPolicy:
    """Which blobs may become jobs.

    `account` compares case-insensitively (account names are lower case in Azure); containers and
    blob names compare ordinally. `None` account means "not checked" (intake fixes the account).
    """

    allowed_containers: frozenset[str]
    account: str | None = None
    require_tenant_prefix: bool = True

    @classmethod
    def of(cls, containers: Iterable[str], account: str | None = None) -> BlobPolicy:
        return cls(allowed_containers=frozenset(containers), account=account)

    def check(self, blob: BlobReference, tenant_id: str | None) -> Violation | None:
        """The first violated rule, or None when the reference is allowed."""
        if not blob.container_name or not blob.blob_name:
            return Violation.MISSING
        if self.account is not None and blob.storage_account.lower() != self.account.lower():
            return Violation.ACCOUNT_NOT_ALLOWED
        if blob.container_name not in self.allowed_containers:
            return Violation.CONTAINER_NOT_ALLOWED
        return check_blob_name(blob.blob_name, tenant_id if self.require_tenant_prefix else None)

    def is_allowed(self, blob: BlobReference, tenant_id: str | None) -> bool:
        return self.check(blob, tenant_id) is None


def check_blob_name(name: str, tenant_id: str | None) -> Violation | None:
    """Name rules: nothing that looks like a credential (SAS signature, account key, token), no
    leading '/', no '..', no '\\', no control characters, tenant prefix."""
    if unsafe_reason(name):
        return Violation.CREDENTIAL_LIKE
    if name.startswith("/"):
        return Violation.LEADING_SLASH
    if ".." in name:
        return Violation.DOT_DOT
    if "\\" in name:
        return Violation.BACKSLASH
    if any(unicodedata.category(ch) == "Cc" for ch in name):
        return Violation.CONTROL_CHARACTER
    if tenant_id is not None:
        if not tenant_id or not name.startswith(tenant_id + "/"):  # ordinal, case-sensitive
            return Violation.OUTSIDE_TENANT_PREFIX
    return None


def parse_blob_url(url: str) -> tuple[str, str, str] | None:
    """(account, container, blob name) from a blob URL, or None when it cannot be parsed.

    Accepts `https://<account>.blob.core.windows.net/<container>/<blob>` and the path-style
    local form `http://127.0.0.1:10000/<account>/<container>/<blob>` (Azurite, the funchost
    embedded endpoint). The query string (a SAS, for instance) is discarded, never returned.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname.lower()
    segments = parts.path.lstrip("/").split("/")
    if host.endswith(BLOB_HOST_SUFFIX):
        account = host[: -len(BLOB_HOST_SUFFIX)]
        if not account or "." in account:
            return None
        if len(segments) < 2:
            return None
        container, blob = segments[0], "/".join(segments[1:])
    else:
        if len(segments) < 3:
            return None
        account, container, blob = segments[0], segments[1], "/".join(segments[2:])
    account, container, blob = unquote(account), unquote(container), unquote(blob)
    if not account or not container or not blob:
        return None
    return account, container, blob


def blob_job_id(blob: BlobReference, event_type: str) -> str:
    """`"blob_" + sha256(account|container|blob|versionId or eTag|eventType)[:32]`.

    A job keyed by the blob *version*: without an eTag or versionId the same name would map
    different contents to one job, so that is refused with ValueError.
    """
    version = blob.version_id or blob.etag
    if not version or not version.strip():
        raise ValueError("eTag or versionId is required to build a blob job id")
    material = "|".join(
        [blob.storage_account, blob.container_name, blob.blob_name, version, event_type]
    )
    return "blob_" + sha256_hex(material)[:32]

"""HTTP intake rules that need no storage: body limit, Idempotency-Key, the request DTO.

The DTO is `{containerName, blobName, eTag?, versionId?}`. Property names match
case-insensitively (the web defaults of System.Text.Json); unknown properties (a `requestedBy`,
a `blobUrl`) are ignored and never reach the request hash; `null` equals "omitted".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from funchost.reliability import request_hash, select_fields
from importjobs import jsontext
from importjobs.settings import MAX_BODY_BYTES

FIELDS = ("containerName", "blobName", "eTag", "versionId")
REQUIRED = ("containerName", "blobName")
MAX_KEY_LENGTH = 255


class Rejected(Exception):
    """The request is refused before anything is written: `status` and a clear `message`."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason
        self.message = message


@dataclass(frozen=True)
class SubmitImport:
    container_name: str
    blob_name: str
    etag: str | None = None
    version_id: str | None = None

    def canonical(self) -> dict[str, Any]:
        """The hashed form: fixed camelCase keys; None values are dropped by the hash."""
        return {"containerName": self.container_name, "blobName": self.blob_name,
                "eTag": self.etag, "versionId": self.version_id}

    @property
    def request_hash(self) -> str:
        return request_hash(self.canonical())


def check_declared_length(headers: Mapping[str, str]) -> None:
    raw = headers.get("content-length")
    if raw is None or not raw.strip():
        return
    try:
        declared = int(raw.strip())
    except ValueError:
        raise Rejected(400, "bad_content_length", "Content-Length is not a number") from None
    if declared > MAX_BODY_BYTES:
        raise Rejected(413, "too_large", f"request body is larger than {MAX_BODY_BYTES} bytes")


def idempotency_key(headers: Mapping[str, str]) -> str:
    key = (headers.get("idempotency-key") or "").strip()
    if not key:
        raise Rejected(400, "missing_idempotency_key", "the Idempotency-Key header is required")
    if len(key) > MAX_KEY_LENGTH:
        raise Rejected(400, "bad_idempotency_key", f"Idempotency-Key is longer than {MAX_KEY_LENGTH} characters")
    return key


def parse_body(body: bytes) -> SubmitImport:
    if len(body) > MAX_BODY_BYTES:
        raise Rejected(413, "too_large", f"request body is larger than {MAX_BODY_BYTES} bytes")
    if not body.strip():
        raise Rejected(400, "invalid_json", "the request body is empty; send a JSON object")
    try:
        data = jsontext.parse(body.decode("utf-8"))
    except jsontext.TooDeep as exc:
        raise Rejected(400, "invalid_json", f"the request body is {exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise Rejected(400, "invalid_json", f"the request body is not valid JSON: {_short(exc)}") from None
    if not isinstance(data, dict):
        raise Rejected(400, "invalid_body", "the request body must be a JSON object")
    try:
        fields = select_fields(data, FIELDS)
    except ValueError as exc:
        raise Rejected(400, "invalid_body", str(exc)) from None
    for name in FIELDS:
        value = fields.get(name)
        if value is not None and not isinstance(value, str):
            raise Rejected(400, "invalid_body", f"'{name}' must be a string")
    missing = [name for name in REQUIRED if not fields.get(name)]
    if missing:
        raise Rejected(400, "invalid_body", f"missing required propert{'ies' if len(missing) > 1 else 'y'}: "
                       + ", ".join(missing))
    return SubmitImport(fields["containerName"], fields["blobName"], fields.get("eTag") or None,
                        fields.get("versionId") or None)


def _short(exc: Exception) -> str:
    text = str(exc)
    return text if len(text) <= 120 else text[:119] + "…"

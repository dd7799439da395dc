"""Queue messages: pointers and keys, never payloads (well under the 64 KiB queue limit).

`{"schema": 1, "jobId", "tenantId", "requestedByUserId", "blob": {storageAccount,
containerName, blobName, eTag, versionId}, "acceptedAt", "eventId"?}`
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from funchost.reliability import BlobReference
from importjobs import jsontext

SCHEMA = 1


class MalformedMessage(ValueError):
    """The message is not a job message this version understands."""


@dataclass(frozen=True)
class JobMessage:
    job_id: str
    tenant_id: str
    requested_by: str
    blob: BlobReference
    accepted_at: str
    event_id: str | None = None

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "schema": SCHEMA, "jobId": self.job_id, "tenantId": self.tenant_id,
            "requestedByUserId": self.requested_by, "blob": self.blob.to_dict(), "acceptedAt": self.accepted_at,
        }
        if self.event_id is not None:
            body["eventId"] = self.event_id
        return json.dumps(body, separators=(",", ":"), sort_keys=True)


def parse_message(body: bytes) -> JobMessage:
    try:
        data = jsontext.parse(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise MalformedMessage("not UTF-8 JSON") from None
    if not isinstance(data, dict):
        raise MalformedMessage("not a JSON object")
    if data.get("schema") != SCHEMA:
        raise MalformedMessage(f"unknown schema {data.get('schema')!r}")
    fields = {name: data.get(name) for name in ("jobId", "tenantId", "requestedByUserId", "acceptedAt")}
    missing = [name for name, value in fields.items() if not isinstance(value, str) or not value]
    blob = data.get("blob")
    if not isinstance(blob, dict):
        missing.append("blob")
    if missing:
        raise MalformedMessage(f"missing or invalid: {', '.join(missing)}")
    reference = BlobReference.from_dict(blob)  # type: ignore[arg-type]
    if not reference.container_name or not reference.blob_name or not reference.storage_account:
        raise MalformedMessage("incomplete blob reference")
    event_id = data.get("eventId")
    return JobMessage(fields["jobId"], fields["tenantId"], fields["requestedByUserId"],  # type: ignore[arg-type]
                      reference, fields["acceptedAt"], event_id if isinstance(event_id, str) else None)  # type: ignore[arg-type]

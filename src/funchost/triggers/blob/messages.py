"""The blob trigger's internal queue message (BlobTriggerMessage) and queue names (blob-trigger spec 4.1).

    {"Type":"BlobTrigger","FunctionId":"Host.Functions.Resize","BlobType":"BlockBlob",
     "ContainerName":"images","BlobName":"in/cat.png","ETag":"\\"0x8DC9A1B2C3D4E5F\\""}

Written in this property order (Json.NET, non-ASCII unescaped), read with Json.NET's
case-insensitive property matching. ``BlobType`` is read by stripping ``Blob`` and parsing the
rest case-insensitively. The ETag is the quoted form Get Blob Properties returns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

HOST_QUEUE_PREFIX = "azure-webjobs-blobtrigger-"
POISON_QUEUE = "webjobs-blobtrigger-poison"
FUNCTION_ID_PREFIX = "Host.Functions."
_BLOB_TYPES = {"block": "BlockBlob", "page": "PageBlob", "append": "AppendBlob"}


class InvalidTriggerMessage(ValueError):
    """The message cannot be processed: a failure, retried and then poisoned like any other."""


def host_queue_name(host_id: str) -> str:
    """HostQueueNames.GetHostBlobTriggerQueueName."""
    return HOST_QUEUE_PREFIX + host_id.lower()


def function_id(function_name: str) -> str:
    """The function ID script functions have: ``Host.Functions.<name>``."""
    return FUNCTION_ID_PREFIX + function_name


def quoted_etag(etag: str) -> str:
    return etag if etag.startswith('"') else f'"{etag}"'


def parse_blob_type(value: Any) -> str:
    text = str(value or "")
    short = text[:-4] if text.lower().endswith("blob") else text
    found = _BLOB_TYPES.get(short.lower())
    if found is None:
        raise InvalidTriggerMessage(f"Requested value '{short}' was not found.")
    return found


@dataclass(frozen=True)
class BlobTriggerMessage:
    function_id: str
    blob_type: str
    container: str
    blob_name: str
    etag: str | None

    def to_json(self) -> str:
        return json.dumps({"Type": "BlobTrigger", "FunctionId": self.function_id, "BlobType": self.blob_type,
                           "ContainerName": self.container, "BlobName": self.blob_name, "ETag": self.etag},
                          separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_json(cls, body: bytes | str) -> BlobTriggerMessage:
        """BlobQueueTriggerExecutor's reading, with its two messages for unusable bodies."""
        try:
            raw = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise InvalidTriggerMessage(f"Invalid blob trigger message. {exc}") from None
        if not isinstance(raw, dict):
            raise InvalidTriggerMessage("Invalid blob trigger message.")
        fields = {str(k).lower(): v for k, v in raw.items()}
        function = fields.get("functionid")
        if not isinstance(function, str):
            raise InvalidTriggerMessage("Invalid function ID.")
        container, name, etag = fields.get("containername"), fields.get("blobname"), fields.get("etag")
        if not isinstance(container, str) or not isinstance(name, str):
            raise InvalidTriggerMessage("Invalid blob trigger message: no ContainerName or BlobName.")
        return cls(function, parse_blob_type(fields.get("blobtype") or "BlockBlob"), container, name,
                   etag if isinstance(etag, str) else None)

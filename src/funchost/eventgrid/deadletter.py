"""Dead-letter blobs with the service's layout and fields (azure-semantics 6.2).

Blob name ``{SUBSCRIPTION-NAME-UPPER}/{YYYY}/{M}/{D}/{H}/{guid}.json`` in UTC without zero
padding; the blob holds a JSON array of the events (in the subscription's delivery schema) with
``deadLetterReason``, ``deliveryAttempts``, ``lastDeliveryOutcome``, ``publishTime``,
``lastDeliveryAttemptTime`` (and ``lastHttpStatusCode`` when there was one) added; CloudEvents
get the same fields in lower case.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from funchost.eventgrid import SCHEMA_CLOUDEVENTS
from funchost.eventgrid.config import DeadLetterConfig

BlobLookup = Callable[[str | None], Any]


def blob_name(subscription: str, when: datetime) -> str:
    t = when.astimezone(UTC)
    return f"{subscription.upper()}/{t.year}/{t.month}/{t.day}/{t.hour}/{uuid.uuid4()}.json"


def format_time(epoch: float | None) -> str | None:
    """ISO 8601 UTC with seven fraction digits, as .NET writes it."""
    if epoch is None:
        return None
    t = datetime.fromtimestamp(epoch, UTC)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}0Z"


def annotate(event: dict[str, Any], schema: str, *, reason: str, attempts: int, outcome: str | None,
             status: int | None, published: float, last_attempt: float | None) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "deadLetterReason": reason,
        "deliveryAttempts": attempts,
        "lastDeliveryOutcome": outcome or "Undelivered",
        "publishTime": format_time(published),
        "lastDeliveryAttemptTime": format_time(last_attempt),
    }
    if status is not None:
        fields["lastHttpStatusCode"] = status
    if schema == SCHEMA_CLOUDEVENTS:
        fields = {k.lower(): v for k, v in fields.items()}
    return {**event, **fields}


class DeadLetterWriter:
    def __init__(self, blobs: BlobLookup) -> None:
        self.blobs = blobs

    async def write(self, subscription: str, target: DeadLetterConfig, events: list[dict[str, Any]],
                    now: datetime) -> str:
        """Write one blob; returns ``container/name``. Storage errors propagate (retried later)."""
        service = self.blobs(target.connection)
        await service.create_container(target.container, exist_ok=True)
        name = blob_name(subscription, now)
        body = json.dumps(events, indent=2).encode()
        await service.upload_blob(target.container, name, body, content_type="application/json")
        return f"{target.container}/{name}"

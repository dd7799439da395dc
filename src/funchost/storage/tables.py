"""The table service Protocol (Azure Table storage): entities, typed values, batches.

https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model

Property values are typed: `(edm_type, value)` with Python values `str` (Edm.String, Edm.Guid),
`int` (Edm.Int32, Edm.Int64), `float` (Edm.Double, NaN and infinities included), `bool`,
`datetime` (Edm.DateTime, UTC) and `bytes` (Edm.Binary). PartitionKey, RowKey and Timestamp are
the entity's own fields, not properties. Errors are `funchost.errors` storage errors with the
service's codes: TableNotFound, TableAlreadyExists, EntityAlreadyExists, ResourceNotFound (missing
entity), UpdateConditionNotSatisfied (412), and the argument rules' codes (`table_rules`, applied
in front of every backend).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from funchost.errors import StorageError

TypedValue = tuple[str, Any]
MAX_QUERY_RESULTS = 1000
SYSTEM_PROPERTIES = ("PartitionKey", "RowKey", "Timestamp")


def parse_datetime(value: str) -> datetime | None:
    """ISO 8601 (UTC when no zone), up to 7 fractional digits as the service writes them."""
    text = value.strip()
    if text[-1:] in ("Z", "z"):
        text = text[:-1] + "+00:00"
    if "." in text:  # Python reads at most 6 fractional digits
        head, _, tail = text.partition(".")
        digits = "".join(itertools.takewhile(str.isdigit, tail))
        text = f"{head}.{digits[:6].ljust(6, '0')}{tail[len(digits):]}"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def table_error(status: int, code: str, message: str) -> StorageError:
    return StorageError(message, code=code, status=status)


@dataclass(frozen=True)
class Entity:
    partition_key: str
    row_key: str
    timestamp: datetime
    etag: str  # W/"datetime'...'" as the service writes it
    properties: Mapping[str, TypedValue] = field(default_factory=dict)


@dataclass(frozen=True)
class BatchOperation:
    kind: str  # insert | replace | merge | upsert-replace | upsert-merge | delete
    partition_key: str
    row_key: str
    properties: Mapping[str, TypedValue] = field(default_factory=dict)
    if_match: str | None = None


class BatchFailed(StorageError):
    """One operation of an entity group transaction failed: nothing was written."""

    def __init__(self, index: int, error: StorageError) -> None:
        self.index = index
        self.error = error
        super().__init__(str(error), code=error.code, status=error.status)


class TableService(Protocol):
    account_name: str

    async def create_table(self, name: str) -> str:
        """Returns the name as stored; 409 TableAlreadyExists (names are case-insensitive)."""

    async def delete_table(self, name: str) -> None: ...

    async def list_tables(self, *, prefix: str | None = None, after: str | None = None,
                          top: int = MAX_QUERY_RESULTS) -> tuple[list[str], str | None]:
        """Names from `after` (inclusive), and the next name when more remain."""

    async def insert_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue]) -> Entity: ...

    async def update_entity(self, table: str, partition_key: str, row_key: str,
                            properties: Mapping[str, TypedValue], *, merge: bool, if_match: str | None) -> Entity:
        """Replace or merge; without `if_match` insert when missing (upsert)."""

    async def delete_entity(self, table: str, partition_key: str, row_key: str, *, if_match: str) -> None: ...

    async def get_entity(self, table: str, partition_key: str, row_key: str) -> Entity: ...

    async def query_entities(self, table: str, *, filter: str | None = None, top: int = MAX_QUERY_RESULTS,
                             after: tuple[str, str] | None = None) -> tuple[list[Entity], tuple[str, str] | None]:
        """Entities in (PartitionKey, RowKey) order from `after` (inclusive) matching the OData filter."""

    async def submit_batch(self, table: str, operations: Sequence[BatchOperation]) -> list[Entity | None]:
        """All or nothing; BatchFailed(index, error) names the operation that failed."""

    async def aclose(self) -> None: ...

"""The table service Protocol (Azure Table storage), with the service's rules and limits.

https://learn.microsoft.com/rest/api/storageservices/understanding-the-table-service-data-model

Property values are typed: `(edm_type, value)` with Python values `str` (Edm.String, Edm.Guid),
`int` (Edm.Int32, Edm.Int64), `float` (Edm.Double, NaN and infinities included), `bool`,
`datetime` (Edm.DateTime, UTC) and `bytes` (Edm.Binary). PartitionKey, RowKey and Timestamp are
the entity's own fields, not properties. Errors are `funchost.errors` storage errors with the
service's codes: TableNotFound, TableAlreadyExists, EntityAlreadyExists, ResourceNotFound (missing
entity), UpdateConditionNotSatisfied (412), InvalidInput, PropertiesNeedValue, EntityTooLarge,
PropertyValueTooLarge, OutOfRangeInput.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from funchost.errors import InvalidInput, InvalidResourceName, StorageError

TypedValue = tuple[str, Any]
EDM_TYPES = ("Edm.String", "Edm.Int32", "Edm.Int64", "Edm.Double", "Edm.Boolean", "Edm.DateTime", "Edm.Guid",
             "Edm.Binary")
MAX_KEY_CHARS = 1024
MAX_PROPERTIES = 252  # plus PartitionKey, RowKey and Timestamp
MAX_STRING_CHARS = 32 * 1024  # UTF-16 code units
MAX_BINARY_BYTES = 64 * 1024
MAX_ENTITY_BYTES = 1024 * 1024
MAX_PROPERTY_NAME = 255
MAX_QUERY_RESULTS = 1000
MAX_BATCH_OPERATIONS = 100
SYSTEM_PROPERTIES = ("PartitionKey", "RowKey", "Timestamp")

_TABLE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{2,62}$")
_FORBIDDEN_KEY_CHARS = re.compile(r"[/\\#?\x00-\x1f\x7f-\x9f]")
_PROPERTY_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


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


class TableError(StorageError):
    code, status = "InvalidInput", 400


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


def check_table_name(name: str) -> None:
    if not isinstance(name, str) or not _TABLE_NAME.match(name) or name.lower() == "tables":
        raise InvalidResourceName("table names are 3-63 letters and digits, starting with a letter, and not "
                                  "'tables'", code="InvalidResourceName")


def check_key(value: Any, which: str) -> str:
    if not isinstance(value, str):
        raise table_error(400, "PropertiesNeedValue", f"the {which} is required and must be a string")
    if len(value) > MAX_KEY_CHARS:
        raise table_error(400, "OutOfRangeInput", f"the {which} is longer than {MAX_KEY_CHARS} characters")
    if _FORBIDDEN_KEY_CHARS.search(value):
        raise InvalidInput(f"the {which} contains a character that is not allowed (/ \\ # ? or a control "
                           "character)")
    return value


def check_properties(properties: Mapping[str, TypedValue]) -> None:
    if len(properties) > MAX_PROPERTIES:
        raise table_error(400, "TooManyProperties", f"an entity has at most {MAX_PROPERTIES} properties")
    size = 0
    for name, (edm, value) in properties.items():
        if name in SYSTEM_PROPERTIES or len(name) > MAX_PROPERTY_NAME or not _PROPERTY_NAME.match(name):
            raise table_error(400, "PropertyNameInvalid", f"the property name {name!r} is invalid")
        if edm not in EDM_TYPES:
            raise InvalidInput(f"the type {edm!r} of property {name!r} is not an Edm type")
        if edm == "Edm.String" and len(value.encode("utf-16-le")) // 2 > MAX_STRING_CHARS:
            raise table_error(400, "PropertyValueTooLarge", f"property {name!r} is larger than 64 KiB")
        if edm == "Edm.Binary" and len(value) > MAX_BINARY_BYTES:
            raise table_error(400, "PropertyValueTooLarge", f"property {name!r} is larger than 64 KiB")
        size += len(name) * 2 + (len(value) * 2 if isinstance(value, str | bytes) else 8)
    if size > MAX_ENTITY_BYTES:
        raise table_error(400, "EntityTooLarge", "the entity is larger than 1 MiB")


def check_batch(operations: Sequence[BatchOperation]) -> None:
    """One entity group: at most 100 operations, one PartitionKey, each entity once (BatchFailed)."""
    if not operations:
        raise BatchFailed(0, InvalidInput("the changeset is empty"))
    if len(operations) > MAX_BATCH_OPERATIONS:
        raise BatchFailed(0, InvalidInput(f"The batch request operation exceeds the maximum {MAX_BATCH_OPERATIONS} "
                                          "changes per change set."))
    seen: set[tuple[str, str]] = set()
    for index, op in enumerate(operations):
        if op.partition_key != operations[0].partition_key:
            raise BatchFailed(index, InvalidInput("All commands in a batch must operate on the same entity group.",
                                                  code="CommandsInBatchActOnDifferentPartitions"))
        if (op.partition_key, op.row_key) in seen:
            raise BatchFailed(index, InvalidInput("The batch request contains multiple changes with same row key. An "
                                                  "entity can appear only once in a batch request.",
                                                  code="InvalidDuplicateRow"))
        seen.add((op.partition_key, op.row_key))


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

"""What the sync and async clients share: option names and values as azure-cosmos takes them."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from funchost.documents.exceptions import CosmosBadRequestError
from funchost.storage.documents import DEFAULT_PARTITIONS

__all__ = ["DEFAULT_PARTITIONS", "MatchConditions", "PartitionKey", "if_match", "item_id", "pk_path_of"]


class MatchConditions(enum.Enum):
    """Same members as `azure.core.MatchConditions` (either may be passed)."""

    Unconditionally = 1
    IfNotModified = 2
    IfModified = 3
    IfPresent = 4
    IfMissing = 5


@dataclass(frozen=True)
class PartitionKey:
    """`azure.cosmos.PartitionKey` for container creation: ``PartitionKey(path="/tenant")``."""

    path: str
    kind: str = "Hash"


def pk_path_of(partition_key: Any) -> str:
    if isinstance(partition_key, str):
        return partition_key
    if isinstance(partition_key, Mapping):
        paths = partition_key.get("paths") or [partition_key.get("path")]
        return str(paths[0])
    path = getattr(partition_key, "path", None)
    if isinstance(path, str):
        return path
    raise CosmosBadRequestError(f"unsupported partition key definition {partition_key!r}")


def if_match(etag: str | None, match_condition: Any) -> str | None:
    """azure-cosmos sends If-Match only for IfNotModified with an etag."""
    if match_condition is None:
        return None
    name = getattr(match_condition, "name", str(match_condition))
    if name == "IfNotModified":
        if not etag:
            raise CosmosBadRequestError("match_condition IfNotModified needs an etag")
        return etag
    if name == "Unconditionally":
        return None
    raise CosmosBadRequestError(f"match_condition {name} is not supported by the embedded store")


def item_id(item: Any) -> str:
    if isinstance(item, Mapping):
        return str(item["id"])
    return str(item)


NO_PARTITION_KEY: Any = object()

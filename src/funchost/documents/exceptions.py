"""Errors of the document store, named as `azure.cosmos.exceptions` names them.

Each is also the matching `funchost.errors` type, so code above the store can catch either
`CosmosResourceNotFoundError` (as azure-cosmos users do) or `ResourceNotFound` (as the rest of
funchost does). `status_code` and `sub_status` mirror `CosmosHttpResponseError`.
"""

from __future__ import annotations

from funchost.errors import PreconditionFailed, ResourceConflict, ResourceNotFound, StorageError


class CosmosHttpResponseError(StorageError):
    code, status = "InternalServerError", 500

    @property
    def status_code(self) -> int:
        return self.status

    sub_status: int = 0


class CosmosResourceNotFoundError(CosmosHttpResponseError, ResourceNotFound):
    """404: database, container or item does not exist."""

    code, status = "NotFound", 404


class CosmosResourceExistsError(CosmosHttpResponseError, ResourceConflict):
    """409: an item (or container) with the same id already exists."""

    code, status = "Conflict", 409


class CosmosAccessConditionFailedError(CosmosHttpResponseError, PreconditionFailed):
    """412: the If-Match etag no longer matches the stored item."""

    code, status = "PreconditionFailed", 412


class CosmosBadRequestError(CosmosHttpResponseError):
    code, status = "BadRequest", 400

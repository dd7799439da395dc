"""Translate azure-core / Azure Storage errors into the `funchost.errors` tree.

The service's error code (``x-ms-error-code``) decides the type, the HTTP status is the fallback,
so code above the storage layer catches the same exceptions on every backend. Messages keep only
the service's first line: they never carry request URLs, SAS tokens or keys.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from enum import Enum

from azure.core.exceptions import (
    AzureError,
    ClientAuthenticationError,
    HttpResponseError,
    ServiceRequestError,
    ServiceResponseError,
)

from funchost import errors as fe

# Service error code -> funchost type. Codes not listed fall back on the HTTP status.
_BY_CODE: dict[str, type[fe.StorageError]] = {
    "QueueNotFound": fe.QueueNotFound,
    "MessageNotFound": fe.MessageNotFound,
    "ContainerNotFound": fe.ContainerNotFound,
    "BlobNotFound": fe.BlobNotFound,
    "ResourceNotFound": fe.ResourceNotFound,
    "QueueAlreadyExists": fe.QueueAlreadyExists,
    "QueueBeingDeleted": fe.QueueBeingDeleted,
    "QueueDisabled": fe.QueueBeingDeleted,
    "ContainerAlreadyExists": fe.ContainerAlreadyExists,
    "ContainerBeingDeleted": fe.ResourceConflict,
    "BlobAlreadyExists": fe.ResourceConflict,
    "PopReceiptMismatch": fe.PopReceiptMismatch,
    "RequestBodyTooLarge": fe.RequestBodyTooLarge,
    "MessageTooLarge": fe.RequestBodyTooLarge,
    "InvalidResourceName": fe.InvalidResourceName,
    "OutOfRangeInput": fe.InvalidResourceName,  # what the service answers for a name's length
    "OutOfRangeQueryParameterValue": fe.InvalidInput,
    "InvalidQueryParameterValue": fe.InvalidInput,
    "InvalidHeaderValue": fe.InvalidInput,
    "InvalidInput": fe.InvalidInput,
    "InvalidXmlDocument": fe.InvalidInput,
    "InvalidMetadata": fe.InvalidInput,
    "EmptyMetadataKey": fe.InvalidInput,
    "ConditionNotMet": fe.PreconditionFailed,
    "TargetConditionNotMet": fe.PreconditionFailed,
    "SourceConditionNotMet": fe.PreconditionFailed,
    "LeaseAlreadyPresent": fe.LeaseConflict,
    "LeaseIdMismatchWithLeaseOperation": fe.LeaseConflict,
    "LeaseIdMismatchWithBlobOperation": fe.LeaseConflict,
    "LeaseIdMismatchWithContainerOperation": fe.LeaseConflict,
    "LeaseIdMissing": fe.LeaseConflict,
    "LeaseNotPresentWithLeaseOperation": fe.LeaseConflict,
    "LeaseNotPresentWithBlobOperation": fe.LeaseConflict,
    "LeaseNotPresentWithContainerOperation": fe.LeaseConflict,
    "LeaseLost": fe.LeaseConflict,
    "LeaseIsBrokenAndCannotBeRenewed": fe.LeaseConflict,
    "LeaseIsBreakingAndCannotBeAcquired": fe.LeaseConflict,
    "LeaseIsBreakingAndCannotBeChanged": fe.LeaseConflict,
    "LeaseAlreadyBroken": fe.LeaseConflict,
    "ServerBusy": fe.ServiceUnavailable,
    "OperationTimedOut": fe.ServiceUnavailable,
    "InternalError": fe.StorageError,
}

_BY_STATUS: dict[int, type[fe.StorageError]] = {
    400: fe.InvalidInput,
    404: fe.ResourceNotFound,
    409: fe.ResourceConflict,
    412: fe.PreconditionFailed,
    413: fe.RequestBodyTooLarge,
    503: fe.ServiceUnavailable,
}

_SECRETS = re.compile(r"(?i)(sig=|accountkey=|sharedaccesssignature=)[^&;\s]*")


def redact(text: str) -> str:
    """Mask SAS signatures and account keys wherever they might appear in a message."""
    return _SECRETS.sub(lambda m: m.group(1) + "***", text)


def error_code_of(exc: HttpResponseError) -> str | None:
    code = getattr(exc, "error_code", None)
    if isinstance(code, Enum):
        code = code.value
    if not code and exc.response is not None:
        headers = getattr(exc.response, "headers", None) or {}
        code = headers.get("x-ms-error-code")
    return str(code) if code else None


def _first_line(exc: AzureError) -> str:
    message = str(getattr(exc, "message", None) or exc)
    return redact(message.strip().splitlines()[0] if message.strip() else "")


def translate(exc: AzureError) -> fe.StorageError:
    """The funchost error for an azure-core exception (the caller raises it)."""
    if isinstance(exc, HttpResponseError) and exc.response is not None:
        code = error_code_of(exc)
        status = exc.status_code or exc.response.status_code
        cls = _BY_CODE.get(code or "") or _BY_STATUS.get(status or 0) or fe.StorageError
        if status == 412:
            # Lease checks on writes (LeaseIdMissing, LeaseIdMismatchWithBlobOperation, ...) are
            # preconditions on Azure: 412, not the 409 of the lease operations themselves.
            cls = fe.PreconditionFailed
        return cls(_first_line(exc), code=code or cls.code, status=status)
    if isinstance(exc, ClientAuthenticationError):
        return fe.StorageError(_first_line(exc), code="AuthenticationFailed", status=403)
    if isinstance(exc, ServiceRequestError | ServiceResponseError):
        # Could not reach the service (or the connection dropped): retryable like a 503.
        return fe.ServiceUnavailable(_first_line(exc), code="ServiceUnreachable", status=503)
    return fe.StorageError(_first_line(exc))


@contextmanager
def translated() -> Iterator[None]:
    """Run SDK calls inside this block: azure-core errors leave it as funchost errors."""
    try:
        yield
    except AzureError as exc:
        raise translate(exc) from None

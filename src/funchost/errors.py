"""One exception tree for funchost.

Driver errors (sqlite3, psycopg, azure-core) are translated at the backend edge into these
types, so behaviour above the storage layer never depends on which backend is in use.
"""

from __future__ import annotations


class FunchostError(Exception):
    """Root of every error funchost raises on purpose."""


# --- configuration and app loading -------------------------------------------------------------


class ConfigError(FunchostError):
    """host.json, local.settings.json, eventgrid.json or an app setting is invalid.

    `path` names the offending key, e.g. ``host.json: extensions.queues.batchSize``.
    """

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class AppLoadError(FunchostError):
    """function_app.py could not be imported or indexed.

    Carries the file, line and function so the CLI can print a precise location.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        function: str | None = None,
    ) -> None:
        self.file = file
        self.line = line
        self.function = function
        self.reason = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.file:
            where.append(f"{self.file}:{self.line}" if self.line else self.file)
        if self.function:
            where.append(f"function '{self.function}'")
        prefix = ", ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class UnsupportedBindingError(AppLoadError):
    """The app uses a binding or trigger type funchost does not implement (yet)."""


# --- invocation ----------------------------------------------------------------------------------


class InvocationError(FunchostError):
    """A function invocation failed (user exception, bad return value, conversion)."""


class FunctionTimeoutError(InvocationError):
    """The invocation exceeded host.json functionTimeout."""


class RetryLater(FunchostError):
    """Control-flow signal: the work is not done, try again later (keeps the queue message)."""


class BusinessFailure(FunchostError):
    """Control-flow signal: the input is invalid for business reasons; retrying cannot help."""


# --- storage -------------------------------------------------------------------------------------


class StorageError(FunchostError):
    """A storage operation failed. `code` is Azure's error code string, `status` its HTTP status."""

    code: str = "InternalError"
    status: int = 500

    def __init__(self, message: str = "", *, code: str | None = None, status: int | None = None) -> None:
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        super().__init__(f"{self.code}: {message}" if message else self.code)


class ResourceNotFound(StorageError):
    code, status = "ResourceNotFound", 404


class QueueNotFound(ResourceNotFound):
    code = "QueueNotFound"


class MessageNotFound(ResourceNotFound):
    code = "MessageNotFound"


class ContainerNotFound(ResourceNotFound):
    code = "ContainerNotFound"


class BlobNotFound(ResourceNotFound):
    code = "BlobNotFound"


class ResourceConflict(StorageError):
    code, status = "ResourceAlreadyExists", 409


class QueueAlreadyExists(ResourceConflict):
    code = "QueueAlreadyExists"


class QueueBeingDeleted(ResourceConflict):
    code = "QueueBeingDeleted"


class ContainerAlreadyExists(ResourceConflict):
    code = "ContainerAlreadyExists"


class LeaseConflict(ResourceConflict):
    """Lease already present / id mismatch / lost (blob leases, document leases, locks)."""

    code = "LeaseAlreadyPresent"


class PopReceiptMismatch(StorageError):
    code, status = "PopReceiptMismatch", 400


class InvalidInput(StorageError):
    code, status = "InvalidInput", 400


class InvalidResourceName(InvalidInput):
    code = "InvalidResourceName"


class RequestBodyTooLarge(StorageError):
    code, status = "RequestBodyTooLarge", 413


class PreconditionFailed(StorageError):
    """If-Match / If-None-Match failed (HTTP 412)."""

    code, status = "ConditionNotMet", 412


class ServiceUnavailable(StorageError):
    code, status = "ServerBusy", 503

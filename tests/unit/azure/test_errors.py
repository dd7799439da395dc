"""Translation of azure-core errors into funchost's exception tree, by service error code."""

from __future__ import annotations

import pytest
from azure.core.exceptions import ClientAuthenticationError, HttpResponseError, ServiceRequestError

from funchost import errors as fe
from funchost.storage.azure.errors import translate, translated


class FakeResponse:
    """The few attributes azure-core reads from a transport response."""

    def __init__(self, status: int, code: str | None) -> None:
        self.status_code = status
        self.reason = "reason"
        self.headers = {"x-ms-error-code": code} if code else {}
        self.request = None

    def text(self, encoding: str | None = None) -> str:
        return ""


def http_error(
    status: int, code: str | None, message: str = "first line\nRequestId:1\nTime:now"
) -> HttpResponseError:
    return HttpResponseError(message=message, response=FakeResponse(status, code))


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (404, "QueueNotFound", fe.QueueNotFound),
        (404, "MessageNotFound", fe.MessageNotFound),
        (400, "PopReceiptMismatch", fe.PopReceiptMismatch),
        (413, "RequestBodyTooLarge", fe.RequestBodyTooLarge),
        (409, "QueueAlreadyExists", fe.QueueAlreadyExists),
        (409, "QueueBeingDeleted", fe.QueueBeingDeleted),
        (404, "ContainerNotFound", fe.ContainerNotFound),
        (404, "BlobNotFound", fe.BlobNotFound),
        (409, "ContainerAlreadyExists", fe.ContainerAlreadyExists),
        (412, "ConditionNotMet", fe.PreconditionFailed),
        (409, "LeaseAlreadyPresent", fe.LeaseConflict),
        (409, "LeaseIdMismatchWithLeaseOperation", fe.LeaseConflict),
        (409, "LeaseNotPresentWithLeaseOperation", fe.LeaseConflict),
        (409, "LeaseIsBrokenAndCannotBeRenewed", fe.LeaseConflict),
        (412, "LeaseIdMissing", fe.PreconditionFailed),
        (412, "LeaseIdMismatchWithBlobOperation", fe.PreconditionFailed),
        (400, "InvalidResourceName", fe.InvalidResourceName),
        (400, "OutOfRangeQueryParameterValue", fe.InvalidInput),
        (503, "ServerBusy", fe.ServiceUnavailable),
    ],
)
def test_service_codes_pick_the_funchost_type_and_keep_code_and_status(status, code, expected) -> None:  # type: ignore[no-untyped-def]
    error = translate(http_error(status, code))
    assert type(error) is expected
    assert (error.code, error.status) == (code, status)
    assert str(error) == f"{code}: first line"  # first line only: no request id, URL or headers


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (404, fe.ResourceNotFound),
        (409, fe.ResourceConflict),
        (500, fe.StorageError),
        (503, fe.ServiceUnavailable),
    ],
)
def test_unknown_codes_fall_back_on_the_status(status: int, expected: type[fe.StorageError]) -> None:
    error = translate(http_error(status, "SomethingNew"))
    assert type(error) is expected and error.status == status and error.code == "SomethingNew"


def test_authentication_failure_is_a_403_storage_error() -> None:
    error = translate(
        ClientAuthenticationError(
            message="Server failed to authenticate", response=FakeResponse(403, "AuthenticationFailed")
        )
    )
    assert type(error) is fe.StorageError and (error.code, error.status) == ("AuthenticationFailed", 403)


def test_unreachable_service_is_retryable_and_its_message_is_redacted() -> None:
    error = translate(ServiceRequestError("Cannot connect to https://a/q?sv=1&sig=SECRET"))
    assert isinstance(error, fe.ServiceUnavailable) and error.status == 503
    assert "SECRET" not in str(error)


def test_translated_block_raises_funchost_errors_without_the_sdk_chain() -> None:
    with pytest.raises(fe.QueueNotFound) as caught, translated():
        raise http_error(404, "QueueNotFound")
    assert caught.value.__cause__ is None and caught.value.__suppress_context__

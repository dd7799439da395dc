"""Azure Storage error responses: the code in `x-ms-error-code` and in the body.

Blob and Queue answer `<Error><Code>..</Code><Message>..</Message></Error>` (XML); Table answers
`{"odata.error": {"code": .., "message": {"lang": "en-US", "value": ..}}}` (JSON). HEAD responses
carry no body, so the header is the only carrier of the code. Messages are the service's texts
(https://learn.microsoft.com/rest/api/storageservices/common-rest-api-error-codes and the
blob/queue/table error code pages), followed by `RequestId` and `Time` lines as the service adds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from xml.sax.saxutils import escape

from funchost.errors import StorageError
from funchost.storage_endpoints.wire import Response, StorageRequest

MESSAGES = {
    "AuthenticationFailed": "Server failed to authenticate the request. Make sure the value of Authorization "
                            "header is formed correctly including the signature.",
    "AuthorizationFailure": "This request is not authorized to perform this operation.",
    "AuthorizationPermissionMismatch": "This request is not authorized to perform this operation using this "
                                       "permission.",
    "AuthorizationServiceMismatch": "This request is not authorized to perform this operation using this service.",
    "AuthorizationResourceTypeMismatch": "This request is not authorized to perform this operation using this "
                                         "resource type.",
    "AuthorizationProtocolMismatch": "This request is not authorized to perform this operation using this protocol.",
    "AuthorizationSourceIPMismatch": "This request is not authorized to perform this operation using this source IP.",
    "NoAuthenticationInformation": "Server failed to authenticate the request. Please refer to the information "
                                   "in the www-authenticate header.",
    "ResourceNotFound": "The specified resource does not exist.",
    "ContainerNotFound": "The specified container does not exist.",
    "BlobNotFound": "The specified blob does not exist.",
    "QueueNotFound": "The specified queue does not exist.",
    "MessageNotFound": "The specified message does not exist.",
    "TableNotFound": "The table specified does not exist.",
    "ContainerAlreadyExists": "The specified container already exists.",
    "BlobAlreadyExists": "The specified blob already exists.",
    "QueueAlreadyExists": "The specified queue already exists.",
    "TableAlreadyExists": "The table specified already exists.",
    "EntityAlreadyExists": "The specified entity already exists.",
    "ConditionNotMet": "The condition specified using HTTP conditional header(s) is not met.",
    "UpdateConditionNotSatisfied": "The update condition specified in the request was not satisfied.",
    "InvalidRange": "The range specified is invalid for the current size of the resource.",
    "InvalidQueryParameterValue": "Value for one of the query parameters specified in the request URI is invalid.",
    "OutOfRangeQueryParameterValue": "One of the query parameters specified in the request URI is outside the "
                                     "permissible range.",
    "InvalidHeaderValue": "The value for one of the HTTP headers is not in the correct format.",
    "MissingRequiredHeader": "An HTTP header that's mandatory for this request is not specified.",
    "InvalidXmlDocument": "XML specified is not syntactically valid.",
    "InvalidInput": "One of the request inputs is not valid.",
    "InvalidResourceName": "The specifed resource name contains invalid characters.",
    "OutOfRangeInput": "One of the request inputs is out of range.",
    "InvalidMetadata": "The metadata specified is invalid. It has characters that are not permitted.",
    "RequestBodyTooLarge": "The request body is too large and exceeds the maximum permissible limit.",
    "Md5Mismatch": "The MD5 value specified in the request did not match with the MD5 value calculated by the "
                   "server.",
    "InvalidMd5": "The MD5 value specified in the request is invalid. The MD5 value must be 128 bits and Base64-"
                  "encoded.",
    "InvalidBlockList": "The specified block list is invalid.",
    "InvalidBlockId": "The specified block ID is invalid. The block ID must be Base64-encoded.",
    "InvalidBlobType": "The blob type is invalid for this operation.",
    "UnsupportedHeader": "One of the HTTP headers specified in the request is not supported.",
    "UnsupportedQueryParameter": "One of the query parameters specified in the request URI is not supported.",
    "UnsupportedHttpVerb": "The resource doesn't support the specified HTTP verb.",
    "NotImplemented": "The requested operation is not implemented on the specified resource.",
    "FeatureNotSupported": "This operation is not supported by this emulator of the storage service.",
    "PropertiesNeedValue": "The values are not specified for all properties in the entity.",
    "AtomFormatNotSupported": "Atom format is not supported.",
    "PopReceiptMismatch": "The specified pop receipt did not match the pop receipt for a dequeued message.",
    "InvalidUri": "The requested URI does not represent any resource on the server.",
    "InternalError": "The server encountered an internal error. Please retry the request.",
    "ServerBusy": "The server is currently unable to receive requests. Please retry your request.",
}


class ApiError(Exception):
    """An answer other than success: status, Azure's code, message and detail elements."""

    def __init__(self, status: int, code: str, message: str | None = None,
                 details: Mapping[str, str] | None = None) -> None:
        self.status = status
        self.code = code
        self.message = message or MESSAGES.get(code, code)
        self.details = dict(details or {})
        super().__init__(f"{status} {code}: {self.message}")


def from_storage_error(exc: StorageError) -> ApiError:
    """A port's error as the service answers it (the port already carries Azure's code)."""
    status = exc.status if 400 <= exc.status < 600 else 500
    return ApiError(status, exc.code, MESSAGES.get(exc.code))


def not_supported(what: str) -> ApiError:
    """An API of the service that the embedded endpoints do not implement (docs/storage-endpoints.md)."""
    return ApiError(501, "NotImplemented", f"{MESSAGES['NotImplemented']} ({what} is not supported by "
                                           "funchost's embedded storage endpoints)")


def _full_message(error: ApiError, request: StorageRequest | None) -> str:
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    request_id = request.request_id if request is not None else ""
    return f"{error.message}\nRequestId:{request_id}\nTime:{stamp}"


def xml_error(error: ApiError, request: StorageRequest | None) -> Response:
    details = "".join(f"<{k}>{escape(v)}</{k}>" for k, v in error.details.items())
    body = ('<?xml version="1.0" encoding="utf-8"?><Error><Code>' + escape(error.code) + "</Code><Message>"
            + escape(_full_message(error, request)) + "</Message>" + details + "</Error>")
    response = Response(error.status, body.encode("utf-8"), content_type="application/xml")
    return response.add("x-ms-error-code", error.code)


def json_error(error: ApiError, request: StorageRequest | None, *, odata: str = "minimalmetadata") -> Response:
    payload = {"odata.error": {"code": error.code,
                               "message": {"lang": "en-US", "value": _full_message(error, request)}}}
    body = json.dumps(payload).encode("utf-8")
    content_type = f"application/json;odata={odata};streaming=true;charset=utf-8"
    return Response(error.status, body, content_type=content_type).add("x-ms-error-code", error.code)

"""Request parsing and response shapes of the management API (as HttpApiHandler parses and answers).

Query names are case-insensitive (NameValueCollection); values parse as .NET does:
``bool.TryParse`` (``true``/``false`` in any case), ``int.TryParse``, ``DateTime.TryParse``
(ISO 8601; no zone means UTC here), status lists comma-separated or repeated. Errors are
``CreateErrorResponse`` bodies: ``{"Message"}`` plus ``ExceptionMessage`` / ``ExceptionType`` /
``StackTrace`` when an exception caused them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, quote

from funchost.durable import history as h
from funchost.storage.durable import ALL_STATUSES

JSON = b"application/json; charset=utf-8"


@dataclass
class ApiRequest:
    method: str
    path: str  # relative to the API base, "/..."
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    origin: str  # scheme://host[:port] of the request
    url: str  # the full request URL

    def param(self, name: str) -> str | None:
        """The first value of a query parameter (names case-insensitive), as NameValueCollection."""
        values = self.params(name)
        return ",".join(values) if values else None

    def params(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.query if key.lower() == lowered]

    def flag(self, name: str, default: bool) -> bool:
        value = (self.param(name) or "").strip().lower()
        return value == "true" if value in ("true", "false") else default

    def integer(self, name: str) -> int | None:
        try:
            return int((self.param(name) or "").strip())
        except ValueError:
            return None

    def number(self, name: str) -> float | None:
        try:
            return float((self.param(name) or "").strip())
        except ValueError:
            return None

    def time(self, name: str) -> datetime | None:
        value = (self.param(name) or "").strip()
        if not value:
            return None
        try:
            return h.parse_time(value if "T" in value else value + "T00:00:00")
        except ValueError:
            return None

    def statuses(self, name: str = "runtimeStatus") -> frozenset[str]:
        """Enum.TryParse per value: names are case-sensitive; unknown values are skipped."""
        found = {v.strip() for value in self.params(name) for v in value.split(",")}
        return frozenset(v for v in found if v in ALL_STATUSES)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


@dataclass
class ApiResponse:
    status: int
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    @classmethod
    def json(cls, status: int, payload: Any, headers: list[tuple[bytes, bytes]] | None = None) -> ApiResponse:
        body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        return cls(status, body, [(b"content-type", JSON), *(headers or [])])

    @classmethod
    def error(cls, status: int, message: str, exception: BaseException | None = None,
              exception_type: str = "System.ArgumentException") -> ApiResponse:
        payload: dict[str, Any] = {"Message": message}
        if exception is not None:
            payload.update({"ExceptionMessage": str(exception), "ExceptionType": exception_type,
                            "StackTrace": None})
        return cls.json(status, payload)


def request_from_scope(scope: dict[str, Any], body: bytes, base: str) -> ApiRequest:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
    raw_path = scope.get("raw_path")
    path = raw_path.decode("latin-1") if raw_path else scope["path"]
    path = path.split("?", 1)[0]
    relative = "/" + path[len(base):].strip("/") if path.lower().startswith(base.lower()) else path
    server = scope.get("server")
    host = headers.get("host") or (f"{server[0]}:{server[1]}" if server else "localhost")
    scheme = scope.get("scheme", "http")
    query_string = scope.get("query_string", b"").decode("latin-1")
    url = f"{scheme}://{host}{path}" + (f"?{query_string}" if query_string else "")
    return ApiRequest(scope["method"], relative, parse_qsl(query_string, keep_blank_values=True), headers, body,
                      f"{scheme}://{host}", url)


def management_urls(origin: str, webhook_path: str, instance_id: str, query_suffix: str) -> dict[str, str]:
    """HttpManagementPayload for one instance (the id URL-encoded as WebUtility.UrlEncode does)."""
    prefix = f"{origin}{webhook_path}/instances/{quote(instance_id, safe='')}"
    return {
        "id": instance_id,
        "statusQueryGetUri": f"{prefix}?{query_suffix}",
        "sendEventPostUri": f"{prefix}/raiseEvent/{{eventName}}?{query_suffix}",
        "terminatePostUri": f"{prefix}/terminate?reason={{text}}&{query_suffix}",
        "rewindPostUri": f"{prefix}/rewind?reason={{text}}&{query_suffix}",
        "purgeHistoryDeleteUri": f"{prefix}?{query_suffix}",
        "restartPostUri": f"{prefix}/restart?{query_suffix}",
        "suspendPostUri": f"{prefix}/suspend?reason={{text}}&{query_suffix}",
        "resumePostUri": f"{prefix}/resume?reason={{text}}&{query_suffix}",
    }


def check_status_response(urls: dict[str, str]) -> ApiResponse:
    """CreateCheckStatusResponseMessage: 202, the links (no rewind), Location, Retry-After: 10."""
    keys = ("id", "statusQueryGetUri", "sendEventPostUri", "terminatePostUri", "purgeHistoryDeleteUri",
            "restartPostUri", "suspendPostUri", "resumePostUri")
    headers = [(b"location", urls["statusQueryGetUri"].encode("latin-1", "replace")), (b"retry-after", b"10")]
    return ApiResponse.json(202, {key: urls[key] for key in keys}, headers)


def utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)

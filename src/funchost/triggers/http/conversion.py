"""HTTP request -> the worker's ``http`` Datum, and the function's output Datum -> HTTP response.

The request Datum has exactly the shape the Python worker builds from the host's ``RpcHttp``
(``method``, ``url``, ``headers``, ``query``, ``params``, ``body``), so the library's
``HttpRequestConverter.decode`` yields a real ``func.HttpRequest`` (azure-semantics 2.4). The
response side follows the host: an ``http`` Datum from ``HttpResponseConverter.encode`` carries
status, headers, cookies and body; a plain ``string`` Datum becomes a 200 ``text/plain`` response.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import format_datetime
from http.cookies import Morsel, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, quote

from azure.functions.meta import Datum

from funchost.invocation.http_response import HttpResponseDatum, ResponseParts
from funchost.invocation.metadata import LazyMetadata

RawHeaders = Iterable[tuple[bytes, bytes]]


@dataclass
class IncomingRequest:
    """What the server read from the connection, before conversion."""

    method: str
    scheme: str
    host: str
    raw_path: str  # percent-encoded path as sent
    query_string: str  # raw, without '?'
    headers: dict[str, str]  # lower-cased names, repeated values joined with ","
    body: bytes = b""
    content_length: int | None = None
    route_values: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        query = f"?{self.query_string}" if self.query_string else ""
        return f"{self.scheme}://{self.host}{self.raw_path}{query}"


def join_headers(raw: RawHeaders) -> dict[str, str]:
    """One entry per lower-cased name; repeated headers joined with "," as .NET StringValues does."""
    headers: dict[str, str] = {}
    repeated: dict[str, list[str]] = {}  # joined once at the end: linear in the number of headers
    for name_bytes, value_bytes in raw:
        name = name_bytes.decode("latin-1").lower()
        value = value_bytes.decode("latin-1")
        if name not in headers:
            headers[name] = value
        elif name in repeated:
            repeated[name].append(value)
        else:
            repeated[name] = [headers[name], value]
    for name, values in repeated.items():
        headers[name] = ",".join(values)
    return headers


def query_values(query_string: str) -> dict[str, list[str]]:
    """Query parameters grouped case-insensitively (first spelling kept), all values in order."""
    grouped: dict[str, list[str]] = {}
    spelling: dict[str, str] = {}
    for name, value in parse_qsl(query_string, keep_blank_values=True):
        key = spelling.setdefault(name.lower(), name)
        grouped.setdefault(key, []).append(value)
    return grouped


def request_datum(request: IncomingRequest, query: Mapping[str, list[str]] | None = None) -> Datum:
    """The trigger value the worker receives for an HTTP-triggered function."""
    if query is None:
        query = query_values(request.query_string)
    joined = {name: ",".join(values) for name, values in query.items()}
    return Datum(type="http", value={
        "method": Datum(request.method, "string"),
        "url": Datum(request.url, "string"),
        "headers": {name: Datum(value, "string") for name, value in request.headers.items()},
        # Python declares neither UseNullableValueDictionaryForHttp nor IgnoreEmptyValuedRpcHttpHeaders:
        # empty query values are dropped, empty headers kept.
        "query": {name: Datum(value, "string") for name, value in joined.items() if value},
        "params": {name: Datum(value, "string") for name, value in request.route_values.items()},
        "body": Datum(request.body, "bytes"),
    })


def _dotnet_string(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return str(value)


def _body_properties(request: IncomingRequest) -> dict[str, Any]:
    """Top-level properties of a JSON object body (the host's binding data from the body)."""
    if not request.body or not request.content_length:
        return {}
    try:
        parsed = json.loads(request.body)
    except (ValueError, RecursionError):  # the host's TryParse: a body it cannot read adds nothing
        return {}
    return parsed if isinstance(parsed, dict) else {}


def binding_data(request: IncomingRequest, query: Mapping[str, list[str]] | None = None) -> dict[str, Any]:
    """Binding data as the HTTP extension builds it: body properties, then query (without
    ``code``), then route values, then the ``Query`` and ``Headers`` dictionaries."""
    if query is None:
        query = query_values(request.query_string)
    data: dict[str, Any] = {}
    folded: dict[str, str] = {}

    def put(name: str, value: Any) -> None:
        key = folded.setdefault(name.lower(), name)
        data[key] = value

    for name, value in _body_properties(request).items():
        put(name, value)
    for name, values in query.items():
        if name.lower() != "code":
            put(name, ",".join(values))
    for name, value in request.route_values.items():
        put(name, value)
    if "query" not in folded:
        put("Query", {name: values[-1] for name, values in query.items()})
    if "headers" not in folded:
        put("Headers", dict(request.headers))
    return data


def trigger_metadata(data: Mapping[str, Any]) -> Mapping[str, Datum]:
    """Binding data as the worker receives it: strings as ``string``, objects as ``json``.

    The Datums (the ``Headers`` and ``Query`` JSON above all) are built when a converter reads
    them: `func.HttpRequest` parameters never do."""
    present = {name: value for name, value in data.items() if value is not None}  # the host skips nulls
    return LazyMetadata(present, metadata_datum)


def metadata_datum(value: Any) -> Datum:
    if isinstance(value, (dict, list)):
        return Datum(json.dumps(value), "json")
    return Datum(_dotnet_string(value), "string")


# ----------------------------------------------------------------------------------------------
# Responses


@dataclass
class OutgoingResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes

    def asgi_headers(self) -> list[tuple[bytes, bytes]]:
        return [(n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in self.headers]


TEXT_PLAIN = "text/plain; charset=utf-8"


def _datum_bytes(datum: Any) -> bytes:
    value = datum.value if isinstance(datum, Datum) else datum
    if value is None:
        return b""
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(datum, Datum) and datum.type == "json":
        return str(value).encode("utf-8")
    return json.dumps(value).encode("utf-8")


def _escape(text: str) -> str:
    """.NET Uri.EscapeDataString, which ASP.NET applies to cookie names and values."""
    return quote(text, safe="-_.~")


def _cookie_expires(morsel: Morsel[str]) -> str | None:
    raw = morsel["expires"]
    if not raw:
        return None
    if isinstance(raw, (int, float)):
        return None  # SimpleCookie numeric expires are offsets; the worker ignores them
    for fmt in ("%a, %d %b %Y %H:%M:%S GMT", "%a, %d-%b-%Y %H:%M:%S GMT"):
        try:
            moment = datetime.strptime(str(raw), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
        return format_datetime(moment, usegmt=True)
    return None


_SAME_SITE = {"strict": "strict", "lax": "lax", "none": "none"}


def set_cookie_header(name: str, morsel: Morsel[str]) -> str:
    """A Set-Cookie value formatted like ASP.NET's ``SetCookieHeaderValue`` (path defaults to /)."""
    parts = [f"{_escape(name)}={_escape(morsel.value)}"]
    expires = _cookie_expires(morsel)
    if expires:
        parts.append(f"expires={expires}")
    max_age = morsel["max-age"]
    if max_age not in ("", None):
        try:
            parts.append(f"max-age={int(float(max_age))}")
        except ValueError:
            pass
    if morsel["domain"]:
        parts.append(f"domain={morsel['domain']}")
    parts.append(f"path={morsel['path'] or '/'}")
    if morsel["secure"]:
        parts.append("secure")
    same_site = _SAME_SITE.get(str(morsel["samesite"] or "").lower())
    if same_site:
        parts.append(f"samesite={same_site}")
    if morsel["httponly"]:
        parts.append("httponly")
    return "; ".join(parts)


def _cookies(cookies: Any) -> list[str]:
    headers: list[str] = []
    for cookie in cookies or ():
        if isinstance(cookie, SimpleCookie):
            headers.extend(set_cookie_header(name, morsel) for name, morsel in cookie.items())
    return headers


def response_from_output(datum: Datum | None) -> OutgoingResponse:
    """The HTTP response for a function's http output (``$return`` or a named binding)."""
    if type(datum) is HttpResponseDatum:
        direct = _direct_response(datum.parts)
        if direct is not None:
            return direct
    if datum is None or datum.value is None:
        # The host's invocation middleware falls back to OkResult: 200 with an empty body.
        return OutgoingResponse(200, [], b"")
    if datum.type == "http" and isinstance(datum.value, Mapping):
        return _http_response(datum.value)
    body = _datum_bytes(datum)
    return OutgoingResponse(200, [("content-type", TEXT_PLAIN)], body)


def _direct_response(parts: ResponseParts) -> OutgoingResponse | None:
    """`_http_response(parts.datum_value())` for the common case (an int status, a bytes body,
    no cookies) without the Datums; None otherwise."""
    status, body = parts.status_code, parts.body
    if type(status) is not int or type(body) is not bytes or parts.cookies:
        return None
    headers = [(name, str(value)) for name, value in parts.headers.items()
               if name.lower() not in ("content-length", "transfer-encoding")]
    return OutgoingResponse(status, headers, body)


def _http_response(value: Mapping[str, Any]) -> OutgoingResponse:
    status_datum = value.get("status_code")
    raw_status = status_datum.value if isinstance(status_datum, Datum) else status_datum
    try:
        status = int(raw_status) if raw_status not in (None, "") else 200
    except (TypeError, ValueError):
        status = 500
    headers: list[tuple[str, str]] = []
    for name, header in (value.get("headers") or {}).items():
        header_value = header.value if isinstance(header, Datum) else header
        if name.lower() in ("content-length", "transfer-encoding"):
            continue  # recomputed by the server from the body
        headers.append((name, str(header_value)))
    headers.extend(("set-cookie", cookie) for cookie in _cookies(value.get("cookies")))
    body = _datum_bytes(value.get("body"))
    return OutgoingResponse(status, headers, body)

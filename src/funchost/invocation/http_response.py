"""A returned `func.HttpResponse`, read without building the Datums the worker would send.

`HttpResponseConverter.encode` turns the response into an ``http`` Datum of Datums (status,
headers, cookies, body) that the host then takes apart again. `encode_response` does the same
reads and the same changes to the response object (a ``content-type`` added when missing,
``Set-Cookie`` headers moved to cookies) in the same order, but keeps the plain values: the HTTP
trigger builds its response from them, and the Datum value is built only if someone reads it.
"""

from __future__ import annotations

from http.cookies import SimpleCookie
from typing import Any

from azure.functions import _abc as azf_abc
from azure.functions.meta import Datum

from funchost.invocation.native import LazyDatum


class ResponseParts:
    """What `HttpResponseConverter.encode` puts in its Datum, as plain values."""

    __slots__ = ("body", "cookies", "headers", "status_code")

    def __init__(self, status_code: Any, headers: dict[str, Any], cookies: list[SimpleCookie] | None,
                 body: Any) -> None:
        self.status_code = status_code  # the response's own value (the Datum holds str() of it)
        self.headers = headers
        self.cookies = cookies
        self.body = body

    def datum_value(self) -> dict[str, Any]:
        """The converter's Datum value, exactly."""
        return {
            "status_code": Datum(type="string", value=str(self.status_code)),
            "headers": {name: Datum(type="string", value=value) for name, value in self.headers.items()},
            "cookies": self.cookies,
            "body": Datum(type="bytes", value=self.body),
        }


class HttpResponseDatum(LazyDatum):
    """The ``http`` Datum of a returned response; `parts` are its values without Datums."""

    def __init__(self, parts: ResponseParts) -> None:
        super().__init__("http", parts.datum_value)
        self.parts = parts


def encode_response(obj: azf_abc.HttpResponse) -> HttpResponseDatum:
    """`HttpResponseConverter.encode(obj)` for a `func.HttpResponse` (Python 3.8+ branch)."""
    status = obj.status_code
    headers = obj.headers
    # `"content-type" in headers` on werkzeug's Headers raises and catches a KeyError (an HTTP
    # exception object, ~2 µs) whenever the header is missing: one pass over the names instead,
    # compared as Headers compares them (case-insensitively).
    has_type = has_cookie = False
    for name in headers.keys():
        lowered = name.lower()
        if lowered == "content-type":
            has_type = True
        elif lowered == "set-cookie":
            has_cookie = True
    if not has_type:
        mimetype = obj.mimetype
        headers["content-type"] = f"{mimetype}; charset={obj.charset}" if mimetype.startswith("text/") else f"{mimetype}"
    body = obj.get_body()
    if body is None:
        body = b""
    cookies = None
    if has_cookie:
        cookies = [SimpleCookie(cookie) for cookie in headers.get_all("Set-Cookie")]
        headers.pop("Set-Cookie")
    return HttpResponseDatum(ResponseParts(status, {name: value for name, value in headers.items()}, cookies, body))

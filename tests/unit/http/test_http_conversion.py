"""Request -> http Datum -> func.HttpRequest, and encoded output -> response (azure-semantics 2.4)."""

from __future__ import annotations

import json

import azure.functions as func
from azure.functions.http import HttpResponseConverter

from funchost.triggers.http.conversion import (
    IncomingRequest,
    binding_data,
    join_headers,
    request_datum,
    response_from_output,
    trigger_metadata,
)


def incoming(**overrides) -> IncomingRequest:
    values = dict(
        method="POST", scheme="http", host="localhost:7071", raw_path="/api/items/7",
        query_string="a=1&empty=&A=2&code=secret", headers={"content-type": "application/json"},
        body=b'{"name": "x", "count": 3, "ok": true, "nested": {"k": 1}}', content_length=57,
        route_values={"id": "7"},
    )
    values.update(overrides)
    return IncomingRequest(**values)


def decode(request: IncomingRequest) -> func.HttpRequest:
    converter = func.get_binding_registry().get("httpTrigger")
    return converter.decode(request_datum(request), trigger_metadata={})


def test_decoded_by_the_library_into_a_real_http_request() -> None:
    req = decode(incoming())
    assert isinstance(req, func.HttpRequest)
    assert req.method == "POST"
    assert req.url == "http://localhost:7071/api/items/7?a=1&empty=&A=2&code=secret"
    assert req.route_params == {"id": "7"}
    assert req.get_json()["name"] == "x"
    assert req.headers["Content-Type"] == "application/json"


def test_query_values_are_joined_case_insensitively_and_empty_ones_dropped() -> None:
    req = decode(incoming())
    assert dict(req.params) == {"a": "1,2", "code": "secret"}


def test_repeated_headers_are_joined_with_comma_and_names_lower_cased() -> None:
    headers = join_headers([(b"X-Tag", b"a"), (b"x-tag", b"b"), (b"X-Empty", b"")])
    assert headers == {"x-tag": "a,b", "x-empty": ""}


def test_empty_body_arrives_as_empty_bytes() -> None:
    req = decode(incoming(body=b"", content_length=None))
    assert req.get_body() == b""


def test_binding_data_precedence_and_metadata_types() -> None:
    data = binding_data(incoming())
    assert data["name"] == "x" and data["count"] == 3
    assert data["a"] == "1,2"
    assert "code" not in data
    assert data["id"] == "7"
    assert data["Query"] == {"a": "2", "empty": "", "code": "secret"}
    assert data["Headers"] == {"content-type": "application/json"}
    metadata = trigger_metadata(data)
    assert metadata["count"].type == "string" and metadata["count"].value == "3"
    assert metadata["ok"].value == "True"  # Json.NET's JValue.ToString()
    assert metadata["nested"].type == "json" and json.loads(metadata["nested"].value) == {"k": 1}
    assert metadata["Query"].type == "json"


def test_route_values_override_query_values_in_binding_data() -> None:
    data = binding_data(incoming(query_string="id=fromquery", body=b"", content_length=None))
    assert data["id"] == "7"


def encode(response: object):
    return HttpResponseConverter.encode(response, expected_type=None)


def test_http_response_defaults_text_plain_utf8_and_200() -> None:
    out = response_from_output(encode(func.HttpResponse("hi")))
    assert out.status == 200
    assert ("content-type", "text/plain; charset=utf-8") in out.headers
    assert out.body == b"hi"


def test_non_text_mimetype_has_no_charset_and_status_is_kept() -> None:
    out = response_from_output(encode(func.HttpResponse(b"{}", status_code=201, mimetype="application/json")))
    assert out.status == 201
    assert ("content-type", "application/json") in out.headers


def test_explicit_content_type_header_is_kept() -> None:
    out = response_from_output(encode(func.HttpResponse("x", headers={"Content-Type": "text/csv"})))
    assert [v for n, v in out.headers if n.lower() == "content-type"] == ["text/csv"]


def test_cookies_become_set_cookie_headers_as_aspnet_writes_them() -> None:
    response = func.HttpResponse("c")
    response.headers.add("Set-Cookie", "session=\"a b\"; Path=/app; HttpOnly; Secure; SameSite=Strict")
    response.headers.add("Set-Cookie", "theme=dark; Max-Age=60; Domain=example.com")
    out = response_from_output(encode(response))
    cookies = [v for n, v in out.headers if n == "set-cookie"]
    assert cookies == [
        "session=a%20b; path=/app; secure; samesite=strict; httponly",
        "theme=dark; max-age=60; domain=example.com; path=/",
    ]


def test_cookie_expires_is_rfc1123() -> None:
    response = func.HttpResponse("c")
    response.headers.add("Set-Cookie", "k=v; Expires=Wed, 01 Jan 2031 00:00:00 GMT")
    cookie = [v for n, v in response_from_output(encode(response)).headers if n == "set-cookie"][0]
    assert cookie == "k=v; expires=Wed, 01 Jan 2031 00:00:00 GMT; path=/"


def test_plain_string_return_is_200_text_plain() -> None:
    out = response_from_output(encode("hello"))
    assert (out.status, out.body) == (200, b"hello")
    assert out.headers == [("content-type", "text/plain; charset=utf-8")]


def test_no_output_is_200_with_empty_body_like_the_host_middleware() -> None:
    out = response_from_output(None)
    assert (out.status, out.body) == (200, b"")


def test_a_body_nested_too_deeply_to_parse_adds_no_binding_data() -> None:
    """The host reads body properties with a TryParse: a body it cannot read is no error."""
    body = b"[" * 100_000
    data = binding_data(incoming(query_string="", route_values={}, body=body, content_length=len(body)))
    assert sorted(data) == ["Headers", "Query"]


def test_many_repeated_headers_are_joined_in_order() -> None:
    headers = join_headers([(b"X-Tag", str(i).encode()) for i in range(1000)] + [(b"Other", b"o")])
    assert headers["x-tag"] == ",".join(str(i) for i in range(1000)) and headers["other"] == "o"

"""The built-in HTTP activity behind ``context.call_http`` (TaskHttpActivityShim).

The request is the SDK's ``httpRequest`` (method, uri, content, headers, tokenSource); content
without a Content-Type header is sent as ``text/plain``; multipart is refused. The result is a
DurableHttpResponse: ``{"statusCode", "headers", "content"}``. Transport errors fail the task with
the error's message. The Python SDK never asks for the 202 polling pattern, so none happens.
Managed-identity tokens do not exist outside Azure: a request with a ``tokenSource`` fails.
"""

from __future__ import annotations

import json
from typing import Any

HTTP_ACTIVITY = "BuiltIn::HttpActivity"
TIMEOUT = 100.0  # HttpClient's default timeout, in seconds


def _request(input_text: str | None) -> dict[str, Any]:
    parameters = json.loads(input_text or "[]")
    request = parameters[0] if isinstance(parameters, list) and parameters else parameters
    if isinstance(request, str):
        request = json.loads(request)
    if not isinstance(request, dict):
        raise ValueError("the HTTP request is not a JSON object")
    return request


def _headers(raw: Any) -> tuple[dict[str, str], str]:
    headers: dict[str, str] = {}
    content_type = ""
    for name, value in (raw or {}).items():
        values = value if isinstance(value, list) else [value]
        if str(name).lower() == "content-type":
            for item in values:
                if "multipart" in str(item):
                    raise ValueError("Multipart content is not supported with CallHttpAsync.")
                content_type = str(item)
        else:
            headers[str(name)] = ", ".join(str(v) for v in values)
    return headers, content_type


async def call_http(input_text: str | None) -> tuple[bool, str]:
    """(True, DurableHttpResponse JSON) or (False, failure reason)."""
    import httpx  # here: only apps that call HTTP from an orchestrator load it, not every start

    try:
        request = _request(input_text)
        if request.get("tokenSource"):
            return False, "Managed identity tokens (tokenSource) are not available outside Azure."
        headers, content_type = _headers(request.get("headers"))
        content = request.get("content")
        if content is not None:
            headers["Content-Type"] = content_type or "text/plain"
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            response = await client.request(str(request.get("method") or "GET"), str(request.get("uri")),
                                            headers=headers, content=None if content is None else str(content))
    except (httpx.HTTPError, ValueError) as exc:
        return False, str(exc) or type(exc).__name__
    grouped: dict[str, list[str]] = {}
    for raw_name, raw_value in response.headers.raw:  # the server's spelling, as HttpHeaders keep it
        name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
        if name.lower() in ("content-type", "content-length", "content-encoding"):
            continue  # content headers are not response headers in HttpResponseMessage
        grouped.setdefault(name, []).append(value)
    result_headers = {name: values[0] if len(values) == 1 else values for name, values in grouped.items()}
    payload = {"statusCode": response.status_code, "headers": result_headers, "content": response.text}
    return True, json.dumps(payload, separators=(",", ":"))

"""The HTTP trigger value on the lean path: `func.HttpRequest` built from the request as read.

`request_datum` gives the ``http`` Datum the worker receives; `HttpRequestConverter.decode`
turns it back into `func.HttpRequest`. `HttpRequestDatum.decode` builds the same object from
the `IncomingRequest` directly, and the Datum value only when something else reads it (a
parameter without the library's converter, a middleware piece).
"""

from __future__ import annotations

from collections.abc import Mapping

from azure.functions.http import HttpRequest, HttpRequestConverter

from funchost.invocation.native import NativeDatum
from funchost.triggers.http.conversion import IncomingRequest, request_datum


class HttpRequestDatum(NativeDatum):
    converter = HttpRequestConverter

    def __init__(self, request: IncomingRequest, query: Mapping[str, list[str]]) -> None:
        super().__init__("http", lambda: request_datum(request, query).value)
        self.request = request
        self.query = query

    def decode(self) -> HttpRequest:
        request = self.request
        params = {}
        for name, values in self.query.items():
            joined = ",".join(values)
            if joined:  # empty query values are dropped, as in request_datum
                params[name] = joined
        return HttpRequest(method=request.method, url=request.url, headers=request.headers, params=params,
                                route_params=request.route_values, body_type="bytes", body=request.body)

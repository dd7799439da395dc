"""`funchost start` with telemetryMode OpenTelemetry, exporting to an OTLP receiver."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from tests.acceptance.support import start_funchost, stop_funchost
from tests.support.otlp import OtlpReceiver

from funchost.testing import write_app

pytestmark = pytest.mark.acceptance

APP = """
import logging

import azure.functions as func
from opentelemetry import trace

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)


@app.route(route="orders/{id}")
def order(req: func.HttpRequest) -> func.HttpResponse:
    with trace.get_tracer("orders").start_as_current_span("load order") as span:
        span.set_attribute("order.id", req.route_params["id"])
        logging.info("order loaded")
    return func.HttpResponse("ok")
"""

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


def test_spans_of_a_request_and_the_function_share_the_callers_trace(tmp_path: Path) -> None:
    with OtlpReceiver() as receiver:
        app = write_app(tmp_path / "app", APP, host_json={"version": "2.0", "telemetryMode": "OpenTelemetry"},
                        settings={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200",
                                  "OTEL_SERVICE_NAME": "orders-app"})
        host = start_funchost(app, data_dir=tmp_path / "data")
        try:
            response = httpx.get(f"{host.base_url}/api/orders/42",
                                 headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"})
            assert response.status_code == 200
            receiver.wait_for(lambda r: {"GET api/orders/{id}", "load order"} <= {s.name for s in r.spans})
        finally:
            code, output = stop_funchost(host)
        assert code == 0, output
        receiver.wait_for(lambda r: any(log.body == "order loaded" for log in r.logs))

    spans = {span.name: span for span in receiver.spans}
    invocation, user = spans["GET api/orders/{id}"], spans["load order"]
    assert {invocation.trace_id, user.trace_id} == {CALLER_TRACE}
    assert invocation.parent_span_id == CALLER_SPAN
    assert user.parent_span_id == invocation.span_id
    assert invocation.attributes["faas.name"] == "order"
    assert invocation.attributes["faas.trigger"] == "http"
    assert invocation.attributes["http.route"] == "api/orders/{id}"
    assert invocation.attributes["url.path"] == "/api/orders/42"
    assert user.attributes["order.id"] == "42"
    assert invocation.resource["service.name"] == "orders-app"
    log = next(log for log in receiver.logs if log.body == "order loaded")
    assert (log.trace_id, log.span_id) == (CALLER_TRACE, user.span_id)
    assert "Function.order.User" == log.attributes["category"]
    assert json.dumps(invocation.attributes)  # plain values only

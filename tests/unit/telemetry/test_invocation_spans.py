"""OpenTelemetry in an in-process host: spans, parents, context.trace_context, logs, metrics."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tests.support.otlp import OtlpReceiver

from funchost.telemetry.pipeline import TelemetryPipeline
from funchost.telemetry.tracing import InvocationTracing
from funchost.testing import HostHarness, write_app

APP = """
import json
import logging

import azure.functions as func
from opentelemetry import trace
from opentelemetry.propagate import extract

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
tracer = trace.get_tracer("user.code")


@app.route(route="hello")
def hello(req: func.HttpRequest, context: func.Context) -> func.HttpResponse:
    carrier = {"traceparent": context.trace_context.trace_parent,
               "tracestate": context.trace_context.trace_state}
    with tracer.start_as_current_span("explicit", context=extract(carrier)):
        pass
    with tracer.start_as_current_span("implicit"):
        logging.getLogger("user").warning("inside the function")
    return func.HttpResponse(json.dumps({"traceparent": context.trace_context.trace_parent,
                                         "tracestate": context.trace_context.trace_state}))


@app.route(route="fails")
async def fails(req: func.HttpRequest) -> func.HttpResponse:
    raise ValueError("broken on purpose")


@app.queue_trigger(arg_name="msg", queue_name="work", connection="AzureWebJobsStorage")
def work(msg: str) -> None:
    return None
"""

OTEL_HOST_JSON = {"version": "2.0", "telemetryMode": "OpenTelemetry"}
CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


def otel_settings(receiver: OtlpReceiver) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_SERVICE_NAME": "spans-test"}


def pipeline_of(host: HostHarness) -> TelemetryPipeline:
    pipeline = host.runtime.services.find(TelemetryPipeline)
    assert pipeline is not None
    return pipeline


async def test_http_request_user_spans_and_logs_share_the_callers_trace(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json=OTEL_HOST_JSON)
    with OtlpReceiver() as receiver:
        async with HostHarness(app, data_dir=tmp_path / "data", settings=otel_settings(receiver)) as host:
            response = await host.http("GET", "/api/hello", headers={
                "traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01", "tracestate": "vendor=abc"})
            assert response.status_code == 200
            given = response.json()
            pipeline_of(host).flush()
            receiver.wait_for(lambda r: len(r.spans) >= 3 and any(log.body == "inside the function" for log in r.logs))

    by_name = {span.name: span for span in receiver.spans}
    invocation = by_name["GET api/hello"]
    assert invocation.kind == 2  # SPAN_KIND_SERVER
    assert invocation.trace_id == CALLER_TRACE
    assert invocation.parent_span_id == CALLER_SPAN
    assert invocation.attributes["faas.name"] == "hello"
    assert invocation.attributes["faas.trigger"] == "http"
    assert invocation.attributes["faas.coldstart"] is True
    assert len(invocation.attributes["faas.invocation_id"]) == 36
    assert invocation.attributes["http.route"] == "api/hello"
    assert invocation.attributes["http.request.method"] == "GET"
    assert invocation.attributes["http.response.status_code"] == 200
    assert invocation.resource["service.name"] == "spans-test"
    # context.trace_context is the invocation span, with the caller's tracestate.
    assert given["traceparent"] == f"00-{CALLER_TRACE}-{invocation.span_id}-01"
    assert given["tracestate"] == "vendor=abc"
    for name in ("explicit", "implicit"):  # with and without context.trace_context
        assert by_name[name].trace_id == CALLER_TRACE
        assert by_name[name].parent_span_id == invocation.span_id
    log = next(log for log in receiver.logs if log.body == "inside the function")
    assert (log.trace_id, log.span_id) == (CALLER_TRACE, by_name["implicit"].span_id)
    assert log.attributes["category"] == "Function.hello.User"


async def test_a_request_without_traceparent_starts_a_trace(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json=OTEL_HOST_JSON)
    with OtlpReceiver() as receiver:
        async with HostHarness(app, data_dir=tmp_path / "data", settings=otel_settings(receiver)) as host:
            response = await host.http("GET", "/api/hello", headers={"traceparent": "not-a-traceparent"})
            pipeline_of(host).flush()
            receiver.wait_for(lambda r: len(r.spans) >= 3)
    invocation = next(span for span in receiver.spans if span.name == "GET api/hello")
    assert invocation.parent_span_id == ""
    version, trace_id, span_id, flags = response.json()["traceparent"].split("-")
    assert (version, trace_id, span_id) == ("00", invocation.trace_id, invocation.span_id)
    assert int(flags, 16) & 1  # sampled (the SDK also sets W3C level 2's "random" bit on new traces)


async def test_a_failure_is_an_error_span_and_counted(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP, host_json=OTEL_HOST_JSON)
    with OtlpReceiver() as receiver:
        async with HostHarness(app, data_dir=tmp_path / "data", settings=otel_settings(receiver)) as host:
            assert (await host.http("GET", "/api/fails")).status_code == 500
            assert (await host.invoke("work", "payload")).succeeded
            pipeline_of(host).flush()
            receiver.wait_for(lambda r: len(r.spans) >= 2 and "faas.errors" in r.metrics)
    failed = next(span for span in receiver.spans if span.name == "GET api/fails")
    assert failed.status_code == 2  # STATUS_CODE_ERROR
    assert failed.attributes["error.type"] == "ValueError"
    assert failed.attributes["http.response.status_code"] == 500
    assert "exception" in failed.events
    queued = next(span for span in receiver.spans if span.name == "Functions.work")
    assert queued.kind == 2
    assert queued.attributes["faas.trigger"] == "pubsub"
    assert queued.attributes["messaging.destination.name"] == "work"
    assert "faas.coldstart" not in queued.attributes  # only the host's first invocation
    # Cumulative points: the last export holds the totals.
    assert receiver.metrics["faas.errors"][-1].as_int == 1
    assert receiver.metrics["faas.invocations"][-1].as_int == 1
    durations = {next(a.value.string_value for a in point.attributes if a.key == "faas.name"): point
                 for point in receiver.metrics["faas.invoke_duration"]}
    assert durations.keys() == {"fails", "work"} and all(point.count == 1 for point in durations.values())
    assert list(durations["work"].explicit_bounds)[:3] == [0.005, 0.01, 0.025]


async def test_off_by_default_nothing_is_added(tmp_path: Path) -> None:
    app = write_app(tmp_path / "app", APP)
    async with HostHarness(app, data_dir=tmp_path / "data") as host:
        assert host.runtime.services.find(TelemetryPipeline) is None
        assert not any(isinstance(piece, InvocationTracing) for piece in host.runtime.invoker._attempt)  # type: ignore[attr-defined]
        traceparent = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"
        response = await host.http("GET", "/api/hello", headers={"traceparent": traceparent})
        assert response.json()["traceparent"] == traceparent  # the caller's, as before


async def test_opentelemetry_mode_without_an_endpoint_exports_nothing(tmp_path: Path,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    app = write_app(tmp_path / "app", APP, host_json=OTEL_HOST_JSON)
    with caplog.at_level(logging.INFO, logger="funchost.telemetry"):
        async with HostHarness(app, data_dir=tmp_path / "data") as host:
            assert host.runtime.services.find(TelemetryPipeline) is None
    assert "OTEL_EXPORTER_OTLP_ENDPOINT is not set" in caplog.text


async def test_an_endpoint_that_is_down_costs_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from tests.acceptance.support import free_port

    app = write_app(tmp_path / "app", APP, host_json=OTEL_HOST_JSON)
    settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}", "OTEL_EXPORTER_OTLP_TIMEOUT": "500",
                "OTEL_BSP_MAX_QUEUE_SIZE": "4", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "2"}
    with caplog.at_level(logging.WARNING, logger="funchost.telemetry"):
        async with HostHarness(app, data_dir=tmp_path / "data", settings=settings) as host:
            for _ in range(10):  # more than the queue holds; the export thread waits 5 s between batches
                assert (await host.http("GET", "/api/hello")).status_code == 200
            pipeline = pipeline_of(host)
            pipeline.flush()
    dropped = pipeline.health.dropped
    assert dropped["spans"] == 30  # every span (3 per request): some when the queue was full, the rest unsent
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("cannot export spans" in w for w in warnings) == 1
    assert sum("span" in w and "queue is full" in w for w in warnings) <= 1
    assert any("not exported while the host ran" in w and "30 spans" in w for w in warnings)


def test_receiver_decodes_what_it_is_sent() -> None:
    """The receiver itself: an empty but valid request is counted and yields nothing."""
    import httpx

    with OtlpReceiver() as receiver:
        response = httpx.post(f"{receiver.endpoint}/v1/traces", content=b"")
        assert response.status_code == 200
        assert receiver.requests == 1 and receiver.spans == []


async def test_without_the_sdk_a_warning_says_how_to_install_it(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__("sys").modules, "opentelemetry.exporter.otlp.proto.http", None)
    app = write_app(tmp_path / "app", APP.replace("from opentelemetry import trace", "trace = None")
                    .replace("from opentelemetry.propagate import extract", "")
                    .replace('tracer = trace.get_tracer("user.code")', ""), host_json=OTEL_HOST_JSON)
    settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    with caplog.at_level(logging.WARNING, logger="funchost.telemetry"):
        async with HostHarness(app, data_dir=tmp_path / "data", settings=settings) as host:
            assert host.runtime.services.find(TelemetryPipeline) is None
            assert (await host.invoke("work", "x")).succeeded
    assert "pip install 'funchost[otel]'" in caplog.text
    assert "opentelemetry.exporter.otlp.proto.http" in caplog.text

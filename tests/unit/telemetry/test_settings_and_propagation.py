"""telemetryMode, the OTEL_* settings, and where an invocation's trace continues from."""

from __future__ import annotations

from pathlib import Path

import pytest
from azure.functions.meta import Datum

from funchost.errors import ConfigError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.settings.host_json import parse_host_json
from funchost.telemetry.mode import parse_telemetry_mode
from funchost.telemetry.options import otlp_options
from funchost.telemetry.propagation import incoming

PARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.mark.parametrize(("value", "mode"), [
    (None, "ApplicationInsights"), ("OpenTelemetry", "OpenTelemetry"), ("opentelemetry", "OpenTelemetry"),
    ("none", "None"), ("2", "OpenTelemetry"), ("ApplicationInsights", "ApplicationInsights"),
])
def test_telemetry_mode_parses_as_the_host_does(value: str | None, mode: str) -> None:
    assert parse_telemetry_mode(value) == (mode, None)


def test_an_unknown_telemetry_mode_falls_back_with_a_warning() -> None:
    options = parse_host_json({"version": "2.0", "telemetryMode": "OpenTelemtry"})
    assert options.telemetry_mode == "ApplicationInsights"
    assert any("telemetryMode 'OpenTelemtry'" in warning for warning in options.warnings)
    assert parse_host_json({"version": "2.0", "telemetryMode": "OpenTelemetry"}).warnings == ()


def test_endpoints_follow_the_specification() -> None:
    options = otlp_options({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
                            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://logs:9000/ingest",
                            "OTEL_METRICS_EXPORTER": "none",
                            "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret,X-Tenant=a"})
    assert options is not None
    assert options.traces.endpoint == "http://collector:4318/v1/traces"
    assert options.logs.endpoint == "http://logs:9000/ingest"
    assert options.metrics.endpoint is None
    assert options.traces.headers == {"api-key": "s ecret", "x-tenant": "a"}
    assert options.traces.timeout == 10.0 and options.max_queue_size == 2048
    grpc = otlp_options({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc is not None and grpc.traces.endpoint == "http://collector:4317"


@pytest.mark.parametrize("settings", [{}, {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
                                      {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none",
                                       "OTEL_METRICS_EXPORTER": "none", "OTEL_LOGS_EXPORTER": "none"}])
def test_nothing_to_export(settings: dict[str, str]) -> None:
    assert otlp_options(settings) is None


@pytest.mark.parametrize(("name", "value", "message"), [
    ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "unsupported OTLP protocol"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "must be an http:// or https:// URL"),
    ("OTEL_BSP_MAX_QUEUE_SIZE", "lots", "must be a positive whole number"),
    ("OTEL_EXPORTER_OTLP_HEADERS", "secret-without-equals", "name=value pairs (the value is not shown)"),
    ("OTEL_TRACES_EXPORTER", "zipkin", "unsupported exporter"),
])
def test_a_bad_setting_is_named(name: str, value: str, message: str) -> None:
    settings = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", name: value}
    with pytest.raises(ConfigError) as raised:
        otlp_options(settings)
    assert str(raised.value).startswith(f"{name}: ") and message in str(raised.value)
    assert "secret-without-equals" not in str(raised.value)


def _request(trigger_type: str, **fields: object) -> InvocationRequest:
    trigger = BindingSpec("msg", trigger_type, "in", None, {}, is_trigger=True)
    function = FunctionSpec("f", lambda msg: None, trigger, (trigger,), (), None, None, False, "function_app.py",
                            str(Path.cwd()), None)
    return InvocationRequest(function=function, trigger_value=Datum("x", "string"), **fields)  # type: ignore[arg-type]


def _span_ids(request: InvocationRequest) -> tuple[tuple[int, int] | None, list[tuple[int, int]]]:
    from opentelemetry import trace

    parent, links = incoming(request)
    context = trace.get_current_span(parent).get_span_context() if parent is not None else None
    return ((context.trace_id, context.span_id) if context else None,
            [(link.context.trace_id, link.context.span_id) for link in links])


def test_service_bus_continues_the_message_diagnostic_id() -> None:
    request = _request("serviceBusTrigger", binding_data={"ApplicationProperties": {"Diagnostic-Id": PARENT}})
    assert _span_ids(request) == ((0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331), [])
    own = "00-11111111111111111111111111111111-2222222222222222-01"
    preferred = _request("serviceBusTrigger", binding_data={"ApplicationProperties": {
        "traceparent": own, "Diagnostic-Id": PARENT}})
    assert _span_ids(preferred)[0] == (0x11111111111111111111111111111111, 0x2222222222222222)


def test_a_batch_links_every_message_with_a_context() -> None:
    other = "00-11111111111111111111111111111111-2222222222222222-01"
    request = _request("eventHubTrigger", binding_data={"PropertiesArray": [
        {"Diagnostic-Id": PARENT}, {}, {"Diagnostic-Id": "|legacy.1."}, {"traceparent": other}]})
    parent, links = _span_ids(request)
    assert parent is None
    assert links == [(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331),
                     (0x11111111111111111111111111111111, 0x2222222222222222)]


def test_triggers_without_a_trace_context_start_a_trace() -> None:
    assert _span_ids(_request("queueTrigger", binding_data={"ApplicationProperties": {"Diagnostic-Id": PARENT}})) \
        == (None, [])
    assert _span_ids(_request("timerTrigger")) == (None, [])
    assert _span_ids(_request("httpTrigger", trace_parent="00-zz-yy-01")) == (None, [])

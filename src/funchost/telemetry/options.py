"""The standard ``OTEL_*`` settings, read from the app settings and checked once at load.

The Functions host configures OTLP export when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set and
nothing at all otherwise (azure-functions-host ``OpenTelemetryConfigurationExtensions``: no
endpoint and no Application Insights connection string, no OpenTelemetry). funchost reads the
same setting, the per-signal endpoints of the OpenTelemetry specification
(``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, ...), the protocol, headers, timeout, the batch
processor's bounds (``OTEL_BSP_*``), the metric export interval, ``OTEL_SERVICE_NAME``,
``OTEL_{TRACES,METRICS,LOGS}_EXPORTER=none`` and ``OTEL_SDK_DISABLED``, from the app settings
(local.settings.json ``Values`` or the environment). A value that does not parse is an error
naming the setting. Defaults are the specification's (opentelemetry-specification
``protocol/exporter.md``, ``configuration/sdk-environment-variables.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from funchost.errors import ConfigError

ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
PROTOCOL = "OTEL_EXPORTER_OTLP_PROTOCOL"
HEADERS = "OTEL_EXPORTER_OTLP_HEADERS"
TIMEOUT = "OTEL_EXPORTER_OTLP_TIMEOUT"
SIGNALS = ("traces", "metrics", "logs")
PROTOCOLS = ("http/protobuf", "grpc")
DEFAULT_PROTOCOL = "http/protobuf"  # the specification's default (.NET's exporter defaults to grpc)


@dataclass(frozen=True)
class SignalExport:
    """Where one signal (traces, metrics, logs) goes, or `endpoint` None when it is off."""

    endpoint: str | None
    headers: Mapping[str, str]
    timeout: float  # seconds per export request


@dataclass(frozen=True)
class OtlpOptions:
    protocol: str
    traces: SignalExport
    metrics: SignalExport
    logs: SignalExport
    service_name: str | None
    max_queue_size: int = 2048  # OTEL_BSP_MAX_QUEUE_SIZE: spans waiting for export (then dropped)
    schedule_delay: float = 5.0  # OTEL_BSP_SCHEDULE_DELAY (ms in the setting), between exports
    max_export_batch_size: int = 512  # OTEL_BSP_MAX_EXPORT_BATCH_SIZE
    metric_export_interval: float = 60.0  # OTEL_METRIC_EXPORT_INTERVAL (ms in the setting)

    @property
    def description(self) -> str:
        """Where spans go, for messages (no headers: they may carry credentials)."""
        return self.traces.endpoint or self.metrics.endpoint or self.logs.endpoint or "(nowhere)"


def otlp_options(settings: Mapping[str, str]) -> OtlpOptions | None:
    """The export configuration, or None when nothing is to be exported (no endpoint set, every
    signal's exporter ``none``, or ``OTEL_SDK_DISABLED=true``)."""
    if _get(settings, "OTEL_SDK_DISABLED").lower() == "true":
        return None
    protocol = _get(settings, PROTOCOL) or DEFAULT_PROTOCOL
    if protocol not in PROTOCOLS:
        raise ConfigError(f"unsupported OTLP protocol {protocol!r}; use one of {', '.join(PROTOCOLS)}",
                          path=PROTOCOL)
    base = _get(settings, ENDPOINT)
    signals = {signal: _signal(settings, signal, base, protocol) for signal in SIGNALS}
    if all(export.endpoint is None for export in signals.values()):
        return None
    batch = _positive_int(settings, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512)
    queue = _positive_int(settings, "OTEL_BSP_MAX_QUEUE_SIZE", 2048)
    if batch > queue:
        raise ConfigError(f"must not exceed OTEL_BSP_MAX_QUEUE_SIZE ({queue})", path="OTEL_BSP_MAX_EXPORT_BATCH_SIZE")
    return OtlpOptions(
        protocol=protocol, traces=signals["traces"], metrics=signals["metrics"], logs=signals["logs"],
        service_name=_get(settings, "OTEL_SERVICE_NAME") or None,
        max_queue_size=queue,
        schedule_delay=_positive_int(settings, "OTEL_BSP_SCHEDULE_DELAY", 5000) / 1000,
        max_export_batch_size=batch,
        metric_export_interval=_positive_int(settings, "OTEL_METRIC_EXPORT_INTERVAL", 60000) / 1000,
    )


def _signal(settings: Mapping[str, str], signal: str, base: str, protocol: str) -> SignalExport:
    upper = signal.upper()
    exporter = _get(settings, f"OTEL_{upper}_EXPORTER") or "otlp"
    if exporter not in ("otlp", "none"):
        raise ConfigError(f"unsupported exporter {exporter!r}; funchost exports over OTLP ('otlp') or not at "
                          "all ('none')", path=f"OTEL_{upper}_EXPORTER")
    own = _get(settings, f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")
    if exporter == "none" or not (own or base):
        endpoint = None
    elif own:
        endpoint = _url(own, f"OTEL_EXPORTER_OTLP_{upper}_ENDPOINT")  # used as given
    elif protocol == "grpc":
        endpoint = _url(base, ENDPOINT)
    else:  # http/protobuf: the base URL plus the signal's path
        endpoint = _url(base, ENDPOINT).rstrip("/") + f"/v1/{signal}"
    headers = dict(_headers(settings, HEADERS))
    headers.update(_headers(settings, f"OTEL_EXPORTER_OTLP_{upper}_HEADERS"))
    timeout_ms = _positive_int(settings, f"OTEL_EXPORTER_OTLP_{upper}_TIMEOUT", 0) or \
        _positive_int(settings, TIMEOUT, 10000)
    return SignalExport(endpoint, headers, timeout_ms / 1000)


def _get(settings: Mapping[str, str], name: str) -> str:
    return (settings.get(name) or "").strip()


def _url(value: str, name: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"must be an http:// or https:// URL with a host, got {value!r}", path=name)
    return value


def _headers(settings: Mapping[str, str], name: str) -> dict[str, str]:
    """W3C Baggage-style ``key1=value1,key2=value2`` (values URL-encoded), as the spec says."""
    text = _get(settings, name)
    headers: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("must be a comma-separated list of name=value pairs (the value is not shown)",
                              path=name)
        headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


def _positive_int(settings: Mapping[str, str], name: str, default: int) -> int:
    text = _get(settings, name)
    if not text:
        return default
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"must be a positive whole number, got {text!r}", path=name)
    return int(text)

"""The telemetry piece's factory (`registry.MIDDLEWARE_MODULES`).

With host.json ``telemetryMode`` other than OpenTelemetry, or no OTLP endpoint, it returns
None: the executor adds nothing, so an invocation costs exactly what it costs without this
feature, and the OpenTelemetry SDK is not even imported. Settings that do not parse stop the
load with the setting named (`options`). Without the SDK installed (the ``funchost[otel]``
extra), one warning says how to install it and the host runs without telemetry.
"""

from __future__ import annotations

import importlib
import logging

from funchost.invocation.middleware import Middleware
from funchost.runtime.contracts import Runtime
from funchost.telemetry.mode import OPEN_TELEMETRY
from funchost.telemetry.options import ENDPOINT, otlp_options

log = logging.getLogger("funchost.telemetry")

REQUIRED_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")
GRPC_MODULE = "opentelemetry.exporter.otlp.proto.grpc"


def middleware(runtime: Runtime) -> Middleware | None:
    if getattr(runtime.options, "telemetry_mode", None) != OPEN_TELEMETRY:  # tests may pass bare options
        return None
    options = otlp_options(runtime.settings)
    if options is None:
        log.info("host.json telemetryMode is OpenTelemetry but %s is not set: nothing is exported", ENDPOINT)
        return None
    missing = [name for name in REQUIRED_MODULES if not _importable(name)]
    if options.protocol == "grpc" and not _importable(GRPC_MODULE):
        missing.append("opentelemetry-exporter-otlp-proto-grpc (OTEL_EXPORTER_OTLP_PROTOCOL=grpc)")
    if missing:
        log.warning("host.json telemetryMode is OpenTelemetry, but the OpenTelemetry SDK is not installed "
                    "(missing %s): nothing is exported. Install it with: pip install 'funchost[otel]'",
                    ", ".join(missing))
        return None
    from funchost.telemetry.pipeline import TelemetryPipeline
    from funchost.telemetry.tracing import InvocationTracing

    service_name = options.service_name or runtime.settings.get("WEBSITE_SITE_NAME") or runtime.host_id
    pipeline = TelemetryPipeline(options, service_name=service_name, log_levels=runtime.options.log_levels)
    runtime.services.provide(pipeline)  # the telemetry service starts and stops it with the host
    return InvocationTracing(pipeline, runtime.options.route_prefix)


def _importable(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True

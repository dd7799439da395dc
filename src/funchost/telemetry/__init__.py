"""OpenTelemetry as the Functions host's host.json ``"telemetryMode": "OpenTelemetry"`` does.

* `mode`: the host.json setting.
* `options`: the standard ``OTEL_*`` app settings (endpoint, protocol, headers, queue sizes).
* `middleware`: the invocation piece (`registry.MIDDLEWARE_MODULES`): a span per invocation
  with the FaaS attributes, the caller's W3C trace context continued, ``context.trace_context``
  set to the invocation span, metrics; nothing at all when telemetry is off.
* `propagation`, `spans`: where an invocation's parent comes from and what its span says.
* `pipeline`, `export`, `delegate`: the SDK's providers, OTLP exporters behind a bounded queue,
  logs with trace ids, the global tracer user code gets.
* `service`: starts and stops the pipeline with the host (`registry.HOST_SERVICE_MODULES`).

The OpenTelemetry SDK is the optional extra ``funchost[otel]`` (docs/telemetry.md).
"""

"""The global tracer user code gets (``trace.get_tracer(__name__)``), following the running host.

In Azure the Python worker configures OpenTelemetry for the function code (``PYTHON_ENABLE_
OPENTELEMETRY``, azure-functions-python-worker ``dispatcher.initialize_azure_monitor``), so
spans the function starts are exported next to the host's. Here host and worker are one process:
funchost installs, once, a global tracer provider that forwards to the running host's SDK
provider, so user spans go to the same OTLP endpoint; a reloaded or restarted host (or the next
test) takes over the same global, which OpenTelemetry lets a process set only once. With no host
exporting, tracers are no-ops. An app that installed its own global provider keeps it; its spans
still nest under the invocation span, which is the current span while the function runs.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.util._decorator import _agnosticcontextmanager


class HostTracerProvider(trace.TracerProvider):
    def __init__(self) -> None:
        self.target: trace.TracerProvider | None = None

    def get_tracer(self, instrumenting_module_name: str, instrumenting_library_version: str | None = None,
                   schema_url: str | None = None, attributes: Any = None) -> trace.Tracer:
        return _HostTracer(self, (instrumenting_module_name, instrumenting_library_version, schema_url, attributes))


class _HostTracer(trace.Tracer):
    def __init__(self, provider: HostTracerProvider, args: tuple[Any, ...]) -> None:
        self._provider = provider
        self._args = args
        self._cached: tuple[trace.TracerProvider | None, trace.Tracer] = (None, trace.NoOpTracer())

    @property
    def _tracer(self) -> trace.Tracer:
        target = self._provider.target
        cached_for, tracer = self._cached
        if target is not cached_for:
            tracer = target.get_tracer(*self._args) if target is not None else trace.NoOpTracer()
            self._cached = (target, tracer)
        return tracer

    def start_span(self, *args: Any, **kwargs: Any) -> trace.Span:
        return self._tracer.start_span(*args, **kwargs)

    @_agnosticcontextmanager
    def start_as_current_span(self, *args: Any, **kwargs: Any) -> Iterator[trace.Span]:
        with self._tracer.start_as_current_span(*args, **kwargs) as span:
            yield span


_GLOBAL: HostTracerProvider | None = None
_lock = threading.Lock()


def follow(provider: trace.TracerProvider) -> bool:
    """Make `provider` the one user code's global tracers use; False when the app installed
    its own global provider (then it is left alone)."""
    global _GLOBAL
    with _lock:
        if _GLOBAL is None:
            if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
                return False  # the app (or a library) set one before the host started
            _GLOBAL = HostTracerProvider()
            trace.set_tracer_provider(_GLOBAL)
        _GLOBAL.target = provider
        return True


def release(provider: trace.TracerProvider) -> None:
    """The host stopped: its provider no longer receives user spans."""
    with _lock:
        if _GLOBAL is not None and _GLOBAL.target is provider:
            _GLOBAL.target = None

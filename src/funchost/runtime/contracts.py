"""The plug-in seams of the host.

Each trigger type lives in ``funchost/triggers/<name>/`` and exposes ``SUPPORT``, an object
implementing `TriggerSupport`; each binding type lives in ``funchost/bindings/<name>.py`` and
exposes ``SUPPORT`` implementing `BindingSupport`. The host finds them through
`funchost.runtime.registry` by the library's binding type strings and never knows their
internals. Every trigger hands work to `Runtime.invoker`; nothing else runs user code.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from azure.functions.meta import Datum

from funchost.clock import Clock
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals

if TYPE_CHECKING:
    from funchost.settings.app_settings import AppSettings
    from funchost.settings.host_json import HostOptions
    from funchost.storage.backend import StorageBackend


class Listener(Protocol):
    async def start(self) -> None:
        """Begin listening; return once the listener is running (do not block forever)."""

    async def stop(self) -> None:
        """Graceful stop: fetch nothing new, finish and complete in-flight work, release leases."""


@dataclass
class Runtime:
    """Everything a trigger or binding may use. One per running host."""

    app_dir: Path
    data_dir: Path
    clock: Clock
    settings: AppSettings
    options: HostOptions
    storage: StorageBackend
    invoker: FunctionInvoker
    signals: Signals = field(default_factory=Signals)
    faults: FaultInjector = field(default_factory=FaultInjector)
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    host_id: str = "funchost"
    # Shared services created lazily by plug-ins (e.g. the Event Grid delivery engine), keyed by name.
    services: dict[str, Any] = field(default_factory=dict)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("funchost.host"))

    def service(self, key: str, factory: Any) -> Any:
        """Get or create a host-wide shared object (`factory(runtime)` on first use)."""
        if key not in self.services:
            self.services[key] = factory(self)
        return self.services[key]

    @property
    def is_development(self) -> bool:
        return self.settings.environment.lower() == "development"


class TriggerSupport(Protocol):
    trigger_type: str

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        """Load-time checks of the trigger's properties; raise AppLoadError / ConfigError."""

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        """The listener that drives this function (None for HTTP, which the server drives)."""

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        """One line for the start-up listing, after '<name>: ' (e.g. 'queueTrigger')."""

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """Build the invocation for ``POST /admin/functions/{name}`` with body ``{"input": ...}``.

        Raise `InvalidInput` (400) when the input cannot be turned into a trigger value.
        """


class BindingSupport(Protocol):
    binding_type: str

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        """Load-time checks; raise AppLoadError / ConfigError."""

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        """Produce the value of an input binding for this invocation."""

    async def write(
        self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime
    ) -> None:
        """Deliver an output binding's value (already encoded by the library's converter)."""

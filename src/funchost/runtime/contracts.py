"""The plug-in seams of the host.

Each trigger type lives in ``funchost/triggers/<name>/`` and exposes ``SUPPORT``, an object
implementing `TriggerSupport`; each binding type lives in ``funchost/bindings/<name>.py`` and
exposes ``SUPPORT`` implementing `BindingSupport`; each host-wide service is a module exposing
``start`` (`HostServiceStart`). The host finds them through `funchost.runtime.registry` by the
library's binding type strings and never knows their internals. Every trigger hands work to
`Runtime.invoker`; nothing else runs user code.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from azure.functions.meta import Datum

from funchost.clock import Clock
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import FunctionInvoker, InvocationRequest
from funchost.runtime.faults import FaultInjector
from funchost.runtime.function_errors import FunctionErrors
from funchost.runtime.services import HostServices
from funchost.runtime.signals import Signals

if TYPE_CHECKING:
    from funchost.settings.app_settings import AppSettings
    from funchost.settings.host_json import HostOptions
    from funchost.storage.host_storage import HostStorage


class Listener(Protocol):
    async def start(self) -> None:
        """Begin listening; return once the listener is running (do not block forever).

        Raise when it cannot start (a missing container, ...): the host marks the function in
        error and retries the start in the background."""

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
    storage: HostStorage
    # None: the host's `Executor`, built with this runtime (tests pass their own invoker).
    invoker: FunctionInvoker = None  # type: ignore[assignment]
    signals: Signals = field(default_factory=Signals)
    faults: FaultInjector = field(default_factory=FaultInjector)
    # The functions that run (functions in error are left out, see `function_errors`).
    functions: dict[str, FunctionSpec] = field(default_factory=dict)
    function_errors: FunctionErrors = field(default_factory=FunctionErrors)
    host_id: str = "funchost"
    services: HostServices = field(default_factory=HostServices)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("funchost.host"))

    def __post_init__(self) -> None:
        if self.invoker is None:
            from funchost.invocation.executor import Executor

            self.invoker = Executor(self)

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


class HostService(Protocol):
    async def stop(self) -> None:
        """Close, at host shutdown: after the work in flight is over, before storage closes."""


@runtime_checkable
class Draining(Protocol):
    """A host service that delivers work to functions (Event Grid deliveries)."""

    async def drain(self) -> None:
        """Deliver nothing new and let the deliveries in flight finish. Called at host shutdown
        together with the listeners' stops, while endpoints and stores are up; `stop` follows."""


# A host-wide service module's ``start``: called once the storage is open, before listeners.
HostServiceStart = Callable[[Runtime], Awaitable[HostService | None]]

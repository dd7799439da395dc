"""Where each trigger, binding, host-wide service and invocation piece is implemented.

Triggers and bindings are keyed by the library's type strings; each module exposes ``SUPPORT``
(a `TriggerSupport` / `BindingSupport`). Host-wide services are modules exposing ``start``
(a `HostServiceStart`), started with every host. Invocation pieces (tracing, metrics, ...) are
modules exposing ``middleware(runtime)`` returning a `Middleware` the executor adds to its chain,
an `AttemptObserver` binding calls (no piece of its own), or None when the feature is off for
this host (nothing is added).
Adding one is a new module and ONE line here.

Modules are imported lazily, so an app only pays for what it uses, and a type whose module is
absent is reported as unsupported instead of crashing the import.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import cast

from funchost.invocation.middleware import AttemptObserver, Middleware
from funchost.runtime.contracts import BindingSupport, HostServiceStart, Runtime, TriggerSupport

TRIGGER_MODULES: dict[str, str] = {
    "httpTrigger": "funchost.triggers.http",
    "queueTrigger": "funchost.triggers.queue",
    "timerTrigger": "funchost.triggers.timer",
    "eventGridTrigger": "funchost.triggers.eventgrid",
    "cosmosDBTrigger": "funchost.triggers.changefeed",
    "eventHubTrigger": "funchost.triggers.eventhub",
    "serviceBusTrigger": "funchost.triggers.servicebus",
    "blobTrigger": "funchost.triggers.blob",
    "orchestrationTrigger": "funchost.triggers.durable.orchestration",
    "activityTrigger": "funchost.triggers.durable.activity",
    "entityTrigger": "funchost.triggers.durable.entity",
    "warmupTrigger": "funchost.triggers.warmup",
}

BINDING_MODULES: dict[str, str] = {
    "http": "funchost.bindings.http",
    "queue": "funchost.bindings.queue",
    "blob": "funchost.bindings.blob",
    "cosmosDB": "funchost.bindings.cosmosdb",
    "eventGrid": "funchost.bindings.eventgrid",
    "eventHub": "funchost.bindings.eventhub",
    "serviceBus": "funchost.bindings.servicebus",
    "durableClient": "funchost.bindings.durable_client",
    "table": "funchost.bindings.table",
}

HOST_SERVICE_MODULES: tuple[str, ...] = (
    "funchost.eventgrid.service",
    "funchost.storage_endpoints.service",
    "funchost.amqp.service",
    "funchost.durable.service",
    "funchost.dashboard.service",
    "funchost.telemetry.service",
)

# Pieces added to every invocation, inside the Executing/Executed lines and around binding.
MIDDLEWARE_MODULES: tuple[str, ...] = (
    "funchost.telemetry.middleware",
    "funchost.dashboard.recorder",  # the invocation history (docs/dashboard.md)
)


def _module(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            return None  # the plug-in itself is absent: unsupported, not broken
        raise


def trigger_support(trigger_type: str) -> TriggerSupport | None:
    name = TRIGGER_MODULES.get(trigger_type)
    module = _module(name) if name else None
    return cast(TriggerSupport, module.SUPPORT) if module is not None else None


def binding_support(binding_type: str) -> BindingSupport | None:
    name = BINDING_MODULES.get(binding_type)
    module = _module(name) if name else None
    return cast(BindingSupport, module.SUPPORT) if module is not None else None


def host_service_starts() -> list[HostServiceStart]:
    found = (_module(name) for name in HOST_SERVICE_MODULES)
    return [cast(HostServiceStart, module.start) for module in found if module is not None]


def middleware_factories() -> list[Callable[[Runtime], Middleware | AttemptObserver | None]]:
    found = (_module(name) for name in MIDDLEWARE_MODULES)
    return [cast(Callable[[Runtime], Middleware | AttemptObserver | None], module.middleware)
            for module in found if module is not None]


def require_trigger(trigger_type: str) -> TriggerSupport:
    """For functions that passed validation, where support is known to exist."""
    support = trigger_support(trigger_type)
    if support is None:
        raise LookupError(f"no trigger support for '{trigger_type}'")
    return support


def require_binding(binding_type: str) -> BindingSupport:
    support = binding_support(binding_type)
    if support is None:
        raise LookupError(f"no binding support for '{binding_type}'")
    return support

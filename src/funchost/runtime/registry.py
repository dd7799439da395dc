"""Where each trigger and binding type is implemented, by the library's type strings.

Modules are imported lazily, so an app only pays for what it uses, and a type whose module is
absent is reported as unsupported instead of crashing the import.
"""

from __future__ import annotations

import importlib
from typing import Any

from funchost.errors import UnsupportedBindingError

TRIGGER_MODULES: dict[str, str] = {
    "httpTrigger": "funchost.triggers.http",
    "queueTrigger": "funchost.triggers.queue",
    "timerTrigger": "funchost.triggers.timer",
    "eventGridTrigger": "funchost.triggers.eventgrid",
    "cosmosDBTrigger": "funchost.triggers.changefeed",
    "orchestrationTrigger": "funchost.triggers.durable.orchestration",
    "activityTrigger": "funchost.triggers.durable.activity",
    "entityTrigger": "funchost.triggers.durable.entity",
}

BINDING_MODULES: dict[str, str] = {
    "http": "funchost.bindings.http",
    "queue": "funchost.bindings.queue",
    "blob": "funchost.bindings.blob",
    "cosmosDB": "funchost.bindings.cosmosdb",
    "eventGrid": "funchost.bindings.eventgrid",
    "durableClient": "funchost.bindings.durable_client",
}


def _load(module_name: str) -> Any | None:
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            return None  # the plug-in itself is absent: unsupported, not broken
        raise
    return getattr(module, "SUPPORT", None)


def trigger_support(trigger_type: str) -> Any | None:
    module = TRIGGER_MODULES.get(trigger_type)
    return _load(module) if module else None


def binding_support(binding_type: str) -> Any | None:
    module = BINDING_MODULES.get(binding_type)
    return _load(module) if module else None


def require_trigger(trigger_type: str) -> Any:
    """For functions that passed indexing, where support is known to exist."""
    support = trigger_support(trigger_type)
    if support is None:
        raise UnsupportedBindingError(f"trigger type '{trigger_type}' is not supported by funchost")
    return support


def require_binding(binding_type: str) -> Any:
    support = binding_support(binding_type)
    if support is None:
        raise UnsupportedBindingError(f"binding type '{binding_type}' is not supported by funchost")
    return support

"""The app's durable functions by kind and by the name the extension registers them under.

The extension registers an orchestrator, activity or entity under its trigger's
``orchestration`` / ``activity`` / ``entityName`` property when set, else under the function's
name; lookups ignore case (``FunctionName`` compares ordinally, ignoring case). Entity names are
lower-cased, as ``EntityId`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from funchost.durable.shim import FunctionCatalog
from funchost.indexing.spec import FunctionSpec

ORCHESTRATION_TRIGGER = "orchestrationTrigger"
ACTIVITY_TRIGGER = "activityTrigger"
ENTITY_TRIGGER = "entityTrigger"
CLIENT_BINDING = "durableClient"
DURABLE_TRIGGERS = (ORCHESTRATION_TRIGGER, ACTIVITY_TRIGGER, ENTITY_TRIGGER)
_NAME_PROPERTY = {ORCHESTRATION_TRIGGER: "orchestration", ACTIVITY_TRIGGER: "activity", ENTITY_TRIGGER: "entityName"}


def registered_name(function: FunctionSpec) -> str:
    explicit = function.trigger.get(_NAME_PROPERTY.get(function.trigger_type, ""))
    return str(explicit) if explicit else function.name


def uses_durable(functions: Iterable[FunctionSpec]) -> bool:
    return any(f.trigger_type in DURABLE_TRIGGERS or any(b.type == CLIENT_BINDING for b in f.bindings)
               for f in functions)


@dataclass
class DurableFunctions:
    orchestrators: dict[str, FunctionSpec] = field(default_factory=dict)
    activities: dict[str, FunctionSpec] = field(default_factory=dict)
    entities: dict[str, FunctionSpec] = field(default_factory=dict)
    names: dict[str, list[str]] = field(default_factory=lambda: {"orchestrator": [], "activity": [], "entity": []})

    @classmethod
    def of(cls, functions: Iterable[FunctionSpec], disabled: Iterable[str] = ()) -> DurableFunctions:
        skipped = {name.lower() for name in disabled}
        found = cls()
        for function in functions:
            if function.name.lower() in skipped:
                continue  # the extension does not register disabled functions
            name = registered_name(function)
            if function.trigger_type == ORCHESTRATION_TRIGGER:
                found.orchestrators[name.lower()] = function
                found.names["orchestrator"].append(name)
            elif function.trigger_type == ACTIVITY_TRIGGER:
                found.activities[name.lower()] = function
                found.names["activity"].append(name)
            elif function.trigger_type == ENTITY_TRIGGER:
                found.entities[name.lower()] = function
                found.names["entity"].append(name.lower())
        return found

    def catalog(self) -> FunctionCatalog:
        return FunctionCatalog(tuple(self.names["activity"]), tuple(self.names["orchestrator"]),
                               tuple(self.names["entity"]))

    def orchestrator(self, name: str) -> FunctionSpec | None:
        return self.orchestrators.get(name.lower())

    def activity(self, name: str) -> FunctionSpec | None:
        return self.activities.get(name.lower())

    def entity(self, name: str) -> FunctionSpec | None:
        return self.entities.get(name.lower())

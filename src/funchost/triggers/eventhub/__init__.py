"""The Event Hubs trigger ("eventHubTrigger"), as the Event Hubs extension 6.x behaves.

listener.py balances partitions between hosts and runs one processor per owned partition;
processor.py reads, invokes and checkpoints (the extension's PartitionProcessor); balancer.py
is the SDK's load balancer; checkpoints.py the blob checkpoint store; events.py builds the
invocation the worker receives; options.py reads host.json. The broker behind it is the
embedded one (`storage/sqlite/eventhubs.py`) or a real namespace (`eventhubs/sdk.py`), chosen by
the connection (`eventhubs/namespaces.py`).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from funchost.errors import AppLoadError, ConfigError, InvalidInput, StorageError
from funchost.eventhubs.namespaces import HubTarget, eventhubs_for
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime
from funchost.storage.eventhubs import DEFAULT_CONSUMER_GROUP, ReceivedEvent
from funchost.triggers.eventhub.options import from_host

LONG_MIN = -(2**63)  # what an EventData that was never received reports for its numbers


def consumer_group_of(function: FunctionSpec) -> str:
    return str(function.trigger.get("consumerGroup") or DEFAULT_CONSUMER_GROUP)


def is_single_dispatch(function: FunctionSpec) -> bool:
    return str(function.trigger.get("cardinality") or "one").lower() != "many"


def target_of(function: FunctionSpec, runtime: Runtime) -> HubTarget:
    return eventhubs_for(runtime).target(function.trigger.get("connection"), function.trigger.get("eventHubName"))


class EventHubTriggerSupport:
    trigger_type = "eventHubTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        try:
            cardinality = str(function.trigger.get("cardinality") or "one").lower()
            if cardinality not in ("one", "many"):
                raise ConfigError(f"cardinality must be 'one' or 'many', got {function.trigger.get('cardinality')!r}")
            target = target_of(function, runtime)
            eventhubs_for(runtime).check(target, consumer_group_of(function))
        except (ConfigError, StorageError) as exc:
            raise AppLoadError(f"eventHubTrigger: {exc}", function=function.name, file=function.script_file,
                               line=function.source_line) from None

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener:
        from funchost.triggers.eventhub.listener import EventHubListener

        return EventHubListener(function, runtime, target_of(function, runtime), consumer_group_of(function),
                                from_host(runtime), single_dispatch=is_single_dispatch(function))

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        target = target_of(function, runtime)
        where = "embedded" if target.connection.is_embedded else target.fully_qualified_namespace
        return f"eventHubTrigger ({target.hub}, {consumer_group_of(function)}, {where})"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        """``{"input": "..."}`` becomes one event (`ConvertFromString`); for cardinality many the
        function gets a list of that one event, as WebJobs' `BindMultiple` makes an array of the
        converted input. An event never received has no partition context and .NET's minimum for
        its numbers."""
        from funchost.triggers.eventhub.events import batch_request, single_request

        if not isinstance(body, dict) or body.get("input") is None:
            raise InvalidInput("the request body must be a JSON object with an 'input' property")
        value = body["input"]
        text = value if isinstance(value, str) else json.dumps(value)
        event = ReceivedEvent("", LONG_MIN, LONG_MIN, datetime(1, 1, 1, tzinfo=UTC), text.encode("utf-8"))
        if not is_single_dispatch(function):
            return batch_request(function, None, [event])
        return single_request(function, None, event)


SUPPORT = EventHubTriggerSupport()

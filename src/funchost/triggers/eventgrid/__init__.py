"""Event Grid trigger (``eventGridTrigger``).

Deliveries drive it: the Event Grid service's delivery engine (local topics and the blob store's
system topic) and the ``/runtime/webhooks/eventgrid`` endpoint (real subscriptions through a
tunnel) invoke the function once per event with a one-event ``json`` Datum, which the library's
`EventGridEventInConverter` turns into `func.EventGridEvent` (or `func.CloudEvent`).
"""

from __future__ import annotations

import json
from typing import Any

from azure.functions.meta import Datum

from funchost.errors import InvalidInput
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport

HOST_CALL_REASON = "This function was programmatically called via the host APIs."


class EventGridTriggerSupport:
    trigger_type = "eventGridTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        """Nothing to check: the trigger has no properties besides its name and data type."""

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        return None  # the Event Grid service delivers; there is nothing to poll per function

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return "eventGridTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        if not isinstance(body, dict) or "input" not in body:
            raise InvalidInput("the request body must be a JSON object with an 'input' property")
        value = body["input"]
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise InvalidInput("'input' must be one Event Grid event or CloudEvent as JSON") from None
        if not isinstance(value, dict):
            raise InvalidInput("'input' must be one Event Grid event or CloudEvent (a JSON object)")
        return InvocationRequest(
            function=function,
            trigger_value=Datum(json.dumps(value), "json"),
            binding_data={k: v for k, v in value.items() if isinstance(k, str)},
            reason=HOST_CALL_REASON,
        )


SUPPORT: TriggerSupport = EventGridTriggerSupport()

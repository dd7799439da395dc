"""What the three durable triggers share: validation, the listing line, admin calls."""

from __future__ import annotations

import json
from typing import Any

from azure.functions.meta import Datum

from funchost.durable.functions import registered_name
from funchost.errors import AppLoadError, InvalidInput
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime
from funchost.triggers.durable.listener import DurableTaskListener

HOST_CALL_REASON = "This function was programmatically called via the host APIs."


class DurableTriggerSupport:
    trigger_type = ""

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        name = registered_name(function)
        if not name.strip():
            raise AppLoadError(f"{self.trigger_type}: the function name must not be empty", function=function.name,
                               file=function.script_file, line=function.source_line)

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        return DurableTaskListener(function, runtime)

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        return self.trigger_type

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        raise InvalidInput(f"'{function.name}' is a {self.trigger_type} function: start orchestrations with a durable "
                           "client or POST /runtime/webhooks/durabletask/orchestrators/<name>")


def activity_admin_request(function: FunctionSpec, body: Any) -> InvocationRequest:
    """``{"input": value}`` runs the activity once with that input, outside any orchestration."""
    if not isinstance(body, dict) or "input" not in body:
        raise InvalidInput("the request body must be a JSON object with an 'input' property")
    return InvocationRequest(function=function, trigger_value=Datum(json.dumps(body["input"]), "json"),
                             reason=HOST_CALL_REASON)

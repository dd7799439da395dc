"""Warmup trigger (``warmupTrigger``): run when an instance is warmed, through ``/admin/warmup``.

On Azure's non-Consumption plans the host maps ``admin/warmup`` (no route prefix, any method,
no key: `FunctionInvocationMiddleware.RequiresAuthz` exempts it) to the function named
``Warmup`` (case-insensitive) whose trigger is ``warmupTrigger``, and the platform calls it when
it adds an instance; with no such function the route still answers 200
(azure-functions-host `WebScriptHostHttpRoutesManager`, `ScriptJobHostExtensions.IsWarmupFunction`).
Core Tools is not a Consumption plan, so the route exists locally, and funchost does the same:
nothing calls it by itself, ``GET /admin/warmup`` does. A warmup-triggered function with another
name is valid but never run, as on Azure.

The trigger value is the host's empty `WarmupContext` (serialised as ``{}``); the library's
`WarmUpTriggerConverter` turns anything into `func.WarmUpContext()`.
"""

from __future__ import annotations

from typing import Any

from azure.functions.meta import Datum

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport

WARMUP_FUNCTION_NAME = "warmup"
WARMUP_REASON = "This function was programmatically called via the host APIs."


def is_warmup_function(function: FunctionSpec) -> bool:
    """The one function ``/admin/warmup`` runs (the host's `IsWarmupFunction`)."""
    return function.trigger_type == "warmupTrigger" and function.name.lower() == WARMUP_FUNCTION_NAME


def warmup_request(function: FunctionSpec) -> InvocationRequest:
    return InvocationRequest(function=function, trigger_value=Datum("{}", "json"), reason=WARMUP_REASON)


class WarmupTriggerSupport:
    trigger_type = "warmupTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        """Nothing to check: the trigger has no properties besides its name."""

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        return None  # ``/admin/warmup`` drives it

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        if is_warmup_function(function):
            return f"warmupTrigger: {runtime.services.base_url}/admin/warmup"
        return "warmupTrigger (never run: only a function named 'warmup' is mapped to /admin/warmup)"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        return warmup_request(function)


SUPPORT: TriggerSupport = WarmupTriggerSupport()

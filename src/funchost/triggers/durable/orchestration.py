"""``orchestrationTrigger``: an orchestrator, replayed by the durable service on every episode."""

from __future__ import annotations

from funchost.errors import AppLoadError
from funchost.indexing.spec import FunctionSpec
from funchost.runtime.contracts import Runtime
from funchost.triggers.durable.common import DurableTriggerSupport


class OrchestrationTriggerSupport(DurableTriggerSupport):
    trigger_type = "orchestrationTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        super().validate(function, runtime)
        name = function.trigger.get("orchestration") or function.name
        if str(name).startswith("@"):
            raise AppLoadError("Orchestration names must not start with @.", function=function.name,
                               file=function.script_file, line=function.source_line)


SUPPORT = OrchestrationTriggerSupport()

"""``activityTrigger``: an activity, run at least once per scheduled task by the durable service."""

from __future__ import annotations

from typing import Any

from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Runtime
from funchost.triggers.durable.common import DurableTriggerSupport, activity_admin_request


class ActivityTriggerSupport(DurableTriggerSupport):
    trigger_type = "activityTrigger"

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        return activity_admin_request(function, body)


SUPPORT = ActivityTriggerSupport()

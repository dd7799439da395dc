"""The ``durableClient`` input binding: the JSON the SDK's DurableOrchestrationClient is built from.

The value is the extension's legacy client payload (task hub name, creation and management URLs
with the ``INSTANCEID`` placeholder and the system key, and ``rpcBaseUrl``, the local endpoint
every client call goes to). The SDK's decorator turns it into the client object before the user
function runs.
"""

from __future__ import annotations

import json

from azure.functions.meta import Datum

from funchost.durable.service import DurableService
from funchost.errors import AppLoadError, InvocationError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Runtime


class DurableClientSupport:
    binding_type = "durableClient"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        if binding.direction != "in":
            raise AppLoadError(f"the durableClient binding '{binding.name}' must have direction 'in'",
                               file=function.script_file, line=function.source_line, function=function.name)

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        service = runtime.services.find(DurableService)
        if service is None:
            raise InvocationError("the Durable Functions service is not running in this host")
        payload = service.endpoints.client_payload(binding.get("taskHub"), binding.get("connectionName"))
        return Datum(json.dumps(payload), "string")

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        raise InvocationError(f"the durableClient binding '{binding.name}' is input only")


SUPPORT = DurableClientSupport()

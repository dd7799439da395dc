"""The ``http`` output binding: the response of an HTTP-triggered function.

Nothing is written anywhere: the HTTP trigger reads the encoded value from the invocation
result's outputs and turns it into the response.
"""

from __future__ import annotations

from azure.functions.meta import Datum

from funchost.errors import AppLoadError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime


class HttpOutputSupport:
    binding_type = "http"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        if binding.direction != "out":
            raise AppLoadError(f"the http binding '{binding.name}' must have direction 'out'",
                               file=function.script_file, line=function.source_line, function=function.name)
        if not function.is_http:
            raise AppLoadError(f"the http output '{binding.name}' needs an httpTrigger on the same function",
                               file=function.script_file, line=function.source_line, function=function.name)

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        raise AppLoadError(f"the http binding '{binding.name}' is output only", function=request.function.name)

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        return None  # the HTTP trigger turns result.outputs into the response


SUPPORT: BindingSupport = HttpOutputSupport()

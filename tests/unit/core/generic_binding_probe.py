"""An input binding of a type the azure-functions library has no converter for (the worker binds
such types with its GenericBinding), registered through `registry.BINDING_MODULES` in
test_executor.py."""

from __future__ import annotations

from typing import Any

from azure.functions.meta import Datum


class ProbeBinding:
    binding_type = "probeStore"

    def validate(self, binding: Any, function: Any, runtime: Any) -> None:
        pass

    async def read(self, binding: Any, request: Any, runtime: Any) -> Datum:
        return Datum('{"PartitionKey": "p", "RowKey": "r"}', "json")

    async def write(self, binding: Any, datum: Datum, request: Any, runtime: Any) -> None:
        raise AssertionError("an input binding is never written")


SUPPORT = ProbeBinding()

"""Builders for HTTP unit tests: function specs as indexing produces them, a runtime, a fake invoker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from azure.functions.meta import Datum

from funchost.clock import ManualClock
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import parse_host_json


def http_function(name: str, route: str | None = None, methods: list[str] | None = None,
                  auth_level: str = "ANONYMOUS", output: str = "$return") -> FunctionSpec:
    properties: dict[str, Any] = {"authLevel": auth_level}
    if route is not None:
        properties["route"] = route
    if methods is not None:
        properties["methods"] = methods
    trigger = BindingSpec("req", "httpTrigger", "in", None, properties, is_trigger=True)
    out = BindingSpec(output, "http", "out", None, {})
    return FunctionSpec(
        name=name, func=lambda req: None, trigger=trigger, bindings=(trigger, out), parameters=(),
        return_binding=out if output == "$return" else None, return_annotation=None, is_async=False,
        script_file="function_app.py", directory=".", source_line=1,
    )


class FakeInvoker:
    """Implements the FunctionInvoker protocol: records requests, answers with a prepared output."""

    def __init__(self) -> None:
        self.requests: list[InvocationRequest] = []
        self.respond: Callable[[InvocationRequest], InvocationResult] | None = None

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        self.requests.append(request)
        if self.respond is not None:
            return self.respond(request)
        return InvocationResult(request.invocation_id, request.function.name, True,
                                outputs={"$return": Datum("ok", "string")})


@pytest.fixture
def invoker() -> FakeInvoker:
    return FakeInvoker()


@pytest.fixture
def make_runtime(tmp_path: Path, invoker: FakeInvoker) -> Callable[..., Runtime]:
    def make(functions: list[FunctionSpec], host_json: dict[str, Any] | None = None,
             settings: dict[str, str] | None = None) -> Runtime:
        options = parse_host_json({"version": "2.0", **(host_json or {})})
        return Runtime(
            app_dir=tmp_path, data_dir=tmp_path / "data", clock=ManualClock(),
            settings=AppSettings(settings or {}, environ={}), options=options, storage=None,  # type: ignore[arg-type]
            invoker=invoker, functions={f.name: f for f in functions},
        )

    return make


@pytest.fixture
def function_factory() -> Callable[..., FunctionSpec]:
    return http_function

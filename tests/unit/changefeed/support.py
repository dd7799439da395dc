"""Building blocks for change feed unit tests: a runtime over the embedded store, a fake
`FunctionInvoker` that records batches, and a settle function for the manual clock."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.runtime import make_test_runtime

from funchost.clock import ManualClock
from funchost.documents.aio import CosmosClient
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest, InvocationResult
from funchost.runtime.contracts import Runtime
from funchost.settings.app_settings import AppSettings
from funchost.settings.host_json import parse_host_json
from funchost.testing import settle  # noqa: F401  (re-exported for the tests here)
from funchost.triggers.changefeed import SUPPORT
from funchost.triggers.changefeed.listener import ChangeFeedListener


@dataclass
class FakeInvoker:
    """Records each batch; `fail(batch_number)` decides whether that call fails."""

    batches: list[list[dict[str, Any]]] = field(default_factory=list)
    fail: Callable[[int], bool] = lambda n: False
    abandon: bool = False  # failures look like a retry loop cut short by a stopping host

    async def invoke(self, request: InvocationRequest) -> InvocationResult:
        docs = json.loads(request.trigger_value.value)
        self.batches.append(docs)
        failed = self.fail(len(self.batches))
        return InvocationResult(request.invocation_id, request.function.name, not failed,
                                error=RuntimeError("boom") if failed else None,
                                abandoned=failed and self.abandon)

    def ids(self) -> list[str]:
        return [d["id"] for batch in self.batches for d in batch]


def trigger_function(name: str = "onchange", **props: Any) -> FunctionSpec:
    properties = {"connection": "CosmosDB", "databaseName": "db", "containerName": "items",
                  "leaseContainerName": "leases", **props}
    trigger = BindingSpec("docs", "cosmosDBTrigger", "in", None, properties, is_trigger=True)
    return FunctionSpec(name=name, func=lambda docs: None, trigger=trigger, bindings=(trigger,), parameters=(),
                        return_binding=None, return_annotation=None, is_async=False,
                        script_file="function_app.py", directory=".", source_line=1)


def make_runtime(data_dir: Path, clock: ManualClock, invoker: Any, settings: dict[str, str] | None = None,
                 host_json: dict[str, Any] | None = None) -> Runtime:
    return make_test_runtime(data_dir, data_dir, clock, invoker, settings=AppSettings(settings or {}, environ={}),
                             options=parse_host_json(host_json or {"version": "2.0"}))


async def make_containers(runtime: Runtime, partitions: int = 4, *, leases: bool = True) -> Any:
    client = CosmosClient(runtime.storage.documents("CosmosDB"))
    db = await client.create_database_if_not_exists("db")
    items = await db.create_container_if_not_exists("items", "/pk", partitions=partitions)
    if leases:
        await db.create_container_if_not_exists("leases", "/id", default_ttl=-1)
    return items


def listener(function: FunctionSpec, runtime: Runtime) -> ChangeFeedListener:
    SUPPORT.validate(function, runtime)
    created = SUPPORT.create_listener(function, runtime)
    assert isinstance(created, ChangeFeedListener)
    return created

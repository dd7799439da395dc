"""Cosmos DB trigger ("cosmosDBTrigger"): the change feed processor over the embedded store.

Roles: `listener` (start checks, bootstrap, balancing every acquire interval), `processor`
(one owned lease: renew, read, invoke, checkpoint), `leases` / `bootstrap` / `balancer` (the v3
change feed processor's lease protocol, azure-semantics 7.2-7.5). The executor is the host's
`FunctionInvoker`.
"""

from __future__ import annotations

import json
from typing import Any

from funchost.errors import InvalidInput
from funchost.indexing.spec import FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import Listener, Runtime, TriggerSupport
from funchost.triggers.changefeed.options import CosmosDBOptions, checkpoint_on_failure, from_function
from funchost.triggers.changefeed.processor import documents_datum


def _host_options(runtime: Runtime) -> CosmosDBOptions:
    try:
        options = runtime.options.extension("cosmosDB")
    except KeyError:
        return CosmosDBOptions()
    return options if isinstance(options, CosmosDBOptions) else CosmosDBOptions()


class ChangeFeedTriggerSupport:
    trigger_type = "cosmosDBTrigger"

    def validate(self, function: FunctionSpec, runtime: Runtime) -> None:
        from_function(function, _host_options(runtime))

    def create_listener(self, function: FunctionSpec, runtime: Runtime) -> Listener | None:
        from funchost.triggers.changefeed.listener import ChangeFeedListener

        host = _host_options(runtime)
        return ChangeFeedListener(function, runtime, from_function(function, host),
                                  checkpoint_on_failure=checkpoint_on_failure(host, runtime.settings))

    def describe(self, function: FunctionSpec, runtime: Runtime) -> str:
        o = from_function(function, _host_options(runtime))
        return (f"cosmosDBTrigger ({o.database}/{o.container}, leases {o.lease_database}/{o.lease_container}"
                + (f", prefix '{o.prefix}'" if o.prefix else "") + ")")

    async def admin_request(self, function: FunctionSpec, runtime: Runtime, body: Any) -> InvocationRequest:
        value = body.get("input") if isinstance(body, dict) else None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise InvalidInput("'input' must be a JSON document or an array of documents") from None
        if isinstance(value, dict):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(d, dict) for d in value):
            raise InvalidInput("'input' must be a JSON document or an array of documents")
        return InvocationRequest(function=function, trigger_value=documents_datum(value),
                                 reason="This function was programmatically called via the host APIs.")


SUPPORT: TriggerSupport = ChangeFeedTriggerSupport()

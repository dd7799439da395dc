"""Cosmos DB input and output bindings ("cosmosDB") over the embedded document store.

Input: ``id`` + ``partitionKey`` (a point read; a missing item gives None, as on Azure) or
``sqlQuery`` where each ``{name}`` becomes the SQL parameter ``@name`` bound to that binding
data value (as the extension does). Output: one document or a list, each upserted; with
``createIfNotExists`` the database and container (partition key path ``partitionKey``,
default ``/id``) are created first. ``connection`` names the account: with embedded storage any
value works and each distinct name is its own store (``<data>/storage/<name>/``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from azure.functions.meta import Datum

from funchost.bindings.cosmosdb_v3 import v3_properties_problem
from funchost.bindings.expressions import invocation_resolver, parameter_names
from funchost.documents.aio import ContainerProxy
from funchost.documents.exceptions import CosmosResourceNotFoundError
from funchost.errors import AppLoadError, InvocationError
from funchost.indexing.spec import BindingSpec, FunctionSpec
from funchost.invocation.contracts import InvocationRequest
from funchost.runtime.contracts import BindingSupport, Runtime
from funchost.runtime.signals import documents_topic

DEFAULT_CONNECTION = "CosmosDB"
_PARAM = re.compile(r"\{([^{}]+)\}")


def _connection(binding: BindingSpec) -> str:
    return str(binding.get("connection") or "").strip() or DEFAULT_CONNECTION


def _container(binding: BindingSpec, runtime: Runtime) -> ContainerProxy:
    store = runtime.storage.documents(_connection(binding))
    return ContainerProxy(store, str(binding.get("databaseName")), str(binding.get("containerName")))


class CosmosDBBindingSupport:
    binding_type = "cosmosDB"

    def validate(self, binding: BindingSpec, function: FunctionSpec, runtime: Runtime) -> None:
        problem = v3_properties_problem(binding, f" of function '{function.name}'")
        if problem is None and (not binding.get("databaseName") or not binding.get("containerName")):
            problem = "needs 'databaseName' and 'containerName'"
        elif problem is None and binding.direction == "in" and binding.get("id") and binding.get("sqlQuery"):
            problem = "use either 'id' (with 'partitionKey') or 'sqlQuery', not both"
        if problem:
            raise AppLoadError(f"Cosmos DB binding '{binding.name}' {problem}", file=function.script_file,
                               line=function.source_line, function=function.name)

    async def read(self, binding: BindingSpec, request: InvocationRequest, runtime: Runtime) -> Datum:
        container = _container(binding, runtime)
        resolver = invocation_resolver(request, runtime)
        query = binding.get("sqlQuery")
        if query:
            parameters = [{"name": f"@{name}", "value": resolver.resolve("{" + name + "}")}
                          for name in dict.fromkeys(parameter_names(str(query)))]
            sql = _PARAM.sub(lambda m: "@" + m.group(1).split(":")[0].strip(), str(query))
            pk = binding.get("partitionKey")
            kwargs: dict[str, Any] = {"partition_key": resolver.resolve(str(pk))} if pk else {}
            docs = await container.query_items(sql, parameters=parameters, **kwargs)
            return Datum(json.dumps(docs), "json")
        item_id = binding.get("id")
        if not item_id:
            return Datum(json.dumps(await container.read_all_items()), "json")
        key = resolver.resolve(str(binding.get("partitionKey") or item_id))
        try:
            doc = await container.read_item(resolver.resolve(str(item_id)), partition_key=key)
        except CosmosResourceNotFoundError:
            return Datum(None, None)
        return Datum(json.dumps(doc), "json")

    async def write(self, binding: BindingSpec, datum: Datum, request: InvocationRequest, runtime: Runtime) -> None:
        if datum is None or datum.value is None:
            return
        value = datum.value
        if isinstance(value, bytes):
            value = value.decode("utf-8")
        docs = json.loads(value) if isinstance(value, str) else value
        if isinstance(docs, dict):
            docs = [docs]
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            raise InvocationError(f"Cosmos DB output '{binding.name}' needs a JSON document or a list of them")
        container = _container(binding, runtime)
        if binding.get("createIfNotExists"):
            store = container.store
            await store.create_database(container.database, exist_ok=True)
            await store.create_container(container.database, container.id, exist_ok=True,
                                         partition_key_path=str(binding.get("partitionKey") or "/id"))
        for doc in docs:
            await container.upsert_item(doc)
        runtime.signals.publish(documents_topic(container.store.name, container.database, container.id))


SUPPORT: BindingSupport = CosmosDBBindingSupport()

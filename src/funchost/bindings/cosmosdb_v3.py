"""Cosmos DB binding properties of extension 3.x, which the 4.x extension does not read.

The library still offers the 3.x decorators (`cosmos_db_trigger_v3`, `cosmos_db_input_v3`,
`cosmos_db_output_v3`); their function.json names (`collectionName`, ...) mean nothing to the
4.x extension of extension bundle 4.x, which funchost emulates. Instead of "needs
'containerName'", the user is told which names are 3.x ones and what they are called now.

A binding that has the 4.x properties it needs and 3.x names beside them (apps written for both)
runs: the 4.x extension reads the attribute from the binding's JSON and ignores members it does
not have, so on Azure it runs too. funchost warns once about the ignored names.
"""

from __future__ import annotations

import logging

from funchost.indexing.spec import BindingSpec

log = logging.getLogger("funchost.bindings.cosmosdb")

# 3.x name -> 4.x name (None: the 4.x extension has no such setting).
V3_PROPERTIES: dict[str, str | None] = {
    "collectionName": "containerName",
    "connectionStringSetting": "connection",
    "leaseCollectionName": "leaseContainerName",
    "leaseConnectionStringSetting": "leaseConnection",
    "createLeaseCollectionIfNotExists": "createLeaseContainerIfNotExists",
    "leasesCollectionThroughput": "leasesContainerThroughput",
    "leaseCollectionPrefix": "leaseContainerPrefix",
    "collectionThroughput": "containerThroughput",
    "checkpointInterval": None,
    "checkpointDocumentCount": None,
    "useMultipleWriteLocations": None,
}


def v3_properties_problem(binding: BindingSpec, where: str = "") -> str | None:
    """A message naming the binding's 3.x properties when it has no 4.x `containerName` (a 3.x-only
    binding); None when it uses no 3.x name, or has the 4.x ones beside them (then the 3.x names are
    ignored, with one warning naming them; `where` says which function's binding)."""
    found = [name for name in V3_PROPERTIES if binding.get(name) is not None]
    if not found:
        return None
    if binding.get("containerName"):
        log.warning("Cosmos DB binding '%s'%s: the 3.x properties %s are ignored, as the 4.x extension ignores "
                    "them (it reads containerName, connection, ...)", binding.name, where,
                    ", ".join(f"'{name}'" for name in found))
        return None
    renamed = ", ".join(f"'{name}' (now '{V3_PROPERTIES[name]}')" if V3_PROPERTIES[name] else f"'{name}' (gone)"
                        for name in found)
    return (f"uses Cosmos DB extension 3.x properties {renamed}, which the 4.x extension (extension bundle 4.x) "
            "does not read; use the 4.x decorators app.cosmos_db_trigger / cosmos_db_input / cosmos_db_output "
            "(container_name=..., connection=...) instead of the *_v3 ones")

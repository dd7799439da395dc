"""Change feed: the leases of each Cosmos DB trigger (owner, continuation, estimated lag).

The figures are those of the change feed estimator (`funchost.documents.estimator`, what
``funchost docs status`` prints): per lease, the documents written after its continuation; a
lease without a continuation yet counts 1, as the SDK's estimator does.
"""

from __future__ import annotations

from funchost.dashboard.markup import Markup, join, table, tag
from funchost.dashboard.page import Page, View
from funchost.documents.estimator import estimate
from funchost.errors import FunchostError
from funchost.indexing.spec import FunctionSpec
from funchost.runtime.contracts import Runtime
from funchost.triggers.changefeed.options import CosmosDBOptions, from_function


def changefeed_functions(runtime: Runtime) -> list[FunctionSpec]:
    return sorted((f for f in runtime.functions.values() if f.trigger_type == "cosmosDBTrigger"),
                  key=lambda f: f.name.lower())


def _host_options(runtime: Runtime) -> CosmosDBOptions:
    options = runtime.options.extensions.get("cosmosDB")
    return options if isinstance(options, CosmosDBOptions) else CosmosDBOptions()


async def _section(view: View, function: FunctionSpec) -> Markup:
    runtime = view.runtime
    o = from_function(function, _host_options(runtime))
    heading_id = f"leases-{function.name}"
    where = (f"monitors {o.database}/{o.container}; leases in {o.lease_database}/{o.lease_container}"
             + (f" with prefix '{o.prefix}'" if o.prefix else ""))
    try:
        found = await estimate(runtime.storage.documents(o.connection), o.database, o.container,
                               runtime.storage.documents(o.lease_connection), o.lease_database, o.lease_container,
                               o.prefix)
    except FunchostError as exc:  # the container or the lease container does not exist (yet)
        body: Markup = tag("p", f"No leases to show: {exc}", class_="empty")
    else:
        body = join(table(f"Leases of {function.name}", ["Lease", "Owner", "Continuation", "Estimated lag"],
                          [[e.lease_token, e.owner or "-", e.continuation or "-", str(e.estimated_lag)]
                           for e in found.leases],
                          empty="No leases yet (the trigger has not started).", live=f"leases-{function.name}"),
                    tag("p", f"Estimated remaining documents: {found.total}."))
    return tag("section", tag("h2", function.name, id=heading_id), tag("p", where), body,
               aria_labelledby=heading_id)


async def render(view: View) -> Markup:
    functions = changefeed_functions(view.runtime)
    sections = [await _section(view, f) for f in functions]
    return join(tag("h1", "Change feed leases"),
                sections or tag("p", "This app has no Cosmos DB trigger.", class_="empty"))


PAGE = Page("changefeed", "Change feed", render, applies=lambda r: bool(changefeed_functions(r)))

"""host.json extensions.cosmosDB and trigger attribute defaults."""

from __future__ import annotations

from funchost.settings.host_json import parse_host_json
from funchost.triggers.changefeed.options import CosmosDBOptions, from_function

from .support import trigger_function


def test_host_json_section_accepts_the_extension_keys_and_rejects_typos() -> None:
    options = parse_host_json({"version": "2.0", "extensions": {"cosmosDB": {
        "connectionMode": "direct", "userAgentSuffix": "x", "protocol": "Tcp",
        "leaseOptions": {"leasePrefix": "v3"}, "checkpointOnFailure": True}}}).extension("cosmosDB")
    assert options == CosmosDBOptions("Direct", "x", "Tcp", "v3", True)
    typo = parse_host_json({"version": "2.0", "extensions": {"cosmosDB": {"connectonMode": "Gateway"}}})
    assert any("extensions.cosmosDB.connectonMode: unknown key ignored" in w for w in typo.warnings)


def test_trigger_defaults_are_azures() -> None:
    o = from_function(trigger_function())
    assert (o.feed_poll_delay, o.lease_acquire_interval, o.lease_expiration_interval,
            o.lease_renew_interval) == (5.0, 13.0, 60.0, 17.0)
    assert o.lease_container == "leases" and o.lease_database == "db" and o.prefix == ""
    assert o.max_items == 0 and o.page_size == 100 and o.initial_start_time is None
    o = from_function(trigger_function(leaseRenewInterval=500, maxItemsPerInvocation=7),
                      CosmosDBOptions(lease_prefix="v3"))
    assert o.lease_renew_interval == 0.5 and o.page_size == 7 and o.prefix == "v3"

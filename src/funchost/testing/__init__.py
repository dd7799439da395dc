"""funchost.testing: run a function app in-process with a manual clock.

    async with HostHarness(app_dir) as host:
        await host.queues.send("orders", {"id": 1})
        await host.advance(600)          # ten minutes, in milliseconds
        response = await host.http("GET", "/api/orders/1")

The pytest plugin (registered automatically) provides the `funchost_app` factory fixture and
`manual_clock`. See the README section "Testing your app".
"""

from funchost.testing.harness import HostHarness, settle, write_app

__all__ = ["HostHarness", "settle", "write_app"]

"""The AMQP endpoint as a host service (`registry.HOST_SERVICE_MODULES`), and its assembly.

On with embedded storage when the `FUNCHOST_AMQP_ENDPOINT` setting says so (`funchost start`
sets it to `on` unless told otherwise; the in-process test harness leaves it off). Messages sent
through it wake this host's Service Bus and Event Hubs listeners through the host's signals, as
the output bindings do; deliveries, locks and checkpoints are the brokers' own.
"""

from __future__ import annotations

import logging
from pathlib import Path

from funchost.amqp.router import Router
from funchost.amqp.sas import EMULATOR_KEYS
from funchost.amqp.server import SETTING, AmqpEndpoint, AmqpSettings, parse_setting
from funchost.runtime.contracts import Runtime
from funchost.runtime.signals import Signals
from funchost.servicebus.namespaces import embedded_namespace
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import HostStorage
from funchost.storage_endpoints.server import data_identity

log = logging.getLogger("funchost.amqp")


def build_endpoint(storage: HostStorage, app_dir: Path, settings: AppSettings, signals: Signals,
                   data_dir: Path, amqp: AmqpSettings) -> AmqpEndpoint:
    from funchost.amqp.eventhubs_links import EventHubsNodes

    namespace = embedded_namespace(storage, app_dir, settings)
    eventhubs = EventHubsNodes(storage, app_dir, settings, signals)
    router = Router(namespace, signals, EMULATOR_KEYS, eventhubs)
    return AmqpEndpoint(router, data_identity(storage.secrets()), amqp)


class AmqpService:
    def __init__(self, runtime: Runtime, endpoint: AmqpEndpoint) -> None:
        self.runtime = runtime
        self.endpoint = endpoint

    async def stop(self) -> None:
        self.runtime.services.withdraw(self)
        await self.endpoint.stop()


async def start(runtime: Runtime) -> AmqpService | None:
    amqp = parse_setting(runtime.settings.get(SETTING), host=runtime.settings.get(f"{SETTING}_BIND") or "127.0.0.1")
    if amqp is None or runtime.storage.kind != "embedded":
        return None
    endpoint = build_endpoint(runtime.storage, runtime.app_dir, runtime.settings, runtime.signals, runtime.data_dir,
                              amqp)
    await endpoint.start(beside_other_apps=True)
    service = AmqpService(runtime, endpoint)
    runtime.services.provide(service)
    for line in endpoint.describe():
        log.info(line)
    return service

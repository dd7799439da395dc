"""Apps on one machine share one storage account, as Core Tools apps share one Azurite.

Users split a system into several function apps (folders) that talk through queues; with Core
Tools every app points `UseDevelopmentStorage=true` at the one Azurite of the machine. Here the
first host to start serves the endpoints over its data folder; a host of another data folder
that finds them served (a funchost answering the identity request with another folder's id, on
all three ports) starts anyway and uses that host's accounts through those endpoints, as
`--storage azure` against them: a message one app queues reaches the other app's queue trigger.
What the endpoints do not serve stays in this host's own data folder, as with `--storage azure`
(Event Grid state, Service Bus, Event Hubs, Durable task hubs, the invocation history), and so
do documents (Cosmos DB bindings), which Azurite does not hold either.

The storage itself is `peer_storage.PeerStorage`; `peer_watch.py` says when the endpoints stop
answering.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from funchost.clock import Clock
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import DEVSTORE_ACCOUNT
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage.secrets import FileSecrets
from funchost.storage_endpoints import holders
from funchost.storage_endpoints.server import SERVICES, SETTING, data_identity, parse_setting


@dataclass(frozen=True)
class Peer:
    """The endpoints of a funchost host serving another data folder."""

    host: str
    ports: dict[str, int]
    data: str  # that folder's id
    pid: int | None

    @property
    def address(self) -> str:
        return "127.0.0.1" if self.host in ("0.0.0.0", "") else self.host

    def url(self, service: str, account: str = DEVSTORE_ACCOUNT) -> str:
        return f"http://{self.address}:{self.ports[service]}/{account}"

    def describe(self) -> str:
        ports = ",".join(str(self.ports[s]) for s in SERVICES)
        who = f"pid {self.pid}" if self.pid else "another process"
        return f"the storage endpoints on {self.address} ports {ports}, served by the host of another data folder ({who})"


def find_peer(kind: str, data_dir: Path, settings: AppSettings) -> Peer | None:
    """The host of another data folder serving the endpoints this host would serve, if any."""
    endpoint = parse_setting(settings.get(SETTING), host=settings.get(f"{SETTING}_BIND") or "127.0.0.1")
    if kind != "embedded" or endpoint is None or 0 in endpoint.ports.values():
        return None
    root = data_dir / "storage"
    identity = data_identity(FileSecrets(data_dir))  # embedded storage: the folder's own id
    first: holders.Holder | None = None
    for service in SERVICES:
        holder = holders.identify_blocking(root, service, endpoint.host, endpoint.ports[service], identity)
        if holder.kind != "funchost" or (first is not None and holder.data != first.data):
            return None  # nobody, this folder's host, or another program: the endpoints service decides
        first = first or holder
    assert first is not None and first.data is not None
    return Peer(endpoint.host, dict(endpoint.ports), first.data, first.pid)


def open_app_storage(kind: str, data_dir: Path, settings: AppSettings, clock: Clock, *,
                     faults: FaultInjector | None = None, signals: Signals | None = None) -> HostStorage:
    """The host's storage: the peer's accounts when another data folder's host serves the
    endpoints, else the backend named `kind`."""
    peer = find_peer(kind, data_dir, settings)
    if peer is None:
        return open_storage(kind, data_dir, settings, clock, faults=faults, signals=signals)
    from funchost.storage_endpoints.peer_storage import PeerStorage  # the Azure SDKs: only when needed

    return HostStorage(PeerStorage(peer, settings, clock, data_dir), faults=faults, signals=signals)

"""The three listening sockets (Blob, Queue, Table), each an ASGI app on uvicorn in the host's loop.

Where a development connection string points: 127.0.0.1:10000 / 10001 / 10002 by default. A port
already taken is one of these cases (`holders.py` tells them apart):

* a funchost process serving the same data folder (several hosts on one data folder is a
  supported setup), named by the folder's record or by its answer: this process uses those
  endpoints, since they serve the same files, and takes the port over when that process goes
  away (the watch below), so SDK code keeps working while any host of the folder runs;
* a holder that does not answer in time and is not in the record: unknown yet; the host starts
  its functions and the watch keeps asking, and takes the port when it is free;
* anything else (Azurite, a funchost of another data folder at this point): a clear error naming
  the port and the ways out. (A host that finds the endpoints of another data folder's host
  before it opens its storage uses that host's account instead: `peer.py`.)

A socket is identified through ``GET /_funchost/identity``, which answers the storage's id
(a random id kept in ``<data>/storage/endpoints.id``, or on the server with ``--storage postgres``)
and the serving process's id.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.settings.connections import DEVSTORE_ACCOUNT
from funchost.sockets import listening_socket
from funchost.storage.secrets import SecretStore
from funchost.storage_endpoints import holders
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.app import AccountStorage, StorageApp
from funchost.storage_endpoints.blob.app import BlobApp
from funchost.storage_endpoints.queue_api import QueueApp
from funchost.storage_endpoints.table.app import TableApp
from funchost.storage_endpoints.wire import META_NAMES_KEY

log = logging.getLogger("funchost.storage")
BACKLOG = 2048  # connections waiting to be accepted (SDK clients open many, in bursts)

SETTING = "FUNCHOST_STORAGE_ENDPOINTS"
DEFAULT_PORTS = {"blob": 10000, "queue": 10001, "table": 10002}
SERVICES = ("blob", "queue", "table")
IDENTITY_SECRET = "storage/endpoints.id"
# At stop the host's own work is over (runtime/stopping.py); a request still arriving from a
# client (a half-sent upload) gets this long before its connection is dropped.
CLOSE_SECONDS = 3
HOW_TO_CHANGE = ("choose other ports with --storage-ports BLOB,QUEUE,TABLE (or the app setting "
                 f"{SETTING}=BLOB,QUEUE,TABLE), or turn the endpoints off with --no-storage-endpoints "
                 f"({SETTING}=off)")


@dataclass(frozen=True)
class EndpointSettings:
    host: str = "127.0.0.1"
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))


def parse_setting(value: str | None, *, host: str = "127.0.0.1") -> EndpointSettings | None:
    """`off` | `on` | `BLOB,QUEUE,TABLE` (0 = any free port) -> settings, None when off."""
    text = (value or "").strip().lower()
    if text in ("", "off", "false", "0", "no", "none"):
        return None
    if text in ("on", "true", "1", "yes", "default"):
        return EndpointSettings(host)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 3 or not all(p.isdigit() and int(p) < 65536 for p in parts):
        raise ConfigError(f"expected 'off', 'on' or three ports 'BLOB,QUEUE,TABLE', got {value!r}", path=SETTING)
    return EndpointSettings(host, dict(zip(SERVICES, (int(p) for p in parts), strict=True)))


def data_identity(secrets: SecretStore) -> str:
    """The storage's id, created once (of several processes starting together, one writes it and
    the others read it): ``<data>/storage/endpoints.id``, or a row on the PostgreSQL server, so
    hosts on one server recognise each other's endpoints as they do on one data folder."""
    return secrets.create(IDENTITY_SECRET, uuid.uuid4().hex).strip()


class _Protocol(HttpToolsProtocol):
    """uvicorn's protocol, keeping the case of `x-ms-meta-*` names (ASGI lower-cases headers)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        super().connection_made(transport)

    def on_header(self, name: bytes, value: bytes) -> None:
        if name[:10].lower() == b"x-ms-meta-":
            scope: dict[str, Any] = self.scope  # type: ignore[assignment]
            scope.setdefault(META_NAMES_KEY, []).append(name[10:].decode("latin-1"))
        super().on_header(name, value)


class PortTaken(ConfigError):
    pass


WATCH_INTERVAL = 1.0  # seconds between attempts to take over a port served elsewhere or unknown


class StorageEndpoints:
    """`record_dir`: the data folder's storage root, where the processes serving the endpoints
    are recorded (`holders.py`); None records nothing (tests that build endpoints directly)."""

    def __init__(self, storage: AccountStorage, accounts: Accounts, clock: Clock, identity: str,
                 settings: EndpointSettings, record_dir: Path | None = None,
                 watch_interval: float = WATCH_INTERVAL) -> None:
        self.settings = settings
        self.identity = identity
        self.clock = clock
        self.record_dir = record_dir
        self.watch_interval = watch_interval
        self.apps: dict[str, StorageApp] = {
            "blob": BlobApp(storage, accounts, clock, identity),
            "queue": QueueApp(storage, accounts, clock, identity),
            "table": TableApp(storage, accounts, clock, identity),
        }
        self.ports: dict[str, int] = {}
        self.shared: set[str] = set()  # services served by another process of the same data folder
        self.unknown: set[str] = set()  # ports held by a process not identified yet
        self._servers: dict[str, tuple[uvicorn.Server, asyncio.Task[Any]]] = {}
        self._watch: asyncio.Task[None] | None = None

    def origin(self, service: str) -> str:
        """Where clients on this machine reach the service (`http://127.0.0.1:<port>`)."""
        return f"http://127.0.0.1:{self.ports[service]}"

    def url(self, service: str, account: str = DEVSTORE_ACCOUNT) -> str:
        return f"{self.origin(service)}/{account}"

    def connection_string(self, account: str = DEVSTORE_ACCOUNT, key: str | None = None) -> str:
        from funchost.settings.connections import DEVSTORE_KEY

        endpoints = "".join(f"{s.capitalize()}Endpoint={self.url(s, account)};" for s in self.apps if s in self.ports)
        return f"DefaultEndpointsProtocol=http;AccountName={account};AccountKey={key or DEVSTORE_KEY};{endpoints}"

    async def start(self) -> None:
        try:
            for service in self.apps:
                await self._start_one(service, self.settings.ports[service])
        except BaseException:
            await self.stop()
            raise
        if self.shared or self.unknown:
            self._watch = asyncio.get_running_loop().create_task(self._watch_ports())

    async def _start_one(self, service: str, port: int) -> None:
        try:
            sock = listening_socket(self.settings.host, port, BACKLOG)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ConfigError(f"cannot serve the {service.capitalize()} endpoint on {self.settings.host}:{port}: "
                                  f"{exc.strerror}; {HOW_TO_CHANGE}") from exc
            await self._use_shared(service, port)
            return
        await self._serve(service, sock)

    async def _serve(self, service: str, sock: socket.socket) -> None:
        config = uvicorn.Config(self.apps[service], lifespan="off", log_level="warning", log_config=None, access_log=False,
                                server_header=False, date_header=False, http=_Protocol, timeout_keep_alive=120,
                                proxy_headers=False,  # clients connect directly: no X-Forwarded-* to honour
                                timeout_graceful_shutdown=CLOSE_SECONDS)
        if not config.loaded:
            config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self.ports[service] = sock.getsockname()[1]
        self._servers[service] = (server, asyncio.get_running_loop().create_task(server.main_loop()))
        if self.record_dir is not None:
            holders.write_record(self.record_dir, service, self.ports[service])

    async def _use_shared(self, service: str, port: int) -> None:
        holder = await holders.identify(self.record_dir, service, self.settings.host, port, self.identity)
        if holder.kind in ("folder", "free", "silent"):
            self.ports[service] = port  # where clients reach it, whoever serves it
        if holder.kind == "free":  # the holder went away since the bind: the watch takes the port
            self.shared.add(service)
            log.info("The %s endpoint's port %d was just released; taking it over.", service.capitalize(), port)
            return
        if holder.kind == "folder":
            self.shared.add(service)
            log.info("The %s endpoint on port %d is served by another funchost process of this data folder "
                     "(pid %s); using it.", service.capitalize(), port, holder.pid or "unknown")
            return
        if holder.kind == "silent":
            self.unknown.add(service)
            log.warning("The %s endpoint's port %d is held by a process that does not answer in time and is not "
                        "recorded as serving this data folder; the functions start meanwhile, and the port is "
                        "asked again every %gs.", service.capitalize(), port, self.watch_interval)
            return
        who = ("another funchost process serving a different data folder" if holder.kind == "funchost"
               else "another program (an Azurite?)")
        raise PortTaken(f"cannot serve the {service.capitalize()} storage endpoint on {self.settings.host}:{port}: "
                        f"the port is in use by {who}. Stop it, or {HOW_TO_CHANGE}.")

    async def _watch_ports(self) -> None:
        """Take over each port served elsewhere once it is free; keep asking about unknown holders."""
        while self.shared or self.unknown:
            await self.clock.sleep(self.watch_interval)
            for service in [s for s in self.apps if s in self.shared or s in self.unknown]:
                await self._watch_one(service)

    async def _watch_one(self, service: str) -> None:
        port = self.ports[service]
        try:
            sock = listening_socket(self.settings.host, port, BACKLOG)
        except OSError:
            if service in self.unknown:
                await self._ask_again(service, port)
            return
        try:
            await self._serve(service, sock)
        except Exception:  # noqa: BLE001 - a port that cannot be served now is tried again
            sock.close()
            log.exception("could not serve the %s endpoint on port %d; trying again", service.capitalize(), port)
            return
        self.shared.discard(service)
        self.unknown.discard(service)
        log.warning("This process serves the %s endpoint on port %d now: the process that held the port is gone.",
                    service.capitalize(), port)

    async def _ask_again(self, service: str, port: int) -> None:
        holder = await holders.identify(self.record_dir, service, self.settings.host, port, self.identity)
        if holder.kind == "folder":
            self.unknown.discard(service)
            self.shared.add(service)
            log.info("The %s endpoint on port %d is served by another funchost process of this data folder "
                     "(pid %s); using it.", service.capitalize(), port, holder.pid or "unknown")
        elif holder.kind in ("funchost", "other"):
            self.unknown.discard(service)
            who = "a funchost process of another data folder" if holder.kind == "funchost" else "another program"
            log.error("The %s endpoint's port %d is held by %s: this host does not serve it. Stop that program, "
                      "or %s.", service.capitalize(), port, who, HOW_TO_CHANGE)

    async def stop(self) -> None:
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
        servers, self._servers = self._servers, {}
        for server, _ in servers.values():
            server.should_exit = True

        async def stop_one(service: str, server: uvicorn.Server, task: asyncio.Task[Any]) -> None:
            await task
            await server.shutdown()
            if self.record_dir is not None:
                holders.remove_record(self.record_dir, service)

        await asyncio.gather(*(stop_one(service, server, task) for service, (server, task) in servers.items()))

    def describe(self) -> list[str]:
        lines = []
        for service in self.apps:
            if service in self.ports:
                note = (" (served by another process of this data folder)" if service in self.shared
                        else " (held by a process not identified yet; retrying)" if service in self.unknown else "")
                lines.append(f"Storage {service} endpoint: {self.url(service)}{note}")
        return lines


"""The three listening sockets (Blob, Queue, Table), each an ASGI app on uvicorn in the host's loop.

Where a development connection string points: 127.0.0.1:10000 / 10001 / 10002 by default. A port
already taken is one of two cases:

* a funchost process serving the same data folder (several hosts on one data folder is a
  supported setup): this process uses those endpoints, since they serve the same files;
* anything else (Azurite, another data folder): a clear error naming the port and the ways out.

A socket is identified through ``GET /_funchost/identity``, which answers the data folder's id
(a random id kept in ``<data>/storage/endpoints.id``).
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

import httpx
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from funchost.clock import Clock
from funchost.errors import ConfigError
from funchost.private_files import create_private_file
from funchost.settings.connections import DEVSTORE_ACCOUNT
from funchost.storage_endpoints.accounts import Accounts
from funchost.storage_endpoints.app import IDENTITY_PATH, AccountStorage, StorageApp
from funchost.storage_endpoints.blob.app import BlobApp
from funchost.storage_endpoints.queue_api import QueueApp
from funchost.storage_endpoints.table.app import TableApp
from funchost.storage_endpoints.wire import META_NAMES_KEY

log = logging.getLogger("funchost.storage")

SETTING = "FUNCHOST_STORAGE_ENDPOINTS"
DEFAULT_PORTS = {"blob": 10000, "queue": 10001, "table": 10002}
SERVICES = ("blob", "queue", "table")
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


def data_identity(storage_root: Path) -> str:
    """The data folder's id, created once (of several processes starting together, one writes
    it and the others read it: the file appears complete or not at all)."""
    path = storage_root / "endpoints.id"
    create_private_file(path, uuid.uuid4().hex)
    return path.read_text(encoding="ascii").strip()


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


class StorageEndpoints:
    def __init__(self, storage: AccountStorage, accounts: Accounts, clock: Clock, identity: str,
                 settings: EndpointSettings) -> None:
        self.settings = settings
        self.identity = identity
        self.apps: dict[str, StorageApp] = {
            "blob": BlobApp(storage, accounts, clock, identity),
            "queue": QueueApp(storage, accounts, clock, identity),
            "table": TableApp(storage, accounts, clock, identity),
        }
        self.ports: dict[str, int] = {}
        self.shared: set[str] = set()  # services served by another process of the same data folder
        self._servers: list[tuple[uvicorn.Server, asyncio.Task[Any]]] = []

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
            for service, app in self.apps.items():
                await self._start_one(service, app, self.settings.ports[service])
        except BaseException:
            await self.stop()
            raise

    async def _start_one(self, service: str, app: StorageApp, port: int) -> None:
        try:
            sock = _listen(self.settings.host, port)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ConfigError(f"cannot serve the {service.capitalize()} endpoint on {self.settings.host}:{port}: "
                                  f"{exc.strerror}; {HOW_TO_CHANGE}") from exc
            await self._use_shared(service, port)
            return
        config = uvicorn.Config(app, lifespan="off", log_level="warning", log_config=None, access_log=False,
                                server_header=False, date_header=False, http=_Protocol, timeout_keep_alive=120,
                                proxy_headers=False,  # clients connect directly: no X-Forwarded-* to honour
                                timeout_graceful_shutdown=CLOSE_SECONDS)
        if not config.loaded:
            config.load()
        server = uvicorn.Server(config)
        server.lifespan = config.lifespan_class(config)
        await server.startup(sockets=[sock])
        self.ports[service] = sock.getsockname()[1]
        self._servers.append((server, asyncio.get_running_loop().create_task(server.main_loop())))

    async def _use_shared(self, service: str, port: int) -> None:
        owner = await _identity_at(self.settings.host, port)
        if owner is not None and owner.get("data") == self.identity and owner.get("service") == service:
            self.ports[service] = port
            self.shared.add(service)
            log.info("The %s endpoint on port %d is served by another funchost process of this data folder; "
                     "using it.", service.capitalize(), port)
            return
        who = ("another funchost process serving a different data folder" if owner is not None
               else "another program (an Azurite?)")
        raise PortTaken(f"cannot serve the {service.capitalize()} storage endpoint on {self.settings.host}:{port}: "
                        f"the port is in use by {who}. Stop it, or {HOW_TO_CHANGE}.")

    async def stop(self) -> None:
        servers, self._servers = self._servers, []
        for server, _ in servers:
            server.should_exit = True

        async def stop_one(server: uvicorn.Server, task: asyncio.Task[Any]) -> None:
            await task
            await server.shutdown()

        await asyncio.gather(*(stop_one(server, task) for server, task in servers))

    def describe(self) -> list[str]:
        lines = []
        for service in self.apps:
            if service in self.ports:
                note = " (served by another process of this data folder)" if service in self.shared else ""
                lines.append(f"Storage {service} endpoint: {self.url(service)}{note}")
        return lines


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on accepted sockets of that protocol,
    # and without it every response waits for the peer's delayed ACK (~40 ms).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
        sock.setblocking(False)
    except OSError:
        sock.close()
        raise
    return sock


async def _identity_at(host: str, port: int) -> dict[str, Any] | None:
    address = "127.0.0.1" if host in ("0.0.0.0", "") else host
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            response = await client.get(f"http://{address}:{port}{IDENTITY_PATH}")
        data = response.json()
    except (httpx.HTTPError, ValueError):
        return None
    return data if isinstance(data, dict) and "data" in data else None

"""The listening socket: one task per connection, a connection cap, shared by a data folder.

Where the emulator connection string points: 127.0.0.1:5672 by default. A port already taken is
either a funchost process serving the same data folder (this process then relies on it, as the
storage endpoints do) or anything else, a clear error naming the ways out. The data folder's id
travels in the endpoint's `open` properties (`funchost-data`), read by a bare AMQP handshake.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from dataclasses import dataclass
from typing import Any

from funchost.amqp.codec.performatives import OpenFrame
from funchost.amqp.connection import Connection
from funchost.amqp.frames import AMQP_HEADER, frame_bytes, read_frame
from funchost.amqp.router import Router
from funchost.amqp.values import keyed, text
from funchost.errors import ConfigError
from funchost.sockets import listening_socket

log = logging.getLogger("funchost.amqp")
BACKLOG = 512  # connections waiting to be accepted (SDK clients open few, long-lived ones)

SETTING = "FUNCHOST_AMQP_ENDPOINT"
DEFAULT_PORT = 5672
MAX_CONNECTIONS = 1000
HOW_TO_CHANGE = (f"choose another port with --amqp-port PORT (or the app setting {SETTING}=PORT), or turn the "
                 f"endpoint off with --no-amqp ({SETTING}=off)")


@dataclass(frozen=True)
class AmqpSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    max_connections: int = MAX_CONNECTIONS


def parse_setting(value: str | None, *, host: str = "127.0.0.1") -> AmqpSettings | None:
    """`off` | `on` | a port (0 = any free port) -> settings, None when off."""
    text_value = (value or "").strip().lower()
    if text_value in ("", "off", "false", "no", "none"):
        return None
    if text_value in ("on", "true", "yes", "default"):
        return AmqpSettings(host)
    if not text_value.isdigit() or int(text_value) > 65535:
        raise ConfigError(f"expected 'off', 'on' or a port, got {value!r}", path=SETTING)
    return AmqpSettings(host, int(text_value))


class AmqpEndpoint:
    def __init__(self, router: Router, identity: str, settings: AmqpSettings) -> None:
        self.router = router
        self.identity = identity
        self.settings = settings
        self.port = 0
        self.shared = False
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[Any]] = set()

    async def start(self, *, beside_other_apps: bool = False) -> None:
        """Serve the port, or use the endpoint of another process of this data folder there.
        `beside_other_apps` (a host, not the standalone command): a port served by the host of
        another data folder (another app on this machine) is left to it, as the storage endpoints
        are, and this host starts without an endpoint of its own."""
        try:
            sock = listening_socket(self.settings.host, self.settings.port, BACKLOG)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ConfigError(f"cannot serve AMQP on {self.settings.host}:{self.settings.port}: "
                                  f"{exc.strerror}; {HOW_TO_CHANGE}") from exc
            await self._use_shared(beside_other_apps)
            return
        self._server = await asyncio.start_server(self._accept, sock=sock)
        self.port = sock.getsockname()[1]

    async def _use_shared(self, beside_other_apps: bool) -> None:
        owner = await identity_at(self.settings.host, self.settings.port)
        if owner == self.identity:
            self.port, self.shared = self.settings.port, True
            log.info("The AMQP endpoint on port %d is served by another funchost process of this data folder; "
                     "using it.", self.port)
            return
        if owner and beside_other_apps:
            self.port, self.shared = self.settings.port, True
            log.warning("The AMQP endpoint on port %d is served by the host of another data folder (another app): "
                        "SDK clients using the emulator connection string reach that app's Service Bus and Event "
                        "Hubs; this app's functions use its own. To serve this app's too, %s.", self.port,
                        HOW_TO_CHANGE)
            return
        who = "another funchost process serving a different data folder" if owner else "another program"
        raise ConfigError(f"cannot serve AMQP on {self.settings.host}:{self.settings.port}: the port is in use by "
                          f"{who}. Stop it, or {HOW_TO_CHANGE}.")

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self._connections) >= self.settings.max_connections:
            log.warning("AMQP: refusing a connection: %d connections are open", len(self._connections))
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await Connection(reader, writer, self.router, {"funchost-data": self.identity}).run()
        except asyncio.CancelledError:
            pass  # the endpoint stops (asyncio's stream callback would log a cancelled handler as an error)
        finally:
            self._connections.discard(task)

    @property
    def connection_count(self) -> int:
        return len(self._connections)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), 5)

    def connection_string(self) -> str:
        port = "" if self.port == DEFAULT_PORT else f":{self.port}"
        return (f"Endpoint=sb://localhost{port};SharedAccessKeyName=RootManageSharedAccessKey;"
                "SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;")

    def describe(self) -> list[str]:
        note = " (served by another process of this data folder)" if self.shared else ""
        return [f"AMQP endpoint (Service Bus, Event Hubs): amqp://127.0.0.1:{self.port}{note}",
                f"  connection string: {self.connection_string()}"]



async def identity_at(host: str, port: int) -> str | None:
    """The data folder id a funchost AMQP endpoint announces in its `open` (None for others)."""
    address = "127.0.0.1" if host in ("0.0.0.0", "") else host
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(address, port), 2)
    except (OSError, TimeoutError):
        return None
    try:
        writer.write(AMQP_HEADER + frame_bytes(0, OpenFrame("funchost-probe", None, 65536, 0, None, None, None,
                                                                 None, None, None)))
        header = await asyncio.wait_for(reader.readexactly(8), 2)
        if header != AMQP_HEADER:
            return None
        frame = await asyncio.wait_for(read_frame(reader, 65536), 2)
        return text(keyed(frame.fields[9] if len(frame.fields) > 9 else None).get("funchost-data"))
    except Exception:
        return None
    finally:
        writer.close()

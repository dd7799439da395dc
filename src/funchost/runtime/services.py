"""What the host shares with plug-ins besides storage: typed, one object per host.

Fixed slots for what the host itself provides (its URL, HTTP keys, status, the extension
endpoints mounted on its port, its event loop) and a by-type registry for host-wide services
started by `runtime.registry.HOST_SERVICE_MODULES` (e.g. the Event Grid service), so a new
service adds itself without a new slot here:

    runtime.services.provide(service)             # when it starts
    runtime.services.find(EventGridService)       # typed lookup by a user of it: service | None
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from funchost.triggers.http.asgi import ASGIApp
    from funchost.triggers.http.keys import KeyStore

T = TypeVar("T")


class StartableService(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...


S = TypeVar("S", bound=StartableService)

DEFAULT_BASE_URL = "http://localhost:7071"

StatusProvider = Callable[[], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]


@dataclass(frozen=True)
class HttpMount:
    """An extension's endpoints on the host's port: requests under `prefix` go to `app`."""

    prefix: str
    app: ASGIApp
    _under: str = field(init=False, repr=False, compare=False)  # prefix of the paths below it

    def __post_init__(self) -> None:
        object.__setattr__(self, "_under", self.prefix.rstrip("/") + "/")

    def matches(self, path: str) -> bool:  # on every request: nothing built here
        return path == self.prefix or path.startswith(self._under)


@dataclass(slots=True, eq=False)
class HostServices:
    base_url: str = DEFAULT_BASE_URL  # where this host's HTTP surface answers (set once bound)
    keys: KeyStore | None = None  # HTTP keys, once the HTTP surface exists
    status: StatusProvider | None = None  # GET /admin/host/status
    http_mounts: list[HttpMount] = field(default_factory=list)
    mount_prefixes: tuple[str, ...] = ()  # every mount's prefix: one look rules most requests out
    loop: asyncio.AbstractEventLoop | None = None  # the host's event loop, once started
    _by_type: dict[type, object] = field(default_factory=dict)

    def provide(self, service: object) -> None:
        """Make a host-wide service findable by its type (one per type)."""
        self._by_type[type(service)] = service

    def withdraw(self, service: object) -> None:
        if self._by_type.get(type(service)) is service:
            del self._by_type[type(service)]

    async def start_service(self, service: S) -> S:
        """Provide a host-wide service and start it; one that fails to start is stopped (its
        partial start undone, its slot withdrawn by its stop) and the error raised."""
        self.provide(service)
        try:
            await service.start()
        except BaseException:
            await service.stop()
            raise
        return service

    def find(self, kind: type[T]) -> T | None:
        found = self._by_type.get(kind)
        return found if isinstance(found, kind) else None

    def mount(self, prefix: str, app: ASGIApp) -> HttpMount:
        mounted = HttpMount(prefix, app)
        self.http_mounts.append(mounted)
        self._mounts_changed()
        return mounted

    def unmount(self, mounted: HttpMount) -> None:
        if mounted in self.http_mounts:
            self.http_mounts.remove(mounted)
            self._mounts_changed()

    def _mounts_changed(self) -> None:
        self.mount_prefixes = tuple(m.prefix for m in self.http_mounts)

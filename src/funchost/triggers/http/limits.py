"""Connection-level limits of the HTTP server, with Kestrel's defaults and names.

The Functions host serves HTTP with Kestrel and changes only `MaxRequestBodySize` (funchost's
`FUNCTIONS_REQUEST_BODY_SIZE_LIMIT`); every other limit is a `KestrelServerLimits` default
(dotnet/aspnetcore `src/Servers/Kestrel/Core/src/KestrelServerLimits.cs`). Each one can be
changed with the app setting Kestrel's configuration binding reads, ``Kestrel__Limits__<Name>``
(or ``Kestrel:Limits:<Name>`` in local.settings.json), spelled as .NET spells it: sizes and counts
as integers, durations as TimeSpan strings (``00:00:30``).

Two values are funchost's own: Kestrel allows unlimited connections by default, funchost caps
them below the process's file-descriptor limit (so a flood of idle sockets cannot starve the
host's storage files of descriptors); and the graceful-stop grace period is the .NET host's
shutdown timeout (``ASPNETCORE_SHUTDOWNTIMEOUTSECONDS``, 30 s as in .NET 8), which bounds the
host's whole stop too (`runtime/stopping.py`).
"""

from __future__ import annotations

import resource
from collections.abc import Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.runtime.stopping import DEFAULT_SHUTDOWN_TIMEOUT, shutdown_timeout
from funchost.settings.timespan import parse_timespan

PREFIX = "Kestrel__Limits__"
HEARTBEAT_SECONDS = 1.0  # Kestrel's Heartbeat.Interval: timeouts are checked once a second
RESERVED_DESCRIPTORS = 1024  # kept free of connections for storage files, pipes, outgoing calls


def default_max_connections() -> int:
    """The soft file-descriptor limit minus a reserve (a quarter of it when the limit is small)."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return 100_000
    return max(16, soft - min(RESERVED_DESCRIPTORS, soft // 4))


@dataclass(frozen=True)
class ServerLimits:
    max_request_line_size: int = 8 * 1024  # bytes, method + target + version + CRLF; beyond: 414
    max_request_headers_total_size: int = 32 * 1024  # bytes of header lines; beyond: 431
    max_request_header_count: int = 100  # beyond: 431
    keep_alive_timeout: float = 130.0  # seconds idle before the first byte of a request
    request_headers_timeout: float = 30.0  # seconds from a request's first byte to its last header; 408
    max_concurrent_connections: int | None = None  # None: default_max_connections()
    min_body_bytes_per_second: float = 240.0  # 0 disables the minimum request body data rate
    min_body_grace_period: float = 5.0  # seconds before the body data rate is enforced
    shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT  # seconds in-flight requests get at graceful stop

    @property
    def connection_limit(self) -> int:
        return self.max_concurrent_connections or default_max_connections()

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> ServerLimits:
        """Limits from app settings; a malformed value is a ConfigError naming the setting."""
        read = _Reader(settings)
        d = cls()
        return cls(
            max_request_line_size=read.count(kestrel("MaxRequestLineSize")) or d.max_request_line_size,
            max_request_headers_total_size=(read.count(kestrel("MaxRequestHeadersTotalSize"))
                                            or d.max_request_headers_total_size),
            max_request_header_count=read.count(kestrel("MaxRequestHeaderCount")) or d.max_request_header_count,
            keep_alive_timeout=read.timespan(kestrel("KeepAliveTimeout"), d.keep_alive_timeout),
            request_headers_timeout=read.timespan(kestrel("RequestHeadersTimeout"), d.request_headers_timeout),
            max_concurrent_connections=read.count(kestrel("MaxConcurrentConnections")),
            min_body_bytes_per_second=read.rate(kestrel("MinRequestBodyDataRate__BytesPerSecond"),
                                                d.min_body_bytes_per_second),
            min_body_grace_period=read.timespan(kestrel("MinRequestBodyDataRate__GracePeriod"),
                                                d.min_body_grace_period, minimum=HEARTBEAT_SECONDS),
            shutdown_timeout=shutdown_timeout(settings),
        )


def kestrel(name: str) -> tuple[str, ...]:
    """The two spellings of a Kestrel limit setting: environment (``__``) and JSON (``:``)."""
    return PREFIX + name, (PREFIX + name).replace("__", ":")


class _Reader:
    def __init__(self, settings: Mapping[str, str]) -> None:
        self.settings = settings

    def find(self, names: tuple[str, ...]) -> tuple[str, str] | None:
        """(the setting's name, its value) for the first of `names` that is set."""
        for name in names:
            value = self.settings.get(name)
            if value is not None and value.strip():
                return name, value.strip()
        return None

    def count(self, names: tuple[str, ...]) -> int | None:
        found = self.find(names)
        if found is None:
            return None
        name, text = found
        if not text.isdigit() or int(text) <= 0:
            raise ConfigError(f"must be a positive whole number, got {text!r}", path=f"app setting {name}")
        return int(text)

    def timespan(self, names: tuple[str, ...], default: float, minimum: float = 0.0) -> float:
        found = self.find(names)
        if found is None:
            return default
        name, text = found
        try:
            seconds = parse_timespan(text)
        except ValueError as exc:
            raise ConfigError(str(exc), path=f"app setting {name}") from None
        if seconds <= minimum:  # Kestrel: positive; a grace period at least one heartbeat
            raise ConfigError(f"must be a TimeSpan longer than {minimum:g} s, got {text!r}", path=f"app setting {name}")
        return seconds

    def rate(self, names: tuple[str, ...], default: float) -> float:
        found = self.find(names)
        if found is None:
            return default
        name, text = found
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0 <= value < float("inf"):
            raise ConfigError(f"must be a number of bytes per second >= 0, got {text!r}", path=f"app setting {name}")
        return value

"""host.json ``extensions.http`` (Microsoft.Azure.WebJobs.Extensions.Http ``HttpOptions``).

Defaults are those of a host outside Windows Consumption (azure-semantics 3.1): no prefix
other than ``api``, no request queue, no dynamic throttles.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from funchost.errors import ConfigError
from funchost.settings.sections import SectionReader

DEFAULT_ROUTE_PREFIX = "api"
UNBOUNDED = -1


@dataclass(frozen=True)
class HttpOptions:
    route_prefix: str = DEFAULT_ROUTE_PREFIX
    max_outstanding_requests: int = UNBOUNDED  # executing + waiting; -1 = no limit
    max_concurrent_requests: int = UNBOUNDED  # executing at once; -1 = no limit
    dynamic_throttles_enabled: bool = False
    hsts: dict[str, Any] = field(default_factory=dict)
    custom_headers: dict[str, str] = field(default_factory=dict)

    @property
    def request_queue_enabled(self) -> bool:
        return self.max_outstanding_requests != UNBOUNDED or self.max_concurrent_requests != UNBOUNDED


def _limit(reader: SectionReader, key: str) -> int:
    value = reader.integer(key, UNBOUNDED, minimum=-1)
    if value == 0:
        raise ConfigError("must be -1 (unbounded) or a positive number, got 0", path=reader.key_path(key))
    return value


def _object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"must be an object, got {value!r}", path=path)
    return dict(value)


def _headers(value: Any, path: str) -> dict[str, str]:
    headers = _object(value, path)
    for name, header in headers.items():
        if not isinstance(header, str):
            raise ConfigError(f"header values must be strings, got {header!r}", path=f"{path}.{name}")
    return headers


def parse(reader: SectionReader) -> HttpOptions:
    prefix = reader.string("routePrefix", DEFAULT_ROUTE_PREFIX) or ""
    return HttpOptions(
        route_prefix=prefix.strip("/"),
        max_outstanding_requests=_limit(reader, "maxOutstandingRequests"),
        max_concurrent_requests=_limit(reader, "maxConcurrentRequests"),
        dynamic_throttles_enabled=reader.boolean("dynamicThrottlesEnabled", False),
        hsts=reader.custom("hsts", {}, _object),
        custom_headers=reader.custom("customHeaders", {}, _headers),
    )

"""The settings `func start` (Core Tools) puts into the app's environment, and how.

Core Tools' `StartHostAction.GetConfigurationSettings` starts from local.settings.json `Values`,
adds `WEBSITE_HOSTNAME` (the base address's authority, `localhost:<port>`), one
`ConnectionStrings:<name>` per entry of `ConnectionStrings`, and forces
`AZURE_FUNCTIONS_ENVIRONMENT=Development` (warning when `Values` said otherwise);
`UpdateEnvironmentVariables` then sets each one that the real environment does not already
define, so the real environment wins over all of them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping

from funchost.settings.local_settings import LocalSettings

log = logging.getLogger("funchost.config")

ENVIRONMENT = "AZURE_FUNCTIONS_ENVIRONMENT"
HOSTNAME = "WEBSITE_HOSTNAME"
CONNECTION_STRINGS = "ConnectionStrings:"


def exported_settings(local: LocalSettings, port: int | None, *, warn: bool = False) -> dict[str, str]:
    """local.settings.json as Core Tools exports it; `port` None or 0 (not known yet): no hostname.
    `warn`: log Core Tools' warning when `Values` sets another environment (`funchost start`)."""
    values = dict(local.values)
    if port:
        values.setdefault(HOSTNAME, hostname(port))
    for name, value in local.connection_strings.items():
        values.setdefault(f"{CONNECTION_STRINGS}{name}", value)
    previous = values.get(ENVIRONMENT)
    if warn and previous is not None and previous != "Development":
        log.warning("%s already exists with value '%s', overriding to 'Development'.", ENVIRONMENT, previous)
    values[ENVIRONMENT] = "Development"
    return values


def hostname(port: int) -> str:
    return f"localhost:{port}"


def export(values: Mapping[str, str], environ: MutableMapping[str, str]) -> None:
    """Set every value the environment does not define already (the real environment wins)."""
    for name, value in values.items():
        environ.setdefault(name, value)

"""The runtime of the host running in this process, for library code inside user functions.

`funchost.reliability` adapters use it so an app's own queue sends and blob reads go through the
host's storage (and wake its listeners at once); on Azure there is no funchost runtime and the
same adapters use the Azure SDKs instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from funchost.runtime.contracts import Runtime

_current: Runtime | None = None


def set_current(runtime: Runtime | None) -> None:
    global _current
    _current = runtime


def get_current() -> Runtime | None:
    return _current

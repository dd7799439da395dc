"""The storage connections an app's queue and blob functions use: what the queue and blob sections list.

Only these can be chosen in a URL or a form (a connection name from a request is never
resolved unless the app itself uses it); the default connection, ``AzureWebJobsStorage``, is
always there.
"""

from __future__ import annotations

from funchost.dashboard.page import ActionFailed, View
from funchost.settings.connections import DEFAULT_STORAGE

QUEUE_TYPES = ("queue", "queuetrigger")
BLOB_TYPES = ("blob", "blobtrigger")


def connections(view: View, types: tuple[str, ...]) -> list[str]:
    found = {DEFAULT_STORAGE}
    for function in view.runtime.functions.values():
        for binding in function.bindings:
            if binding.type.lower() in types:
                found.add(str(binding.get("connection") or DEFAULT_STORAGE))
    return sorted(found, key=lambda name: (name != DEFAULT_STORAGE, name.lower()))


def chosen(view: View, types: tuple[str, ...], requested: str | None) -> str:
    """The requested connection if the app uses it, the default when none is requested."""
    known = connections(view, types)
    if not requested:
        return known[0]
    for name in known:
        if name.lower() == requested.lower():
            return name
    raise ActionFailed(f"this app uses no storage connection named '{requested}'")


def account_name(view: View, connection: str, service: str) -> str:
    try:
        return view.runtime.storage.connection(connection, service).account_name
    except Exception:  # noqa: BLE001 - shown as the setting's name when it does not resolve
        return connection

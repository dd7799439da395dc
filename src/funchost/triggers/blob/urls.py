"""Blob URLs: the ``Uri`` binding data, the discovery strategy's choice, an Event Grid event's ``data.url``.

The Storage SDK's rule is used throughout: a URL is *path-style* (account in the path, as Azurite
and the embedded store's ``http://127.0.0.1:10000/<account>``) when its host is an IP address,
``localhost`` or it uses an emulator port; otherwise the account is in the host name.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import quote, unquote, urlsplit

from funchost.settings.connections import StorageConnection, parse_connection_string

EMBEDDED_BLOB_URL = "http://127.0.0.1:10000/{account}"
_EMULATOR_PORTS = {*range(10000, 10005), *range(10100, 10105), *range(11000, 11005), *range(11100, 11105)}


def is_path_style(url: str) -> bool:
    """UriExtensions.IsHostIPEndPointStyle (the newer form, with the emulator ports)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    return host == "localhost" or (parts.port in _EMULATOR_PORTS)


def blob_service_url(connection: StorageConnection, storage_kind: str, served_origin: str | None = None) -> str:
    """The blob endpoint of a connection, without a trailing slash or a SAS. For the embedded store:
    where its Blob endpoint is served (`served_origin`, e.g. ``http://127.0.0.1:20000``), else
    where a development connection string points."""
    if storage_kind == "embedded":
        if served_origin:
            return f"{served_origin.rstrip('/')}/{connection.account_name}"
        return EMBEDDED_BLOB_URL.format(account=connection.account_name)
    if connection.service_uri is not None:
        return connection.service_uri.partition("?")[0].rstrip("/")
    parts = {k.lower(): v for k, v in parse_connection_string(connection.connection_string or "").items()}
    if parts.get("usedevelopmentstorage", "").lower() == "true":
        proxy = urlsplit(parts.get("developmentstorageproxyuri") or "http://127.0.0.1")
        return f"{proxy.scheme or 'http'}://{proxy.hostname or '127.0.0.1'}:10000/devstoreaccount1"
    if parts.get("blobendpoint"):
        return parts["blobendpoint"].partition("?")[0].rstrip("/")
    protocol = parts.get("defaultendpointsprotocol", "https")
    suffix = parts.get("endpointsuffix", "core.windows.net")
    return f"{protocol}://{connection.account_name}.blob.{suffix}"


def blob_url(service_url: str, container: str, blob_name: str) -> str:
    """The blob's primary URL, the name percent-encoded as the SDK does (``/`` and ``~`` kept)."""
    return f"{service_url}/{container}/{quote(blob_name, safe='~/')}"


def split_blob_url(url: str) -> tuple[str, str]:
    """(container, blob name) of a blob URL (BlobUriBuilder): the first path segment is the container,
    the second for path-style URLs; the name is URL-decoded. ValueError when there is none."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"'{url}' is not an http(s) blob URL")
    segments = parts.path.lstrip("/").split("/")
    if is_path_style(url):
        segments = segments[1:]
    container = segments[0] if segments else ""
    name = unquote("/".join(segments[1:]))
    if not container or not name:
        raise ValueError(f"'{url}' names no container and blob")
    return container, name

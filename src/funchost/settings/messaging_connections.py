"""Connections of the messaging bindings (Event Hubs, Service Bus): which broker a `connection` means.

A binding's `connection` names a setting, resolved as the WebJobs extensions do
(`GetWebJobsConnectionStringSection`): the setting itself, then `AzureWebJobs<Name>`; a value is a
namespace connection string, and without one `<Name>__fullyQualifiedNamespace` is an identity
connection. funchost adds what a local host needs:

* the emulators' connection string (``Endpoint=sb://localhost;...;UseDevelopmentEmulator=true;``)
  means the embedded broker;
* a setting that is absent while running locally (``AZURE_FUNCTIONS_ENVIRONMENT`` Development,
  funchost's default) also means the embedded broker; the caller says so once at start;
* anything else (a real namespace connection string, ``__fullyQualifiedNamespace``) means the
  real service through the official SDK.

Connection strings carry secrets: `MessagingConnection.__repr__` never shows one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from funchost.errors import ConfigError

EMBEDDED = "embedded"
NAMESPACE = "namespace"
EMBEDDED_NAMESPACE = "localhost"  # the emulators' Endpoint host; also used when the setting is absent


@dataclass(frozen=True)
class MessagingConnection:
    setting_name: str
    kind: str  # EMBEDDED | NAMESPACE
    fully_qualified_namespace: str  # the Endpoint host ("localhost", "<ns>.servicebus.windows.net")
    entity_path: str | None = None  # EntityPath of the connection string (wins over the binding's name)
    connection_string: str | None = field(default=None, repr=False)
    identity: Mapping[str, str] = field(default_factory=dict, repr=False)  # __credential, __clientId, ...
    absent: bool = False  # embedded because the setting is not defined

    @property
    def is_embedded(self) -> bool:
        return self.kind == EMBEDDED

    @property
    def is_identity(self) -> bool:
        return self.kind == NAMESPACE and self.connection_string is None

    def __repr__(self) -> str:
        return (f"MessagingConnection(setting={self.setting_name!r}, kind={self.kind!r}, "
                f"namespace={self.fully_qualified_namespace!r}, entity_path={self.entity_path!r})")


def parse_messaging_connection_string(value: str) -> dict[str, str]:
    """`Key=Value;` pairs with lower-cased keys (the SDKs read them case-insensitively)."""
    parts: dict[str, str] = {}
    for piece in value.split(";"):
        piece = piece.strip()
        if not piece:
            continue
        key, sep, val = piece.partition("=")
        if not sep or not key.strip():
            raise ConfigError("a connection string must be 'Key=Value;...' pairs")
        parts[key.strip().lower()] = val.strip()
    return parts


def looks_like_connection_string(value: str) -> bool:
    """True when a `connection` property holds a connection string instead of a setting name."""
    try:
        parts = parse_messaging_connection_string(value)
    except ConfigError:
        return False
    return bool({"endpoint", "sharedaccesskeyname", "sharedaccesskey", "entitypath"} & parts.keys())


def endpoint_host(endpoint: str) -> str:
    """`sb://host[:port]/` -> host (the SDKs' FullyQualifiedNamespace)."""
    parsed = urlparse(endpoint if "://" in endpoint else f"sb://{endpoint}")
    host = parsed.hostname or ""
    if not host:
        raise ConfigError("the connection string's Endpoint has no host name")
    return host


def from_connection_string(setting: str, value: str) -> MessagingConnection:
    parts = parse_messaging_connection_string(value)
    if "endpoint" not in parts:
        raise ConfigError(f"the connection string in setting '{setting}' has no Endpoint")
    host = endpoint_host(parts["endpoint"])
    entity = parts.get("entitypath") or None
    if parts.get("usedevelopmentemulator", "").lower() == "true":
        return MessagingConnection(setting, EMBEDDED, host, entity)
    return MessagingConnection(setting, NAMESPACE, host, entity, connection_string=value)


def resolve_messaging_connection(
    name: str | None,
    settings: Mapping[str, str],
    *,
    what: str,
    local: bool,
    default_setting: str | None = None,
) -> MessagingConnection:
    """Resolve a binding's `connection`. `what` names the service in the extension's message
    ("EventHub account", "Service Bus account"); `local` is "running locally" (Development)."""
    setting = (name or "").strip() or (default_setting or "")
    if not setting:
        raise ConfigError(f"the binding's 'connection' is empty: name the app setting that holds the {what} "
                          "connection string")
    get = settings.get
    for candidate in (setting, f"AzureWebJobs{setting}"):
        value = get(candidate)
        if value:
            return from_connection_string(candidate, value)
    namespace = get(f"{setting}__fullyQualifiedNamespace")
    if namespace:
        identity = {key: value for key in ("credential", "clientId", "tenantId")
                    if (value := get(f"{setting}__{key}") or "")}
        return MessagingConnection(setting, NAMESPACE, endpoint_host(namespace), identity=identity)
    shown = setting
    if looks_like_connection_string(setting):
        # A connection string put where a setting name belongs: never embedded, never printed.
        shown = "<< REDACTED >> (a full connection string was incorrectly used instead of a connection setting name)"
    elif local:
        return MessagingConnection(setting, EMBEDDED, EMBEDDED_NAMESPACE, absent=True)
    raise ConfigError(f"{what} connection string with name '{shown}' does not exist in the settings. "
                      "Make sure that it is a defined App Setting.")

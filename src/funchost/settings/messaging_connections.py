"""Which Service Bus / Event Hubs a binding's `connection` means: embedded or a real namespace.

Shared by both messaging extensions. A binding's `connection` names a setting, resolved as the
WebJobs extensions do (`GetWebJobsConnectionStringSection`):

  1. empty / absent                         -> the extension's default setting
                                               (`AzureWebJobsServiceBus`, `AzureWebJobsEventHub`)
  2. the exact setting name, then `AzureWebJobs<Name>` -> a namespace connection string
  3. `<Name>__fullyQualifiedNamespace`      -> an identity-based connection to a real namespace

funchost's rule on top: the emulators' connection string
(``Endpoint=sb://localhost;...;UseDevelopmentEmulator=true;``, any host) means the embedded
broker, and so does a setting that is absent while running locally, which the caller says once
at start. A real connection string or a fully qualified namespace means the real service through
the official SDK. Connection strings carry secrets: nothing here prints one, and a connection
string put where a setting name belongs is redacted from the error.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import urlparse

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings

EMBEDDED = "embedded"
NAMESPACE = "namespace"
EMBEDDED_NAMESPACE = "localhost"  # the emulators' Endpoint host; also used when the setting is absent
EMBEDDED_EMULATOR = "emulator connection string"
EMBEDDED_ABSENT = "setting absent"
_REDACTED = "<< REDACTED >> (a full connection string was incorrectly used instead of a connection setting name)"


@dataclass(frozen=True)
class MessagingConnection:
    setting_name: str
    embedded: bool
    # Why the embedded broker is used (EMBEDDED_EMULATOR / EMBEDDED_ABSENT), None for a real namespace.
    embedded_reason: str | None = None
    fully_qualified_namespace: str = EMBEDDED_NAMESPACE  # "contoso.servicebus.windows.net" or the emulator host
    entity_path: str | None = None  # EntityPath of the connection string (wins over the binding's name)
    connection_string: str | None = field(default=None, repr=False)  # a real namespace's (secret)
    identity: Mapping[str, str] = field(default_factory=dict, repr=False)  # __credential, __clientId, ...

    @property
    def kind(self) -> str:
        return EMBEDDED if self.embedded else NAMESPACE

    @property
    def is_embedded(self) -> bool:
        return self.embedded

    @property
    def absent(self) -> bool:
        """Embedded because the setting is not defined (not because it names the emulator)."""
        return self.embedded_reason == EMBEDDED_ABSENT

    @property
    def is_identity(self) -> bool:
        return not self.embedded and self.connection_string is None

    def __repr__(self) -> str:  # never print secrets
        where = f"embedded ({self.embedded_reason})" if self.embedded else f"namespace {self.fully_qualified_namespace}"
        return f"MessagingConnection(setting={self.setting_name!r}, {where}, entity_path={self.entity_path!r})"


def embedded_connection(setting: str = "", reason: str = EMBEDDED_EMULATOR) -> MessagingConnection:
    return MessagingConnection(setting, embedded=True, embedded_reason=reason)


def parse_messaging_connection_string(value: str, setting: str = "") -> dict[str, str]:
    """`Key=Value;...` pairs with case-insensitive keys (lower-cased); values keep their case."""
    parts: dict[str, str] = {}
    for piece in value.split(";"):
        piece = piece.strip()
        if not piece:
            continue
        key, sep, val = piece.partition("=")
        if not sep or not key.strip():
            where = f" in setting '{setting}'" if setting else ""
            raise ConfigError(f"the connection string{where} must be 'Key=Value;...' pairs")
        parts[key.strip().lower()] = val.strip()
    return parts


def looks_like_connection_string(value: str) -> bool:
    """True when a `connection` property holds a connection string instead of a setting name."""
    try:
        parts = parse_messaging_connection_string(value)
    except ConfigError:
        return False
    return bool({"endpoint", "sharedaccesskeyname", "sharedaccesskey", "entitypath"} & parts.keys())


def is_running_locally(settings: Mapping[str, str] | AppSettings) -> bool:
    """Outside Azure App Service (which always sets WEBSITE_INSTANCE_ID)."""
    return not settings.get("WEBSITE_INSTANCE_ID")


def from_connection_string(setting: str, value: str) -> MessagingConnection:
    parts = parse_messaging_connection_string(value, setting)
    endpoint = parts.get("endpoint", "")
    host = urlparse(endpoint if "://" in endpoint else f"sb://{endpoint}").hostname if endpoint else None
    entity = parts.get("entitypath") or None
    if parts.get("usedevelopmentemulator", "").lower() == "true":
        return MessagingConnection(setting, embedded=True, embedded_reason=EMBEDDED_EMULATOR,
                                   fully_qualified_namespace=host or EMBEDDED_NAMESPACE, entity_path=entity)
    if not endpoint or not endpoint.lower().startswith("sb://") or not host:
        raise ConfigError(f"the connection string in setting '{setting}' has no 'Endpoint=sb://<namespace>/'")
    if "sharedaccesskeyname" not in parts and "sharedaccesssignature" not in parts:
        raise ConfigError(f"the connection string in setting '{setting}' has neither SharedAccessKeyName/"
                          "SharedAccessKey nor SharedAccessSignature")
    return MessagingConnection(setting, embedded=False, fully_qualified_namespace=host, entity_path=entity,
                               connection_string=value)


def resolve_messaging_connection(
    name: str | None,
    settings: Mapping[str, str] | AppSettings,
    *,
    local: bool,
    missing: str,
    default_setting: str | None = None,
) -> MessagingConnection:
    """Resolve a binding's `connection` (see the module docstring).

    `local` is "running locally" (an absent setting then means the embedded broker); `missing`
    is the extension's message for an undefined setting, with ``{setting}`` in it.
    """
    setting = (name or "").strip() or (default_setting or "")
    if not setting:
        raise ConfigError("the binding's 'connection' is empty: name the app setting that holds the "
                          "connection string")
    candidates = [setting]
    if not setting.lower().startswith("azurewebjobs"):
        candidates.append(f"AzureWebJobs{setting}")
    for candidate in candidates:
        value = settings.get(candidate)
        if value:
            return from_connection_string(candidate, value)
    namespace = settings.get(f"{setting}__fullyQualifiedNamespace")
    if namespace:
        host = urlparse(namespace if "://" in namespace else f"sb://{namespace.strip()}").hostname
        identity = {key: value for key in ("credential", "clientId", "tenantId")
                    if (value := settings.get(f"{setting}__{key}") or "")}
        return MessagingConnection(setting, embedded=False, fully_qualified_namespace=host or namespace.strip(),
                                   identity=identity)
    if looks_like_connection_string(setting):
        # A connection string put where a setting name belongs: never embedded, never printed.
        raise ConfigError(missing.format(setting=_REDACTED))
    if local:
        return MessagingConnection(setting, embedded=True, embedded_reason=EMBEDDED_ABSENT)
    raise ConfigError(missing.format(setting=setting))

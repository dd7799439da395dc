"""Which Service Bus / Event Hubs a binding's `connection` means: embedded or a real namespace.

Shared by both messaging extensions. A binding's `connection` names a setting, as for storage:

  1. empty / absent                         -> the extension's default setting
                                               (`AzureWebJobsServiceBus`, `AzureWebJobsEventHub`)
  2. the exact setting name, then `AzureWebJobs<Name>` -> a connection string
  3. `<Name>__fullyQualifiedNamespace`      -> an identity-based connection to a real namespace

funchost's rule on top: the emulators' connection string
(`Endpoint=sb://localhost;...;UseDevelopmentEmulator=true;`, any host) means the embedded
broker, and so does a setting that is absent while running locally (outside Azure), which the
host says once at start. A real connection string or a fully qualified namespace means the real
service through the official SDK. Nothing here ever prints a key.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings

EMBEDDED_EMULATOR = "emulator connection string"
EMBEDDED_ABSENT = "setting absent"


@dataclass(frozen=True)
class MessagingConnection:
    setting_name: str
    embedded: bool
    # Why the embedded broker is used (EMBEDDED_EMULATOR / EMBEDDED_ABSENT), None for a real namespace.
    embedded_reason: str | None = None
    connection_string: str | None = None  # a real namespace's connection string (secret)
    fully_qualified_namespace: str | None = None  # "contoso.servicebus.windows.net" (real or emulator host)
    entity_path: str | None = None  # EntityPath of the connection string, if any

    @property
    def is_identity(self) -> bool:
        return not self.embedded and self.connection_string is None

    def __repr__(self) -> str:  # never print secrets
        kind = f"embedded ({self.embedded_reason})" if self.embedded else f"namespace {self.fully_qualified_namespace}"
        return f"MessagingConnection(setting={self.setting_name!r}, {kind})"


def parse_messaging_connection_string(value: str, setting: str) -> dict[str, str]:
    """`Key=Value;...` pairs with case-insensitive keys (lower-cased); values keep their case."""
    parts: dict[str, str] = {}
    for piece in value.split(";"):
        piece = piece.strip()
        if not piece:
            continue
        key, sep, val = piece.partition("=")
        if not sep:
            raise ConfigError(f"the connection string in setting '{setting}' must be 'Key=Value;...' pairs")
        parts[key.strip().lower()] = val.strip()
    return parts


def is_running_locally(settings: AppSettings) -> bool:
    """Outside Azure App Service (which always sets WEBSITE_INSTANCE_ID)."""
    return not settings.get("WEBSITE_INSTANCE_ID")


def resolve_messaging_connection(name: str | None, settings: AppSettings, *, default_setting: str,
                                 service: str = "ServiceBus") -> MessagingConnection:
    """Resolve a Service Bus or Event Hubs binding's `connection` (see the module docstring)."""
    setting = (name or "").strip() or default_setting
    candidates = [setting]
    if not setting.lower().startswith("azurewebjobs"):
        candidates.append(f"AzureWebJobs{setting}")
    for candidate in candidates:
        value = settings.get(candidate)
        if value:
            return _from_connection_string(candidate, value)
    namespace = settings.get(f"{setting}__fullyQualifiedNamespace")
    if namespace:
        return MessagingConnection(setting, embedded=False, fully_qualified_namespace=namespace.strip())
    if is_running_locally(settings):
        return MessagingConnection(setting, embedded=True, embedded_reason=EMBEDDED_ABSENT)
    raise ConfigError(f"Microsoft Azure WebJobs SDK {service} connection string '{setting}' is missing or empty.")


def _from_connection_string(setting: str, value: str) -> MessagingConnection:
    parts = parse_messaging_connection_string(value, setting)
    endpoint = parts.get("endpoint", "")
    host = urlparse(endpoint).hostname if endpoint else None
    entity = parts.get("entitypath") or None
    if parts.get("usedevelopmentemulator", "").lower() == "true":
        return MessagingConnection(setting, embedded=True, embedded_reason=EMBEDDED_EMULATOR,
                                   fully_qualified_namespace=host, entity_path=entity)
    if not endpoint or not endpoint.lower().startswith("sb://") or not host:
        raise ConfigError(f"the connection string in setting '{setting}' has no 'Endpoint=sb://<namespace>/'")
    if "sharedaccesskeyname" not in parts and "sharedaccesssignature" not in parts:
        raise ConfigError(f"the connection string in setting '{setting}' has neither SharedAccessKeyName/"
                          "SharedAccessKey nor SharedAccessSignature")
    return MessagingConnection(setting, embedded=False, connection_string=value, fully_qualified_namespace=host,
                               entity_path=entity)

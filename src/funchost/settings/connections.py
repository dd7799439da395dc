"""Connection-name resolution as the Functions host does it (host.md, "Configuration").

A binding's `connection` names a setting, not a connection string:
  1. empty / absent            -> the `AzureWebJobsStorage` setting
  2. `AzureWebJobs<Name>`, then the exact name, each first as `ConnectionStrings:<that>`
     (local.settings.json `ConnectionStrings`; `ConnectionStrings__<that>` in the environment)
                               -> a connection string
  3. `<Name>__queueServiceUri` / `__blobServiceUri` / `__serviceUri` / `__accountName`
                               -> an identity-based connection (DefaultAzureCredential)

Step 2 is the WebJobs SDK's `GetWebJobsConnectionSection`: the prefixed name first, each name
looked up in the `ConnectionStrings` section before the root (`IConfigurationExtensions.cs`).
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlparse

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings

DEFAULT_STORAGE = "AzureWebJobsStorage"
DEVSTORE_ACCOUNT = "devstoreaccount1"
DEVSTORE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


@dataclass(frozen=True)
class StorageConnection:
    """A resolved storage connection. Exactly one of `connection_string` / `service_uri` is set."""

    setting_name: str
    account_name: str
    connection_string: str | None = None
    service_uri: str | None = None  # identity-based: the endpoint for the requested service

    @property
    def is_identity(self) -> bool:
        return self.service_uri is not None

    def __repr__(self) -> str:  # never print secrets
        return f"StorageConnection(setting={self.setting_name!r}, account={self.account_name!r})"


def parse_connection_string(value: str) -> dict[str, str]:
    parts: dict[str, str] = {}
    for piece in value.split(";"):
        piece = piece.strip()
        if not piece:
            continue
        key, sep, val = piece.partition("=")
        if not sep:
            raise ConfigError("a storage connection string must be 'Key=Value;...' pairs")
        parts[key.strip()] = val.strip()
    return parts


def account_name_of(connection_string: str) -> str:
    parts = {k.lower(): v for k, v in parse_connection_string(connection_string).items()}
    if parts.get("usedevelopmentstorage", "").lower() == "true":
        return DEVSTORE_ACCOUNT
    if "accountname" in parts:
        return parts["accountname"]
    for key in ("queueendpoint", "blobendpoint", "tableendpoint"):
        if key in parts:
            return _account_from_uri(parts[key])
    raise ConfigError("the storage connection string names no AccountName or endpoint")


def _account_from_uri(uri: str) -> str:
    parsed = urlparse(uri)
    host = parsed.hostname or ""
    if host in ("127.0.0.1", "localhost") or host.replace(".", "").isdigit():
        # path-style (Azurite): http://127.0.0.1:10000/devstoreaccount1
        first = parsed.path.strip("/").split("/")[0]
        return first or DEVSTORE_ACCOUNT
    return host.split(".")[0]


_IDENTITY_SUFFIXES = {
    "queue": ("__queueServiceUri", "__serviceUri"),
    "blob": ("__blobServiceUri", "__serviceUri"),
}


def resolve_storage_connection(
    name: str | None, settings: AppSettings, *, service: str = "queue"
) -> StorageConnection:
    """Resolve a binding's `connection` for a storage `service` ("queue" or "blob")."""
    setting = (name or "").strip() or DEFAULT_STORAGE
    candidates = [setting]
    if not setting.lower().startswith("azurewebjobs"):
        candidates.insert(0, f"AzureWebJobs{setting}")
    for candidate in candidates:
        for key in (f"ConnectionStrings:{candidate}", f"ConnectionStrings__{candidate}", candidate):
            value = settings.get(key)
            if value:
                return StorageConnection(key, account_name_of(value), connection_string=value)
    for suffix in _IDENTITY_SUFFIXES.get(service, ("__serviceUri",)):
        uri = settings.get(f"{setting}{suffix}")
        if uri:
            return StorageConnection(setting, _account_from_uri(uri), service_uri=uri)
    account = settings.get(f"{setting}__accountName")
    if account:
        uri = f"https://{account}.{service}.core.windows.net"
        return StorageConnection(setting, account, service_uri=uri)
    raise ConfigError(
        f"Storage account connection string '{setting}' does not exist. "
        "Make sure that it is a defined App Setting."
    )

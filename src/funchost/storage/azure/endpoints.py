"""From a resolved storage connection to an SDK endpoint and credential.

Connection strings are used as given; the forms the Functions host accepts are all understood:

- ``UseDevelopmentStorage=true`` -> Azurite's well-known ``devstoreaccount1`` on 127.0.0.1
  (blob 10000, queue 10001; ``DevelopmentStorageProxyUri`` replaces the host);
- explicit endpoints (``BlobEndpoint=`` / ``QueueEndpoint=``), e.g. an Azurite string;
- ``DefaultEndpointsProtocol`` + ``AccountName`` + ``AccountKey`` (+ ``EndpointSuffix``);
- a SAS (``SharedAccessSignature=``) with endpoints or an account name;
- identity-based settings (``<Name>__queueServiceUri`` / ``__blobServiceUri`` / ``__serviceUri`` /
  ``__accountName``): a token credential, ``DefaultAzureCredential`` unless ``<Name>__clientSecret``
  (with ``__tenantId`` / ``__clientId``) asks for a service principal; ``<Name>__clientId`` alone
  selects a user-assigned managed identity.

Nothing here logs; `Endpoint.__repr__` hides the credential.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from azure.core.credentials import AzureNamedKeyCredential, AzureSasCredential

from funchost.errors import ConfigError
from funchost.settings.app_settings import AppSettings
from funchost.settings.connections import (
    DEVSTORE_ACCOUNT,
    DEVSTORE_KEY,
    StorageConnection,
    parse_connection_string,
)

DEVSTORE_PORTS = {"blob": 10000, "queue": 10001}
_ENDPOINT_KEYS = {"blob": "blobendpoint", "queue": "queueendpoint"}


@dataclass(frozen=True)
class Endpoint:
    """Where one storage service of a connection lives, and how to authenticate to it."""

    service: str  # "queue" | "blob"
    account_name: str
    account_url: str  # without trailing slash and without a SAS
    credential: Any = field(default=None, repr=False)  # key / SAS credential, or a token credential
    identity: bool = False  # True: `credential` is an async token credential that we must close

    def __repr__(self) -> str:
        return f"Endpoint({self.service!r}, account={self.account_name!r}, url={self.account_url!r})"


def endpoint_for(connection: StorageConnection, service: str, settings: AppSettings) -> Endpoint:
    if service not in _ENDPOINT_KEYS:
        raise ValueError(f"unknown storage service {service!r}")
    if connection.service_uri is not None:
        return _identity_endpoint(connection, service, settings)
    assert connection.connection_string is not None  # StorageConnection invariant
    return _endpoint_from_string(connection.connection_string, service, connection.setting_name)


def _endpoint_from_string(value: str, service: str, setting: str) -> Endpoint:
    parts = {k.lower(): v for k, v in parse_connection_string(value).items()}
    where = f"app setting '{setting}'"
    if parts.get("usedevelopmentstorage", "").lower() == "true":
        proxy = parts.get("developmentstorageproxyuri")
        base = urlparse(proxy) if proxy else None
        scheme = base.scheme if base and base.scheme else "http"
        host = (base.hostname if base else None) or "127.0.0.1"
        dev_url = f"{scheme}://{host}:{DEVSTORE_PORTS[service]}/{DEVSTORE_ACCOUNT}"
        return Endpoint(
            service, DEVSTORE_ACCOUNT, dev_url, AzureNamedKeyCredential(DEVSTORE_ACCOUNT, DEVSTORE_KEY)
        )

    url = parts.get(_ENDPOINT_KEYS[service])
    account = parts.get("accountname")
    if not url:
        if not account:
            raise ConfigError(
                f"the connection string names no {service} endpoint and no AccountName", path=where
            )
        protocol = parts.get("defaultendpointsprotocol", "https")
        suffix = parts.get("endpointsuffix", "core.windows.net")
        url = f"{protocol}://{account}.{service}.{suffix}"
    url, url_sas = _split_sas(url)
    account = account or _account_from_url(url)

    sas = parts.get("sharedaccesssignature") or url_sas
    key = parts.get("accountkey")
    if key:
        credential: Any = AzureNamedKeyCredential(account, key)
    elif sas:
        credential = AzureSasCredential(sas.lstrip("?"))
    else:
        credential = None  # anonymous (public containers) - the service decides
    return Endpoint(service, account, url, credential)


def _split_sas(url: str) -> tuple[str, str | None]:
    base, sep, query = url.partition("?")
    return base.rstrip("/"), (query if sep and query else None)


def _account_from_url(url: str) -> str:
    parsed = urlparse(url)
    host = parsed.hostname or ""
    if host in ("127.0.0.1", "localhost") or host.replace(".", "").isdigit():
        first = parsed.path.strip("/").split("/")[0]
        return first or DEVSTORE_ACCOUNT
    return host.split(".")[0]


def _identity_endpoint(connection: StorageConnection, service: str, settings: AppSettings) -> Endpoint:
    assert connection.service_uri is not None
    url, _ = _split_sas(connection.service_uri)
    if urlparse(url).scheme not in ("http", "https"):
        raise ConfigError(
            "an identity-based service URI must be an http(s) URL",
            path=f"app setting '{connection.setting_name}'",
        )
    credential = identity_credential(connection.setting_name, settings)
    return Endpoint(service, connection.account_name, url, credential, identity=True)


def identity_credential(prefix: str, settings: AppSettings) -> Any:
    """The token credential the Functions host would build for `<prefix>__*` settings.

    Imported lazily: azure-identity is only needed for identity-based connections.
    """
    from azure.identity.aio import ClientSecretCredential, DefaultAzureCredential

    tenant = settings.get(f"{prefix}__tenantId")
    client_id = settings.get(f"{prefix}__clientId")
    secret = settings.get(f"{prefix}__clientSecret")
    if secret:
        if not (tenant and client_id):
            raise ConfigError(
                "a client secret needs __tenantId and __clientId as well",
                path=f"app setting '{prefix}__clientSecret'",
            )
        return ClientSecretCredential(tenant, client_id, secret)
    if client_id:
        return DefaultAzureCredential(managed_identity_client_id=client_id)
    return DefaultAzureCredential()

"""Shared access signatures (account SAS and service SAS), verified as the service does.

https://learn.microsoft.com/rest/api/storageservices/create-account-sas
https://learn.microsoft.com/rest/api/storageservices/create-service-sas

The string-to-sign depends on the signed version `sv`; every layout a current or older client
emits is tried (all need the account key, so leniency about layouts grants nothing). After the
signature: the time window, the protocol (`spr`), the source IP (`sip`), then what the request
needs: service (`ss`), resource type (`srt`) and permission (`sp`) for an account SAS, the signed
resource and permission for a service SAS. A stored access policy (`si`) supplies the fields it
holds (`policy` looks it up).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from funchost.storage_endpoints.accounts import Account
from funchost.storage_endpoints.errors import ApiError
from funchost.storage_endpoints.sharedkey import sign
from funchost.storage_endpoints.wire import StorageRequest, parse_iso

SERVICE_LETTERS = {"blob": "b", "queue": "q", "table": "t"}


@dataclass(frozen=True)
class Access:
    """What an operation needs: resource type (s service, c container/queue/table, o object) and
    any one of the permission letters."""

    resource_type: str
    permissions: str


@dataclass(frozen=True)
class Scope:
    """The resource a request addresses, for service SAS checks."""

    container: str = ""  # container, queue or table name
    blob: str = ""
    partition_key: str | None = None
    row_key: str | None = None


@dataclass(frozen=True)
class StoredPolicy:
    start: str = ""
    expiry: str = ""
    permission: str = ""


PolicyLookup = Callable[[str], Awaitable[StoredPolicy | None]]


def is_sas(query: Mapping[str, str]) -> bool:
    return "sig" in query


def _forbidden(code: str, message: str | None = None) -> ApiError:
    return ApiError(403, code, message)


def _auth_failed(detail: str) -> ApiError:
    return ApiError(403, "AuthenticationFailed", None, {"AuthenticationErrorDetail": detail})


def account_sas_strings(account: str, q: Mapping[str, str]) -> list[str]:
    fields = [account, q.get("sp", ""), q.get("ss", ""), q.get("srt", ""), q.get("st", ""), q.get("se", ""),
              q.get("sip", ""), q.get("spr", ""), q.get("sv", "")]
    return ["\n".join([*fields, q.get("ses", "")]) + "\n", "\n".join(fields) + "\n"]


def service_sas_strings(service: str, account: str, scope: Scope, q: Mapping[str, str]) -> list[str]:
    head = [q.get("sp", ""), q.get("st", ""), q.get("se", "")]
    tail = [q.get("si", ""), q.get("sip", ""), q.get("spr", ""), q.get("sv", "")]
    if service == "queue":
        return ["\n".join([*head, f"/queue/{account}/{scope.container}", *tail])]
    if service == "table":
        keys = [q.get("spk", ""), q.get("srk", ""), q.get("epk", ""), q.get("erk", "")]
        return ["\n".join([*head, f"/table/{account}/{q.get('tn', scope.container).lower()}", *tail, *keys])]
    sr = q.get("sr", "")
    path = f"/blob/{account}/{scope.container}" + (f"/{scope.blob}" if sr in ("b", "bs", "bv") else "")
    overrides = [q.get(k, "") for k in ("rscc", "rscd", "rsce", "rscl", "rsct")]
    snapshot = q.get("snapshot", q.get("versionid", ""))
    return ["\n".join([*head, path, *tail, sr, snapshot, q.get("ses", ""), *overrides]),  # 2020-12-06+
            "\n".join([*head, path, *tail, sr, snapshot, *overrides]),  # 2018-11-09 .. 2020-10-02
            "\n".join([*head, path, *tail, *overrides])]  # older


def _signature_ok(account: Account, strings: list[str], signature: str) -> bool:
    for text in strings:
        for key in account.keys:
            if hmac.compare_digest(sign(key, text), signature):
                return True
    return False


async def verify(request: StorageRequest, account: Account, service: str, access: Access, scope: Scope,
           now: datetime, policy: PolicyLookup | None = None) -> None:
    """Raise ApiError (403) unless the SAS in the query allows this request."""
    q = request.query
    account_sas = "ss" in q or "srt" in q
    if account_sas:
        strings = account_sas_strings(account.name, q)
    else:
        strings = service_sas_strings(service, account.name, scope, q)
    if not _signature_ok(account, strings, q.get("sig", "")):
        raise _auth_failed("Signature did not match. String to sign used was not accepted.")
    permissions, start, expiry = q.get("sp", ""), q.get("st", ""), q.get("se", "")
    if not account_sas and q.get("si"):
        stored = await policy(q["si"]) if policy is not None else None
        if stored is None:
            raise _auth_failed(f"Signed identifier '{q['si']}' was not found.")
        permissions, start, expiry = permissions or stored.permission, start or stored.start, expiry or stored.expiry
    _check_time(start, expiry, now)
    _check_protocol(q.get("spr", ""), request.scheme)
    _check_ip(q.get("sip", ""), request.client)
    if account_sas:
        if SERVICE_LETTERS[service] not in q.get("ss", ""):
            raise _forbidden("AuthorizationServiceMismatch")
        if access.resource_type not in q.get("srt", ""):
            raise _forbidden("AuthorizationResourceTypeMismatch")
    else:
        _check_scope(service, access, scope, q)
    if not any(p in permissions for p in access.permissions):
        raise _forbidden("AuthorizationPermissionMismatch")


def _check_time(start: str, expiry: str, now: datetime) -> None:
    if not expiry:
        raise _auth_failed("Signed expiry time is required.")
    end = parse_iso(expiry)
    begin = parse_iso(start) if start else None
    if end is None or (start and begin is None):
        raise _auth_failed("The signed start or expiry time is not a valid ISO 8601 time.")
    if now > end or (begin is not None and now < begin):
        raise _auth_failed(f"Signature not valid in the specified time frame: Start [{start}] - Expiry [{expiry}]"
                           f" - Current [{now:%a, %d %b %Y %H:%M:%S GMT}]")


def _check_protocol(spr: str, scheme: str) -> None:
    allowed = {p.strip() for p in spr.split(",") if p.strip()} or {"https", "http"}
    if scheme not in allowed:
        raise _forbidden("AuthorizationProtocolMismatch")


def _check_ip(sip: str, client: str) -> None:
    if not sip:
        return
    try:
        address = ipaddress.ip_address(client)
        low, _, high = sip.partition("-")
        first, last = ipaddress.ip_address(low.strip()), ipaddress.ip_address((high or low).strip())
        allowed = first <= address <= last  # type: ignore[operator]
    except (ValueError, TypeError):
        allowed = False
    if not allowed:
        raise _forbidden("AuthorizationSourceIPMismatch")


def _check_scope(service: str, access: Access, scope: Scope, q: Mapping[str, str]) -> None:
    """A service SAS reaches one container (or blob), queue or table, never the service level."""
    if access.resource_type == "s":
        raise _forbidden("AuthorizationResourceTypeMismatch")
    if service == "blob" and q.get("sr", "") in ("b", "bs", "bv") and access.resource_type != "o":
        raise _forbidden("AuthorizationResourceTypeMismatch")
    if service == "table" and q.get("tn") and scope.container and q["tn"].lower() != scope.container.lower():
        raise _forbidden("AuthorizationResourceTypeMismatch")
    if service == "table" and scope.partition_key is not None:
        pk, rk = scope.partition_key, scope.row_key or ""
        spk, epk = q.get("spk"), q.get("epk")
        if (spk and (pk, rk) < (spk, q.get("srk", ""))) or (epk and (pk, rk) > (epk, q.get("erk", "\uffff"))):
            raise _forbidden("AuthorizationFailure")

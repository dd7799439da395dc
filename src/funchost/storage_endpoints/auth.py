"""Who may do what: Shared Key, Shared Key Lite, SAS, then container public access.

Order as the service applies it: an `Authorization` header is checked (a wrong signature is 403
`AuthenticationFailed`, never a fall-through to anonymous access); a query with `sig` is a SAS;
otherwise the request is anonymous and only public containers' reads pass. Anonymous requests
for anything else: a blob or container read in a private container is 404 `ResourceNotFound` (the
service does not reveal private resources), other requests 401 `NoAuthenticationInformation`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from funchost.storage_endpoints import sas, sharedkey
from funchost.storage_endpoints.accounts import Account, Accounts
from funchost.storage_endpoints.errors import ApiError
from funchost.storage_endpoints.sas import Access, PolicyLookup, Scope
from funchost.storage_endpoints.wire import StorageRequest

PublicAccess = Callable[[], Awaitable[str | None]]  # the container's level: "container" | "blob" | None


def account_of(request: StorageRequest, accounts: Accounts) -> Account:
    if not request.account:
        raise ApiError(400, "InvalidQueryParameterValue", "The account name is missing from the request URI.")
    account = accounts.get(request.account)
    if account is None:
        raise ApiError(404, "ResourceNotFound", f"The storage account '{request.account}' is not served here "
                                                "(see docs/storage-endpoints.md for adding accounts).")
    return account


async def authorize(request: StorageRequest, account: Account, service: str, access: Access, scope: Scope,
                    now: datetime, *, public_access: PublicAccess | None = None,
                    policy: PolicyLookup | None = None) -> None:
    header = request.headers.get("authorization")
    if header is not None:
        _check_shared_key(request, account, service, header)
        return
    if sas.is_sas(request.query):
        await sas.verify(request, account, service, access, scope, now, policy)
        return
    if public_access is not None and access.permissions in ("r", "l", "rl"):
        level = await public_access()
        if level == "container" or (level == "blob" and access.resource_type == "o"):
            return
        raise ApiError(404, "ResourceNotFound")
    raise ApiError(401, "NoAuthenticationInformation")


def _check_shared_key(request: StorageRequest, account: Account, service: str, header: str) -> None:
    scheme, _, credential = header.strip().partition(" ")
    name, _, signature = credential.strip().rpartition(":")
    if scheme not in ("SharedKey", "SharedKeyLite") or not name or not signature:
        raise ApiError(403, "AuthenticationFailed", None,
                       {"AuthenticationErrorDetail": "The authorization header is not in a supported format "
                                                     "('SharedKey' or 'SharedKeyLite' account:signature)."})
    if name != account.name:
        raise ApiError(403, "AuthenticationFailed", None,
                       {"AuthenticationErrorDetail": f"The account '{name}' in the Authorization header does "
                                                     "not match the account of the request URI."})
    if not sharedkey.verify(request, account, service, scheme, signature):
        raise ApiError(403, "AuthenticationFailed", None,
                       {"AuthenticationErrorDetail": "The MAC signature found in the HTTP request is not the "
                                                     "same as any computed signature."})

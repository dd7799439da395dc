"""The downstream ledger as the worker calls it: `POST <LEDGER_URL>` with
`Idempotency-Key: <jobId>:<operation>`.

2xx is success (a repeated key returns the entry recorded the first time); 408/429/500/502/503/
504, timeouts and disconnects are transient; other 4xx are business refusals (422: the key was
used with another body). A 2xx answer must be the entry this call asked for (same key, same
body): an entry recorded by someone else under a predictable key is refused, never taken as
the job's result.

Credentials (`LedgerCredentials`) are sent on every call: a function key (`x-functions-key`)
and, when the pipeline verifies HS256 tokens, a short-lived token of the pipeline's own service
principal for the job's tenant, with the `Ledger.Write` app role that the stand-in requires.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import jwt

TRANSIENT_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class TransientError(Exception):
    """Worth retrying later: the downstream is busy, down or unreachable."""


class LedgerRefused(Exception):
    """The ledger refused the entry for a business reason (retrying will not help)."""


SERVICE_PRINCIPAL = "importjobs-worker"  # the pipeline itself, as the ledger sees it
LEDGER_WRITE_ROLE = "Ledger.Write"  # the app role the stand-in requires to record entries
SERVICE_TOKEN_SECONDS = 300


class LedgerCredentials:
    """Headers for a call on behalf of a tenant's job. `function_key` is read on each call
    (the host's key store may be ready only after the pipeline); tokens are reused per tenant
    until a minute before they expire."""

    def __init__(self, function_key: Callable[[], str | None], signing_secret: str | None = None, *,
                 audience: str | None = None, issuer: str | None = None) -> None:
        self._function_key = function_key
        self._secret = signing_secret
        self._audience, self._issuer = audience, issuer
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def headers(self, tenant_id: str) -> dict[str, str]:
        headers = {}
        key = self._function_key()
        if key:
            headers["x-functions-key"] = key
        if self._secret:
            headers["Authorization"] = f"Bearer {self._token(tenant_id)}"
        return headers

    def _token(self, tenant_id: str) -> str:
        now = time.time()
        with self._lock:
            cached = self._tokens.get(tenant_id)
            if cached is not None and cached[1] - now > 60:
                return cached[0]
        expires = now + SERVICE_TOKEN_SECONDS
        claims: dict[str, Any] = {"tid": tenant_id, "oid": SERVICE_PRINCIPAL, "roles": [LEDGER_WRITE_ROLE],
                                  "iat": int(now), "exp": int(expires)}
        if self._audience:
            claims["aud"] = self._audience
        if self._issuer:
            claims["iss"] = self._issuer
        token = jwt.encode(claims, self._secret, algorithm="HS256")
        with self._lock:
            self._tokens[tenant_id] = (token, expires)
        return token


class LedgerClient:
    def __init__(self, url: str, timeout: float, transport: httpx.AsyncBaseTransport | None = None,
                 credentials: LedgerCredentials | None = None) -> None:
        self.url = url
        self._url = httpx.URL(url)  # parsed once, not per call
        self._client = httpx.AsyncClient(timeout=timeout, transport=transport)
        self._credentials = credentials

    async def post(self, entry: dict[str, Any], idempotency_key: str) -> dict[str, Any]:
        headers = {"Idempotency-Key": idempotency_key}
        if self._credentials is not None:
            headers.update(self._credentials.headers(str(entry.get("tenantId") or "")))
        try:
            response = await self._client.post(self._url, json=entry, headers=headers)
        except httpx.TimeoutException as exc:
            raise TransientError(f"ledger timeout ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise TransientError(f"ledger unreachable ({type(exc).__name__})") from None
        if response.status_code in TRANSIENT_STATUS:
            raise TransientError(f"ledger answered {response.status_code}")
        if response.status_code >= 400:
            raise LedgerRefused(f"ledger refused the entry ({response.status_code}): {response.text[:200]}")
        try:
            result = response.json()
        except ValueError:
            raise TransientError(f"ledger answered {response.status_code} without JSON") from None
        if not isinstance(result, dict) or result.get("idempotencyKey", idempotency_key) != idempotency_key \
                or result.get("entry", entry) != entry:
            raise LedgerRefused("the ledger answered with an entry that is not this job's (another key or body)")
        return result

    async def aclose(self) -> None:
        await self._client.aclose()

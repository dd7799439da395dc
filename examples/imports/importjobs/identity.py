"""Who is calling: a verified principal, never a client-chosen header or body field.

Two modes (`IMPORTS_AUTH`):
- `jwt` (default): `Authorization: Bearer <token>` verified with PyJWT, HS256 with
  `IMPORTS_JWT_SECRET`, or RS256/ES256 with the keys of a JWKS file (`IMPORTS_JWKS_FILE`).
  Expiry is enforced; audience and issuer when configured.
- `easyauth`: `X-MS-CLIENT-PRINCIPAL` (base64 JSON with `claims: [{typ, val}]`) as App Service
  authentication sets it. SAFE ONLY behind a front end that strips this header from client
  requests and sets it itself (App Service Easy Auth does); anywhere else a client could forge it.

Tenant comes from the `tid` claim, the user from `oid`, else `sub`.

`VerifiedTokens` remembers successful verifications keyed by the exact token string, so a
client repeating its token skips the signature check; `exp` / `nbf` are checked again on every
use (against the same wall clock PyJWT checks them with), an entry lives at most
`ttl_seconds` (a key removed from the JWKS file stops being honoured within that time), and a
failed verification is never remembered.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jwt

from importjobs.settings import PipelineSettings

TENANT_CLAIMS = ("tid", "http://schemas.microsoft.com/identity/claims/tenantid")
USER_CLAIMS = ("oid", "http://schemas.microsoft.com/identity/claims/objectidentifier", "sub")


class Unauthorized(Exception):
    """No verifiable principal (401). The message is safe to return: it never echoes a token."""


@dataclass(frozen=True)
class Principal:
    tenant_id: str
    user_id: str


def _wall_clock() -> float:
    """Seconds since the epoch, as PyJWT reads them to check `exp` / `nbf` (not a delay)."""
    return datetime.now(tz=UTC).timestamp()


class VerifiedTokens:
    """Successfully verified tokens -> principal, bounded; see the module docstring."""

    def __init__(self, max_entries: int = 1024, ttl_seconds: float = 60.0,
                 now: Callable[[], float] = _wall_clock) -> None:
        self.max_entries = max_entries
        self.ttl_seconds = ttl_seconds
        self._now = now
        self._entries: dict[str, tuple[Principal, float, float | None, float]] = {}
        self._lock = threading.Lock()

    def get(self, token: str) -> Principal | None:
        entry = self._entries.get(token)
        if entry is None:
            return None
        principal, expires, not_before, until = entry
        now = self._now()
        # PyJWT (no leeway): valid while now < exp and nbf <= now
        if now >= expires or now >= until or (not_before is not None and now < not_before):
            with self._lock:
                self._entries.pop(token, None)
            return None
        return principal

    def put(self, token: str, principal: Principal, claims: Mapping[str, Any]) -> None:
        try:
            expires = float(claims["exp"])
            not_before = float(claims["nbf"]) if claims.get("nbf") is not None else None
        except (KeyError, TypeError, ValueError):
            return  # nothing to re-check at use time: never remembered
        if self.max_entries <= 0:
            return
        with self._lock:
            if len(self._entries) >= self.max_entries:
                self._entries.pop(next(iter(self._entries)))  # the oldest entry
            self._entries[token] = (principal, expires, not_before, self._now() + self.ttl_seconds)

    def __len__(self) -> int:
        return len(self._entries)


def authenticate(headers: Mapping[str, str], settings: PipelineSettings,
                 tokens: VerifiedTokens | None = None) -> Principal:
    """The caller's principal. `tokens` (one per settings object) skips re-verifying a token
    seen before while it is still within its `exp` / `nbf` window."""
    if settings.auth_mode == "easyauth":
        return _from_client_principal(headers.get("x-ms-client-principal"))
    return _from_bearer(headers.get("authorization"), settings, tokens)


def principal_from_claims(claims: Mapping[str, Any]) -> Principal:
    tenant = _first(claims, TENANT_CLAIMS)
    user = _first(claims, USER_CLAIMS)
    if not tenant or not user:
        raise Unauthorized("the token has no tenant (tid) or user (oid/sub) claim")
    return Principal(tenant, user)


def _first(claims: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = claims.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _from_bearer(header: str | None, settings: PipelineSettings, tokens: VerifiedTokens | None) -> Principal:
    if not header:
        raise Unauthorized("missing Authorization: Bearer token")
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    if tokens is not None:
        known = tokens.get(token)
        if known is not None:
            return known
    key, algorithms = _verification_key(token, settings)
    options = {"require": ["exp"], "verify_aud": settings.jwt_audience is not None}
    try:
        claims = jwt.decode(token, key, algorithms=algorithms, audience=settings.jwt_audience,
                            issuer=settings.jwt_issuer, options=options)  # type: ignore[arg-type]
    except jwt.PyJWTError as exc:
        raise Unauthorized(f"invalid token: {type(exc).__name__}") from None
    principal = principal_from_claims(claims)
    if tokens is not None:
        tokens.put(token, principal, claims)
    return principal


def _verification_key(token: str, settings: PipelineSettings) -> tuple[Any, list[str]]:
    if settings.jwks_file:
        try:
            header = jwt.get_unverified_header(token)
            with open(settings.jwks_file, encoding="utf-8") as fh:
                jwks = jwt.PyJWKSet.from_dict(json.load(fh))
        except (jwt.PyJWTError, OSError, ValueError) as exc:
            raise Unauthorized(f"invalid token: {type(exc).__name__}") from None
        kid = header.get("kid")
        for jwk in jwks.keys:
            if kid is None or jwk.key_id == kid:
                return jwk.key, ["RS256", "ES256", "PS256"]
        raise Unauthorized("invalid token: unknown signing key")
    if settings.jwt_secret:
        return settings.jwt_secret, ["HS256"]
    raise Unauthorized("no token verification key is configured (IMPORTS_JWT_SECRET or IMPORTS_JWKS_FILE)")


def _from_client_principal(header: str | None) -> Principal:
    if not header:
        raise Unauthorized("missing X-MS-CLIENT-PRINCIPAL")
    try:
        decoded = json.loads(base64.b64decode(header, validate=False).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Unauthorized("X-MS-CLIENT-PRINCIPAL is not base64 JSON") from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("claims"), list):
        raise Unauthorized("X-MS-CLIENT-PRINCIPAL has no claims")
    claims: dict[str, Any] = {}
    for claim in decoded["claims"]:
        if isinstance(claim, dict) and isinstance(claim.get("typ"), str):
            claims.setdefault(claim["typ"], claim.get("val"))
    return principal_from_claims(claims)

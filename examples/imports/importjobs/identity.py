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
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jwt

from importjobs import jsontext
from importjobs.settings import PipelineSettings

TENANT_CLAIMS = ("tid", "http://schemas.microsoft.com/identity/claims/tenantid")
USER_CLAIMS = ("oid", "http://schemas.microsoft.com/identity/claims/objectidentifier", "sub")
ROLES_CLAIM = "roles"  # Microsoft Entra ID: the app roles assigned to the caller
# Algorithms a JWKS key may verify, by key type and curve: a token whose header names another
# algorithm is refused (401) before PyJWT is asked to verify it with an unfitting key.
ALGORITHMS_BY_KEY = {"RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"),
                     "EC:P-256": ("ES256",), "EC:P-384": ("ES384",), "EC:P-521": ("ES512",),
                     "OKP:Ed25519": ("EdDSA",)}


class Unauthorized(Exception):
    """No verifiable principal (401). The message is safe to return: it never echoes a token."""


@dataclass(frozen=True)
class Principal:
    tenant_id: str
    user_id: str
    roles: frozenset[str] = field(default=frozenset(), compare=False)  # app roles (`roles` claim)


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
    raw_roles = claims.get(ROLES_CLAIM)
    roles = [raw_roles] if isinstance(raw_roles, str) else raw_roles if isinstance(raw_roles, list) else []
    return Principal(tenant, user, frozenset(r for r in roles if isinstance(r, str)))


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
        return _jwks_key(token, settings.jwks_file)
    if settings.jwt_secret:
        return settings.jwt_secret, ["HS256"]
    raise Unauthorized("no token verification key is configured (IMPORTS_JWT_SECRET or IMPORTS_JWKS_FILE)")


def _jwks_key(token: str, jwks_file: str) -> tuple[Any, list[str]]:
    """The JWKS key named by the token's `kid` (or the first that fits), and the token's `alg`
    only if that key can verify it: an ES256 token against an RSA key is a 401, not a crash."""
    try:
        header = jwt.get_unverified_header(token)
        with open(jwks_file, encoding="utf-8") as fh:
            document = json.load(fh)
    except (jwt.PyJWTError, OSError, ValueError) as exc:
        raise Unauthorized(f"invalid token: {type(exc).__name__}") from None
    kid, alg = header.get("kid"), header.get("alg")
    entries = document.get("keys") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or (kid is not None and entry.get("kid") != kid):
            continue
        if alg not in _algorithms_for(entry):
            if kid is not None:
                raise Unauthorized("invalid token: its algorithm does not fit the signing key")
            continue
        try:
            return jwt.PyJWK(entry, algorithm=alg).key, [alg]
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            raise Unauthorized("invalid token: the signing key in the JWKS is unusable") from None
    raise Unauthorized("invalid token: unknown signing key")


def _algorithms_for(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """What a JWK may verify: its own `alg` when the JWKS names one, else its key type's family."""
    declared = entry.get("alg")
    if isinstance(declared, str):
        return (declared,)
    kty, curve = entry.get("kty"), entry.get("crv")
    return ALGORITHMS_BY_KEY.get(f"{kty}:{curve}" if curve else str(kty), ())


def _from_client_principal(header: str | None) -> Principal:
    if not header:
        raise Unauthorized("missing X-MS-CLIENT-PRINCIPAL")
    try:
        decoded = jsontext.parse(base64.b64decode(header, validate=False).decode("utf-8"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise Unauthorized("X-MS-CLIENT-PRINCIPAL is not base64 JSON") from None
    if not isinstance(decoded, dict) or not isinstance(decoded.get("claims"), list):
        raise Unauthorized("X-MS-CLIENT-PRINCIPAL has no claims")
    claims: dict[str, Any] = {}
    roles: list[Any] = []
    for claim in decoded["claims"]:
        if isinstance(claim, dict) and isinstance(claim.get("typ"), str):
            if claim["typ"] == ROLES_CLAIM:  # one claim per role in Easy Auth's principal
                roles.append(claim.get("val"))
            claims.setdefault(claim["typ"], claim.get("val"))
    return principal_from_claims({**claims, ROLES_CLAIM: roles})

"""Settings of the import pipeline, read once from app settings (environment variables).

Every value has a named default, so the app starts with an empty configuration; a malformed
number is an error naming the setting.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass

STORAGE_CONNECTION = "ImportsStorage"  # the work queues and blobs; never AzureWebJobsStorage
IMPORT_QUEUE = "import-jobs"
OCR_QUEUE = "ocr-jobs"
INVALID_EVENT_QUEUE = "invalid-events"
ENDPOINT = "POST /api/imports"
MAX_BODY_BYTES = 32 * 1024


# Secrets published with this app (local.settings.json, earlier demo scripts): anyone can sign
# tokens with them, so they are refused unless the demo setting says this is the demo.
DEMO_JWT_SECRETS = frozenset({"demo-only-secret-change-me-0123456789", "demo-only-jwt-secret-0123456789abcdef"})
DEMO_SETTING = "IMPORTS_DEMO"
MIN_JWT_SECRET_BYTES = 32  # RFC 7518 3.2: an HS256 key at least as long as the hash output


class SettingError(ValueError):
    """An app setting has a value the pipeline cannot use."""


def check_jwt_secret(secret: str | None, *, demo: bool) -> None:
    """Refuse an HS256 secret anyone may know (published demo value) or guess (too short)."""
    if secret is None:
        return
    if secret in DEMO_JWT_SECRETS and not demo:
        raise SettingError(f"IMPORTS_JWT_SECRET is the demo secret published with this app: anyone could sign "
                           f"tokens with it. Set a secret of your own (at least {MIN_JWT_SECRET_BYTES} random bytes) "
                           f"or IMPORTS_JWKS_FILE; to run the demo with it, set {DEMO_SETTING}=true")
    if secret in DEMO_JWT_SECRETS:
        logging.getLogger("importjobs").warning(
            "%s=true: tokens signed with the published demo secret are accepted; never outside the demo", DEMO_SETTING)
    if len(secret.encode("utf-8")) < MIN_JWT_SECRET_BYTES:
        raise SettingError(f"IMPORTS_JWT_SECRET is shorter than {MIN_JWT_SECRET_BYTES} bytes (RFC 7518 3.2 "
                           "requires an HS256 key at least as long as the hash)")


@dataclass(frozen=True)
class PipelineSettings:
    auth_mode: str = "jwt"  # "jwt" | "easyauth"
    jwt_secret: str | None = None
    jwks_file: str | None = None
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    database: str | None = None  # path or postgresql:// DSN; None = data folder default
    storage_connection: str = STORAGE_CONNECTION
    storage_account: str | None = None  # None = the account of `storage_connection`
    allowed_containers: tuple[str, ...] = ("imports",)
    max_blob_bytes: int = 50 * 1024 * 1024
    allowed_content_types: tuple[str, ...] = ("text/csv", "text/plain", "application/pdf",
                                              "application/octet-stream")
    output_container: str = "ocr-output"
    quarantine_container: str = "quarantine"
    ledger_url: str | None = None  # None = this app's own /api/ledger/entries
    ledger_function_key: str | None = None  # x-functions-key sent to the ledger (default: the stand-in's own)
    ledger_timeout: float = 10.0
    lease_seconds: float = 60.0
    intake_wait_seconds: float = 2.0  # an HTTP request's wait for the jobs DB write lock before 503
    dispatch_interval: float = 10.0
    dispatch_lease_seconds: float = 120.0  # how long a dead dispatcher's leased rows wait to be re-sent
    watchdog_stuck_seconds: float = 120.0
    function_version: str = "1.0.0"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> PipelineSettings:
        env = os.environ if environ is None else environ

        def text(name: str) -> str | None:
            value = env.get(name, "").strip()
            return value or None

        def number(name: str, default: float) -> float:
            raw = text(name)
            if raw is None:
                return default
            try:
                value = float(raw)
            except ValueError:
                raise SettingError(f"{name} must be a number, got {raw!r}") from None
            if value <= 0:
                raise SettingError(f"{name} must be positive, got {raw!r}")
            return value

        def items(name: str, default: tuple[str, ...]) -> tuple[str, ...]:
            raw = text(name)
            return tuple(p.strip() for p in raw.split(",") if p.strip()) if raw else default

        mode = (text("IMPORTS_AUTH") or "jwt").lower()
        if mode not in ("jwt", "easyauth"):
            raise SettingError(f"IMPORTS_AUTH must be 'jwt' or 'easyauth', got {mode!r}")
        check_jwt_secret(text("IMPORTS_JWT_SECRET"), demo=(text(DEMO_SETTING) or "").lower() == "true")
        defaults = cls()
        return cls(
            auth_mode=mode,
            jwt_secret=text("IMPORTS_JWT_SECRET"),
            jwks_file=text("IMPORTS_JWKS_FILE"),
            jwt_audience=text("IMPORTS_JWT_AUDIENCE"),
            jwt_issuer=text("IMPORTS_JWT_ISSUER"),
            database=text("IMPORTS_DB"),
            storage_connection=text("IMPORTS_STORAGE_CONNECTION") or STORAGE_CONNECTION,
            storage_account=text("IMPORTS_STORAGE_ACCOUNT"),
            allowed_containers=items("IMPORTS_ALLOWED_CONTAINERS", defaults.allowed_containers),
            max_blob_bytes=int(number("IMPORTS_MAX_BLOB_BYTES", defaults.max_blob_bytes)),
            allowed_content_types=items("IMPORTS_ALLOWED_CONTENT_TYPES", defaults.allowed_content_types),
            output_container=text("IMPORTS_OUTPUT_CONTAINER") or defaults.output_container,
            quarantine_container=text("IMPORTS_QUARANTINE_CONTAINER") or defaults.quarantine_container,
            ledger_url=text("LEDGER_URL"),
            ledger_function_key=text("LEDGER_FUNCTION_KEY"),
            ledger_timeout=number("LEDGER_TIMEOUT_SECONDS", defaults.ledger_timeout),
            lease_seconds=number("IMPORTS_LEASE_SECONDS", defaults.lease_seconds),
            intake_wait_seconds=number("IMPORTS_INTAKE_WAIT_SECONDS", defaults.intake_wait_seconds),
            dispatch_interval=number("IMPORTS_DISPATCH_INTERVAL_SECONDS", defaults.dispatch_interval),
            dispatch_lease_seconds=number("IMPORTS_DISPATCH_LEASE_SECONDS", defaults.dispatch_lease_seconds),
            watchdog_stuck_seconds=number("IMPORTS_WATCHDOG_STUCK_SECONDS", defaults.watchdog_stuck_seconds),
            function_version=text("IMPORTS_FUNCTION_VERSION") or defaults.function_version,
        )

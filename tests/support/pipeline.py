"""Helpers of the pipeline tests: the reference app in the in-process host, tokens, uploads."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import jwt

from funchost.reliability import JobStore
from funchost.testing import HostHarness

APP_DIR = Path(__file__).resolve().parents[2] / "examples" / "imports"
SECRET = "test-secret-for-the-pipeline-0123456789"
CONNECTION = "ImportsStorage"
CSV_OK = b"customerId,amount,currency\nC001,10.50,EUR\nC002,5,EUR\n"
CSV_BAD = b"customerId,amount\nC001,ten\nZ999,3\n"

if str(APP_DIR) not in sys.path:
    sys.path.insert(0, str(APP_DIR))

from sample_files import tiny_pdf  # noqa: E402,F401  (the demo's sample PDF)


def token(tenant: str = "tenant-a", user: str = "user-1", *, secret: str = SECRET, lifetime: int = 3600,
          **claims: Any) -> str:
    body = {"tid": tenant, "oid": user, "exp": int(time.time()) + lifetime, **claims}
    return jwt.encode(body, secret, algorithm="HS256")


def auth(tenant: str = "tenant-a", user: str = "user-1") -> dict[str, str]:
    return {"Authorization": f"Bearer {token(tenant, user)}"}


def settings(**extra: str) -> dict[str, str]:
    values = {"IMPORTS_JWT_SECRET": SECRET, "IMPORTS_AUTH": "jwt", "LEDGER_URL": "",
              "IMPORTS_LEASE_SECONDS": "60", "IMPORTS_DB": "", "IMPORTS_DB_SCHEMA": ""}
    values.update(extra)
    return values


class Pipeline:
    """The reference app running in a `HostHarness`, with the calls a test needs."""

    def __init__(self, host: HostHarness) -> None:
        self.host = host

    @property
    def app(self) -> Any:
        return sys.modules["function_app"].pipeline

    @property
    def context(self) -> Any:
        return self.app.get()

    @property
    def store(self) -> JobStore:
        return self.context.store  # type: ignore[no-any-return]

    async def start(self) -> Pipeline:
        # create the app's long-lived objects on the host loop, as the first function call would
        self.app.get()
        return self

    def blobs(self) -> Any:
        return self.host.runtime.storage.blobs(CONNECTION)

    async def upload(self, name: str, data: bytes = CSV_OK, *, container: str = "imports",
                     content_type: str = "text/csv") -> Any:
        service = self.blobs()
        await service.create_container(container, exist_ok=True)
        return await service.upload_blob(container, name, data, content_type=content_type)

    async def submit(self, body: Any, *, key: str | None = "key-1", tenant: str = "tenant-a", user: str = "user-1",
                     headers: dict[str, str] | None = None, raw: bytes | None = None) -> httpx.Response:
        sent = {**auth(tenant, user), **(headers or {})}
        if key is not None:
            sent["Idempotency-Key"] = key
        content = raw if raw is not None else json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
        return await self.host.http("POST", "/api/imports", key="master", content=content, headers=sent)

    async def status(self, job_id: str, *, tenant: str = "tenant-a", user: str = "user-1") -> httpx.Response:
        return await self.host.http("GET", f"/api/imports/{job_id}", key="master", headers=auth(tenant, user))

    async def state(self, job_id: str) -> str | None:
        job = self.store.jobs.get(job_id)
        return job.state.value if job else None

    async def settle(self, seconds: float = 0.0) -> None:
        await self.host.wait_until_idle()
        if seconds:
            await self.host.advance(seconds)
            await self.host.wait_until_idle()

    async def ledger(self, tenant: str = "tenant-a") -> list[dict[str, Any]]:
        """The ledger stand-in's entries of `tenant` (its API is tenant-scoped)."""
        response = await self.host.http("GET", "/api/ledger/entries", key="master", headers=auth(tenant, "auditor"))
        assert response.status_code == 200, response.text
        return response.json()["entries"]  # type: ignore[no-any-return]

    async def close(self) -> None:
        await self.app.aclose()



"""The ledger stand-in's API (`POST` / `GET /api/ledger/entries`), protected like every other
function of the app: a function key (authLevel function), a verified principal (401 without),
and the caller's tenant only.

- `POST`: records an entry. Only a principal with the `Ledger.Write` app role may (the
  pipeline's own service principal; a tenant's users get 403); the body is a JSON object of at
  most 16 KiB whose `tenantId`, if any, is the caller's tenant; `Idempotency-Key` is required
  (at most 255 characters). Idempotency keys are the caller's own (see `ledgerbook`): the same
  key and body answer the first entry (200), another body is 422.
- `GET`: the entries of the caller's tenant.
"""

from __future__ import annotations

from typing import Any

import azure.functions as func

from importjobs import jsontext
from importjobs.api import json_response
from importjobs.context import Pipeline
from importjobs.identity import Principal, Unauthorized, authenticate
from importjobs.ledger import LEDGER_WRITE_ROLE
from importjobs.ledgerbook import Caller, KeyReused

MAX_ENTRY_BYTES = 16 * 1024
MAX_KEY_LENGTH = 255


class Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def post_entry(req: func.HttpRequest, pipeline: Pipeline) -> func.HttpResponse:
    try:
        principal = _principal(req, pipeline)
        if LEDGER_WRITE_ROLE not in principal.roles:
            raise Refused(403, f"recording ledger entries needs the {LEDGER_WRITE_ROLE} role")
        key = _idempotency_key(req)
        body = _entry_body(req, principal)
        book = pipeline.book
        entry, created = await pipeline.db(book.record, Caller(principal.tenant_id, principal.user_id), key, body)
    except Refused as refused:
        return _refusal(refused)
    except KeyReused as exc:
        return json_response(422, {"error": str(exc)})
    return json_response(201 if created else 200, entry)


async def list_entries(req: func.HttpRequest, pipeline: Pipeline) -> func.HttpResponse:
    try:
        principal = _principal(req, pipeline)
    except Refused as refused:
        return _refusal(refused)
    entries = await pipeline.db(pipeline.book.entries, principal.tenant_id)
    return json_response(200, {"entries": entries})


def _principal(req: func.HttpRequest, pipeline: Pipeline) -> Principal:
    try:
        return authenticate(req.headers, pipeline.settings, pipeline.tokens)
    except Unauthorized as exc:
        raise Refused(401, str(exc)) from None


def _idempotency_key(req: func.HttpRequest) -> str:
    key = (req.headers.get("idempotency-key") or "").strip()
    if not key:
        raise Refused(400, "Idempotency-Key header is required")
    if len(key) > MAX_KEY_LENGTH:
        raise Refused(400, f"Idempotency-Key is longer than {MAX_KEY_LENGTH} characters")
    return key


def _entry_body(req: func.HttpRequest, principal: Principal) -> dict[str, Any]:
    declared = (req.headers.get("content-length") or "").strip()
    raw = req.get_body()
    if (declared.isdigit() and int(declared) > MAX_ENTRY_BYTES) or len(raw) > MAX_ENTRY_BYTES:
        raise Refused(413, f"a ledger entry is at most {MAX_ENTRY_BYTES} bytes")
    try:
        body = jsontext.parse(raw.decode("utf-8"))
    except jsontext.TooDeep as exc:
        raise Refused(400, f"invalid JSON: {exc}") from None
    except (UnicodeDecodeError, ValueError):
        raise Refused(400, "invalid JSON") from None
    if not isinstance(body, dict):
        raise Refused(400, "a ledger entry is a JSON object")
    if body.get("tenantId", principal.tenant_id) != principal.tenant_id:
        raise Refused(403, "an entry of another tenant")
    return body


def _refusal(refused: Refused) -> func.HttpResponse:
    headers = {"WWW-Authenticate": "Bearer"} if refused.status == 401 else None
    return json_response(refused.status, {"error": str(refused)}, headers)

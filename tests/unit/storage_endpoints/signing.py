"""Shared Key signing for raw HTTP requests in tests (what the SDKs do), so malformed bodies and
headers can be sent with a valid signature."""

from __future__ import annotations

import base64
import hashlib
import hmac
from email.utils import formatdate
from urllib.parse import unquote, urlsplit

from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY

STANDARD = ("content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
            "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range")


def signed_headers(method: str, url: str, body: bytes, service: str,
                   extra: dict[str, str] | None = None) -> dict[str, str]:
    headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": "2026-02-06", **(extra or {})}
    if body:
        headers["Content-Length"] = str(len(body))
    lower = {k.lower(): v for k, v in headers.items()}
    parts = urlsplit(url)
    key = base64.b64decode(DEVSTORE_KEY)
    if service == "table":
        text = f"{method}\n{lower.get('content-md5', '')}\n{lower.get('content-type', '')}\n{lower['x-ms-date']}\n" \
               f"/{DEVSTORE_ACCOUNT}{parts.path}"
    else:
        standard = "\n".join("" if (n == "content-length" and lower.get(n) == "0") else lower.get(n, "")
                             for n in STANDARD)
        canonical = "".join(f"{n}:{lower[n]}\n" for n in sorted(k for k in lower if k.startswith("x-ms-")))
        query = sorted((p.split("=", 1)[0].lower(), unquote(p.split("=", 1)[1] if "=" in p else ""))
                       for p in parts.query.split("&") if p)
        resource = f"/{DEVSTORE_ACCOUNT}{parts.path}" + "".join(f"\n{n}:{v}" for n, v in query)
        text = f"{method}\n{standard}\n{canonical}{resource}"
    signature = base64.b64encode(hmac.new(key, text.encode(), hashlib.sha256).digest()).decode()
    headers["Authorization"] = f"SharedKey {DEVSTORE_ACCOUNT}:{signature}"
    return headers

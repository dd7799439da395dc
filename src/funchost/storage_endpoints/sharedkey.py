"""Shared Key and Shared Key Lite signatures, as the service verifies them.

https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key

* Blob / Queue `SharedKey`: VERB, the eleven standard headers (Content-Length empty when 0), the
  `x-ms-*` headers sorted, then `/account/raw-path` and every query parameter as `\\nname:value`.
* Blob / Queue `SharedKeyLite`: VERB, Content-MD5, Content-Type, Date, the `x-ms-*` headers and
  `/account/raw-path` plus `?comp=` only.
* Table `SharedKey`: VERB, Content-MD5, Content-Type, Date (x-ms-date when sent) and the resource
  with `?comp=` only; Table `SharedKeyLite`: Date and that resource.

The path is the one sent, still percent-encoded; path-style URLs therefore sign the account
twice (`/devstoreaccount1/devstoreaccount1/c1/b`). The clients sort `x-ms-*` headers with the
service's collation (hyphens ignored first, then `.` `_` digits letters) rather than by code
point; both orders are accepted, and so is an empty Range line (azure-storage-python signs
`x-ms-range` and leaves Range empty).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
from collections.abc import Iterator

from funchost.storage_endpoints.accounts import Account
from funchost.storage_endpoints.wire import StorageRequest

_STANDARD = ("content-encoding", "content-language", "content-length", "content-md5", "content-type", "date",
             "if-modified-since", "if-match", "if-none-match", "if-unmodified-since", "range")


@functools.lru_cache(maxsize=4096)
def _collation_key(name: str) -> tuple[tuple[int, ...], str]:
    """The service's header order: '-' ignored at the first level; '.' < '_' < digits < letters."""
    weights = []
    for char in name:
        if char == "-":
            continue
        if char == ".":
            weights.append(1)
        elif char == "_":
            weights.append(2)
        elif char.isdigit():
            weights.append(10 + ord(char) - 48)
        else:
            weights.append(100 + ord(char.lower()))
    return tuple(weights), name


def canonical_headers(request: StorageRequest, *, ordinal: bool) -> str:
    names = [n for n in request.headers if n.startswith("x-ms-")]
    names.sort(key=None if ordinal else _collation_key)
    return "".join(f"{n}:{request.headers[n]}\n" for n in names)


def canonical_resource(request: StorageRequest, account: str, *, all_query: bool) -> str:
    resource = f"/{account}{request.raw_path}"
    if all_query:
        grouped: dict[str, list[str]] = {}
        for name, value in request.raw_query:
            grouped.setdefault(name.lower(), []).append(value)
        for name in sorted(grouped):
            resource += f"\n{name}:{','.join(sorted(grouped[name]))}"
        return resource
    comp = request.query.get("comp")
    return resource + (f"?comp={comp}" if comp is not None else "")


def _standard_lines(request: StorageRequest, empty_range: bool) -> str:
    values = []
    for name in _STANDARD:
        value = request.headers.get(name, "")
        if name == "content-length" and value.strip() == "0":
            value = ""
        if name == "range" and empty_range:
            value = ""
        values.append(value)
    return "\n".join(values)


def strings_to_sign(request: StorageRequest, account: str, service: str, scheme: str) -> Iterator[str]:
    """Every string a correct client may have signed for this request (usually one or two)."""
    verb = request.method
    headers = request.headers
    if service == "table":
        resource = canonical_resource(request, account, all_query=False)
        for date in dict.fromkeys((headers.get("x-ms-date", ""), headers.get("date", ""))):
            if scheme == "SharedKeyLite":
                yield f"{date}\n{resource}"
            else:
                yield f"{verb}\n{headers.get('content-md5', '')}\n{headers.get('content-type', '')}\n{date}\n{resource}"
        return
    if scheme == "SharedKeyLite":
        resource = canonical_resource(request, account, all_query=False)
        prefix = f"{verb}\n{headers.get('content-md5', '')}\n{headers.get('content-type', '')}\n{headers.get('date', '')}\n"
        for ordinal in (False, True):
            yield prefix + canonical_headers(request, ordinal=ordinal) + resource
        return
    resource = canonical_resource(request, account, all_query=True)
    ranges = (False, True) if headers.get("range") else (False,)
    for empty_range in ranges:
        standard = f"{verb}\n{_standard_lines(request, empty_range)}\n"
        for ordinal in (False, True):
            yield standard + canonical_headers(request, ordinal=ordinal) + resource


def sign(key: bytes, text: str) -> str:
    return base64.b64encode(hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()).decode("ascii")


def verify(request: StorageRequest, account: Account, service: str, scheme: str, signature: str) -> bool:
    try:
        given = base64.b64decode(signature, validate=True)
    except ValueError:
        return False
    for text in strings_to_sign(request, account.name, service, scheme):
        for key in account.keys:
            digest = hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()
            if hmac.compare_digest(digest, given):
                return True
    return False

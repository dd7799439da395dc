"""Canonical JSON and request hashes.

The idempotency request hash must not change when a client reorders properties, adds
whitespace, or sends `null` instead of leaving a property out. The hash is therefore computed
from the *validated DTO*, never from the raw body: unknown properties never reach the DTO, so
they are excluded from the hash by construction.

Rules of the canonical form:
- keys sorted by code point at every level, no insignificant whitespace, UTF-8, non-ASCII kept;
- key casing is fixed by the DTO (camelCase, as the web defaults of System.Text.Json);
- a key whose value is `None` is dropped, so `null` and "omitted" hash the same;
- integers stay integers; floats use Python's shortest repr; NaN/Infinity are refused;
- a string holding a lone surrogate (JSON ``"\\ud800"``) is refused: it is not Unicode text and
  has no UTF-8 form (System.Text.Json refuses to read it too).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any


def sha256_hex(value: str | bytes) -> str:
    """Lowercase hex SHA-256 of a string (UTF-8) or bytes.

    Total over Python strings: a lone surrogate is hashed as its UTF-16 code unit's 3-byte form
    (``surrogatepass``), so hashing never fails on text a client made up."""
    data = value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value
    return hashlib.sha256(data).hexdigest()


def check_text(value: Any, where: str = "value") -> None:
    """ValueError if a string in `value` (keys included, at any depth) holds a lone surrogate."""
    if isinstance(value, str):
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(value[exc.start])
                raise ValueError(f"{where} holds a lone surrogate (U+{code:04X}), which is not valid "
                                 "Unicode text") from None
    elif isinstance(value, Mapping):
        for key, item in value.items():
            check_text(key, where)
            check_text(item, f"{where}.{key}" if isinstance(key, str) and key.isascii() else where)
    elif isinstance(value, list | tuple):
        for item in value:
            check_text(item, where)


def _drop_nulls(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_drop_nulls(v) for v in value]
    return value


def canonical_json(dto: Mapping[str, Any] | Any) -> str:
    """The canonical JSON text of a validated DTO (a mapping or a dataclass instance)."""
    if is_dataclass(dto) and not isinstance(dto, type):
        dto = asdict(dto)
    if not isinstance(dto, Mapping):
        raise TypeError("canonical_json needs a mapping or a dataclass instance")
    check_text(dto, "the request")
    return json.dumps(
        _drop_nulls(dto), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def request_hash(dto: Mapping[str, Any] | Any) -> str:
    """sha256 of the canonical JSON of the validated DTO."""
    return sha256_hex(canonical_json(dto))


def select_fields(body: Mapping[str, Any], fields: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """Keep only the declared `fields` of a parsed JSON object, with the declared casing.

    Property names match case-insensitively (the web defaults of System.Text.Json), so
    `BlobName` and `blobName` land in the same DTO field; unknown properties are dropped and thus
    never reach the hash. Two properties that differ only in case are ambiguous: ValueError; so
    is a kept value holding a lone surrogate (`check_text`).
    """
    wanted = {name.lower(): name for name in fields}
    out: dict[str, Any] = {}
    for key, value in body.items():
        name = wanted.get(str(key).lower())
        if name is None:
            continue
        if name in out:
            raise ValueError(f"property '{name}' is given more than once (differing only in case)")
        check_text(value, f"property '{name}'")
        out[name] = value
    return out

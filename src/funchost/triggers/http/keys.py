"""Host and function keys, and what level a presented key grants (azure-semantics 3.4).

Keys are created at the first start and kept as JSON under ``<data_dir>/keys/`` (mode 0600), in
the shape the Functions host uses for file-based secrets: ``host.json`` with the master key,
host function keys and system keys, and one ``<function>.json`` per function. With
``--storage postgres`` the same documents live in the server's secrets table
(`funchost.storage.secrets`), so hosts with separate data folders share one set of keys. Every comparison
of a presented key is constant time (`hmac.compare_digest`).
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from funchost.errors import ConfigError
from funchost.storage.secrets import FileSecrets, SecretStore

MASTER_KEY_SETTING = "FUNCHOST_MASTER_KEY"
DEFAULT_KEY_NAME = "default"
MASTER_KEY_NAME = "_master"
KEY_HEADER = "x-functions-key"
KEY_QUERY = "code"
_KEY_BYTES = 40
KEYS_FOLDER = "keys"
HOST_SECRET = f"{KEYS_FOLDER}/host.json"


class AuthLevel(IntEnum):
    ANONYMOUS = 0
    FUNCTION = 1
    SYSTEM = 2
    ADMIN = 3


@dataclass(frozen=True)
class KeyMatch:
    level: AuthLevel
    key_name: str | None = None


def new_key() -> str:
    return secrets.token_urlsafe(_KEY_BYTES)


def _equal(presented: str, stored: str) -> bool:
    return hmac.compare_digest(presented.encode("utf-8"), stored.encode("utf-8"))


def _create(secrets: SecretStore, name: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """Create the keys unless another host got there first; the stored keys either way, so
    hosts starting at the same moment (on one data folder or one server) agree on them."""
    return _parse(secrets.create(name, json.dumps(data, indent=2)), secrets, name)


def _entries(keys: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"name": name, "value": value, "encrypted": False} for name, value in keys.items()]


def _host_document(master: str, function_keys: Mapping[str, str], system_keys: Mapping[str, str]) -> dict[str, Any]:
    return {"masterKey": {"name": "master", "value": master, "encrypted": False},
            "functionKeys": _entries(function_keys), "systemKeys": _entries(system_keys), "source": "runtime"}


def _parse(text: str, secrets: SecretStore, name: str) -> dict[str, Any]:
    """A key document's JSON object; a damaged one is a configuration error naming it (no key values)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"not valid JSON ({type(exc).__name__}); fix or delete it to create new keys",
                          path=secrets.locate(name)) from None
    if not isinstance(data, dict):
        raise ConfigError("must be a JSON object; fix or delete it to create new keys", path=secrets.locate(name))
    return data


def _read(secrets: SecretStore, name: str) -> dict[str, Any] | None:
    try:
        text = secrets.read(name)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not valid JSON ({type(exc).__name__}); fix or delete it to create new keys",
                          path=secrets.locate(name)) from None
    return None if text is None else _parse(text, secrets, name)


def _read_entries(raw: Any) -> dict[str, str]:
    if not isinstance(raw, list):
        return {}
    return {str(e["name"]): str(e["value"]) for e in raw if isinstance(e, dict) and "name" in e and "value" in e}


class KeyStore:
    def __init__(
        self,
        secrets: SecretStore,
        master_key: str,
        host_function_keys: Mapping[str, str],
        system_keys: Mapping[str, str],
        function_keys: Mapping[str, Mapping[str, str]],
        *,
        master_overridden: bool = False,
        stored_master_key: str | None = None,
    ) -> None:
        self.secrets = secrets
        self.master_key = master_key
        self.host_function_keys = dict(host_function_keys)
        self.system_keys = dict(system_keys)
        # Function names are case-insensitive on Azure: stored by lower-cased name.
        self.function_keys = {name.lower(): dict(keys) for name, keys in function_keys.items()}
        self.master_overridden = master_overridden
        self._stored_master = stored_master_key or master_key

    # --- loading and persistence --------------------------------------------------------------

    @classmethod
    def load_or_create(cls, data_dir: Path, settings: Mapping[str, str] | Any,
                       function_names: Iterable[str], secret_store: SecretStore | None = None) -> KeyStore:
        """The keys kept in `secret_store` (default: the data folder's ``keys/`` files), created at the
        first start; `FUNCHOST_MASTER_KEY` wins over the stored master key without replacing it."""
        store_of = secret_store if secret_store is not None else FileSecrets(data_dir)
        host = _read(store_of, HOST_SECRET)
        if host is None:  # a host starting at the same moment may create it first: then its keys are used
            host = _create(store_of, HOST_SECRET, _host_document(new_key(), {DEFAULT_KEY_NAME: new_key()}, {}))
        master_entry = host.get("masterKey") or {}
        stored_master = master_entry.get("value") if isinstance(master_entry, dict) else None
        created = stored_master is None
        stored_master = stored_master or new_key()
        host_keys = _read_entries(host.get("functionKeys")) or {DEFAULT_KEY_NAME: new_key()}
        system_keys = _read_entries(host.get("systemKeys"))
        override = settings.get(MASTER_KEY_SETTING) if settings is not None else None
        store = cls(store_of, override or stored_master, host_keys, system_keys, {},
                    master_overridden=bool(override), stored_master_key=stored_master)
        if created or "functionKeys" not in host:
            store._save_host()
        for name in function_names:
            store.ensure_function(name)
        return store

    def _host_text(self) -> str:
        return json.dumps(_host_document(self._stored_master, self.host_function_keys, self.system_keys), indent=2)

    def _save_host(self) -> None:
        self.secrets.update(HOST_SECRET, lambda _: self._host_text())

    def ensure_function(self, name: str) -> dict[str, str]:
        """The function's keys, loaded from the store or created with a ``default`` key."""
        lowered = name.lower()
        if lowered in self.function_keys:
            return self.function_keys[lowered]
        secret = f"{KEYS_FOLDER}/{lowered}.json"
        stored = _read(self.secrets, secret)
        if stored is None:  # or the keys a host starting at the same moment created first
            stored = _create(self.secrets, secret, {"keys": _entries({DEFAULT_KEY_NAME: new_key()}), "source": "runtime"})
        keys = _read_entries(stored.get("keys"))
        if not keys:
            keys = {DEFAULT_KEY_NAME: new_key()}
            document = json.dumps({"keys": _entries(keys), "source": "runtime"}, indent=2)
            self.secrets.update(secret, lambda _: document)
        self.function_keys[lowered] = keys
        return keys

    def system_key(self, name: str) -> str:
        """A host system key (e.g. ``eventgrid_extension``), created on first request. Another host
        sharing the keys may have created it since this one started: then that one is used."""
        if name not in self.system_keys:

            def add(current: str | None) -> str:
                host = _parse(current, self.secrets, HOST_SECRET) if current else json.loads(self._host_text())
                stored = _read_entries(host.get("systemKeys"))
                if name not in stored:
                    stored[name] = new_key()
                host["systemKeys"] = _entries(stored)
                return json.dumps(host, indent=2)

            text = self.secrets.update(HOST_SECRET, add)
            stored = _read_entries(_parse(text, self.secrets, HOST_SECRET).get("systemKeys"))
            self.system_keys.update({k: v for k, v in stored.items() if k not in self.system_keys})
        return self.system_keys[name]

    # --- resolution ---------------------------------------------------------------------------

    def resolve(self, presented: str | None, function_name: str | None = None) -> KeyMatch:
        """The level a key grants, first match wins: master, system, host function, function key."""
        if not presented:
            return KeyMatch(AuthLevel.ANONYMOUS)
        if _equal(presented, self.master_key):
            return KeyMatch(AuthLevel.ADMIN, MASTER_KEY_NAME)
        for name, value in self.system_keys.items():
            if _equal(presented, value):
                return KeyMatch(AuthLevel.SYSTEM, name)
        for name, value in self.host_function_keys.items():
            if _equal(presented, value):
                return KeyMatch(AuthLevel.FUNCTION, name)
        if function_name is not None:
            for name, value in self.function_keys.get(function_name.lower(), {}).items():
                if _equal(presented, value):
                    return KeyMatch(AuthLevel.FUNCTION, name)
        return KeyMatch(AuthLevel.ANONYMOUS)

    def describe(self) -> list[str]:
        """Lines for the start-up banner: the keys a developer needs to call the app.

        A master key given through the app setting is not echoed back.
        """
        master = f"(from app setting {MASTER_KEY_SETTING})" if self.master_overridden else self.master_key
        lines = [f"Master key: {master}"]
        lines += [f"Host function key '{name}': {value}" for name, value in self.host_function_keys.items()]
        lines.append(f"Keys are stored in {self.secrets.locate(KEYS_FOLDER)}")
        return lines


def presented_key(headers: Mapping[str, str], query: Mapping[str, str]) -> str | None:
    """The ``x-functions-key`` header wins over the ``code`` query parameter, even when empty;
    the query name is case-insensitive."""
    if KEY_HEADER in headers:
        return headers[KEY_HEADER] or None
    code = next((value for name, value in query.items() if name.lower() == KEY_QUERY), None)
    return code or None


def authorized(required: str, match: KeyMatch, key_name: str | None = None) -> bool:
    """Whether a caller holding `match` may call something requiring level `required`.

    An Admin claim satisfies everything; otherwise the claim must equal the required level, so
    a system key does not satisfy ``function`` level. ``system`` level may also require a
    specific key name (extension webhooks: ``<extension>_extension``).
    """
    level = required.lower()
    if level == "anonymous":
        return True
    if match.level is AuthLevel.ADMIN:
        return True
    if level == "function":
        return match.level is AuthLevel.FUNCTION
    if level == "system":
        return match.level is AuthLevel.SYSTEM and (key_name is None or match.key_name == key_name)
    return False

"""The storage accounts the endpoints serve, and the keys their requests are signed with.

* `devstoreaccount1` with the well-known development key, always (what
  `UseDevelopmentStorage=true` means to every SDK).
* Every account named by the app's storage connection strings (`AccountName=..;AccountKey=..`),
  so a named connection's own SDK clients reach the embedded account the bindings use.
* `FUNCHOST_STORAGE_ACCOUNTS="name:key[:key2];..."` for more (Azurite's `AZURITE_ACCOUNTS` shape).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from funchost.errors import ConfigError
from funchost.settings.connections import DEVSTORE_ACCOUNT, DEVSTORE_KEY, parse_connection_string

ACCOUNTS_SETTING = "FUNCHOST_STORAGE_ACCOUNTS"


@dataclass(frozen=True)
class Account:
    name: str
    keys: tuple[bytes, ...]  # decoded HMAC keys; a signature by any of them is accepted

    def __repr__(self) -> str:  # never print keys
        return f"Account({self.name!r})"


def decode_key(text: str, where: str) -> bytes:
    try:
        return base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ConfigError("the account key is not base64", path=where) from exc


class Accounts:
    def __init__(self, accounts: Iterable[Account] = ()) -> None:
        self._by_name: dict[str, Account] = {}
        self.add(Account(DEVSTORE_ACCOUNT, (decode_key(DEVSTORE_KEY, "development key"),)))
        for account in accounts:
            self.add(account)

    def add(self, account: Account) -> None:
        known = self._by_name.get(account.name)
        keys = tuple(dict.fromkeys((known.keys if known else ()) + account.keys))
        self._by_name[account.name] = Account(account.name, keys)

    def get(self, name: str) -> Account | None:
        return self._by_name.get(name)

    @property
    def names(self) -> list[str]:
        return sorted(self._by_name)

    @classmethod
    def from_settings(cls, settings: Mapping[str, str]) -> Accounts:
        """Accounts from every setting that holds a connection string with a key, plus the list setting."""
        accounts = cls()
        for name, value in settings.items():
            if name.upper() == ACCOUNTS_SETTING:
                for account in parse_account_list(value, name):
                    accounts.add(account)
            elif "accountkey=" in value.lower() and "accountname=" in value.lower():
                try:
                    parts = {k.lower(): v for k, v in parse_connection_string(value).items()}
                    accounts.add(Account(parts["accountname"], (decode_key(parts["accountkey"], name),)))
                except (ConfigError, KeyError):
                    continue  # not a storage connection string we can use; the bindings report it
        return accounts


def parse_account_list(value: str, where: str = ACCOUNTS_SETTING) -> list[Account]:
    accounts = []
    for item in value.split(";"):
        item = item.strip()
        if not item:
            continue
        name, _, keys = item.partition(":")
        if not name or not keys:
            raise ConfigError("expected 'name:key[:key2];...'", path=where)
        accounts.append(Account(name.strip(), tuple(decode_key(k, where) for k in keys.split(":") if k)))
    return accounts

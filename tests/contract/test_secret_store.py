"""Shared secrets (`funchost.storage.secrets`) every backend with local state must keep: created
once by the first host, read by all, updates applied one after another.

`other` is a second host: the same data folder (embedded), or a data folder of its own on the
same server and schema (postgres), where nothing but the server is shared.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from funchost.storage.host_storage import HostStorage
from funchost.storage.secrets import SecretStore
from funchost.triggers.http.keys import AuthLevel, KeyStore

from .conftest import backend_settings, open_for_test


@pytest.fixture
def secrets(local_storage: HostStorage) -> SecretStore:
    return local_storage.secrets()


@pytest.fixture
async def other(local_backend_name: str, tmp_path: Path, manual_clock: object,
                request: pytest.FixtureRequest) -> AsyncIterator[SecretStore]:
    settings = backend_settings(local_backend_name, request)
    folder = tmp_path / ("data" if local_backend_name == "embedded" else "other-host")
    storage = open_for_test(local_backend_name, folder, settings, manual_clock)
    yield storage.secrets()
    await storage.aclose()


def test_the_first_writer_wins_and_everyone_reads_it(secrets: SecretStore, other: SecretStore) -> None:
    assert secrets.read("storage/endpoints.id") is None
    assert secrets.create("storage/endpoints.id", "first") == "first"
    assert other.create("storage/endpoints.id", "second") == "first"
    assert other.read("storage/endpoints.id") == "first"


def test_an_update_starts_from_what_the_other_host_stored(secrets: SecretStore, other: SecretStore) -> None:
    def add(store: SecretStore, name: str) -> str:
        return store.update("eventgrid/keys.json", lambda current: json.dumps({**json.loads(current or "{}"),
                                                                              name: True}))

    assert json.loads(add(secrets, "orders")) == {"orders": True}
    assert json.loads(add(other, "payments")) == {"orders": True, "payments": True}
    assert json.loads(secrets.read("eventgrid/keys.json") or "") == {"orders": True, "payments": True}


def test_keys_made_by_one_host_work_on_the_other(secrets: SecretStore, other: SecretStore, tmp_path: Path) -> None:
    first = KeyStore.load_or_create(tmp_path / "a", {}, ["Hello"], secrets)
    second = KeyStore.load_or_create(tmp_path / "b", {}, ["hello", "Other"], other)
    assert second.master_key == first.master_key
    assert second.resolve(first.function_keys["hello"]["default"], "hello").level is AuthLevel.FUNCTION
    created = second.system_key("durabletask_extension")
    assert first.system_key("durabletask_extension") == created  # made by the other host meanwhile
    again = KeyStore.load_or_create(tmp_path / "a", {}, ["other"], secrets)
    assert again.function_keys["other"] == second.function_keys["other"]
    overridden = KeyStore.load_or_create(tmp_path / "b", {"FUNCHOST_MASTER_KEY": "from-setting"}, [], other)
    assert overridden.resolve("from-setting").level is AuthLevel.ADMIN
    assert overridden.resolve(first.master_key).level is AuthLevel.ANONYMOUS
    assert KeyStore.load_or_create(tmp_path / "a", {}, [], secrets).master_key == first.master_key  # kept

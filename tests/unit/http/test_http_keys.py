"""Keys: creation, persistence, override, key -> level resolution, authorization rules."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from funchost.errors import ConfigError
from funchost.storage.secrets import FileSecrets
from funchost.triggers.http import keys as keys_module
from funchost.triggers.http.keys import AuthLevel, KeyMatch, KeyStore, authorized, presented_key


def test_first_start_creates_private_key_files(tmp_path: Path) -> None:
    store = KeyStore.load_or_create(tmp_path, {}, ["Hello"])
    host_file = tmp_path / "keys" / "host.json"
    function_file = tmp_path / "keys" / "hello.json"
    assert stat.S_IMODE(host_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(function_file.stat().st_mode) == 0o600
    host = json.loads(host_file.read_text())
    assert host["masterKey"]["value"] == store.master_key
    assert [k["name"] for k in host["functionKeys"]] == ["default"]
    assert json.loads(function_file.read_text())["keys"][0]["name"] == "default"
    assert len(store.master_key) >= 40


def test_later_starts_load_the_same_keys(tmp_path: Path) -> None:
    first = KeyStore.load_or_create(tmp_path, {}, ["hello"])
    second = KeyStore.load_or_create(tmp_path, {}, ["hello"])
    assert second.master_key == first.master_key
    assert second.function_keys == first.function_keys
    assert second.host_function_keys == first.host_function_keys


def test_master_key_app_setting_overrides_without_being_stored(tmp_path: Path) -> None:
    store = KeyStore.load_or_create(tmp_path, {"FUNCHOST_MASTER_KEY": "from-setting"}, [])
    assert store.master_key == "from-setting"
    assert "from-setting" not in (tmp_path / "keys" / "host.json").read_text()
    assert all("from-setting" not in line for line in store.describe())


def test_system_keys_are_created_on_demand_and_persisted(tmp_path: Path) -> None:
    store = KeyStore.load_or_create(tmp_path, {}, [])
    value = store.system_key("eventgrid_extension")
    again = KeyStore.load_or_create(tmp_path, {}, [])
    assert again.system_keys["eventgrid_extension"] == value


def test_hosts_on_one_data_folder_share_a_system_key_created_after_they_started(tmp_path: Path) -> None:
    first = KeyStore.load_or_create(tmp_path, {}, [])
    second = KeyStore.load_or_create(tmp_path, {}, [])
    created = first.system_key("durabletask_extension")
    other = first.system_key("eventgrid_extension")
    assert second.system_key("durabletask_extension") == created
    assert second.resolve(created) == KeyMatch(AuthLevel.SYSTEM, "durabletask_extension")
    assert KeyStore.load_or_create(tmp_path, {}, []).system_keys["eventgrid_extension"] == other


@pytest.fixture
def store(tmp_path: Path) -> KeyStore:
    store = KeyStore(FileSecrets(tmp_path), "master", {"default": "hostfn"}, {"eventgrid_extension": "sys"},
                     {"hello": {"default": "fn-hello"}, "other": {"default": "fn-other"}})
    return store


def test_resolution_order(store: KeyStore) -> None:
    assert store.resolve("master", "hello") == KeyMatch(AuthLevel.ADMIN, "_master")
    assert store.resolve("sys", "hello") == KeyMatch(AuthLevel.SYSTEM, "eventgrid_extension")
    assert store.resolve("hostfn", "hello") == KeyMatch(AuthLevel.FUNCTION, "default")
    assert store.resolve("fn-hello", "HELLO") == KeyMatch(AuthLevel.FUNCTION, "default")
    assert store.resolve("fn-other", "hello").level is AuthLevel.ANONYMOUS
    assert store.resolve("wrong", "hello").level is AuthLevel.ANONYMOUS
    assert store.resolve(None, "hello").level is AuthLevel.ANONYMOUS


def test_every_comparison_is_constant_time(store: KeyStore, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = keys_module.hmac.compare_digest

    def spy(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys_module.hmac, "compare_digest", spy)
    assert store.resolve("wrong", "hello").level is AuthLevel.ANONYMOUS
    # master + one system key + one host key + one function key, each through compare_digest
    assert len(calls) == 4
    assert {b for _, b in calls} == {b"master", b"sys", b"hostfn", b"fn-hello"}


def test_header_wins_over_code_query() -> None:
    assert presented_key({"x-functions-key": "h"}, {"code": "q"}) == "h"
    assert presented_key({}, {"code": "q"}) == "q"
    assert presented_key({}, {}) is None
    assert presented_key({}, {"CODE": "q"}) == "q"
    assert presented_key({"x-functions-key": ""}, {"code": "q"}) is None  # the empty header still wins


def test_authorization_rules() -> None:
    admin, system = KeyMatch(AuthLevel.ADMIN, "_master"), KeyMatch(AuthLevel.SYSTEM, "eventgrid_extension")
    function, anonymous = KeyMatch(AuthLevel.FUNCTION, "default"), KeyMatch(AuthLevel.ANONYMOUS)
    assert authorized("anonymous", anonymous)
    assert authorized("function", function) and authorized("function", admin)
    assert not authorized("function", system)  # a system key does not satisfy function level
    assert not authorized("function", anonymous)
    assert authorized("admin", admin) and not authorized("admin", function)
    assert authorized("system", system, "eventgrid_extension")
    assert not authorized("system", system, "other_extension")
    assert authorized("system", admin, "eventgrid_extension")


@pytest.mark.parametrize("content", ["{bad", "[]"])
def test_a_damaged_key_file_is_a_config_error_naming_it(tmp_path, content) -> None:
    keys_dir = tmp_path / "keys"
    keys_dir.mkdir()
    (keys_dir / "host.json").write_text(content)
    with pytest.raises(ConfigError, match="host.json"):
        KeyStore.load_or_create(tmp_path, {}, ["hello"])
    (keys_dir / "host.json").unlink()
    (keys_dir / "hello.json").write_text(content)
    with pytest.raises(ConfigError, match="hello.json"):
        KeyStore.load_or_create(tmp_path, {}, ["hello"])

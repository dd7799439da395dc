"""Serving: the setting, the CLI defaults, taken ports, several processes on one data folder."""

from __future__ import annotations

import argparse
import base64
from pathlib import Path

import httpx
import pytest
from tests.support.endpoints import serve_endpoints
from tests.unit.storage_endpoints.signing import signed_headers

from funchost.cli.storage import endpoint_settings
from funchost.errors import ConfigError
from funchost.storage_endpoints.accounts import Account, Accounts, parse_account_list
from funchost.storage_endpoints.server import EndpointSettings, PortTaken, StorageEndpoints, parse_setting
from funchost.storage_endpoints.service import HostAccounts


def test_setting_values() -> None:
    assert parse_setting(None) is None and parse_setting("off") is None
    assert parse_setting("on") == EndpointSettings("127.0.0.1", {"blob": 10000, "queue": 10001, "table": 10002})
    assert parse_setting("20000, 20001,0").ports == {"blob": 20000, "queue": 20001, "table": 0}  # type: ignore[union-attr]
    for bad in ("1,2", "a,b,c", "70000,1,2"):
        with pytest.raises(ConfigError):
            parse_setting(bad)


def test_start_command_turns_endpoints_on_unless_told(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FUNCHOST_STORAGE_ENDPOINTS", raising=False)
    args = argparse.Namespace(no_storage_endpoints=False, storage_ports=None)
    (tmp_path / "local.settings.json").write_text('{"Values": {}}')
    assert endpoint_settings(args, tmp_path) == {"FUNCHOST_STORAGE_ENDPOINTS": "on"}
    assert endpoint_settings(argparse.Namespace(no_storage_endpoints=True, storage_ports=None), tmp_path) == \
        {"FUNCHOST_STORAGE_ENDPOINTS": "off"}
    assert endpoint_settings(argparse.Namespace(no_storage_endpoints=False, storage_ports="1,2,3"), tmp_path) == \
        {"FUNCHOST_STORAGE_ENDPOINTS": "1,2,3"}
    (tmp_path / "local.settings.json").write_text('{"Values": {"FUNCHOST_STORAGE_ENDPOINTS": "off"}}')
    assert endpoint_settings(args, tmp_path) == {}  # the app's own setting wins over the default


@pytest.mark.parametrize(("flags", "passed"), [
    ([], []),
    (["--no-storage-endpoints"], ["--no-storage-endpoints"]),
    (["--storage-ports", "0,0,0"], ["--storage-ports", "0,0,0"]),
])
def test_worker_processes_get_the_endpoint_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  flags: list[str], passed: list[str]) -> None:
    """With FUNCTIONS_WORKER_PROCESS_COUNT > 1 every worker runs `funchost start` with the same flags."""
    from funchost.cli import build_parser, start, supervisor

    started: list[list[str]] = []

    class Recording:
        def __init__(self, argv: list[str], *rest: object) -> None:
            started.append(argv)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(supervisor, "Supervisor", Recording)
    monkeypatch.setenv(supervisor.SETTING, "2")
    monkeypatch.delenv(supervisor.WORKER_ENV, raising=False)
    args = build_parser().parse_args(["start", str(tmp_path), "--port", "0", *flags])
    assert start.run(args) == 0
    argv = started[0]
    assert [a for a in argv if "storage-" in a] == [a for a in passed if "storage-" in a]
    assert argv[len(argv) - len(passed):] == passed


def test_accounts_from_connection_strings() -> None:
    key = "a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5a2V5"
    accounts = Accounts.from_settings({
        "Other": f"DefaultEndpointsProtocol=http;AccountName=other;AccountKey={key};BlobEndpoint=http://127.0.0.1:10000/other",
        "FUNCHOST_STORAGE_ACCOUNTS": f"third:{key}",
        "Unrelated": "Server=x;Password=y",
    })
    assert accounts.names == ["devstoreaccount1", "other", "third"]
    assert "key" not in repr(accounts.get("other")).lower()
    with pytest.raises(ConfigError):
        parse_account_list("nokey")
    [two_keys] = parse_account_list(f"a:{key}:{base64.b64encode(b'second').decode()}")
    assert two_keys == Account("a", (base64.b64decode(key), b"second"))


async def test_same_data_folder_shares_ports_and_another_folder_is_refused(tmp_path: Path) -> None:
    async with serve_endpoints(tmp_path / "data") as served:
        ports = dict(served.endpoints.ports)
        same = StorageEndpoints(HostAccounts(served.storage), Accounts(), served.clock, served.endpoints.identity,
                                EndpointSettings(ports=ports))
        await same.start()
        assert same.ports == ports and same.shared == {"blob", "queue", "table"}
        assert all("served by another process" in line for line in same.describe())
        await same.stop()
        other = StorageEndpoints(HostAccounts(served.storage), Accounts(), served.clock, "a-different-folder",
                                 EndpointSettings(ports=ports))
        with pytest.raises(PortTaken) as info:
            await other.start()
        assert "different data folder" in str(info.value)
        assert other.ports == {}  # nothing left listening


async def test_service_properties_are_the_defaults_and_setting_them_is_not_supported(tmp_path: Path) -> None:
    from azure.core.exceptions import HttpResponseError
    from azure.data.tables.aio import TableServiceClient
    from azure.storage.blob.aio import BlobServiceClient
    from azure.storage.queue.aio import QueueServiceClient

    async with serve_endpoints(tmp_path / "data") as served:
        connection = served.connection_string
        async with BlobServiceClient.from_connection_string(connection) as blobs, \
                QueueServiceClient.from_connection_string(connection) as queues, \
                TableServiceClient.from_connection_string(connection) as tables:
            blob = await blobs.get_service_properties()
            assert blob["cors"] == [] and not blob["hour_metrics"].enabled
            assert not blob["delete_retention_policy"].enabled and not blob["static_website"].enabled
            queue = await queues.get_service_properties()
            assert not queue["analytics_logging"].read and not queue["minute_metrics"].enabled
            table = await tables.get_service_properties()
            assert not table["analytics_logging"].write and table["cors"] == []
            for client in (blobs, queues, tables):
                with pytest.raises(HttpResponseError) as info:
                    await client.set_service_properties(cors=[])
                assert info.value.status_code == 501
        url = f"{served.url('queue')}/?restype=service&comp=stats"  # the SDK asks the secondary endpoint
        async with httpx.AsyncClient() as client:
            stats = await client.get(url, headers=signed_headers("GET", url, b"", "queue"))
        assert (stats.status_code, stats.headers["x-ms-error-code"]) == (501, "NotImplemented")

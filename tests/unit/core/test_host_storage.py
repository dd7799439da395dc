"""HostStorage: the wrappers every caller gets (the host, its plug-ins, the storage endpoints).

Wake-ups (a message visible now wakes this host's listeners, an invisible one does not), accounts
addressed by name (what the storage endpoints serve), Azure's rules in front of the whole Blob
API and the Table port, and change-journal URLs naming the Blob endpoint being served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from funchost.clock import ManualClock
from funchost.errors import ConfigError, InvalidInput, InvalidResourceName, RequestBodyTooLarge, StorageError
from funchost.runtime.faults import FaultInjector
from funchost.runtime.signals import Signals, queue_topic
from funchost.settings.app_settings import AppSettings
from funchost.storage import blob_rules
from funchost.storage.blob_api import HttpHeaders, SignedIdentifier, Write
from funchost.storage.host_storage import HostStorage, open_storage
from funchost.storage.journal_urls import rebase
from funchost.storage.tables import BatchFailed, BatchOperation

OTHER = "DefaultEndpointsProtocol=http;AccountName=other;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/other"


@pytest.fixture
def signals() -> Signals:
    return Signals()


@pytest.fixture
async def storage(tmp_path: Path, signals: Signals) -> AsyncIterator[HostStorage]:
    clock = ManualClock(datetime(2024, 5, 1, tzinfo=UTC))
    opened = open_storage("embedded", tmp_path / "data", AppSettings({"Other": OTHER}, environ={}), clock,
                          faults=FaultInjector(), signals=signals)
    yield opened
    await opened.aclose()


async def test_a_message_visible_now_wakes_listeners_and_an_invisible_one_does_not(storage, signals) -> None:
    woken: list[str] = []
    signals.subscribe(queue_topic("devstoreaccount1", "work"), lambda: woken.append("work"))
    queues = storage.queues()
    await queues.create_queue("work")
    await queues.put_message("work", "later", visibility_timeout=30)
    assert woken == []
    await queues.put_message("work", "now")
    assert woken == ["work"]
    [message] = await queues.get_messages("work", visibility_timeout=60)
    receipt = await queues.update_message("work", message.id, message.pop_receipt, visibility_timeout=10)
    assert woken == ["work"]  # still invisible for 10 s
    await queues.update_message("work", message.id, receipt.pop_receipt, visibility_timeout=0)
    assert woken == ["work", "work"]  # released: visible again at once


async def test_an_account_named_by_the_endpoints_is_the_account_the_bindings_use(storage) -> None:
    other = storage.for_account("other")
    assert storage.for_account("other") is other
    assert other.connection(None, "blob").account_name == "other"
    await other.blob_api().create_container("box")
    await other.blob_api().upload_blob("box", "a.txt", b"one")
    data, _ = await storage.blobs("Other").download_blob("box", "a.txt")  # the binding's view of it
    assert data == b"one"
    assert await storage.blobs().list_containers() == []  # devstoreaccount1 is another account
    assert other.blob_api() is not other.blobs()  # one object behind them, two kinds of wrapper
    await other.aclose()  # a view closes nothing: the services are the storage's
    assert (await storage.blobs("Other").download_blob("box", "a.txt"))[0] == b"one"


async def test_azure_rules_stand_in_front_of_the_whole_blob_api(storage) -> None:
    api = storage.blob_api()
    with pytest.raises(InvalidResourceName):
        await api.create_container_with("Bad_Name", metadata={}, public_access=None)
    with pytest.raises(InvalidInput) as info:
        await api.create_container_with("box", metadata={}, public_access="everyone")
    assert info.value.code == "InvalidHeaderValue"
    await api.create_container_with("box", metadata={"owner": "me"}, public_access="blob")
    with pytest.raises(InvalidInput) as info:
        await api.stage_block("box", "b.bin", "not base64!", b"x")
    assert info.value.code == "InvalidQueryParameterValue"
    with pytest.raises(InvalidInput) as info:
        await api.commit_blocks("box", "b.bin", [("pending", "QUE=")], headers=HttpHeaders(), metadata={},
                                write=Write())
    assert info.value.code == "InvalidBlockList"
    with pytest.raises(InvalidInput) as info:
        await api.blob_lease("box", "b.bin", "renew")
    assert info.value.code == "MissingRequiredHeader"
    with pytest.raises(InvalidInput) as info:
        await api.container_lease("box", "acquire", duration=5)
    assert info.value.code == "InvalidHeaderValue"
    with pytest.raises(InvalidInput) as info:
        await api.put_blob("box", "p.bin", b"", blob_type="PageBlob", headers=HttpHeaders(), metadata={},
                           write=Write())
    policies = [SignedIdentifier(str(n)) for n in range(6)]
    with pytest.raises(InvalidInput):
        await api.set_container_acl("box", None, policies)
    with pytest.raises(InvalidInput) as info:
        await api.set_metadata("box", "b.bin", {"1bad": "x"}, write=Write())
    assert info.value.code == "InvalidMetadata"
    with pytest.raises(RequestBodyTooLarge):
        blob_rules.check_append_block(blob_rules.MAX_APPEND_BLOCK + 1)
    assert (await api.get_container_properties("box")).metadata == {"owner": "me"}  # nothing half-written


async def test_azure_rules_stand_in_front_of_the_table_port(storage) -> None:
    tables = storage.tables()
    with pytest.raises(InvalidResourceName):
        await tables.create_table("1bad")
    await tables.create_table("Orders")
    with pytest.raises(StorageError) as info:
        await tables.insert_entity("Orders", "p", "r", {"bad name": ("Edm.String", "x")})
    assert info.value.code == "PropertyNameInvalid"
    with pytest.raises(InvalidInput):
        await tables.insert_entity("Orders", "p/1", "r", {})
    with pytest.raises(InvalidInput):
        await tables.query_entities("Orders", top=1001)
    with pytest.raises(BatchFailed) as failed:
        await tables.submit_batch("Orders", [BatchOperation("insert", "p", "1"), BatchOperation("insert", "q", "2")])
    assert (failed.value.index, failed.value.code) == (1, "CommandsInBatchActOnDifferentPartitions")
    assert (await tables.query_entities("Orders"))[0] == []


async def test_journal_urls_name_the_blob_endpoint_being_served(storage) -> None:
    journal = storage.blob_changes()
    seen = []
    journal.subscribe(seen.append)
    await storage.blobs().create_container("box")
    await storage.blobs().upload_blob("box", "dir/a b.txt", b"x")
    [default] = await journal.changes_since(None)
    assert default.url == "http://127.0.0.1:10000/devstoreaccount1/box/dir/a%20b.txt"
    storage.blob_origin = "http://127.0.0.1:20000"  # what the storage endpoints set once bound
    [served] = await journal.changes_since(None)
    assert served.url == "http://127.0.0.1:20000/devstoreaccount1/box/dir/a%20b.txt"
    await storage.blobs().delete_blob("box", "dir/a b.txt")
    assert [c.url for c in seen] == [default.url, "http://127.0.0.1:20000/devstoreaccount1/box/dir/a%20b.txt"]
    assert rebase(default, None) is default


async def test_the_azure_backend_has_no_accounts_by_name_and_no_blob_rest_api(tmp_path: Path) -> None:
    settings = AppSettings({"AzureWebJobsStorage": "UseDevelopmentStorage=true"}, environ={})
    azure = open_storage("azure", tmp_path, settings, ManualClock(datetime(2024, 5, 1, tzinfo=UTC)))
    try:
        with pytest.raises(ConfigError, match="embedded storage only"):
            azure.for_account("devstoreaccount1")
        with pytest.raises(ConfigError, match="embedded storage only"):
            azure.blob_api()
        assert azure.tables().account_name == "devstoreaccount1"
    finally:
        await azure.aclose()

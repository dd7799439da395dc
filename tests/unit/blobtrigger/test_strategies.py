"""The discovery strategies on the embedded blob store, with recording executors and a manual clock."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from funchost.clock import ManualClock
from funchost.settings.app_settings import AppSettings
from funchost.storage.host_storage import open_storage
from funchost.testing import settle
from funchost.triggers.blob.scan import ContainerScanStrategy, HybridScanStrategy, JournalStrategy


class Recorder:
    """Stands in for a function's BlobTriggerExecutor: records what discovery offers it."""

    def __init__(self, service, container: str, *, fail: set[str] | None = None) -> None:
        self.target = SimpleNamespace(service=service, connection=None, function=SimpleNamespace(name="f"))
        self.container = container
        self.offered: list[str] = []
        self.fail = fail or set()

    async def execute(self, container: str, name: str, listed=None) -> bool:
        self.offered.append(name)
        return name not in self.fail


@pytest.fixture
async def storage(tmp_path):
    clock = ManualClock()
    opened = open_storage("embedded", tmp_path / "data", AppSettings({}, environ={}), clock)
    opened.clock = clock
    yield opened
    await opened.aclose()


async def upload(storage, container: str, name: str, seconds_later: float = 0) -> None:
    if seconds_later:
        await storage.clock.advance(seconds_later, settle=settle)
    service = storage.blobs()
    await service.create_container(container, exist_ok=True)
    await service.upload_blob(container, name, b"x")


async def test_container_scan_offers_everything_first_then_what_is_new(storage):
    await upload(storage, "cc1", "old.txt")
    strategy = ContainerScanStrategy()
    recorder = Recorder(storage.blobs(), "cc1")
    await strategy.register(recorder)
    await strategy.execute()
    assert recorder.offered == ["old.txt"]
    await upload(storage, "cc1", "new.txt", seconds_later=5)
    recorder.offered.clear()
    await strategy.execute()
    assert sorted(recorder.offered) == ["new.txt", "old.txt"]  # >= the previous mark (old.txt's second)
    recorder.offered.clear()
    await strategy.execute()
    assert recorder.offered == ["new.txt"]  # only the newest second is offered again


async def test_failed_blobs_are_offered_again_next_iteration(storage):
    await upload(storage, "cc1", "bad.txt")
    strategy = ContainerScanStrategy()
    recorder = Recorder(storage.blobs(), "cc1", fail={"bad.txt"})
    await strategy.register(recorder)
    await upload(storage, "cc1", "later.txt", seconds_later=5)
    await strategy.execute()
    recorder.offered.clear()
    await strategy.execute()
    assert recorder.offered.count("bad.txt") == 1  # the retry queue (the listing no longer offers it)


async def test_missing_container_is_empty_until_it_exists(storage):
    strategy = ContainerScanStrategy()
    recorder = Recorder(storage.blobs(), "later")
    await strategy.register(recorder)
    await strategy.execute()
    assert recorder.offered == []
    await upload(storage, "later", "a.txt")
    await strategy.execute()
    assert recorder.offered == ["a.txt"]


async def test_journal_strategy_scans_once_then_follows_the_journal(storage):
    await upload(storage, "cc1", "before.txt")
    strategy = JournalStrategy(storage.blob_changes)
    recorder = Recorder(storage.blobs(), "cc1")
    await strategy.register(recorder)
    await strategy.execute()
    assert recorder.offered == ["before.txt"]
    await upload(storage, "cc1", "after.txt")
    await upload(storage, "other", "ignored.txt")
    await storage.blobs().upload_blob("cc1", "after.txt", b"rewritten")
    recorder.offered.clear()
    await strategy.execute()
    assert recorder.offered == ["after.txt"]  # once per batch, its latest version
    recorder.offered.clear()
    await strategy.execute()
    assert recorder.offered == []


async def test_journal_gap_means_a_full_scan(storage, monkeypatch):
    await upload(storage, "cc1", "a.txt")
    strategy = JournalStrategy(storage.blob_changes)
    recorder = Recorder(storage.blobs(), "cc1")
    await strategy.register(recorder)
    await strategy.execute()
    await upload(storage, "cc1", "b.txt")
    await upload(storage, "cc1", "c.txt")
    journal = strategy.journals["devstoreaccount1"]  # the journal object the strategy reads
    real = journal.changes_since

    async def trimmed(cursor, limit=100):  # the oldest unseen change was trimmed away
        return (await real(cursor, limit))[1:]

    monkeypatch.setattr(journal, "changes_since", trimmed)
    recorder.offered.clear()
    await strategy.execute()
    assert sorted(recorder.offered) == ["a.txt", "b.txt", "c.txt"]


async def test_hybrid_sweep_pages_persists_scan_info_and_resumes_from_it(storage):
    for i in range(4):
        await upload(storage, "cc1", f"b{i}.txt")
    await upload(storage, "cc1", "b4.txt", seconds_later=3)
    host_blobs = storage.blobs()
    strategy = HybridScanStrategy(host_blobs, "myhost")
    recorder = Recorder(storage.blobs(), "cc1")
    await strategy.register(recorder)
    await strategy.execute()
    assert recorder.offered == [f"b{i}.txt" for i in range(5)]
    data, _ = await host_blobs.download_blob("azure-webjobs-hosts",
                                             "blobscaninfo/myhost/devstoreaccount1/cc1/scanInfo")
    latest = json.loads(data)["LatestScan"]
    assert latest.endswith("+00:00") and ".999" in latest  # the mark minus 1 ms
    await upload(storage, "cc1", "b5.txt", seconds_later=3)
    restarted = HybridScanStrategy(host_blobs, "myhost")
    again = Recorder(storage.blobs(), "cc1")
    await restarted.register(again)
    await restarted.execute()
    assert again.offered == ["b4.txt", "b5.txt"]  # b0-b3 are behind the persisted scan time (b4 is at it)


async def test_hybrid_sweep_splits_the_budget_between_containers(storage, monkeypatch):
    import funchost.triggers.blob.scan as scan

    monkeypatch.setattr(scan, "HYBRID_SCAN_BUDGET", 4)
    for i in range(3):
        await upload(storage, "cc1", f"a{i}.txt")
        await upload(storage, "cc2", f"b{i}.txt")
    strategy = HybridScanStrategy(storage.blobs(), "h")
    first, second = Recorder(storage.blobs(), "cc1"), Recorder(storage.blobs(), "cc2")
    await strategy.register(first)
    await strategy.register(second)
    await strategy.execute()
    assert (first.offered, second.offered) == (["a0.txt", "a1.txt"], ["b0.txt", "b1.txt"])  # 4 // 2 a page
    await strategy.execute()
    assert (first.offered[2:], second.offered[2:]) == (["a2.txt"], ["b2.txt"])

"""Item: the data folder is private. Folders 0700, files 0600 whatever the umask, including the
files SQLite creates next to a database (-wal, -shm), and files left by an earlier version."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from funchost.clock import SystemClock
from funchost.private_files import (
    create_private_file,
    private_directory,
    private_sqlite_file,
    write_private_file,
)
from funchost.reliability import open_sqlite
from funchost.settings.app_settings import AppSettings
from funchost.storage.backend import create_backend
from funchost.triggers.http.keys import KeyStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """The usual default umask: without explicit modes every file would be 0644, folders 0755."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def test_folders_are_created_0700_and_existing_ones_tightened(tmp_path: Path) -> None:
    made = private_directory(tmp_path / "a" / "b")
    assert mode(tmp_path / "a") == mode(made) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    private_directory(loose)
    assert mode(loose) == 0o700
    other = tmp_path / "shared"
    other.mkdir(mode=0o755)
    private_directory(other, restrict_existing=False)  # a folder of the user's choosing
    assert mode(other) == 0o755


def test_sqlite_database_and_its_wal_and_shm_files_are_0600(tmp_path: Path) -> None:
    store = open_sqlite(tmp_path / "jobs" / "imports.db")
    try:
        names = sorted(p.name for p in (tmp_path / "jobs").iterdir())
        assert names == ["imports.db", "imports.db-shm", "imports.db-wal"]
        assert {p.name: mode(p) for p in (tmp_path / "jobs").iterdir()} == dict.fromkeys(names, 0o600)
        assert mode(tmp_path / "jobs") == 0o700
    finally:
        store.close()


def test_files_left_by_an_earlier_version_are_tightened(tmp_path: Path) -> None:
    db = tmp_path / "queues.db"
    for name in ("queues.db", "queues.db-wal", "queues.db-shm"):
        (tmp_path / name).write_bytes(b"")
        os.chmod(tmp_path / name, 0o644)
    private_sqlite_file(db)
    assert [mode(tmp_path / n) for n in ("queues.db", "queues.db-wal", "queues.db-shm")] == [0o600] * 3


async def test_embedded_queues_and_blobs_are_private(tmp_path: Path) -> None:
    storage = create_backend("embedded", tmp_path / "data", AppSettings({}, environ={}), SystemClock())
    try:
        queues = storage.queues()
        await queues.create_queue("orders")
        await queues.put_message("orders", "secret order")
        blobs = storage.blobs()
        await blobs.create_container("docs", exist_ok=True)
        await blobs.upload_blob("docs", "a.txt", b"secret text")
        wal = sorted(p.name for p in (tmp_path / "data").rglob("*-wal"))
        assert wal == ["blobs.db-wal", "queues.db-wal"]  # open: SQLite's own files are there too
        _assert_private_tree(tmp_path / "data")
    finally:
        await storage.aclose()


def test_key_files_and_folder_are_private(tmp_path: Path) -> None:
    KeyStore.load_or_create(tmp_path / "data", {}, ["hello"])
    _assert_private_tree(tmp_path / "data")


def test_private_file_writes_are_0600_and_leave_no_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "keys" / "host.json"
    write_private_file(target, "{}")
    assert mode(target) == 0o600 and mode(target.parent) == 0o700
    assert not create_private_file(target, '{"other": 1}')  # exists: left as it is
    assert target.read_text() == "{}"
    assert [p.name for p in target.parent.iterdir()] == ["host.json"]


def test_concurrent_writers_of_one_file_do_not_trip_over_temporary_files(tmp_path: Path) -> None:
    target = tmp_path / "keys" / "host.json"
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for i in range(50):
                write_private_file(target, f'{{"writer": {n}, "i": {i}}}')
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert [p.name for p in target.parent.iterdir()] == ["host.json"]


def _assert_private_tree(root: Path) -> None:
    wrong = {}
    for path in [root, *root.rglob("*")]:
        expected = 0o700 if path.is_dir() else 0o600
        if mode(path) != expected:
            wrong[str(path.relative_to(root))] = oct(mode(path))
    assert wrong == {}

"""Private folders and files: what funchost keeps on disk is readable by its own user only.

The data folder holds queue messages, blobs, jobs, quarantined message bodies and keys, so
folders are 0700 and files 0600 whatever the process umask is (a umask of 022, the usual
default, would leave everything readable by every local user).

SQLite creates a database file with mode 0644 masked by the umask, and gives the files it
creates next to it (`-wal`, `-shm`, `-journal`) the permissions of the database file (SQLite's
os_unix.c: `findCreateFileMode` and `unixOpenSharedMemory`). So the database file is created
here, 0600, before SQLite opens it, and its companions follow; files left by an earlier version
are tightened when opened. Changing the umask instead would affect the user's own code running
in the same process, and would not tighten files that already exist.

Every chmod is best effort: a file owned by another user (a shared folder) keeps its mode.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def _restrict(path: Path, mode: int) -> None:
    with contextlib.suppress(OSError):  # not ours, or gone meanwhile: nothing more to do
        if os.stat(path).st_mode & 0o777 != mode:
            os.chmod(path, mode)


def private_directory(path: Path | str, *, restrict_existing: bool = True) -> Path:
    """Create `path` and its missing parents as 0700 folders; with `restrict_existing` an
    existing `path` is tightened to 0700 too (folders of funchost's own data folder). A folder
    a concurrent process creates at the same moment is fine."""
    target = Path(path)
    missing: list[Path] = []
    current = target
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=PRIVATE_DIRECTORY)
        except FileExistsError:
            continue  # a racing creator made it
        _restrict(folder, PRIVATE_DIRECTORY)  # mkdir's mode is masked by the umask
    if restrict_existing:
        _restrict(target, PRIVATE_DIRECTORY)
    return target


def private_sqlite_file(path: Path | str, *, restrict_folder: bool = True) -> Path:
    """Make sure the SQLite database at `path` and its companion files are 0600 before SQLite
    opens it (see the module docstring). An empty file is a valid, empty SQLite database."""
    target = Path(path)
    private_directory(target.parent, restrict_existing=restrict_folder)
    with contextlib.suppress(OSError):  # unwritable: SQLite reports the real problem on open
        os.close(os.open(target, os.O_RDWR | os.O_CREAT, PRIVATE_FILE))
    for name in ("", *SQLITE_COMPANIONS):
        companion = target.with_name(target.name + name)
        if name == "" or companion.exists():
            _restrict(companion, PRIVATE_FILE)
    return target


def write_private_file(path: Path | str, text: str) -> None:
    """Replace `path` atomically with `text`, mode 0600 from the first byte. The temporary file
    has a unique name, so processes writing the same file at once never trip over each other's
    temporary file; the last rename wins."""
    target = Path(path)
    private_directory(target.parent)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def create_private_file(path: Path | str, text: str) -> bool:
    """Create `path` with `text` (0600) only if it does not exist yet; returns whether this call
    created it. The file appears complete or not at all (written aside, then hard-linked), so
    of several processes creating it at once exactly one wins and the others read its content."""
    target = Path(path)
    private_directory(target.parent)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            os.link(temporary, target)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)

"""Opening a SQLite database file that several processes may open at the same moment.

Hosts sharing a data folder open the same files, and on a fresh folder they may all do it at
once. Two steps of the first open fail at once with "database is locked" instead of waiting
for the busy timeout:

- `PRAGMA journal_mode=WAL` converts the file and needs exclusive access; SQLite does not run
  the busy handler for it (the conversion is attempted once). WAL is a persistent property of
  the file, so the mode is read first (no lock needed) and only a file not yet in WAL mode is
  converted, retried with short randomized sleeps while another process holds it;
- the setup that follows (schema creation) runs under the busy timeout, but is retried the
  same way in case SQLite reports a lock without waiting (a reader that would have to upgrade).

Every retry stays within the busy timeout; then the error is raised as before. Schema
statements must tolerate a racing creator themselves (`CREATE ... IF NOT EXISTS` inside
`BEGIN IMMEDIATE`).
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
FIRST_RETRY_SECONDS = 0.005
MAX_RETRY_SECONDS = 0.1

Setup = Callable[[sqlite3.Connection], None]


def is_busy(exc: sqlite3.Error) -> bool:
    """A lock held by another connection: worth retrying ("database is locked" / "busy")."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in BUSY_CODES
    text = str(exc).lower()
    return "locked" in text or "busy" in text


def connect_wal(path: Path | str, *, busy_timeout: float, setup: Setup | None = None,
                sleep: Callable[[float], None] = time.sleep, page_size: int | None = None) -> sqlite3.Connection:
    """A connection in autocommit mode (`isolation_level=None`), WAL journal, busy timeout set,
    `setup(conn)` applied; retried while another process holds the lock (module docstring).
    `page_size` applies to a file this call creates (SQLite keeps an existing file's)."""
    deadline = time.monotonic() + busy_timeout
    delay = FIRST_RETRY_SECONDS
    while True:
        conn = sqlite3.connect(str(path), timeout=busy_timeout, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
            if page_size is not None:  # before anything writes the file; ignored once it exists
                conn.execute(f"PRAGMA page_size={int(page_size)}")
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":  # the conversion was refused: still locked
                    raise sqlite3.OperationalError("database is locked (journal_mode=WAL refused)")
            if setup is not None:
                setup(conn)
            return conn
        except sqlite3.OperationalError as exc:
            conn.close()
            if not is_busy(exc) or time.monotonic() + delay > deadline:
                raise
        except BaseException:
            conn.close()
            raise
        sleep(delay * random.uniform(0.5, 1.5))  # noqa: S311 - jitter, not cryptography
        delay = min(delay * 2, MAX_RETRY_SECONDS)

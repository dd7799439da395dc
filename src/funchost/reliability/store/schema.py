"""Tables of the toolkit, one template for both dialects.

`{ts}` is TEXT (fixed-width UTC, see `db.sortable_text`) on SQLite and TIMESTAMPTZ on
PostgreSQL; `{bigint}` is INTEGER / BIGINT. Migrations are numbered and applied on open, inside
one transaction (PostgreSQL takes an advisory lock so several hosts may open at once).
"""

from __future__ import annotations

from funchost.reliability.errors import JobStoreError
from funchost.reliability.store.db import Database

MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE IF NOT EXISTS jobs (
                job_id TEXT PRIMARY KEY,
                tenant_id TEXT NOT NULL,
                requested_by TEXT NOT NULL,
                endpoint TEXT NOT NULL,
                state TEXT NOT NULL,
                blob_ref TEXT,
                idempotency_key_hash TEXT,
                request_hash TEXT,
                event_id TEXT,
                correlation_id TEXT,
                run_id TEXT,
                lease_until {ts},
                heartbeat_at {ts},
                attempts INTEGER NOT NULL DEFAULT 0,
                reason TEXT,
                created_at {ts} NOT NULL,
                updated_at {ts} NOT NULL,
                finished_at {ts}
            )""",
            """CREATE UNIQUE INDEX IF NOT EXISTS jobs_idempotency_scope
                ON jobs (tenant_id, endpoint, requested_by, idempotency_key_hash)
                WHERE idempotency_key_hash IS NOT NULL""",
            "CREATE INDEX IF NOT EXISTS jobs_state_lease ON jobs (state, lease_until)",
            """CREATE TABLE IF NOT EXISTS outbox (
                outbox_id TEXT PRIMARY KEY,
                job_id TEXT NOT NULL,
                queue_name TEXT NOT NULL,
                connection TEXT,
                payload TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at {ts} NOT NULL,
                lease_owner TEXT,
                lease_until {ts},
                last_error TEXT,
                message_id TEXT,
                created_at {ts} NOT NULL,
                updated_at {ts} NOT NULL,
                dispatched_at {ts}
            )""",
            "CREATE INDEX IF NOT EXISTS outbox_due ON outbox (state, next_attempt_at)",
            "CREATE INDEX IF NOT EXISTS outbox_job ON outbox (job_id)",
            """CREATE TABLE IF NOT EXISTS effects (
                job_id TEXT NOT NULL,
                operation TEXT NOT NULL,
                idempotency_key TEXT NOT NULL,
                state TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                result TEXT,
                created_at {ts} NOT NULL,
                completed_at {ts},
                PRIMARY KEY (job_id, operation)
            )""",
            """CREATE TABLE IF NOT EXISTS job_rows (
                job_id TEXT NOT NULL,
                row_no {bigint} NOT NULL,
                data TEXT,
                created_at {ts} NOT NULL,
                PRIMARY KEY (job_id, row_no)
            )""",
            """CREATE TABLE IF NOT EXISTS quarantine (
                quarantine_id TEXT PRIMARY KEY,
                queue_name TEXT NOT NULL,
                message_id TEXT,
                message_hash TEXT NOT NULL,
                job_id TEXT,
                dequeue_count INTEGER,
                function_version TEXT,
                blob_name TEXT NOT NULL,
                created_at {ts} NOT NULL,
                redriven_at {ts}
            )""",
        ],
    ),
]

TYPES = {
    "sqlite": {"ts": "TEXT", "bigint": "INTEGER"},
    "postgres": {"ts": "TIMESTAMPTZ", "bigint": "BIGINT"},
}

VERSION_TABLE = "CREATE TABLE IF NOT EXISTS reliability_schema (version INTEGER PRIMARY KEY)"


def statements_for(dialect: str, version: int) -> list[str]:
    for number, statements in MIGRATIONS:
        if number == version:
            return [s.format(**TYPES[dialect]) for s in statements]
    raise KeyError(version)


def latest_version() -> int:
    return MIGRATIONS[-1][0]


def _version_in_place(db: Database) -> int:
    """The schema version, read without a write lock; 0 for a database without the tables."""
    try:
        with db.read() as tx:
            row = tx.one("SELECT MAX(version) AS version FROM reliability_schema")
    except JobStoreError:  # no version table yet
        return 0
    return int(row["version"]) if row and row["version"] is not None else 0


def migrate(db: Database) -> int:
    """Create or upgrade the tables; returns the schema version now in place. A database that is
    already current is only read: opening it never waits for another host's write lock (a
    host frozen while holding it would otherwise stall every start for the busy timeout)."""
    if _version_in_place(db) >= latest_version():
        return latest_version()
    with db.transaction() as tx:
        lock = db.migration_lock()
        if lock:
            tx.one(lock)
        tx.execute(VERSION_TABLE)
        row = tx.one("SELECT MAX(version) AS version FROM reliability_schema")
        current = int(row["version"]) if row and row["version"] is not None else 0
        for number, _ in MIGRATIONS:
            if number <= current:
                continue
            for statement in statements_for(db.name, number):
                tx.execute(statement)
            tx.execute("INSERT INTO reliability_schema (version) VALUES (?)", (number,))
            current = number
    return current

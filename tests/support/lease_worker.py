"""Run in separate processes: lease outbox rows until none are left, return what was leased."""

from __future__ import annotations

from datetime import UTC, datetime


def lease_all(kind: str, target: str, schema: str | None, dispatcher_id: str, batch: int) -> list[str]:
    from funchost.reliability.jobstore import open_postgres, open_sqlite

    fixed = datetime(2026, 6, 19, 10, 0, 0, tzinfo=UTC)
    store = open_sqlite(target, now=lambda: fixed) if kind == "sqlite" else open_postgres(
        target, schema=schema, now=lambda: fixed)
    leased: list[str] = []
    try:
        while True:
            rows = store.outbox.lease_due(dispatcher_id, batch, 600)
            if not rows:
                return leased
            leased.extend(r.outbox_id for r in rows)
    finally:
        store.close()

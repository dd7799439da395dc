"""`--storage postgres` Service Bus: the embedded broker's rules (`servicebussql`, one
implementation) on PostgreSQL tables, one schema per namespace, through `PgScopedDatabase`
(writes serialized per namespace across hosts, reads from one snapshot). Lock expiries, TTLs and
scheduled times come from the backend's clock: a `ServerClock` (the server's time) unless a
`ManualClock` drives the host, so hosts with skewed clocks agree on when a lock lapses.

PostgreSQL `text` cannot hold the NUL character: a session id, message id, dead-letter reason or
lock token with one is refused with 400 before anything is written (`NulFreeText` for the rest),
where the driver would fail and the caller be told to retry (503) for ever.

Wake-ups: the trigger's `servicebus` topic is relayed to the other hosts by the backend's
`Wakeups` after the send committed; polling stays the correctness path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from funchost.clock import Clock
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.postgres.servicebus_schema import STEPS, namespace_schema
from funchost.storage.postgres.text_guard import NulFreeText
from funchost.storage.servicebus import InvalidServiceBusInput, OutgoingMessage, SessionLock
from funchost.storage.servicebussql.broker import SqlServiceBusBroker


class PostgresServiceBusBroker(SqlServiceBusBroker):
    def __init__(self, database: PgDatabase, namespace: str, clock: Clock) -> None:
        db = PgScopedDatabase(database, namespace_schema(database.config.schema, namespace), "servicebus", STEPS,
                              what=f"Service Bus namespace '{namespace}'")
        super().__init__(namespace, clock, NulFreeText(db, _no_nul))

    async def send(self, entity: str, messages: Sequence[OutgoingMessage]) -> list[int]:
        for message in messages:
            _check(message.session_id, message.message_id)
        return await super().send(entity, messages)

    async def accept_session(self, path: str, session_id: str | None = None) -> SessionLock | None:
        _check(session_id)
        return await super().accept_session(path, session_id)

    async def dead_letter(self, path: str, lock_token: str, reason: str | None = None,
                          description: str | None = None,
                          properties_to_modify: Mapping[str, Any] | None = None) -> None:
        _check(lock_token, reason, description)
        await super().dead_letter(path, lock_token, reason, description, properties_to_modify)


def _check(*values: str | None) -> None:
    """Before a grouped write starts: a refusal inside one would leave the operation half done."""
    for value in values:
        if value is not None and "\x00" in value:
            raise _no_nul(value)


def _no_nul(value: str) -> InvalidServiceBusInput:
    return InvalidServiceBusInput(f"{value[:40]!r}: the Service Bus namespace on PostgreSQL cannot store the NUL "
                                  "character in an id, a lock token or a dead-letter reason")

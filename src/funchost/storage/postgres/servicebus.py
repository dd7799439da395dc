"""`--storage postgres` Service Bus: the embedded broker's rules (`servicebussql`, one
implementation) on PostgreSQL tables, one schema per namespace, through `PgScopedDatabase`
(writes serialized per namespace across hosts, reads from one snapshot). Lock expiries, TTLs and
scheduled times come from the backend's clock: a `ServerClock` (the server's time) unless a
`ManualClock` drives the host, so hosts with skewed clocks agree on when a lock lapses.

Wake-ups: the trigger's `servicebus` topic is relayed to the other hosts by the backend's
`Wakeups` after the send committed; polling stays the correctness path.
"""

from __future__ import annotations

from funchost.clock import Clock
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.postgres.servicebus_schema import STEPS, namespace_schema
from funchost.storage.servicebussql.broker import SqlServiceBusBroker


class PostgresServiceBusBroker(SqlServiceBusBroker):
    def __init__(self, database: PgDatabase, namespace: str, clock: Clock) -> None:
        db = PgScopedDatabase(database, namespace_schema(database.config.schema, namespace), "servicebus", STEPS,
                              what=f"Service Bus namespace '{namespace}'")
        super().__init__(namespace, clock, db)

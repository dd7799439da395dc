"""`--storage postgres` Event Hubs: the embedded broker's log (`eventhubsql`, one
implementation) on PostgreSQL tables, one schema per namespace, through `PgScopedDatabase`
(sends serialized per namespace across hosts, reads from one snapshot). Enqueued times and the
retention horizon come from the backend's clock: a `ServerClock` unless a `ManualClock` drives
the host. The trigger's checkpoints and partition ownership live on the blob store, which is on
the same server, so hosts on different machines balance the partitions between them.
"""

from __future__ import annotations

from funchost.clock import Clock
from funchost.storage.eventhubsql.broker import SqlEventHubBroker
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.eventhubs_schema import STEPS, namespace_schema
from funchost.storage.postgres.scoped import PgScopedDatabase


class PostgresEventHubBroker(SqlEventHubBroker):
    def __init__(self, database: PgDatabase, namespace: str, clock: Clock) -> None:
        db = PgScopedDatabase(database, namespace_schema(database.config.schema, namespace), "eventhubs", STEPS,
                              what=f"Event Hubs namespace '{namespace}'")
        super().__init__(namespace, clock, db)

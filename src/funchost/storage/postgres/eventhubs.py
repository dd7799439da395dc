"""`--storage postgres` Event Hubs: the embedded broker's log (`eventhubsql`, one
implementation) on PostgreSQL tables, one schema per namespace, through `PgScopedDatabase`
(sends serialized per namespace across hosts, reads from one snapshot). Enqueued times and the
retention horizon come from the backend's clock: a `ServerClock` unless a `ManualClock` drives
the host. The trigger's checkpoints and partition ownership live on the blob store, which is on
the same server, so hosts on different machines balance the partitions between them.

PostgreSQL `text` cannot hold the NUL character: a partition key, partition id or event id with
one is refused with 400 (`NulFreeText`; a send is one transaction, rolled back), where the driver
would fail and the caller be told to retry (503) for ever.
"""

from __future__ import annotations

from funchost.clock import Clock
from funchost.errors import InvalidInput
from funchost.storage.eventhubsql.broker import SqlEventHubBroker
from funchost.storage.postgres.db import PgDatabase
from funchost.storage.postgres.eventhubs_schema import STEPS, namespace_schema
from funchost.storage.postgres.scoped import PgScopedDatabase
from funchost.storage.postgres.text_guard import NulFreeText


class PostgresEventHubBroker(SqlEventHubBroker):
    def __init__(self, database: PgDatabase, namespace: str, clock: Clock) -> None:
        db = PgScopedDatabase(database, namespace_schema(database.config.schema, namespace), "eventhubs", STEPS,
                              what=f"Event Hubs namespace '{namespace}'")
        super().__init__(namespace, clock, NulFreeText(db, _no_nul))


def _no_nul(value: str) -> InvalidInput:
    return InvalidInput(f"{value[:40]!r}: the Event Hubs namespace on PostgreSQL cannot store the NUL character in a "
                        "partition key, partition id, content type or id")

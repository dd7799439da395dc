"""The Event Grid store on PostgreSQL: hosts on several machines share topics' events, their
delivery rows and the blob-event cursors through the server.

Same rows and rules as the embedded store (`funchost.storage.sqlite.eventgrid`): events and their
deliveries in one transaction; `lease_due` takes due rows with ``FOR UPDATE SKIP LOCKED`` inside
one ``UPDATE ... RETURNING``, so two hosts polling at once take disjoint rows; `update` applies
only where ``lease_owner`` is still the caller; the cursor compare-and-set is a conditional
``UPDATE`` (a second host's write waits for the first's row lock, then finds the value moved).

Time: the delivery engine works in its host's clock. With the real clock each call measures the
server's offset (`clock_timestamp()` minus the host's time, in the call's own transaction) and
moves every time it writes or compares onto the server's clock, and every time it reads back
onto the host's, so lease expiry and due times agree across machines whatever their clocks say.
Under a `ManualClock` (the contract suites) the offset is 0 and times pass through unchanged.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from funchost.clock import Clock
from funchost.storage.eventgrid import (
    DEADLETTERING,
    PENDING,
    DeliveryRow,
    NewEvent,
    SubscriptionStats,
)
from funchost.storage.postgres.db import PgDatabase, server_time

T = TypeVar("T")

COMPONENT = "eventgrid"
_TABLES = """
    CREATE TABLE eg_events (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        topic text NOT NULL,
        schema text NOT NULL,
        event_id text NOT NULL,
        body text NOT NULL,
        size integer NOT NULL,
        published double precision NOT NULL
    );
    CREATE TABLE eg_deliveries (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        subscription text NOT NULL,
        event_seq bigint NOT NULL,
        state text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL,
        next_attempt double precision NOT NULL,
        expires double precision NOT NULL,
        lease_owner text,
        lease_until double precision,
        last_outcome text,
        last_status integer,
        last_attempt double precision,
        reason text,
        gave_up double precision,
        finished double precision,
        location text
    ) WITH (autovacuum_vacuum_scale_factor = 0.05, autovacuum_vacuum_cost_limit = 1000);
    CREATE INDEX eg_deliveries_due ON eg_deliveries (next_attempt, id)
        WHERE state IN ('pending', 'deadlettering');
    CREATE INDEX eg_deliveries_sub ON eg_deliveries (subscription, state);
    CREATE TABLE eg_cursors (name text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE eg_validations (
        subscription text PRIMARY KEY,
        endpoint_hash text NOT NULL,
        validated double precision NOT NULL
    );
    """

# The offset of the server's clock from the caller's `host` time; 0 when `now` (a ManualClock) is given.
_OFFSET = ("SELECT CASE WHEN %(now)s::float8 IS NULL "
           "THEN extract(epoch FROM clock_timestamp())::float8 - %(host)s::float8 ELSE 0 END")
_COLUMNS = ("d.id, d.subscription, d.event_seq, d.state, d.attempts, d.max_attempts, d.next_attempt, d.expires, "
            "d.last_outcome, d.last_status, d.last_attempt, d.reason, d.gave_up, "
            "e.topic, e.schema, e.body, e.size, e.published")
_SELECT = f"SELECT {_COLUMNS} FROM eg_deliveries d JOIN eg_events e ON e.seq = d.event_seq"
# Due deliveries in (next_attempt, id) order, leased to `owner`: a server function (migration step 2)
# with `enable_sort` off for its statement, as the queue receive is (storage/postgres/queue_sql.py):
# deliveries published in a burst right after the table was made have no statistics yet, and the
# planner then read every due delivery through a bitmap scan and sorted them all for each lease of
# 16 (2.0 ms at 5,000 due, growing with the backlog; `EXPLAIN ANALYZE`). The partial index on
# (next_attempt, id) gives the order by itself: 0.5 ms, however stale the statistics.
_LEASE_DUE_FUNCTION = f"""
CREATE FUNCTION eg_lease_due(p_now float8, lim integer, p_owner text, p_until float8)
RETURNS TABLE (o_id bigint, o_subscription text, o_event_seq bigint, o_state text, o_attempts integer,
               o_max_attempts integer, o_next_attempt float8, o_expires float8, o_last_outcome text,
               o_last_status integer, o_last_attempt float8, o_reason text, o_gave_up float8, o_topic text,
               o_schema text, o_body text, o_size integer, o_published float8)
LANGUAGE plpgsql SET enable_sort = off AS $$
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT x.id FROM eg_deliveries x
        WHERE x.state IN ('{PENDING}', '{DEADLETTERING}') AND x.next_attempt <= p_now
          AND (x.lease_until IS NULL OR x.lease_until <= p_now)
        ORDER BY x.next_attempt, x.id LIMIT lim
        FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE eg_deliveries d SET lease_owner = p_owner, lease_until = p_until
    FROM due, eg_events e WHERE d.id = due.id AND e.seq = d.event_seq
    RETURNING {_COLUMNS};
END $$;
"""
_LEASE_DUE = "SELECT * FROM eg_lease_due(%(now)s, %(limit)s, %(owner)s, %(until)s)"
# When the next delivery falls due: the earliest `greatest(next_attempt, lease_until)` of the
# waiting rows, without reading them all (it is asked whenever a lease finds nothing due, so
# every second on each host while deliveries wait out their retry delays). Rows not leased past
# their attempt time come first in the due index; rows leased past it (attempts in flight, or a
# dead host's) are found through a partial index that holds only leased rows (an outcome releases
# the lease). A server function with `enable_sort` off, for the lease's reason above.
_NEXT_DUE_FUNCTION = f"""
CREATE INDEX eg_deliveries_leased ON eg_deliveries (lease_until)
    WHERE state IN ('{PENDING}', '{DEADLETTERING}') AND lease_until IS NOT NULL;
CREATE FUNCTION eg_next_due() RETURNS float8
LANGUAGE plpgsql STABLE SET enable_sort = off AS $$
DECLARE
    free float8;
    leased float8;
BEGIN
    SELECT x.next_attempt INTO free FROM eg_deliveries x
    WHERE x.state IN ('{PENDING}', '{DEADLETTERING}') AND (x.lease_until IS NULL OR x.lease_until <= x.next_attempt)
    ORDER BY x.next_attempt, x.id LIMIT 1;
    SELECT min(x.lease_until) INTO leased FROM eg_deliveries x
    WHERE x.state IN ('{PENDING}', '{DEADLETTERING}') AND x.lease_until IS NOT NULL
      AND x.lease_until > x.next_attempt;
    RETURN least(free, leased);
END $$;
"""
MIGRATIONS = [_TABLES, _LEASE_DUE_FUNCTION, _NEXT_DUE_FUNCTION]
_NEXT_DUE = "SELECT eg_next_due()"
_INSERT_EVENT = ("INSERT INTO eg_events(topic, schema, event_id, body, size, published) "
                 "VALUES (%s, %s, %s, %s, %s, %s) RETURNING seq")
_INSERT_DELIVERY = ("INSERT INTO eg_deliveries(subscription, event_seq, state, max_attempts, next_attempt, expires) "
                    "VALUES (%s, %s, %s, %s, %s, %s)")
_STATS = ("SELECT subscription, state, count(*), min(next_attempt), count(*) FILTER (WHERE attempts > 0) "
          "FROM eg_deliveries GROUP BY subscription, state")
# The columns `update` may set (the Protocol's keys), and which of them hold times.
_UPDATABLE = frozenset({"state", "attempts", "next_attempt", "last_outcome", "last_status", "last_attempt",
                        "reason", "gave_up", "finished", "location"})
_TIMES = frozenset({"next_attempt", "last_attempt", "gave_up", "finished"})


class PostgresEventStore:
    def __init__(self, database: PgDatabase, clock: Clock) -> None:
        self.database = database
        self.clock = clock
        self._migrated = False

    async def aclose(self) -> None:
        """Nothing of its own: the backend closes the shared database."""

    async def _run(self, fn: Callable[[Any, float], T]) -> T:
        """`fn(conn, offset)` in one transaction; `offset` moves host times onto the server's clock."""
        if not self._migrated:  # before any transaction: a migration may wait for another host's
            await asyncio.to_thread(self.database.migrate, COMPONENT, MIGRATIONS)
            self._migrated = True
        now = server_time(self.clock)

        def run(conn: Any) -> T:
            host = self.clock.now().timestamp()
            offset = float(conn.execute(_OFFSET, {"now": now, "host": host}).fetchone()[0])
            return fn(conn, offset)

        return await self.database.run(run)

    # -- publishing ------------------------------------------------------------------------------

    async def append(self, topic: str, schema: str, events: Sequence[NewEvent], now: float,
                     cursor: tuple[str, str | None, str] | None = None) -> bool:
        return await self._run(lambda conn, offset: _append(conn, topic, schema, events, now + offset, cursor))

    async def get_cursor(self, name: str) -> str | None:
        def run(conn: Any, _: float) -> str | None:
            row = conn.execute("SELECT value FROM eg_cursors WHERE name = %s", (name,)).fetchone()
            return None if row is None else str(row[0])

        return await self._run(run)

    async def init_cursor(self, name: str, value: str) -> str:
        def run(conn: Any, _: float) -> str:
            conn.execute("INSERT INTO eg_cursors(name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING",
                         (name, value))
            return str(conn.execute("SELECT value FROM eg_cursors WHERE name = %s", (name,)).fetchone()[0])

        return await self._run(run)

    # -- delivery --------------------------------------------------------------------------------

    async def lease_due(self, owner: str, now: float, lease_seconds: float, limit: int) -> list[DeliveryRow]:
        def run(conn: Any, offset: float) -> list[DeliveryRow]:
            at = now + offset
            rows = conn.execute(_LEASE_DUE, {"now": at, "until": at + lease_seconds, "owner": owner,
                                             "limit": limit}).fetchall()
            found = [_row(r, offset) for r in rows]
            return sorted(found, key=lambda r: (r.next_attempt, r.id))

        return await self._run(run)

    async def next_due(self) -> float | None:
        def run(conn: Any, offset: float) -> float | None:
            row = conn.execute(_NEXT_DUE).fetchone()
            return None if row is None or row[0] is None else float(row[0]) - offset

        return await self._run(run)

    async def update(self, owner: str, changes: Iterable[tuple[int, dict[str, Any]]]) -> int:
        """Apply column changes to leased rows still held by `owner`; release their lease."""
        batch = list(changes)
        for _, values in batch:
            unknown = set(values) - _UPDATABLE
            if unknown:
                raise ValueError(f"not a delivery field: {', '.join(sorted(unknown))}")

        def run(conn: Any, offset: float) -> int:
            done = 0
            for row_id, values in batch:
                moved = {k: (v + offset if k in _TIMES and v is not None else v) for k, v in values.items()}
                cols = ", ".join(f"{k} = %s" for k in moved)
                sql = (f"UPDATE eg_deliveries SET {cols}, lease_owner = NULL, lease_until = NULL "
                       "WHERE id = %s AND lease_owner = %s")
                done += conn.execute(sql, (*moved.values(), row_id, owner)).rowcount
            return done

        return await self._run(run)

    # -- webhook validation ------------------------------------------------------------------------

    async def is_validated(self, subscription: str, endpoint_hash: str) -> bool:
        def run(conn: Any, _: float) -> bool:
            row = conn.execute("SELECT endpoint_hash FROM eg_validations WHERE subscription = %s",
                               (subscription,)).fetchone()
            return row is not None and row[0] == endpoint_hash

        return await self._run(run)

    async def set_validated(self, subscription: str, endpoint_hash: str, now: float) -> None:
        def run(conn: Any, offset: float) -> None:
            conn.execute("INSERT INTO eg_validations(subscription, endpoint_hash, validated) VALUES (%s, %s, %s) "
                         "ON CONFLICT (subscription) DO UPDATE SET endpoint_hash = EXCLUDED.endpoint_hash, "
                         "validated = EXCLUDED.validated", (subscription, endpoint_hash, now + offset))

        await self._run(run)

    # -- status ----------------------------------------------------------------------------------

    async def stats(self) -> list[SubscriptionStats]:
        def run(conn: Any, offset: float) -> list[SubscriptionStats]:
            counts: dict[str, dict[str, Any]] = {}
            for sub, state, n, nxt, retrying in conn.execute(_STATS).fetchall():
                entry = counts.setdefault(sub, {"subscription": sub})
                entry[state] = int(n)
                if state == PENDING:
                    entry["next_attempt"] = None if nxt is None else float(nxt) - offset
                    entry["retrying"] = int(retrying or 0)
            return [SubscriptionStats(**v) for _, v in sorted(counts.items())]

        return await self._run(run)

    async def deliveries(self, subscription: str | None = None) -> list[DeliveryRow]:
        def run(conn: Any, offset: float) -> list[DeliveryRow]:
            if subscription is None:
                rows = conn.execute(f"{_SELECT} ORDER BY d.id").fetchall()
            else:
                rows = conn.execute(f"{_SELECT} WHERE d.subscription = %s ORDER BY d.id", (subscription,)).fetchall()
            return [_row(r, offset) for r in rows]

        return await self._run(run)


def _append(conn: Any, topic: str, schema: str, events: Sequence[NewEvent], now: float,
            cursor: tuple[str, str | None, str] | None) -> bool:
    if cursor is not None and not _move_cursor(conn, *cursor):
        return False
    for item in events:
        body = json.dumps(item.event, separators=(",", ":"))
        seq = conn.execute(_INSERT_EVENT, (topic, schema, str(item.event.get("id", "")), body,
                                           len(body.encode()), now)).fetchone()[0]
        if item.targets:
            with conn.cursor() as cur:
                cur.executemany(_INSERT_DELIVERY, [(t.subscription, seq, PENDING, t.max_attempts, now,
                                                    now + t.ttl_seconds) for t in item.targets])
    return True


def _move_cursor(conn: Any, name: str, expected: str | None, new: str) -> bool:
    """The compare-and-set: a concurrent writer of the same cursor waits for this row lock, then
    re-checks the condition against the committed value (READ COMMITTED) and finds it moved."""
    if expected is None:
        sql = "INSERT INTO eg_cursors(name, value) VALUES (%s, %s) ON CONFLICT (name) DO NOTHING"
        return bool(conn.execute(sql, (name, new)).rowcount)
    sql = "UPDATE eg_cursors SET value = %s WHERE name = %s AND value = %s"
    return bool(conn.execute(sql, (new, name, expected)).rowcount)


def _row(r: Sequence[Any], offset: float) -> DeliveryRow:
    (id_, subscription, event_seq, state, attempts, max_attempts, next_attempt, expires, last_outcome,
     last_status, last_attempt, reason, gave_up, topic, schema, body, size, published) = r

    def host(t: float | None) -> float | None:
        return None if t is None else float(t) - offset

    return DeliveryRow(
        id=int(id_), subscription=subscription, event_seq=int(event_seq), topic=topic, schema=schema,
        event=json.loads(body), size=int(size), published=float(published) - offset, state=state,
        attempts=int(attempts), max_attempts=int(max_attempts), next_attempt=float(next_attempt) - offset,
        expires=float(expires) - offset, last_outcome=last_outcome, last_status=last_status,
        last_attempt=host(last_attempt), reason=reason, gave_up=host(gave_up),
    )

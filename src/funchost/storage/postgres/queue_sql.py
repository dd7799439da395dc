"""The queue port's tables and statements on PostgreSQL (`postgres.queues` runs them).

Every statement takes its `now` once, in a materialised CTE (`t`), from NOW_SQL: the server's
`clock_timestamp()` unless a ManualClock gives it. Written as `(SELECT now FROM t)` it is a
parameter of the index scan (a volatile `clock_timestamp()` inline would not be). The queue is
found by account and name inside each statement (a primary-key lookup), so a queue deleted and
created again by another host is never addressed through a stale id.
"""

from __future__ import annotations

from funchost.storage.postgres.db import NOW_SQL

COMPONENT = "queues"
_TABLES = """
CREATE TABLE queues (
    account text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    queue_id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
    metadata jsonb NOT NULL DEFAULT '{}',
    created_at float8 NOT NULL,
    PRIMARY KEY (account, name)
);
CREATE TABLE queue_messages (
    queue_id bigint NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    id_prefix text NOT NULL,
    content text NOT NULL,
    inserted_at float8 NOT NULL,
    expires_at float8,
    visible_at float8 NOT NULL,
    dequeue_count integer NOT NULL DEFAULT 0,
    pop_receipt text,
    PRIMARY KEY (queue_id, seq)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_cost_limit = 2000,
        autovacuum_vacuum_insert_scale_factor = 0.05);
CREATE INDEX queue_messages_visible ON queue_messages (queue_id, visible_at, seq);
CREATE INDEX queue_messages_expiry ON queue_messages (expires_at) WHERE expires_at IS NOT NULL;
"""

_T = f"WITH t AS MATERIALIZED (SELECT {NOW_SQL} AS now)"
NOW = "(SELECT now FROM t)"
QUEUE = "(SELECT queue_id FROM queues WHERE account = %(a)s AND name = %(n)s)"
LIVE = f"(m.expires_at IS NULL OR m.expires_at > {NOW})"

CREATE = (f"{_T} INSERT INTO queues(account, name, metadata, created_at) "
          f"SELECT %(a)s, %(n)s, %(m)s, now FROM t ON CONFLICT (account, name) DO NOTHING RETURNING queue_id")
METADATA = "SELECT metadata FROM queues WHERE account = %(a)s AND name = %(n)s"
EXISTS = "SELECT 1 FROM queues WHERE account = %(a)s AND name = %(n)s"
DROP = "DELETE FROM queues WHERE account = %(a)s AND name = %(n)s RETURNING queue_id"
DROP_MESSAGES = "DELETE FROM queue_messages WHERE queue_id = %(q)s"
LIST = "SELECT name FROM queues WHERE account = %(a)s AND starts_with(name, %(p)s) ORDER BY name"
SET_METADATA = "UPDATE queues SET metadata = %(m)s WHERE account = %(a)s AND name = %(n)s"
PROPERTIES = (f"{_T} SELECT q.metadata, (SELECT count(*) FROM queue_messages m WHERE m.queue_id = q.queue_id "
              f"AND {LIVE}) FROM queues q WHERE q.account = %(a)s AND q.name = %(n)s")

PUT = (f"{_T} INSERT INTO queue_messages(queue_id, id_prefix, content, inserted_at, expires_at, visible_at, "
       f"pop_receipt) SELECT q.queue_id, %(p)s, %(c)s, t.now, t.now + %(ttl)s::float8, t.now + %(vt)s, %(r)s "
       f"FROM queues q, t WHERE q.account = %(a)s AND q.name = %(n)s "
       f"RETURNING seq, inserted_at, expires_at, visible_at")

# A receive: the first `lim` visible, live messages of the queue in (visible_at, seq) order, taken
# past rows other receivers hold (SKIP LOCKED), made invisible for `vt` seconds under new
# receipts. A server function (migration step 2) with `enable_sort` off for its statement: the
# statistics of a queue filled in a burst lag behind it (autovacuum's next look can be a minute
# away), and with a table it still takes for nearly empty the planner read every visible message
# through a bitmap scan and sorted them all for each batch of 16 (2.6 ms at 5,000 messages, growing
# with the backlog). The index on (queue_id, visible_at, seq) gives that order by itself, so
# without a sort the plan reads only the rows it takes (0.3 ms), however stale the statistics;
# PL/pgSQL also keeps the plan, where the inline statement was planned again on every call.
# What the receive and the peek share: the rows they return, finding the queue (none: no rows), and
# the choice of its first `lim` visible, live messages in (visible_at, seq) order.
_MESSAGE_COLUMNS = ("m.seq, m.id_prefix, m.content, m.inserted_at, m.expires_at, m.visible_at, m.dequeue_count, "
                    "m.pop_receipt")
_MESSAGE_ROWS = """RETURNS TABLE (o_seq bigint, o_id_prefix text, o_content text, o_inserted_at float8, o_expires_at float8,
               o_visible_at float8, o_dequeue_count integer, o_pop_receipt text)"""
_FIND_QUEUE = """DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    q bigint;
BEGIN
    SELECT queue_id INTO q FROM queues WHERE account = a AND name = n;
    IF q IS NULL THEN
        RETURN;
    END IF;"""
_FIRST_VISIBLE = """FROM queue_messages m
        WHERE m.queue_id = q AND m.visible_at <= v_now AND (m.expires_at IS NULL OR m.expires_at > v_now)
        ORDER BY m.visible_at, m.seq LIMIT lim"""
_RECEIVE_FUNCTION = f"""
CREATE FUNCTION queue_receive(p_now float8, a text, n text, lim integer, vt float8, nonce text)
{_MESSAGE_ROWS}
LANGUAGE plpgsql SET enable_sort = off AS $$
{_FIND_QUEUE}
    RETURN QUERY
    WITH c AS (
        SELECT m.seq {_FIRST_VISIBLE} FOR NO KEY UPDATE SKIP LOCKED)
    UPDATE queue_messages m SET visible_at = v_now + vt, dequeue_count = m.dequeue_count + 1,
           pop_receipt = nonce || to_hex(m.dequeue_count + 1)
    FROM c WHERE m.queue_id = q AND m.seq = c.seq
    RETURNING {_MESSAGE_COLUMNS};
END $$;
"""
# A peek: the receive's choice of messages without taking them, a server function (step 3) for
# the same reason (the statement read and sorted every visible message of a queue without
# statistics; the CLI, the dashboard and the SDKs' peek call it).
_PEEK_FUNCTION = f"""
CREATE FUNCTION queue_peek(p_now float8, a text, n text, lim integer)
{_MESSAGE_ROWS}
LANGUAGE plpgsql STABLE SET enable_sort = off AS $$
{_FIND_QUEUE}
    RETURN QUERY
    SELECT {_MESSAGE_COLUMNS} {_FIRST_VISIBLE};
END $$;
"""
MIGRATIONS = [_TABLES, _RECEIVE_FUNCTION, _PEEK_FUNCTION]

RECEIVE = "SELECT * FROM queue_receive(%(now)s, %(a)s, %(n)s, %(max)s, %(vt)s, %(nonce)s)"
PEEK = "SELECT * FROM queue_peek(%(now)s, %(a)s, %(n)s, %(max)s)"

PURGE = f"{_T} DELETE FROM queue_messages WHERE expires_at <= {NOW}"

# The update fenced by the receipt and the expiry: no row back = one of the errors `CLASSIFY` tells.
UPDATE = (f"{_T} UPDATE queue_messages m SET visible_at = t.now + %(vt)s, pop_receipt = %(new)s, "
          f"content = coalesce(%(c)s, m.content) FROM t "
          f"WHERE m.queue_id = {QUEUE} AND m.seq = %(s)s AND m.id_prefix = %(p)s AND m.pop_receipt = %(r)s "
          f"AND {LIVE} AND t.now + %(vt)s <= coalesce(m.expires_at, 'infinity') RETURNING m.visible_at")

# Deletes of concurrent callers in one statement; the rows deleted come back as (name, seq). The
# deletes come as one JSON array of {n, s, p, r} (one text parameter: psycopg adapts four arrays
# element by element, about half of the statement's CPU on the host).
DELETE = (f"{_T} DELETE FROM queue_messages m "
          f"USING jsonb_to_recordset(%(d)s::jsonb) d(n text, s bigint, p text, r text), queues q "
          f"WHERE q.account = %(a)s AND q.name = d.n AND m.queue_id = q.queue_id AND m.seq = d.s "
          f"AND m.id_prefix = d.p AND m.pop_receipt = d.r AND {LIVE} RETURNING d.n, m.seq")

# Why an update or delete found no row: (ordinal, queue found, prefix, receipt, live, expires_at).
CLASSIFY = (f"{_T} SELECT d.o, q.queue_id IS NOT NULL, m.id_prefix, m.pop_receipt, {LIVE}, m.expires_at "
            f"FROM unnest(%(n)s::text[], %(s)s::bigint[]) WITH ORDINALITY d(n, s, o) "
            f"LEFT JOIN queues q ON q.account = %(a)s AND q.name = d.n "
            f"LEFT JOIN queue_messages m ON m.queue_id = q.queue_id AND m.seq = d.s ORDER BY d.o")

CLEAR = f"DELETE FROM queue_messages WHERE queue_id = {QUEUE}"
OLDEST = f"SELECT inserted_at FROM queue_messages WHERE queue_id = {QUEUE} ORDER BY seq LIMIT 1"

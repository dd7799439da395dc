"""The task hub's statements on PostgreSQL (`postgres.durable` runs them; the tables and server
functions are in `durable_schema`).

Each statement takes its `now` once, in a materialised CTE (`t`): the server's clock unless a
ManualClock gives it (`%(now)s`), and `shift`, the server's `now` minus the caller's (`%(ref)s`),
that moves the caller's absolute times onto the server's clock and back (0 under a ManualClock).
"""

from __future__ import annotations

from funchost.storage.postgres.db import NOW_SQL

_T = f"WITH t AS MATERIALIZED (SELECT n AS now, n - %(ref)s::float8 AS shift FROM (SELECT {NOW_SQL} AS n) c)"
NOW = "(SELECT now FROM t)"

HUB = ("INSERT INTO durable_hubs (account, name) VALUES (%(a)s, %(n)s) ON CONFLICT (account, name) "
       "DO UPDATE SET name = EXCLUDED.name RETURNING hub_id")

INSTANCE = ("instance_id, kind, name, version, execution_id, status, input, output, custom_status, created_time, "
            "last_updated_time, parent_instance_id, entity_exists, entity_state")

# An instance nobody holds (or whose holder's lease lapsed).
_FREE = f"(i.lease_expires IS NULL OR i.lease_expires <= {NOW})"
_RETURNED = ", ".join(f"i.{column}" for column in INSTANCE.split(", "))

GET = f"SELECT {INSTANCE} FROM durable_instances WHERE hub_id = %(h)s AND instance_id = %(i)s"

HISTORY = ("SELECT '[' || coalesce(string_agg(event, ',' ORDER BY seq), '') || ']' FROM durable_history "
           "WHERE hub_id = %(h)s AND instance_id = %(i)s")

# An orchestration created (or replaced), taken for `owner` when its start is due now: the rows
# `LOCK` returns (one row of NULLs when nothing was taken), the status that refused it last.
CREATE = ("SELECT * FROM durable_create_claim(%(h)s, %(now)s, %(ref)s, %(i)s, %(nm)s, %(ver)s, %(x)s, %(inp)s, "
          "%(started)s, %(par)s, %(vis)s, %(dedupe)s, %(owner)s, %(lease)s)")

SEND = (f"{_T} SELECT durable_send(%(h)s, now, shift, %(ids)s, %(execs)s, %(events)s, %(vis)s, %(ctl)s) FROM t")

COMMIT = ("SELECT * FROM durable_commit(%(h)s, %(now)s, %(ref)s, %(i)s, %(token)s, %(keep)s, %(st)s, %(x)s, %(inp)s, "
          "%(outp)s, %(cust)s, %(nm)s, %(ver)s, %(ent_exists)s, %(ent_state)s, %(consumed)s, %(reset)s, "
          "%(history)s, %(m_ids)s, %(m_execs)s, %(m_events)s, %(m_vis)s, %(m_ctl)s, %(a_execs)s, %(a_tasks)s, "
          "%(a_names)s, %(a_inputs)s, %(n_ids)s, %(n_names)s, %(n_versions)s, %(n_execs)s, %(n_inputs)s, "
          "%(n_started)s, %(n_parents)s, %(n_vis)s, %(claim_owner)s, %(claim_lease)s, %(claim_limit)s)")

# Activity results, with the orchestrations they wake taken for the hosts that ask (`owners`):
# the rows `LOCK` returns (one row of NULLs when nothing was taken), the delivered ids last.
COMPLETE = ("SELECT * FROM durable_complete_claim(%(h)s, %(now)s, %(ref)s, %(a_ids)s, %(tokens)s, %(ids)s, %(execs)s, "
            "%(events)s, %(vis)s, %(ctl)s, %(owners)s, %(leases)s)")

# Up to `limit` instances of a kind with visible messages and no live lease, taken under a new
# token in one statement (rows another host is taking are skipped, not waited for), with their
# visible messages (control ones only while suspended; at most `batch`) and their history; and,
# in the last column of every row (one row of NULLs when nothing was taken), when the kind's next
# message not yet visible (a timer) comes due, so an idle poll costs one round trip, not two.
LOCK = f"""{_T},
ready AS (
    SELECT m.instance_id, min(m.id) AS first_id, bool_or(m.control) AS control FROM durable_inbox m
    WHERE m.hub_id = %(h)s AND m.kind = %(k)s AND m.visible_at <= {NOW} GROUP BY m.instance_id),
picked AS (
    SELECT i.instance_id FROM ready r JOIN durable_instances i ON i.hub_id = %(h)s AND i.instance_id = r.instance_id
    WHERE {_FREE} AND (i.status <> 'Suspended' OR r.control)
    ORDER BY r.first_id LIMIT %(limit)s FOR UPDATE OF i SKIP LOCKED),
locked AS (
    UPDATE durable_instances i SET lease_token = %(owner)s || ':' || gen_random_uuid(),
        lease_expires = {NOW} + %(lease)s
    WHERE i.hub_id = %(h)s AND i.instance_id = ANY(ARRAY(SELECT instance_id FROM picked))
    RETURNING {_RETURNED}, i.lease_token)
SELECT w.*, (SELECT min(visible_at) FROM durable_inbox WHERE hub_id = %(h)s AND kind = %(k)s
                AND visible_at > {NOW}) - (SELECT shift FROM t)
FROM (SELECT 1) one LEFT JOIN (
    SELECT l.*, m.ids, m.execs, m.events, m.visible, (SELECT shift FROM t),
        CASE WHEN %(history)s THEN (SELECT '[' || coalesce(string_agg(x.event, ',' ORDER BY x.seq), '') || ']'
            FROM durable_history x WHERE x.hub_id = %(h)s AND x.instance_id = l.instance_id) END
    FROM locked l CROSS JOIN LATERAL (
        SELECT array_agg(s.id ORDER BY s.id) AS ids, array_agg(s.execution_id ORDER BY s.id) AS execs,
            '[' || string_agg(s.event, ',' ORDER BY s.id) || ']' AS events,
            array_agg(s.visible_at ORDER BY s.id) AS visible
        FROM (SELECT id, execution_id, event, visible_at FROM durable_inbox m
              WHERE m.hub_id = %(h)s AND m.instance_id = l.instance_id AND m.visible_at <= {NOW}
                AND (l.status <> 'Suspended' OR m.control)
              ORDER BY m.id LIMIT %(batch)s) s) m) w ON true"""

RELEASE = ("UPDATE durable_instances SET lease_token = NULL, lease_expires = NULL "
           "WHERE hub_id = %(h)s AND instance_id = %(i)s AND lease_token = %(token)s")

RENEW = (f"{_T} UPDATE durable_instances SET lease_expires = %(until)s + (SELECT shift FROM t) "
         "WHERE hub_id = %(h)s AND instance_id = %(i)s AND lease_token = %(token)s")

NEXT_VISIBLE = (f"{_T} SELECT min(visible_at) - (SELECT shift FROM t) FROM durable_inbox "
                f"WHERE hub_id = %(h)s AND kind = %(k)s AND visible_at > {NOW}")

LOCK_ACTIVITIES = f"""{_T},
picked AS (
    SELECT id FROM durable_activities WHERE hub_id = %(h)s AND visible_at <= {NOW}
    ORDER BY id LIMIT %(limit)s FOR NO KEY UPDATE SKIP LOCKED)
UPDATE durable_activities a SET lease_token = %(owner)s || ':' || gen_random_uuid(),
    visible_at = {NOW} + %(lease)s, dequeue_count = a.dequeue_count + 1
WHERE a.hub_id = %(h)s AND a.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING a.id, a.instance_id, a.execution_id, a.task_id, a.name, a.input, a.dequeue_count, a.lease_token"""

RELEASE_ACTIVITY = ("UPDATE durable_activities SET lease_token = NULL, visible_at = ready_at "
                    "WHERE hub_id = %(h)s AND id = %(id)s AND lease_token = %(token)s")

RENEW_ACTIVITY = (f"{_T} UPDATE durable_activities SET visible_at = %(until)s + (SELECT shift FROM t) "
                  "WHERE hub_id = %(h)s AND id = %(id)s AND lease_token = %(token)s")

PURGE = """WITH i AS (DELETE FROM durable_instances WHERE hub_id = %(h)s AND instance_id = ANY(%(ids)s) RETURNING 1),
hx AS (DELETE FROM durable_history WHERE hub_id = %(h)s AND instance_id = ANY(%(ids)s)),
m AS (DELETE FROM durable_inbox WHERE hub_id = %(h)s AND instance_id = ANY(%(ids)s)),
a AS (DELETE FROM durable_activities WHERE hub_id = %(h)s AND instance_id = ANY(%(ids)s))
SELECT count(*) FROM i"""

COUNTS = """SELECT (SELECT json_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM durable_instances
                    WHERE hub_id = %(h)s AND kind = 'orchestration' GROUP BY status) s),
       (SELECT count(*) FROM durable_inbox WHERE hub_id = %(h)s),
       (SELECT count(*) FROM durable_activities WHERE hub_id = %(h)s)"""

"""The task hub's tables and server functions on PostgreSQL (`postgres.durable` calls them).

The layout follows durabletask-mssql (Instances / History / NewEvents / NewTasks): every hub of
the database shares four tables keyed by `hub_id` (`durable_hubs` names them by account and hub
name). Events stay JSON text. The inbox's `kind` is derived from the instance id (entities start
with ``@``) so the ready scan needs no join to find its kind.

Times are epoch seconds. Every function takes `p_now` (NULL: the server's `clock_timestamp()`;
a ManualClock's time otherwise) and `p_ref`, the caller's own `now`: an absolute time the caller
computed (a timer's fire time) is stored shifted by `now - p_ref`, so hosts whose clocks disagree
still agree on when a timer is due (the shift is 0 when the caller's clock drives time).

The functions are the units of work of the port (PL/pgSQL, whose statement plans each session
keeps, where a SQL-language function would plan its statements on every call): each runs in the one transaction of its call,
so an episode's commit is one round trip. A commit first moves the instance row under the
caller's lease token; no row means the lease was lost and the function returns false having
written nothing (durabletask-mssql's History primary key is the second fence here too).
"""

from __future__ import annotations

from funchost.storage.postgres import durable_session

COMPONENT = "durable"

_TABLES = """
CREATE TABLE durable_hubs (
    hub_id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    UNIQUE (account, name)
);
CREATE TABLE durable_instances (
    hub_id integer NOT NULL,
    instance_id text COLLATE "C" NOT NULL,
    kind text NOT NULL,
    name text NOT NULL,
    version text NOT NULL DEFAULT '',
    execution_id text NOT NULL DEFAULT '',
    status text NOT NULL,
    input text,
    output text,
    custom_status text,
    created_time float8 NOT NULL,
    last_updated_time float8 NOT NULL,
    parent_instance_id text,
    entity_exists boolean NOT NULL DEFAULT false,
    entity_state text,
    lease_token text,
    lease_expires float8,
    PRIMARY KEY (hub_id, instance_id)
) WITH (fillfactor = 80);
CREATE INDEX durable_instances_created ON durable_instances (hub_id, kind, created_time, instance_id);
CREATE TABLE durable_history (
    hub_id integer NOT NULL,
    instance_id text COLLATE "C" NOT NULL,
    seq integer NOT NULL,
    event text NOT NULL,
    PRIMARY KEY (hub_id, instance_id, seq)
);
CREATE TABLE durable_inbox (
    hub_id integer NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    instance_id text COLLATE "C" NOT NULL,
    kind text GENERATED ALWAYS AS (CASE WHEN starts_with(instance_id, '@') THEN 'entity'
                                        ELSE 'orchestration' END) STORED,
    execution_id text,
    event text NOT NULL,
    visible_at float8 NOT NULL,
    control boolean NOT NULL DEFAULT false,
    PRIMARY KEY (hub_id, id)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.05);
CREATE INDEX durable_inbox_instance ON durable_inbox (hub_id, instance_id, id);
CREATE INDEX durable_inbox_visible ON durable_inbox (hub_id, kind, visible_at);
CREATE TABLE durable_activities (
    hub_id integer NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    instance_id text COLLATE "C" NOT NULL,
    execution_id text NOT NULL,
    task_id integer NOT NULL,
    name text NOT NULL,
    input text,
    ready_at float8 NOT NULL,
    visible_at float8 NOT NULL,
    dequeue_count integer NOT NULL DEFAULT 0,
    lease_token text,
    PRIMARY KEY (hub_id, id)
) WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.05);
-- A leased activity is invisible until its lease lapses (`visible_at`, as an Azure queue message);
-- a released one is visible again from `ready_at`, when it was first queued.
CREATE INDEX durable_activities_visible ON durable_activities (hub_id, visible_at, id);
CREATE INDEX durable_activities_instance ON durable_activities (hub_id, instance_id);
"""

# Inbox messages: arrays of one length (instance ids, execution ids, events, absolute visible
# times or NULL for "now", control flags). Entities are created by their first message.
_SEND = """
CREATE FUNCTION durable_send(h integer, v_now float8, v_shift float8, ids text[], execs text[], events text[],
                             visible float8[], controls boolean[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM unnest(ids) i WHERE starts_with(i, '@')) THEN
        INSERT INTO durable_instances (hub_id, instance_id, kind, name, status, created_time, last_updated_time)
        SELECT DISTINCT h, i, 'entity', split_part(substr(i, 2), '@', 1), 'Running', v_now, v_now
        FROM unnest(ids) i WHERE starts_with(i, '@')
        ON CONFLICT (hub_id, instance_id) DO NOTHING;
    END IF;
    INSERT INTO durable_inbox (hub_id, instance_id, execution_id, event, visible_at, control)
    SELECT h, m.i, m.x, m.e, coalesce(m.v + v_shift, v_now), m.c
    FROM unnest(ids, execs, events, visible, controls) WITH ORDINALITY AS m(i, x, e, v, c, n) ORDER BY m.n;
END $$;"""

# Create (or replace) orchestrations with their ExecutionStarted message: the old execution's
# history, messages and work items go. Returns the status that refused it (in `dedupe`), or NULL.
_REPLACE = """
CREATE FUNCTION durable_replace(h integer, v_now float8, v_shift float8, ids text[], names text[], versions text[],
                                execs text[], inputs text[], started text[], parents text[], visible float8[])
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM durable_history WHERE hub_id = h AND instance_id = ANY(ids);
    DELETE FROM durable_inbox WHERE hub_id = h AND instance_id = ANY(ids);
    DELETE FROM durable_activities WHERE hub_id = h AND instance_id = ANY(ids);
    INSERT INTO durable_instances AS d (hub_id, instance_id, kind, name, version, execution_id, status, input,
                                        created_time, last_updated_time, parent_instance_id)
    SELECT h, n.i, 'orchestration', n.nm, n.ver, n.x, 'Pending', n.inp, v_now, v_now, n.par
    FROM unnest(ids, names, versions, execs, inputs, parents) AS n(i, nm, ver, x, inp, par)
    ON CONFLICT (hub_id, instance_id) DO UPDATE SET kind = 'orchestration', name = EXCLUDED.name,
        version = EXCLUDED.version, execution_id = EXCLUDED.execution_id, status = 'Pending',
        input = EXCLUDED.input, output = NULL, custom_status = NULL, created_time = v_now,
        last_updated_time = v_now, parent_instance_id = EXCLUDED.parent_instance_id, entity_exists = false,
        entity_state = NULL, lease_token = NULL, lease_expires = NULL;
    PERFORM durable_send(h, v_now, v_shift, ids, execs, started, visible,
                         array_fill(false, ARRAY[cardinality(ids)]));
END $$;
CREATE FUNCTION durable_create(h integer, p_now float8, p_ref float8, i text, nm text, ver text, x text, inp text,
                               started text, par text, visible float8, dedupe text[])
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    prior text;
BEGIN
    SELECT status INTO prior FROM durable_instances WHERE hub_id = h AND instance_id = i FOR UPDATE;
    IF prior = ANY(dedupe) THEN
        RETURN prior;
    END IF;
    PERFORM durable_replace(h, v_now, v_now - p_ref, ARRAY[i], ARRAY[nm], ARRAY[ver], ARRAY[x], ARRAY[inp],
                            ARRAY[started], ARRAY[par], ARRAY[visible]);
    RETURN NULL;
END $$;
"""

# An episode's (or entity batch's) outcome under the lease `token` (`ok` false: the lease was lost,
# nothing written); the first `claim_limit` new activities leased to `claim_owner` at once, and
# whether the instance still has visible messages.
COMMIT_PARAMS = """i text, token text, keep boolean,
    st text, x text, inp text, outp text, cust text, nm text, ver text, ent_exists boolean, ent_state text,
    consumed bigint[], reset boolean, history text[],
    m_ids text[], m_execs text[], m_events text[], m_visible float8[], m_controls boolean[],
    a_execs text[], a_tasks integer[], a_names text[], a_inputs text[],
    n_ids text[], n_names text[], n_versions text[], n_execs text[], n_inputs text[], n_started text[],
    n_parents text[], n_visible float8[], claim_owner text, claim_lease float8, claim_limit integer"""
_COMMIT = f"""
CREATE FUNCTION durable_commit(h integer, p_now float8, p_ref float8, {COMMIT_PARAMS},
    OUT ok boolean, OUT claimed bigint[], OUT claimed_tasks integer[], OUT claimed_tokens text[], OUT pending boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    v_shift float8 := v_now - p_ref;
    start integer;
BEGIN
    ok := false;
    UPDATE durable_instances SET status = st, execution_id = x, input = inp, output = outp, custom_status = cust,
        name = coalesce(nm, name), version = coalesce(ver, version), entity_exists = ent_exists,
        entity_state = ent_state, last_updated_time = v_now,
        lease_token = CASE WHEN keep THEN lease_token END, lease_expires = CASE WHEN keep THEN lease_expires END
    WHERE hub_id = h AND instance_id = i AND lease_token = token;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    ok := true;
    IF cardinality(consumed) > 0 THEN
        DELETE FROM durable_inbox WHERE hub_id = h AND id = ANY(consumed);
    END IF;
    IF reset THEN
        DELETE FROM durable_history WHERE hub_id = h AND instance_id = i;
    END IF;
    IF cardinality(history) > 0 THEN
        SELECT coalesce(max(seq), -1) + 1 INTO start FROM durable_history WHERE hub_id = h AND instance_id = i;
        INSERT INTO durable_history (hub_id, instance_id, seq, event)
        SELECT h, i, start + e.n::integer - 1, e.ev FROM unnest(history) WITH ORDINALITY AS e(ev, n);
    END IF;
    IF cardinality(n_ids) > 0 THEN
        PERFORM durable_replace(h, v_now, v_shift, n_ids, n_names, n_versions, n_execs, n_inputs, n_started,
                                n_parents, n_visible);
    END IF;
    IF cardinality(a_tasks) > 0 THEN
        WITH added AS (
            INSERT INTO durable_activities (hub_id, instance_id, execution_id, task_id, name, input, ready_at,
                                            visible_at, dequeue_count, lease_token)
            SELECT h, i, a.x, a.t, a.nm, a.inp, v_now, CASE WHEN a.claim THEN v_now + claim_lease ELSE v_now END,
                   CASE WHEN a.claim THEN 1 ELSE 0 END,
                   CASE WHEN a.claim THEN claim_owner || ':' || gen_random_uuid() END
            FROM (SELECT u.*, u.n <= coalesce(claim_limit, 0) AS claim
                  FROM unnest(a_execs, a_tasks, a_names, a_inputs) WITH ORDINALITY AS u(x, t, nm, inp, n)) a
            ORDER BY a.n
            RETURNING id, task_id, lease_token)
        SELECT array_agg(added.id), array_agg(added.task_id), array_agg(added.lease_token)
        INTO claimed, claimed_tasks, claimed_tokens FROM added WHERE added.lease_token IS NOT NULL;
    END IF;
    IF cardinality(m_ids) > 0 THEN
        PERFORM durable_send(h, v_now, v_shift, m_ids, m_execs, m_events, m_visible, m_controls);
    END IF;
    pending := EXISTS (SELECT 1 FROM durable_inbox WHERE hub_id = h AND instance_id = i AND visible_at <= v_now);
END $$;
"""

# Activities' results, each delivered if its caller still holds the activity's lease; returns the
# ids delivered (the others' leases were lost). One call completes every activity that finished
# while the previous call ran (`postgres.durable_group`).
_COMPLETE = """
CREATE FUNCTION durable_complete(h integer, p_now float8, p_ref float8, a_ids bigint[], tokens text[],
                                 ids text[], execs text[], events text[], visible float8[], controls boolean[])
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    done bigint[];
    s_ids text[];
    s_execs text[];
    s_events text[];
    s_visible float8[];
    s_controls boolean[];
BEGIN
    WITH d AS (DELETE FROM durable_activities a WHERE a.hub_id = h AND a.id = ANY(a_ids)
                 AND a.lease_token = tokens[array_position(a_ids, a.id)] RETURNING a.id)
    SELECT coalesce(array_agg(d.id), '{}') INTO done FROM d;
    IF cardinality(done) = 0 THEN
        RETURN done;
    END IF;
    SELECT array_agg(r.i ORDER BY r.n), array_agg(r.x ORDER BY r.n), array_agg(r.e ORDER BY r.n),
           array_agg(r.v ORDER BY r.n), array_agg(r.c ORDER BY r.n)
    INTO s_ids, s_execs, s_events, s_visible, s_controls
    FROM (SELECT DISTINCT ON (m.a) m.* FROM unnest(a_ids, ids, execs, events, visible, controls)
          WITH ORDINALITY AS m(a, i, x, e, v, c, n) WHERE m.a = ANY(done) ORDER BY m.a, m.n) r;
    PERFORM durable_send(h, v_now, v_now - p_ref, s_ids, s_execs, s_events, s_visible, s_controls);
    RETURN done;
END $$;
"""

# Step 2: work a statement takes for the host that wrote it. `durable_take` leases to `owners[n]`
# (for `leases[n]` seconds) each orchestration `ids[n]` that nobody holds, is not suspended, has a
# visible message and no other transaction is taking (SKIP LOCKED), and returns it as `LOCK` does
# (instance, token, visible messages, shift, history). `durable_complete_claim` delivers activity
# results and takes the instances they wake for the completions that ask (`owners[n]` set) and
# have no other activity outstanding (a fan-out's results wait to be taken together): the ids
# delivered are in every row (one row of NULLs and `o_done` when nothing was taken);
# `durable_create_claim` creates an orchestration and takes it when its start is due now.
# `durable_complete` and `durable_create` stay (and are called): hosts of the previous version
# keep working until they are upgraded.
TAKEN = """o_instance_id text, o_kind text, o_name text, o_version text, o_execution_id text, o_status text,
    o_input text, o_output text, o_custom_status text, o_created_time float8, o_last_updated_time float8,
    o_parent_instance_id text, o_entity_exists boolean, o_entity_state text, o_token text, o_ids bigint[],
    o_execs text[], o_events text, o_visible float8[], o_shift float8, o_history text"""
_TAKE = f"""
CREATE FUNCTION durable_take(h integer, v_now float8, v_shift float8, ids text[], owners text[], leases float8[])
RETURNS TABLE ({TAKEN}) LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
BEGIN
    RETURN QUERY
    WITH wanted AS (
        SELECT DISTINCT ON (w.inst) w.inst, w.own, w.lse FROM unnest(ids, owners, leases)
            WITH ORDINALITY AS w(inst, own, lse, n)
        WHERE w.own IS NOT NULL ORDER BY w.inst, w.n),
    picked AS (
        SELECT i.instance_id, w.own, w.lse FROM wanted w
        JOIN durable_instances i ON i.hub_id = h AND i.instance_id = w.inst
        WHERE i.kind = 'orchestration' AND i.status <> 'Suspended'
          AND (i.lease_expires IS NULL OR i.lease_expires <= v_now)
          AND EXISTS (SELECT 1 FROM durable_inbox m WHERE m.hub_id = h AND m.instance_id = i.instance_id
                        AND m.visible_at <= v_now)
        FOR UPDATE OF i SKIP LOCKED),
    locked AS (
        UPDATE durable_instances i SET lease_token = p.own || ':' || gen_random_uuid(), lease_expires = v_now + p.lse
        FROM picked p WHERE i.hub_id = h AND i.instance_id = p.instance_id
        RETURNING i.instance_id, i.kind, i.name, i.version, i.execution_id, i.status, i.input, i.output,
            i.custom_status, i.created_time, i.last_updated_time, i.parent_instance_id, i.entity_exists,
            i.entity_state, i.lease_token)
    SELECT l.*, m.*, v_shift,
        (SELECT '[' || coalesce(string_agg(y.event, ',' ORDER BY y.seq), '') || ']' FROM durable_history y
         WHERE y.hub_id = h AND y.instance_id = l.instance_id)
    FROM locked l CROSS JOIN LATERAL (
        SELECT array_agg(s.id ORDER BY s.id), array_agg(s.execution_id ORDER BY s.id),
            '[' || string_agg(s.event, ',' ORDER BY s.id) || ']', array_agg(s.visible_at ORDER BY s.id)
        FROM durable_inbox s WHERE s.hub_id = h AND s.instance_id = l.instance_id AND s.visible_at <= v_now) m;
END $$;
CREATE FUNCTION durable_complete_claim(h integer, p_now float8, p_ref float8, a_ids bigint[], tokens text[],
    ids text[], execs text[], events text[], visible float8[], controls boolean[], owners text[], leases float8[])
RETURNS TABLE ({TAKEN}, o_done bigint[]) LANGUAGE plpgsql AS $$
DECLARE
    done bigint[] := durable_complete(h, p_now, p_ref, a_ids, tokens, ids, execs, events, visible, controls);
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
BEGIN
    RETURN QUERY SELECT t.*, done FROM (SELECT 1) one LEFT JOIN LATERAL durable_take(h, v_now, v_now - p_ref,
        ARRAY(SELECT w.i FROM unnest(a_ids, ids) WITH ORDINALITY AS w(a, i, n) ORDER BY w.n),
        ARRAY(SELECT CASE WHEN w.a = ANY(done) AND NOT EXISTS (SELECT 1 FROM durable_activities x
                                                               WHERE x.hub_id = h AND x.instance_id = w.i)
                          THEN w.o END
              FROM unnest(a_ids, ids, owners) WITH ORDINALITY AS w(a, i, o, n) ORDER BY w.n), leases) t ON true;
END $$;
CREATE FUNCTION durable_create_claim(h integer, p_now float8, p_ref float8, i text, nm text, ver text, x text,
    inp text, started text, par text, visible float8, dedupe text[], owner text, lease float8)
RETURNS TABLE ({TAKEN}, o_refused text) LANGUAGE plpgsql AS $$
DECLARE
    refused text := durable_create(h, p_now, p_ref, i, nm, ver, x, inp, started, par, visible, dedupe);
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
BEGIN
    RETURN QUERY SELECT t.*, refused FROM (SELECT 1) one LEFT JOIN LATERAL durable_take(h, v_now, v_now - p_ref,
        ARRAY[i], ARRAY[CASE WHEN refused IS NULL THEN owner END], ARRAY[lease]) t ON true;
END $$;
"""

# Step 2 also: a start whose instance id is new inserts its row and ExecutionStarted directly (no old
# execution to remove: the replacement's three deletes and the entity check were a third of a
# start's time); an id that exists, or one created meanwhile (the insert conflicts), is replaced
# as before.
_CREATE_NEW = """
CREATE OR REPLACE FUNCTION durable_create(h integer, p_now float8, p_ref float8, i text, nm text, ver text, x text,
                                          inp text, started text, par text, visible float8, dedupe text[])
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    prior text;
BEGIN
    SELECT status INTO prior FROM durable_instances WHERE hub_id = h AND instance_id = i FOR UPDATE;
    IF prior = ANY(dedupe) THEN
        RETURN prior;
    END IF;
    IF prior IS NULL THEN
        INSERT INTO durable_instances (hub_id, instance_id, kind, name, version, execution_id, status, input,
                                       created_time, last_updated_time, parent_instance_id)
        VALUES (h, i, 'orchestration', nm, ver, x, 'Pending', inp, v_now, v_now, par)
        ON CONFLICT (hub_id, instance_id) DO NOTHING;
        IF FOUND THEN
            INSERT INTO durable_inbox (hub_id, instance_id, execution_id, event, visible_at, control)
            VALUES (h, i, x, started, coalesce(visible + (v_now - p_ref), v_now), false);
            RETURN NULL;
        END IF;
    END IF;
    PERFORM durable_replace(h, v_now, v_now - p_ref, ARRAY[i], ARRAY[nm], ARRAY[ver], ARRAY[x], ARRAY[inp],
                            ARRAY[started], ARRAY[par], ARRAY[visible]);
    RETURN NULL;
END $$;
"""

# Step 3: a start whose new-id insert conflicts (another host created the id after this start
# looked) reads the status again and honours the dedupe statuses before it replaces anything: the
# other host's fresh instance is refused over, as it would have been a moment later.
_NEW_ID_INSERTED = """            RETURN NULL;
        END IF;
    END IF;"""
_CREATE_RACE = _CREATE_NEW.replace(_NEW_ID_INSERTED, """            RETURN NULL;
        END IF;
        SELECT status INTO prior FROM durable_instances WHERE hub_id = h AND instance_id = i FOR UPDATE;
        IF prior = ANY(dedupe) THEN
            RETURN prior;
        END IF;
    END IF;""")
if _CREATE_RACE == _CREATE_NEW:  # step 2's text is fixed, so this holds; a silent no-op step would not be seen
    raise RuntimeError("durable migration step 3 no longer finds the end of step 2's new-id branch")

# Step 5: a start whose instance id is new and whose start is due now inserts the row already
# leased to `owner` and returns it with its one message, as `durable_take` would have: the generic
# take (a lateral join, an inbox probe, a history aggregate) was a third of the server's time for a
# one-activity orchestration. An id that exists (the insert conflicts, after waiting for a start of
# the same id that is not yet committed) or a start scheduled for later goes the step-3 way.
_CREATE_LEASED = f"""
CREATE OR REPLACE FUNCTION durable_create_claim(h integer, p_now float8, p_ref float8, i text, nm text, ver text,
    x text, inp text, started text, par text, visible float8, dedupe text[], owner text, lease float8)
RETURNS TABLE ({TAKEN}, o_refused text) LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    token text;
    message bigint;
    refused text;
BEGIN
    IF owner IS NOT NULL AND visible IS NULL THEN
        token := owner || ':' || gen_random_uuid();
        INSERT INTO durable_instances (hub_id, instance_id, kind, name, version, execution_id, status, input,
                                       created_time, last_updated_time, parent_instance_id, lease_token,
                                       lease_expires)
        VALUES (h, i, 'orchestration', nm, ver, x, 'Pending', inp, v_now, v_now, par, token, v_now + lease)
        ON CONFLICT (hub_id, instance_id) DO NOTHING;
        IF FOUND THEN
            INSERT INTO durable_inbox (hub_id, instance_id, execution_id, event, visible_at, control)
            VALUES (h, i, x, started, v_now, false) RETURNING id INTO message;
            RETURN QUERY SELECT i, 'orchestration'::text, nm, ver, x, 'Pending'::text, inp, NULL::text, NULL::text,
                v_now, v_now, par, false, NULL::text, token, ARRAY[message], ARRAY[x], '[' || started || ']',
                ARRAY[v_now], v_now - p_ref, '[]'::text, NULL::text;
            RETURN;
        END IF;
    END IF;
    refused := durable_create(h, p_now, p_ref, i, nm, ver, x, inp, started, par, visible, dedupe);
    RETURN QUERY SELECT t.*, refused FROM (SELECT 1) one LEFT JOIN LATERAL durable_take(h, v_now, v_now - p_ref,
        ARRAY[i], ARRAY[CASE WHEN refused IS NULL THEN owner END], ARRAY[lease]) t ON true;
END $$;
"""

# Step 4: an extended session's step, an activity's completion with the next episode (`durable_session`).
STEPS = [_TABLES + _SEND + _REPLACE + _COMMIT + _COMPLETE, _TAKE + _CREATE_NEW, _CREATE_RACE,
         durable_session.step(COMMIT_PARAMS, TAKEN), _CREATE_LEASED]

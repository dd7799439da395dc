"""An extended session's step on PostgreSQL: an activity's completion and the episode that
consumed its result, in one server function call (`TaskHub.commit_session`).

`durable_session_commit` (migration step 4 of `durable_schema`) deletes the activity under its
lease token (not held: it gives the instance's lease up and writes nothing else), then runs
`durable_commit` when the instance has no visible inbox message, which moves the instance row
only under the session's token (no separate lock or read of the row); otherwise, or when the
token was not held, it delivers the result to the inbox as `durable_complete` does, gives
the instance's lease up and takes the instance again for `owner` (`durable_take`) when no other
activity of it is outstanding. One row: the `durable_take` columns (NULLs when nothing was
taken), then the outcome ('committed', 'delivered' or 'lost') and `durable_commit`'s outputs.
"""

from __future__ import annotations


def step(commit_params: str, taken: str) -> str:
    """The migration step, given `durable_commit`'s parameters and `durable_take`'s columns."""
    nulls = ", ".join(f"NULL::{column.split()[1]}" for column in taken.split(","))  # nothing taken
    return _STEP.replace("{COMMIT_PARAMS}", commit_params).replace("{TAKEN}", taken).replace("{NULLS}", nulls)


_STEP = """
CREATE FUNCTION durable_session_commit(h integer, p_now float8, p_ref float8, act bigint, act_token text,
    r_exec text, r_event text, {COMMIT_PARAMS}, owner text, lease float8)
RETURNS TABLE ({TAKEN}, o_state text, o_claimed bigint[], o_tasks integer[], o_tokens text[], o_pending boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_now float8 := coalesce(p_now, extract(epoch FROM clock_timestamp()));
    c record;
BEGIN
    DELETE FROM durable_activities WHERE hub_id = h AND id = act AND lease_token = act_token;
    IF NOT FOUND THEN
        UPDATE durable_instances SET lease_token = NULL, lease_expires = NULL
        WHERE hub_id = h AND instance_id = i AND lease_token = token;
        RETURN QUERY SELECT {NULLS}, 'lost'::text, NULL::bigint[], NULL::integer[], NULL::text[], NULL::boolean;
        RETURN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM durable_inbox m WHERE m.hub_id = h AND m.instance_id = i AND m.visible_at <= v_now)
    THEN
        SELECT * INTO c FROM durable_commit(h, p_now, p_ref, i, token, keep, st, x, inp, outp, cust, nm, ver,
            ent_exists, ent_state, consumed, reset, history, m_ids, m_execs, m_events, m_visible, m_controls,
            a_execs, a_tasks, a_names, a_inputs, n_ids, n_names, n_versions, n_execs, n_inputs, n_started,
            n_parents, n_visible, claim_owner, claim_lease, claim_limit);
        IF c.ok THEN  -- the token still held: the instance row moved under it
            RETURN QUERY SELECT {NULLS}, 'committed'::text, c.claimed, c.claimed_tasks, c.claimed_tokens, c.pending;
            RETURN;
        END IF;
    END IF;
    PERFORM durable_send(h, v_now, v_now - p_ref, ARRAY[i], ARRAY[r_exec], ARRAY[r_event], ARRAY[NULL::float8],
                         ARRAY[false]);
    UPDATE durable_instances SET lease_token = NULL, lease_expires = NULL
    WHERE hub_id = h AND instance_id = i AND lease_token = token;
    RETURN QUERY SELECT t.*, 'delivered'::text, NULL::bigint[], NULL::integer[], NULL::text[], NULL::boolean
        FROM (SELECT 1) one LEFT JOIN LATERAL durable_take(h, v_now, v_now - p_ref, ARRAY[i],
            ARRAY[CASE WHEN NOT EXISTS (SELECT 1 FROM durable_activities y WHERE y.hub_id = h AND y.instance_id = i)
                       THEN owner END], ARRAY[lease]) t ON true;
END $$;
"""

COMMIT_SESSION = (
    "SELECT * FROM durable_session_commit(%(h)s, %(now)s, %(ref)s, %(act)s, %(act_token)s, %(r_exec)s, "
    "%(r_event)s, %(i)s, %(token)s, %(keep)s, %(st)s, %(x)s, %(inp)s, %(outp)s, %(cust)s, %(nm)s, %(ver)s, "
    "%(ent_exists)s, %(ent_state)s, %(consumed)s, %(reset)s, %(history)s, %(m_ids)s, %(m_execs)s, %(m_events)s, "
    "%(m_vis)s, %(m_ctl)s, %(a_execs)s, %(a_tasks)s, %(a_names)s, %(a_inputs)s, %(n_ids)s, %(n_names)s, "
    "%(n_versions)s, %(n_execs)s, %(n_inputs)s, %(n_started)s, %(n_parents)s, %(n_vis)s, %(claim_owner)s, "
    "%(claim_lease)s, %(claim_limit)s, %(owner)s, %(lease)s)")

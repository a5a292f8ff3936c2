"""The heartbeat fences a stale session: `liza_heartbeat_v3`.

`liza_heartbeat_v2` (migration 0034) with one argument more, `p_generation` (the generation the
heartbeating process registered as, its `Liza-Generation` header; NULL when it sent none), and
one check more, after `disabled` and before `left`: a generation older than the agent row's
(`agents_agent.generation`, one more at every `agent_register`; agents migration 0011) is
answered `superseded`, nothing written. Without it a process whose lease lapsed while it hung,
its id registered again since by a new process, came back and extended the new session's
leases as if they were its own. The rule is `availability.superseded_refusal`; the service
raises this answer through it as `not_registered` (409, exit 8).

`superseded` comes after `disabled` (a disabled agent is refused whatever its session) and
before `left` (the stale process's answer is that another session replaced it, whether or not
that one has left since). Without a generation the function is v2's, unchanged.

v2 stays: a server of the previous release calls it until it is replaced. Versioned: a change
of the rules is a new function (`_v4`) in a new migration, never an edit of this one.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION liza_heartbeat_v3(
    p_agent bigint, p_now timestamptz, p_lease integer, p_grace integer,
    p_context integer, p_progress_at timestamptz, p_stale boolean,
    p_claimed text, p_reviewer_role text, p_ready_from text, p_ready_to text,
    p_generation bigint
) RETURNS TABLE (
    outcome text, agent_row agents_agent, task_row boards_task, review_row boards_review,
    review_task_row boards_task
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    a agents_agent;
    t boards_task;
    r boards_review;
    reviews bigint[] := '{}';
    agent_lease timestamptz := p_now + make_interval(secs => p_lease);
BEGIN
    SELECT * INTO a FROM agents_agent WHERE id = p_agent FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    IF NOT a.enabled THEN
        RETURN QUERY SELECT 'disabled'::text, a, t, r, t;
        RETURN;
    END IF;
    -- A process of a superseded session (its id registered again since): it acts for no one
    -- (nothing written). The one rule is availability.superseded_refusal; this is it in SQL,
    -- on the row just locked, so a registration that committed while it waited is seen.
    IF p_generation IS NOT NULL AND p_generation < a.generation THEN
        RETURN QUERY SELECT 'superseded'::text, a, t, r, t;
        RETURN;
    END IF;
    -- It left and has not registered since: no session to extend (nothing written).
    IF a.left_at IS NOT NULL THEN
        RETURN QUERY SELECT 'left'::text, a, t, r, t;
        RETURN;
    END IF;
    IF a.lost_task_id IS NOT NULL THEN
        SELECT * INTO t FROM boards_task WHERE id = a.lost_task_id;
        RETURN QUERY SELECT 'lost'::text, a, t, r, NULL::boards_task;
        RETURN;
    END IF;

    IF a.current_task_id IS NOT NULL THEN
        SELECT * INTO t FROM boards_task WHERE id = a.current_task_id FOR UPDATE;
        IF NOT FOUND THEN
            RETURN QUERY SELECT 'gone'::text, a, t, r, t;
            RETURN;
        END IF;
        IF t.status = p_claimed THEN
            -- lease_alive: the lease plus the grace still ahead of now, strictly.
            IF t.assigned_to <> a.agent_id OR t.lease_expires IS NULL
                OR NOT t.lease_expires + make_interval(secs => p_grace) > p_now THEN
                RETURN QUERY SELECT 'lease_lost'::text, a, t, r, NULL::boards_task;
                RETURN;
            END IF;
            IF NOT p_stale THEN
                UPDATE boards_task SET lease_expires = p_now + make_interval(
                    secs => coalesce(nullif(t.lease_duration_override, 0), p_lease))
                WHERE id = t.id RETURNING * INTO t;
            END IF;
        END IF;
        agent_lease := greatest(agent_lease, t.lease_expires);
    END IF;

    IF a.role = p_reviewer_role THEN
        FOR r IN
            SELECT rv.* FROM boards_review rv JOIN boards_task rt ON rt.id = rv.task_id
            WHERE rt.project_id = a.project_id AND rv.reviewer = a.agent_id
              AND rv.closed_at IS NULL AND rv.verdict = '' AND rv.lease_expires IS NOT NULL
            ORDER BY rv.id FOR UPDATE OF rv
        LOOP
            IF r.lease_expires + make_interval(secs => p_grace) > p_now THEN
                UPDATE boards_review rv SET lease_expires = p_now + make_interval(
                    secs => coalesce(nullif(rt.lease_duration_override, 0), p_lease))
                FROM boards_task rt
                WHERE rv.id = r.id AND rt.id = rv.task_id
                RETURNING rv.* INTO r;
            END IF;
            agent_lease := greatest(agent_lease, r.lease_expires);
            reviews := reviews || r.id;
        END LOOP;
    END IF;

    UPDATE agents_agent SET
        status = CASE WHEN status = p_ready_from THEN p_ready_to ELSE status END,
        heartbeat = p_now,
        lease_expires = agent_lease,
        context_percent = coalesce(p_context, context_percent),
        progress_at = coalesce(p_progress_at, progress_at)
    WHERE id = a.id RETURNING * INTO a;

    IF cardinality(reviews) > 0 THEN
        RETURN QUERY SELECT 'ok'::text, a, t, rv, rt
            FROM boards_review rv JOIN boards_task rt ON rt.id = rv.task_id
            WHERE rv.id = ANY(reviews) ORDER BY rv.id;
    ELSE
        r := NULL;
        RETURN QUERY SELECT 'ok'::text, a, t, r, NULL::boards_task;
    END IF;
END
$$;
"""

DROP = """
DROP FUNCTION liza_heartbeat_v3(
    bigint, timestamptz, integer, integer, integer, timestamptz, boolean, text, text, text, text,
    bigint
);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("boards", "0034_heartbeat_left_sql"),
        ("agents", "0011_agent_generation"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]

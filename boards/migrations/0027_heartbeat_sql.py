"""The heartbeat's rules in SQL, once (issue 26 item 1): `liza_heartbeat_v1`.

One call locks the agent, checks it and writes what a heartbeat writes (seed 002 "Lease
Model", SPEC §6), in the lock order of boards.coordination.services.locking (the agent, then
its task, then its reviews):

* `disabled` — the agent may not act; `lost` — the server took a task from it (`lost_task`,
  its next heartbeat must exit 42); nothing written, the row answered with the lost task.
* the coder's task, locked: a CLAIMED task that is no longer its own (taken over, or its lease
  dead past the grace, `lease_alive`) is `lease_lost`, nothing written; else its lease is
  extended to `now` + the task's lease (its override, else the project's) — not when the
  run's progress is stale (`p_stale`): that lease lapses. A task in any other state is
  answered as it is. `gone` — the task row vanished under the agent lock (never, in practice:
  deleting it clears `current_task_id` on the locked agent row first).
* a code reviewer's open review claims (no verdict, not closed, with a lease) of its project,
  locked in id order: each still alive (`lease_alive`) extended by its task's lease.
* the agent: STARTING → IDLE (seed 000's `ready`, the only edge a heartbeat takes; its source
  and target come in as arguments from `protocol.AGENT_EDGES`, so the FSM's table stays the
  one place that names it), heartbeat at `now`, its lease the latest of `now` + the project's
  lease, its task's lease and its reviews' leases, and the context and progress reported.
  Only these columns: none is indexed, so the UPDATEs stay HOT.

It answers `ok` with one row per review claim (or one row when it holds none): the agent, its
task, the review and the review's task, each as its table's row type. Refusals are answered,
not raised: the service raises them as today's errors, after which the transaction rolls back
(nothing was written) and `records_refusals` logs the rejected attempt.

`agents.services.heartbeats.agent_heartbeat` calls it; nothing else in the product writes
these rules. tests/agents/services/test_heartbeats_sql.py holds it equal to a Python reference
model of the rules over random boards. Whether progress is stale (`progress_stale`: an input's
age, no row read) and the stop answer (sprint, budgets) stay in the service.

Versioned: a change of the rules is a new function (`_v2`) in a new migration, never an edit
of this one.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION liza_heartbeat_v1(
    p_agent bigint, p_now timestamptz, p_lease integer, p_grace integer,
    p_context integer, p_progress_at timestamptz, p_stale boolean,
    p_claimed text, p_reviewer_role text, p_ready_from text, p_ready_to text
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
DROP FUNCTION liza_heartbeat_v1(
    bigint, timestamptz, integer, integer, integer, timestamptz, boolean, text, text, text, text
);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("boards", "0026_review_slot_sql"),
        ("agents", "0009_budgets_usage"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]

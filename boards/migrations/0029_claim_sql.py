"""A claim's writes and claim-next's pick in SQL, once (issue 26 item 1): `liza_claim_v1`.

One call, after the service's read-only checks (role, stop work, budget, availability,
admission and WIP limits, what the coder already holds — `boards.coordination.services.tasks
.claims`), takes and writes a task for the coder `p_agent` (locked by the caller, first in the
lock order of boards.coordination.services.locking):

* `p_mode` `next` — claim-next's pick: the queues `p_queues` in turn (`liza_claim_queue_v1`'s
  numbers), each by priority, age and id, `FOR UPDATE SKIP LOCKED`, restricted to `p_task`
  when given (the coder's own dead claim) and passing over the tasks whose own or goal's budget
  is spent. A task whose previous holder's row another transaction holds (a heartbeat) is
  passed over this time (NOWAIT: waiting on it could deadlock, `lock_previous_holder`); one a
  limit blocks instead is committed blocked and the pick goes on.
* `named` — the named claim of the task `p_task`, already locked and checked by the caller.
* `resume` — its own live claim `p_task` handed back: the task locked, the coder WORKING on it.

The claim of one task (seed 000 "Transition Requirements", SPEC §5.1, seed 003): its kind —
`integration_fix` (INTEGRATION_FAILED: the same coder iterates, another starts afresh keeping
the worktree), `retry` (its own dead CLAIMED task: one crash more, or blocked
`retry_exhausted` past the schedule), `rework` (its own REJECTED task: one iteration more),
`takeover` (another coder's REJECTED or dead CLAIMED task: refused while that coder's lease is
alive on a REJECTED one; blocked past its coder's retry schedule; failed_by gets the previous
coder, blocked at hypothesis exhaustion — two distinct coders — with its anomaly), else
`fresh` (a new holder: iteration 1, review cycles and crashes 0, a fresh worktree). Then the
base commit (required unless an integration fix), the lease (the task's override, else the
project's), CLAIMED (the edge, unless it already was), the previous holder released (lost:
`taken over by …`, exit 42 at its next request) when it was still on the task, and the coder
WORKING on it (its agent edges come in as arguments from `protocol.AGENT_EDGES`), one more
iteration, its lease the later of its own and the task's. Every write has its event, with the
task's board snapshot (`SNAPSHOT_FIELDS`, an argument), and ends the task's alerts bound to the
state it left (`task_alerts_ended_by`, an argument): `claimed` (`reassigned` for a takeover of
a CLAIMED task), and the system's `blocked` for a limit (`limits._limit_reason`'s words, its
questions an argument).

It answers one row: the outcome — `claimed`, `none`, `blocked` (a named claim's task was
blocked instead: committed), or the refusals `busy` (a named claim's previous holder is busy),
`reworked` (a REJECTED task whose coder's lease is alive) and `base_commit` (missing), after
which the service raises and the transaction rolls back — the task (as prepared, for a
refusal's event), the agent, the events written (id, task, action, from, to: the outbox and
the metrics) and the agents released.

`boards.coordination.services.tasks.claims` calls it; nothing else in the product writes these
rules (the watcher's and the reviews' blocks and releases are their own operations).
tests/coordination/services/tasks/test_claims_sql.py holds it equal to the Python reference
model of the rules over random boards.

Versioned: a change of the rules is a new function (`_v2`) in a new migration, never an edit
of this one. States are seed 000's names, spelled as in `liza_claim_queue_v1`.
"""

from django.db import migrations

CREATE = r"""
CREATE FUNCTION liza_claim_v1(
    p_agent bigint, p_mode text, p_task bigint, p_queues integer[], p_now timestamptz,
    p_lease integer, p_grace integer, p_backoff integer[], p_worktree text, p_base_commit text,
    p_spent_tasks bigint[], p_spent_goals bigint[], p_rules jsonb
) RETURNS TABLE (
    outcome text, task_row boards_task, agent_row agents_agent, events jsonb, released bigint[]
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    a agents_agent;
    t boards_task;
    old agents_agent;
    has_old boolean;
    q integer;
    busy bigint[] := '{}';
    written jsonb := '[]';
    freed bigint[] := '{}';
    previous text;
    from_status text;
    same_coder boolean;
    kind text;
    lim text;
    lost text;
    blocked boolean;
    exhausted boolean;
    event_id bigint;
    action text;
    detail text;
    data jsonb;
    states text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'queue_states'));
    snapshot text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'snapshot'));
    works_from text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'works_from'));
    stop_from text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'stop_from'));
    -- What Python's str.split() splits on (audit.record_event's one-line detail), exactly.
    spaces text := '[\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+';
BEGIN
    SELECT * INTO a FROM agents_agent WHERE id = p_agent FOR UPDATE;

    IF p_mode = 'resume' THEN
        SELECT * INTO t FROM boards_task WHERE id = p_task FOR UPDATE;
        IF a.status <> 'WORKING' OR a.current_task_id IS DISTINCT FROM t.id THEN
            UPDATE agents_agent SET
                status = CASE WHEN status = ANY(works_from) THEN 'WORKING' ELSE status END,
                current_task_id = t.id, lost_task_id = NULL, lost_reason = '',
                lease_expires = greatest(lease_expires, t.lease_expires), heartbeat = p_now
            WHERE id = a.id RETURNING * INTO a;
        END IF;
        RETURN QUERY SELECT 'claimed'::text, t, a, written, freed;
        RETURN;
    END IF;

    FOREACH q IN ARRAY CASE WHEN p_mode = 'named' THEN ARRAY[0] ELSE p_queues END LOOP
        LOOP
            IF p_mode = 'named' THEN
                SELECT * INTO t FROM boards_task WHERE id = p_task FOR UPDATE;
            ELSE
                SELECT c.* INTO t FROM boards_task c
                WHERE c.project_id = a.project_id AND c.status = states[q]
                  AND liza_claim_queue_v1(c, a.agent_id, p_now, p_grace, p_backoff) = q
                  AND (p_task IS NULL OR c.id = p_task)
                  AND NOT c.id = ANY(busy)
                  -- Issue 24: a spent budget of the task or of its goal.
                  AND NOT c.id = ANY(p_spent_tasks)
                  AND (c.goal_id IS NULL OR NOT c.goal_id = ANY(p_spent_goals))
                ORDER BY c.priority, c.created, c.id
                LIMIT 1 FOR UPDATE OF c SKIP LOCKED;
                EXIT WHEN NOT FOUND;
            END IF;

            previous := t.assigned_to;
            from_status := t.status;
            same_coder := previous = a.agent_id;
            has_old := false;
            IF previous <> '' AND NOT same_coder THEN
                -- The claimer holds the task row; a heartbeat locks its agent, then its task:
                -- waiting here for the previous holder could deadlock (lock_previous_holder).
                BEGIN
                    SELECT * INTO old FROM agents_agent
                    WHERE project_id = a.project_id AND agent_id = previous
                    ORDER BY id LIMIT 1 FOR UPDATE NOWAIT;
                    has_old := FOUND;
                EXCEPTION WHEN lock_not_available THEN
                    IF p_mode = 'named' THEN
                        RETURN QUERY SELECT 'busy'::text, t, a, written, freed;
                        RETURN;
                    END IF;
                    busy := busy || t.id;
                    CONTINUE;
                END;
            END IF;

            kind := CASE
                WHEN from_status = 'INTEGRATION_FAILED' THEN 'integration_fix'
                WHEN same_coder AND from_status = 'CLAIMED' THEN 'retry'
                WHEN same_coder AND from_status = 'REJECTED' THEN 'rework'
                WHEN previous <> '' AND NOT same_coder AND from_status IN ('REJECTED', 'CLAIMED')
                    THEN 'takeover'
                ELSE 'fresh' END;

            -- What the kind does before the edge; `lim` set: a limit blocks the task instead.
            lim := NULL;
            lost := NULL;
            IF kind = 'retry' THEN
                IF t.crashes >= cardinality(p_backoff) THEN
                    lim := 'crash';
                ELSE
                    t.crashes := t.crashes + 1;
                END IF;
            ELSIF kind = 'takeover' THEN
                IF from_status = 'REJECTED' AND has_old AND old.lease_expires IS NOT NULL
                    AND old.lease_expires + make_interval(secs => p_grace) > p_now THEN
                    -- Another coder may take a REJECTED task only once its coder's lease died.
                    RETURN QUERY SELECT 'reworked'::text, t, a, written, freed;
                    RETURN;
                END IF;
                exhausted := (
                    SELECT count(DISTINCT x) >= 2
                    FROM jsonb_array_elements_text(t.failed_by || to_jsonb(previous)) x
                );
                IF NOT exhausted AND from_status = 'CLAIMED'
                    AND t.crashes >= cardinality(p_backoff) THEN
                    lim := 'crash';  -- its coder's crash past the schedule, whoever claims
                ELSE
                    -- SPEC §5.1: failed_by gets the coder another coder takes it over from.
                    IF NOT t.failed_by ? previous THEN
                        t.failed_by := t.failed_by || to_jsonb(previous);
                    END IF;
                    IF exhausted THEN
                        lim := 'hypothesis_exhaustion';
                        lost := 'blocked: hypothesis exhaustion';
                    END IF;
                END IF;
            END IF;

            IF lim IS NOT NULL THEN
                IF lim = 'crash' THEN
                    -- limits.crash_limit_block: the crash counted, its coder in failed_by.
                    t.crashes := t.crashes + 1;
                    IF t.assigned_to <> '' AND NOT t.failed_by ? t.assigned_to THEN
                        t.failed_by := t.failed_by || to_jsonb(t.assigned_to);
                    END IF;
                    lim := CASE WHEN (
                        SELECT count(DISTINCT x) FROM jsonb_array_elements_text(t.failed_by) x
                    ) >= 2 THEN 'hypothesis_exhaustion' ELSE 'retry_exhausted' END;
                    lost := 'blocked: ' || lim;
                END IF;
                -- limits.limit_block: the system's override block, its reason and questions.
                t.blocked_reason := CASE WHEN lim = 'retry_exhausted' THEN
                    'Retry exhausted: ' || t.crashes || ' lease expiries of ' || t.assigned_to
                    || ' (retries after '
                    || array_to_string(ARRAY(SELECT s || ' s' FROM unnest(p_backoff) s), ', ')
                    || ')'
                ELSE
                    'Hypothesis exhaustion: ' || (
                        SELECT count(DISTINCT x) FROM jsonb_array_elements_text(t.failed_by) x
                    ) || ' coders failed (' || (
                        SELECT string_agg(x, ', ' ORDER BY n)
                        FROM jsonb_array_elements_text(t.failed_by) WITH ORDINALITY e(x, n)
                    ) || ')'
                END;
                t.blocked_questions := p_rules->'questions'->lim;
                t.lease_expires := NULL;
                t.status := 'BLOCKED';
                t.updated := p_now;
                UPDATE boards_task SET
                    status = t.status, crashes = t.crashes, failed_by = t.failed_by,
                    blocked_reason = t.blocked_reason, blocked_questions = t.blocked_questions,
                    lease_expires = t.lease_expires, updated = t.updated
                WHERE id = t.id;
                INSERT INTO boards_event (
                    project_id, task_id, timestamp, actor_kind, actor_id, action, from_status,
                    to_status, outcome, detail, data, board
                ) VALUES (
                    t.project_id, t.id, p_now, 'system', p_rules->>'system', 'blocked',
                    from_status, t.status, 'applied',
                    left(btrim(regexp_replace(t.blocked_reason, spaces, ' ', 'g')), 500),
                    jsonb_build_object('limit', lim),
                    (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(t))
                     WHERE key = ANY(snapshot))
                    || jsonb_build_object('suspended', t.suspended_at IS NOT NULL,
                                          'goal', t.goal_id)
                ) RETURNING id INTO event_id;
                written := written || jsonb_build_object(
                    'id', event_id, 'task', t.id, 'actor', 'system', 'action', 'blocked',
                    'from', from_status, 'to', t.status);
                UPDATE boards_alert SET resolved_at = p_now
                WHERE task_id = t.id AND resolved_at IS NULL
                  AND type IN (SELECT jsonb_array_elements_text(p_rules->'ended'->'BLOCKED'));
                IF lim <> 'retry_exhausted' THEN
                    INSERT INTO boards_anomaly (project_id, task_id, timestamp, reporter, type,
                                                details)
                    VALUES (t.project_id, t.id, p_now, p_rules->>'system', lim,
                            jsonb_build_object('failed_by', t.failed_by,
                                               'review_cycles_current', t.review_cycles_current));
                END IF;
                -- Its coder (the claimer itself for a retry) loses the task if still on it.
                IF kind = 'retry' THEN
                    old := a;
                END IF;
                IF (kind = 'retry' OR has_old) AND old.current_task_id = t.id THEN
                    UPDATE agents_agent SET
                        current_task_id = NULL, lost_task_id = t.id, lost_reason = left(lost, 200),
                        status = CASE WHEN status = ANY(stop_from) AND role = p_rules->>'coder'
                            THEN 'IDLE' ELSE status END
                    WHERE id = old.id RETURNING * INTO old;
                    freed := freed || old.id;
                    IF old.id = a.id THEN
                        a := old;
                    END IF;
                END IF;
                IF p_mode = 'named' THEN
                    RETURN QUERY SELECT 'blocked'::text, t, a, written, freed;
                    RETURN;
                END IF;
                CONTINUE;  -- it left the queue: the next one
            END IF;

            IF kind = 'rework' OR (kind = 'integration_fix' AND same_coder) THEN
                -- The same coder goes on: worktree and review counters kept.
                t.iteration := coalesce(t.iteration, 0) + 1;
                IF t.worktree = '' THEN
                    t.worktree := coalesce(nullif(p_worktree, ''), '.worktrees/' || t.key);
                END IF;
            ELSIF kind <> 'retry' THEN
                -- A new holder (seed 000): an integration fix keeps the failed merge's worktree.
                t.assigned_to := a.agent_id;
                t.review_cycles_current := 0;
                t.iteration := 1;
                t.crashes := 0;
                IF kind <> 'integration_fix' OR t.worktree = '' THEN
                    t.worktree := coalesce(nullif(p_worktree, ''), '.worktrees/' || t.key);
                END IF;
            END IF;
            IF kind = 'integration_fix' THEN
                t.integration_fix := true;
            END IF;
            IF p_base_commit <> '' THEN
                t.base_commit := p_base_commit;
            END IF;
            IF NOT t.integration_fix AND t.base_commit = '' THEN
                RETURN QUERY SELECT 'base_commit'::text, t, a, written, freed;
                RETURN;
            END IF;
            t.lease_expires := p_now + make_interval(
                secs => coalesce(nullif(t.lease_duration_override, 0), p_lease));
            t.status := 'CLAIMED';
            t.updated := p_now;
            UPDATE boards_task SET
                status = t.status, assigned_to = t.assigned_to, worktree = t.worktree,
                base_commit = t.base_commit, iteration = t.iteration,
                review_cycles_current = t.review_cycles_current, crashes = t.crashes,
                failed_by = t.failed_by, integration_fix = t.integration_fix,
                lease_expires = t.lease_expires, updated = t.updated
            WHERE id = t.id;
            IF has_old AND old.current_task_id = t.id THEN
                UPDATE agents_agent SET
                    current_task_id = NULL, lost_task_id = t.id,
                    lost_reason = left('taken over by ' || a.agent_id, 200),
                    status = CASE WHEN status = ANY(stop_from) AND role = p_rules->>'coder'
                        THEN 'IDLE' ELSE status END
                WHERE id = old.id;
                freed := freed || old.id;
            END IF;
            UPDATE agents_agent SET
                iterations_total = iterations_total + 1,
                status = CASE WHEN status = ANY(works_from) THEN 'WORKING' ELSE status END,
                current_task_id = t.id, lost_task_id = NULL, lost_reason = '',
                lease_expires = greatest(lease_expires, t.lease_expires), heartbeat = p_now
            WHERE id = a.id RETURNING * INTO a;

            action := CASE WHEN from_status <> 'CLAIMED' OR kind = 'retry'
                THEN 'claimed' ELSE 'reassigned' END;
            detail := CASE kind
                WHEN 'retry' THEN t.key || ': retry ' || t.crashes || ' after its lease expired'
                WHEN 'takeover' THEN t.key || ' taken over from ' || previous || ' (lease expired)'
                WHEN 'integration_fix' THEN t.key || ': integration fix'
                ELSE t.key || ': ' || t.description END;
            data := jsonb_build_object(
                'iteration', t.iteration,
                'lease_expires', to_char(t.lease_expires AT TIME ZONE 'UTC',
                                         'YYYY-MM-DD"T"HH24:MI:SS"Z"'))
                || CASE kind
                    WHEN 'retry' THEN jsonb_build_object('retry', t.crashes)
                    WHEN 'takeover' THEN jsonb_build_object('previous', previous)
                    ELSE '{}'::jsonb END;
            INSERT INTO boards_event (
                project_id, task_id, timestamp, actor_kind, actor_id, action, from_status,
                to_status, outcome, detail, data, board
            ) VALUES (
                t.project_id, t.id, p_now, 'agent', a.agent_id, action, from_status, t.status,
                'applied',
                -- "One-line detail is mandatory" (seed 002 log.yaml): as audit.record_event.
                coalesce(nullif(left(btrim(regexp_replace(detail, spaces, ' ', 'g')), 500), ''),
                         action),
                data,
                (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(t))
                 WHERE key = ANY(snapshot))
                || jsonb_build_object('suspended', t.suspended_at IS NOT NULL, 'goal', t.goal_id)
            ) RETURNING id INTO event_id;
            written := written || jsonb_build_object(
                'id', event_id, 'task', t.id, 'actor', 'agent', 'action', action,
                'from', from_status, 'to', t.status);
            IF from_status <> t.status THEN
                UPDATE boards_alert SET resolved_at = p_now
                WHERE task_id = t.id AND resolved_at IS NULL
                  AND type IN (SELECT jsonb_array_elements_text(p_rules->'ended'->'CLAIMED'));
            END IF;
            RETURN QUERY SELECT 'claimed'::text, t, a, written, freed;
            RETURN;
        END LOOP;
    END LOOP;
    t := NULL;
    RETURN QUERY SELECT 'none'::text, t, a, written, freed;
END
$$;
"""

DROP = """
DROP FUNCTION liza_claim_v1(
    bigint, text, bigint, integer[], timestamptz, integer, integer, integer[], text, text,
    bigint[], bigint[], jsonb
);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("boards", "0028_review_slot_released"),
        ("agents", "0009_budgets_usage"),
    ]

    operations = [migrations.RunSQL(CREATE, DROP)]

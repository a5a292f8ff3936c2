"""The rule "a claim blocks this task instead" and a limit's words, once: `liza_claim_v2`.

`liza_claim_limit_v1(task row, claimer, retry schedule)` answers whether a claim of a task by
that coder blocks it instead of giving it out (SPEC §5.1, seed 003): `hypothesis_exhaustion` —
a takeover (another coder held the REJECTED or CLAIMED task) after which two distinct coders
are in failed_by —, first; `crash` — a CLAIMED task someone held, its lease dead one crash past
the retry schedule, whoever claims (the block then counts the crash and may still turn out to
be hypothesis exhaustion: that coder in failed_by) —; else NULL. `liza_claim_v2` asks it for the
task it picked; `/work` (`selectors.tasks.claim_next_available`) asks it in the same statement
as the queue, so the question and the claim cannot drift (issue 26).

`liza_limit_reason_v1` words an override block's reason for each limit (`review_deadlock`,
`max_iterations`, `retry_exhausted`, `hypothesis_exhaustion`): the claim's blocks here, the
watcher's and the reviews' through `services.tasks.limits.limit_block`, which calls it.

`liza_claim_v2` is `liza_claim_v1` (migration 0029) with those two calls in place of its own
copies of them: the same answers, the same writes. The order of its checks is v1's: a takeover
of a REJECTED task whose coder's lease is alive is refused before a limit is asked.

v1 stays: a server of the previous release, still running while this one is deployed, calls
it. A later migration may drop it. Never edit this one: a change of a rule is a new version.
tests/coordination/services/tasks/test_claims_sql.py holds the claim equal to the reference
model, and `/work`'s answer equal to the claim's outcome, over random boards.
"""

from django.db import migrations

LIMIT = r"""
CREATE FUNCTION liza_claim_limit_v1(t boards_task, p_agent_id text, p_backoff integer[])
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN t.assigned_to <> '' AND t.assigned_to <> p_agent_id
            AND t.status IN ('REJECTED', 'CLAIMED')
            AND (SELECT count(DISTINCT x) >= 2
                 FROM jsonb_array_elements_text(t.failed_by || to_jsonb(t.assigned_to)) x)
            THEN 'hypothesis_exhaustion'
        WHEN t.assigned_to <> '' AND t.status = 'CLAIMED'
            AND t.crashes >= cardinality(p_backoff)
            THEN 'crash'
    END
$$;

CREATE FUNCTION liza_limit_reason_v1(
    p_limit text, p_crashes integer, p_assigned_to text, p_backoff integer[], p_failed_by jsonb,
    p_review_cycles integer, p_max_review_cycles integer, p_iteration integer,
    p_max_iterations integer
) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE p_limit
        WHEN 'review_deadlock' THEN
            'Review deadlock: ' || p_review_cycles || ' rejected review cycles (max '
            || p_max_review_cycles || ')'
        WHEN 'max_iterations' THEN
            'Max iterations: ' || p_iteration || ' iterations without approval (max '
            || p_max_iterations || ')'
        WHEN 'retry_exhausted' THEN
            'Retry exhausted: ' || p_crashes || ' lease expiries of ' || p_assigned_to
            || ' (retries after '
            || array_to_string(ARRAY(SELECT s || ' s' FROM unnest(p_backoff) s), ', ') || ')'
        ELSE
            'Hypothesis exhaustion: '
            || (SELECT count(DISTINCT x) FROM jsonb_array_elements_text(p_failed_by) x)
            || ' coders failed ('
            || coalesce((SELECT string_agg(x, ', ' ORDER BY n)
                         FROM jsonb_array_elements_text(p_failed_by) WITH ORDINALITY e(x, n)), '')
            || ')'
    END
$$;
"""

CREATE = r"""
CREATE FUNCTION liza_claim_v2(
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
            lost := NULL;
            IF kind = 'takeover' AND from_status = 'REJECTED' AND has_old
                AND old.lease_expires IS NOT NULL
                AND old.lease_expires + make_interval(secs => p_grace) > p_now THEN
                -- Another coder may take a REJECTED task only once its coder's lease died.
                RETURN QUERY SELECT 'reworked'::text, t, a, written, freed;
                RETURN;
            END IF;
            -- Whether the claim blocks it instead: the rule `/work` asks too.
            lim := liza_claim_limit_v1(t, a.agent_id, p_backoff);
            IF kind = 'retry' AND lim IS NULL THEN
                t.crashes := t.crashes + 1;
            ELSIF kind = 'takeover' AND lim IS DISTINCT FROM 'crash' THEN
                -- SPEC §5.1: failed_by gets the coder another coder takes it over from.
                IF NOT t.failed_by ? previous THEN
                    t.failed_by := t.failed_by || to_jsonb(previous);
                END IF;
                IF lim = 'hypothesis_exhaustion' THEN
                    lost := 'blocked: hypothesis exhaustion';
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
                t.blocked_reason := liza_limit_reason_v1(
                    lim, t.crashes, t.assigned_to, p_backoff, t.failed_by,
                    t.review_cycles_current, NULL, t.iteration, NULL);
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
DROP FUNCTION liza_claim_v2(
    bigint, text, bigint, integer[], timestamptz, integer, integer, integer[], text, text,
    bigint[], bigint[], jsonb
);
DROP FUNCTION liza_limit_reason_v1(
    text, integer, text, integer[], jsonb, integer, integer, integer, integer
);
DROP FUNCTION liza_claim_limit_v1(boards_task, text, integer[]);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0029_claim_sql")]

    operations = [migrations.RunSQL(LIMIT + CREATE, DROP)]

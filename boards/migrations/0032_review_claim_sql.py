"""A review claim's pick and writes in one call: `liza_review_claim_v1` (issue 26).

`liza_review_held_v1(project, reviewer, now, grace)` answers the live review claim a reviewer
holds (no verdict, its lease alive grace included, the task READY_FOR_REVIEW and not
suspended; the first claimed): what review claim-next hands back to a reviewer restarted
mid-review, and what `/work` asks (`selectors.reviews.held_review`).

`liza_review_claim_v1(agent, mode, task, now, lease, grace, required approvals, spent tasks,
spent goals, rules)` is every write of a review claim, for the locked reviewer:

- `next` (review claim-next): its held review, answered `held` with no write; else the first
  READY_FOR_REVIEW task by priority, age and id whose slot `liza_review_slot_v2` (migration
  0028) opens to it, its own or its goal's budget not spent, `FOR UPDATE SKIP LOCKED`. The
  open round is then locked and the slot asked again in a statement of its own: a claim that
  committed after the pick's snapshot wrote only review rows, not the task's, so the pick
  could not see it (a review claim does not update the task row PostgreSQL re-checks); such
  a task is passed over, as the service's loop passed over a lost race. `none` when no task
  is left.
- `named` (`review_claim`): the task the service locked and checked (its role, stop work,
  budgets, availability, limits, state and slot stay Python's, as a named claim's).

Then, for the task: the dead claims of its round (no verdict, lease past its grace) are
closed, their reviewers locked `NOWAIT` first — after the task, against the lock order, so a
busy one (heartbeating right now) makes claim-next pass the task over and the named claim
answer `busy` with that reviewer (the service raises its Conflict); nothing is written before
all are locked. A closed claim's reviewer still REVIEWING goes IDLE; each close writes its
`review_reclaimed` event. The Review row (the task's review commit, the lease from the task's
override or the project's), the reviewer REVIEWING (from STARTING through IDLE), its lost task
forgotten, its heartbeat and its lease the latest of its own and the review's, and the
`review_claimed` event, each event with its board snapshot. A review claim moves no task, so it
ends no alert. The service notes the outbox and counts the events from what it answers.

`rules` carries the tables that live in Python (the snapshot's fields, the agent edges), so
that each stays the one place that names them.

Never edit this migration: a change of the rule is a `_v2`.
tests/coordination/services/test_reviews_claim_sql.py holds it equal to the reference model
(tests/coordination/services/review_oracle.py, the Python the service ran before).
"""

from django.db import migrations

HELD = r"""
CREATE FUNCTION liza_review_held_v1(
    p_project bigint, p_reviewer text, p_now timestamptz, p_grace integer
) RETURNS bigint LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT r.id
    FROM boards_review r JOIN boards_task t ON t.id = r.task_id
    WHERE r.project_id = p_project AND r.reviewer = p_reviewer
      AND r.closed_at IS NULL AND r.verdict = ''
      AND t.status = 'READY_FOR_REVIEW' AND t.suspended_at IS NULL
      AND r.lease_expires + make_interval(secs => p_grace) > p_now
    ORDER BY r.claimed_at, r.id
    LIMIT 1
$$;
"""

CREATE = r"""
CREATE FUNCTION liza_review_claim_v1(
    p_agent bigint, p_mode text, p_task bigint, p_now timestamptz, p_lease integer,
    p_grace integer, p_required jsonb, p_spent_tasks bigint[], p_spent_goals bigint[],
    p_rules jsonb
) RETURNS TABLE (
    outcome text, task_row boards_task, review_row boards_review, agent_row agents_agent,
    events jsonb, busy_reviewer text
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    a agents_agent;
    t boards_task;
    r boards_review;
    nothing boards_review;
    stale boards_review[];
    s boards_review;
    security text[];
    passed bigint[] := '{}';
    busy text;
    board jsonb;
    event_id bigint;
    detail text;
    written jsonb := '[]';
    snapshot text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'snapshot'));
    reviews_from text[] := ARRAY(SELECT jsonb_array_elements_text(p_rules->'reviews_from'));
    -- What Python's str.split() splits on (audit.record_event's one-line detail), exactly.
    spaces text := '[\t\n\u000b\f\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+';
BEGIN
    SELECT * INTO a FROM agents_agent WHERE id = p_agent FOR UPDATE;

    IF p_mode = 'next' THEN
        SELECT * INTO r FROM boards_review
        WHERE id = liza_review_held_v1(a.project_id, a.agent_id, p_now, p_grace);
        IF FOUND THEN
            SELECT * INTO t FROM boards_task WHERE id = r.task_id;
            RETURN QUERY SELECT 'held'::text, t, r, a, written, NULL::text;
            RETURN;
        END IF;
    END IF;
    security := ARRAY(SELECT g.agent_id FROM agents_agent g
                      WHERE g.project_id = a.project_id AND g.security_reviewer);

    LOOP
        IF p_mode = 'named' THEN
            SELECT * INTO t FROM boards_task WHERE id = p_task FOR UPDATE;
        ELSE
            SELECT c.* INTO t FROM boards_task c
            WHERE c.project_id = a.project_id AND c.status = 'READY_FOR_REVIEW'
              AND NOT c.id = ANY(passed)
              -- Issue 24: a spent budget of the task or of its goal.
              AND NOT c.id = ANY(p_spent_tasks)
              AND (c.goal_id IS NULL OR NOT c.goal_id = ANY(p_spent_goals))
              AND liza_review_slot_v2(c, a.agent_id, a.status, a.security_reviewer, security,
                                      p_required, p_now, p_grace) IS NULL
            ORDER BY c.priority, c.created, c.id
            LIMIT 1 FOR UPDATE OF c SKIP LOCKED;
            EXIT WHEN NOT FOUND;
            -- The round, locked and read afresh now that the task is ours (see above).
            PERFORM 1 FROM boards_review
            WHERE task_id = t.id AND closed_at IS NULL ORDER BY claimed_at, id FOR UPDATE;
            IF liza_review_slot_v2(t, a.agent_id, a.status, a.security_reviewer, security,
                                   p_required, p_now, p_grace) IS NOT NULL THEN
                passed := passed || t.id;
                CONTINUE;
            END IF;
        END IF;

        -- The round's dead claims (services.reviews before: lease_alive, grace included), and
        -- their reviewers locked without waiting: a heartbeat locks its agent, then its reviews.
        stale := ARRAY(
            SELECT x FROM boards_review x
            WHERE x.task_id = t.id AND x.closed_at IS NULL AND x.verdict = ''
              AND NOT coalesce(x.lease_expires + make_interval(secs => p_grace) > p_now, false)
            ORDER BY x.claimed_at, x.id);
        busy := NULL;
        FOREACH s IN ARRAY stale LOOP
            BEGIN
                PERFORM 1 FROM agents_agent
                WHERE project_id = a.project_id AND agent_id = s.reviewer
                ORDER BY id LIMIT 1 FOR UPDATE NOWAIT;
            EXCEPTION WHEN lock_not_available THEN
                busy := s.reviewer;
                EXIT;
            END;
        END LOOP;
        IF busy IS NOT NULL THEN
            IF p_mode = 'named' THEN
                RETURN QUERY SELECT 'busy'::text, t, nothing, a, written, busy;
                RETURN;
            END IF;
            passed := passed || t.id;
            CONTINUE;
        END IF;

        -- A review claim leaves the task as it is: one snapshot for its events.
        board := (SELECT jsonb_object_agg(key, value) FROM jsonb_each(to_jsonb(t))
                  WHERE key = ANY(snapshot))
                 || jsonb_build_object('suspended', t.suspended_at IS NOT NULL, 'goal', t.goal_id);
        FOREACH s IN ARRAY stale LOOP
            -- seed 000 "Stale review lease allows supervisor to reassign": the slot is freed.
            UPDATE boards_review SET closed_at = p_now WHERE id = s.id;
            UPDATE agents_agent SET status = p_rules->>'idle'
            WHERE id = (SELECT h.id FROM agents_agent h
                        WHERE h.project_id = a.project_id AND h.agent_id = s.reviewer
                        ORDER BY h.id LIMIT 1)
              AND status = p_rules->>'reviewing';
            detail := 'review lease of ' || s.reviewer || ' expired';
            INSERT INTO boards_event (
                project_id, task_id, timestamp, actor_kind, actor_id, action, from_status,
                to_status, outcome, detail, data, board
            ) VALUES (
                t.project_id, t.id, p_now, 'agent', a.agent_id, 'review_reclaimed', '', '',
                'applied',
                coalesce(nullif(left(btrim(regexp_replace(detail, spaces, ' ', 'g')), 500), ''),
                         'review_reclaimed'),
                jsonb_build_object('previous', s.reviewer), board
            ) RETURNING id INTO event_id;
            written := written || jsonb_build_object(
                'id', event_id, 'task', t.id, 'actor', 'agent', 'action', 'review_reclaimed',
                'from', '', 'to', '');
        END LOOP;

        INSERT INTO boards_review (
            project_id, task_id, reviewer, review_commit, claimed_at, lease_expires, verdict,
            reason, verdict_at, closed_at
        ) VALUES (
            t.project_id, t.id, a.agent_id, t.review_commit, p_now,
            p_now + make_interval(secs => coalesce(nullif(t.lease_duration_override, 0), p_lease)),
            '', '', NULL, NULL
        ) RETURNING * INTO r;
        -- Whatever it lost before (a review taken back by a human) is behind it now.
        UPDATE agents_agent SET
            status = CASE WHEN status = ANY(reviews_from) THEN p_rules->>'reviewing'
                          ELSE status END,
            lost_task_id = NULL, lost_reason = '', heartbeat = p_now,
            lease_expires = greatest(lease_expires, r.lease_expires)
        WHERE id = a.id RETURNING * INTO a;
        detail := 'reviewing ' || t.key || ' at ' || t.review_commit;
        INSERT INTO boards_event (
            project_id, task_id, timestamp, actor_kind, actor_id, action, from_status,
            to_status, outcome, detail, data, board
        ) VALUES (
            t.project_id, t.id, p_now, 'agent', a.agent_id, 'review_claimed', '', '', 'applied',
            coalesce(nullif(left(btrim(regexp_replace(detail, spaces, ' ', 'g')), 500), ''),
                     'review_claimed'),
            jsonb_build_object('commit', t.review_commit), board
        ) RETURNING id INTO event_id;
        written := written || jsonb_build_object(
            'id', event_id, 'task', t.id, 'actor', 'agent', 'action', 'review_claimed',
            'from', '', 'to', '');
        RETURN QUERY SELECT 'claimed'::text, t, r, a, written, NULL::text;
        RETURN;
    END LOOP;
    t := NULL;
    RETURN QUERY SELECT 'none'::text, t, nothing, a, written, NULL::text;
END
$$;
"""

DROP = """
DROP FUNCTION liza_review_claim_v1(
    bigint, text, bigint, timestamptz, integer, integer, jsonb, bigint[], bigint[], jsonb
);
DROP FUNCTION liza_review_held_v1(bigint, text, timestamptz, integer);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0031_claim_checks_sql")]

    operations = [migrations.RunSQL(HELD + CREATE, DROP)]

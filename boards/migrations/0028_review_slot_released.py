"""The review-slot rule remembers a review given back: `liza_review_slot_v2`.

`liza_review_slot_v1` (migration 0026) with one answer more, asked last: `released` — the slot
is open to the reviewer, but it gave back its review of this task in this round
(`review_release`, its applied `review_released` event), so review claim-next and `/work` pass
the task over (with one reviewer, claim-next handed the same review straight back: a loop). A
named `review_claim` treats `released` as open: a human, or the reviewer itself, may still take
it on purpose (docs/decisions.md "A review given back is not handed back").

A release is what `review_release` already stores, no new column: the review row it closed
(this reviewer's, closed without a verdict) and its event. The row alone is not enough — a
human's or the watcher's take-back closes it the same way, and says nothing about the
reviewer — and it carries no round. The round is the task's current submission: the release
counts when its event comes after the task's last applied entry into READY_FOR_REVIEW (from
another state; the watcher's "time in state" reads the same event). Event ids give the log's
order: a release and the submission before it are serialized by the task row's lock, so the
later one always has the larger id, whatever the clocks say. After the coder resubmits, the
reviewer may be offered the task again.

A give-back because the reviewer's session is stopping (`review_release(stopping=True)`, its
event's data `{"stopping": true}`: `liza supervise` stopped by its operator, the machine
rebooted) is not the reviewer judging it cannot finish the review: the reviewer, restarted, is
offered it again (else a lone reviewer's restart stalled the task until a human claimed it by
name). The reviewer's last give-back of the round decides: a second one follows a claim by name
(claim-next no longer offered it), which took the review up again on purpose, so a stop after
it does not bring the first judgement back.

Every other answer, and the order of the checks, is v1's. `released` comes last, so it is only
answered when the slot is otherwise open. The task's reviews are read once, closed ones too (a
few a round), and its event log only when the reviewer has a review of it closed without a
verdict.
tests/coordination/selectors/test_reviews_slot.py holds it equal to the reference model.

v1 stays: a server of the previous release, still running while this one is deployed, calls
it. A later migration may drop it. Never edit this one: a change of the rule is a `_v3`.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION liza_review_slot_v2(
    t boards_task, p_reviewer text, p_reviewer_status text, p_security_reviewer boolean,
    p_security text[], p_required jsonb, p_now timestamptz, p_grace integer
) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH reviews AS (
        -- The task's reviews, read once. Held: the open round's, a verdict given or a claim
        -- whose lease is alive.
        SELECT r.reviewer, r.verdict, r.closed_at,
            coalesce(r.closed_at IS NULL AND (
                r.verdict <> '' OR r.lease_expires + make_interval(secs => p_grace) > p_now
            ), false) AS held
        FROM boards_review r
        WHERE r.task_id = t.id
    ), round AS (
        SELECT
            coalesce(bool_or(held AND reviewer = p_reviewer), false) AS mine,
            count(*) FILTER (WHERE held AND verdict = 'APPROVED') AS approving,
            count(*) FILTER (WHERE held AND verdict = '') AS active,
            coalesce(bool_or(
                held AND verdict IN ('APPROVED', '') AND reviewer = ANY(p_security)
            ), false) AS secured,
            -- A release closes a review of this reviewer without a verdict (so do a human's
            -- and the watcher's take-backs): the event log is read only when there is one.
            coalesce(bool_or(
                closed_at IS NOT NULL AND verdict = '' AND reviewer = p_reviewer
            ), false) AS let_go
        FROM reviews
    )
    SELECT CASE
        WHEN t.status <> 'READY_FOR_REVIEW' THEN 'status'
        WHEN t.suspended_at IS NOT NULL THEN 'suspended'
        WHEN t.goal_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM boards_goal g
            WHERE g.id = t.goal_id AND g.status IN ('COMPLETED', 'ABORTED')
        ) THEN 'goal'
        WHEN t.assigned_to = p_reviewer OR (
            jsonb_typeof(t.failed_by) = 'array' AND t.failed_by @> jsonb_build_array(p_reviewer)
        ) THEN 'coded'
        WHEN p_reviewer_status NOT IN ('STARTING', 'IDLE') THEN 'busy'
        WHEN round.mine THEN 'held'
        WHEN (p_required ->> t.criticality)::integer - round.approving - round.active <= 0
            THEN 'full'
        WHEN t.criticality = 'security-sensitive'
            AND (p_required ->> t.criticality)::integer - round.approving - round.active = 1
            AND NOT p_security_reviewer AND NOT round.secured
            THEN 'security'
        WHEN round.let_go AND (
            -- The reviewer's last give-back of this round (after the task last entered
            -- READY_FOR_REVIEW; both read through the event index on project, task) was its
            -- judgement, not its session stopping. No give-back: NULL, the slot is open.
            SELECT NOT e.data @> '{"stopping": true}'
            FROM boards_event e
            WHERE e.project_id = t.project_id AND e.task_id = t.id
              AND e.action = 'review_released' AND e.outcome = 'applied'
              AND e.actor_kind = 'agent' AND e.actor_id = p_reviewer
              AND e.id > coalesce((
                  SELECT max(s.id) FROM boards_event s
                  WHERE s.project_id = t.project_id AND s.task_id = t.id
                    AND s.outcome = 'applied' AND s.to_status = 'READY_FOR_REVIEW'
                    AND s.from_status <> 'READY_FOR_REVIEW'
              ), 0)
            ORDER BY e.id DESC
            LIMIT 1
        ) THEN 'released'
    END
    FROM round
$$;
"""

DROP = """
DROP FUNCTION liza_review_slot_v2(
    boards_task, text, text, boolean, text[], jsonb, timestamptz, integer
);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0027_heartbeat_sql")]

    operations = [migrations.RunSQL(CREATE, DROP)]

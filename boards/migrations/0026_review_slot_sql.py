"""The review-slot rule in SQL, once (issue 26 item 1): `liza_review_slot_v1`.

For one task row, at `now`, for one reviewer (its id, status and security flag): NULL when the
reviewer may claim a review of the task now, else why not — `status` (not READY_FOR_REVIEW),
`suspended`, `goal` (its goal COMPLETED or ABORTED), `coded` (the reviewer coded it, or failed
it before: seed 001, nobody reviews their own work), `busy` (the reviewer is neither STARTING nor
IDLE), `held` (it already reviewed or is reviewing this round), `full` (no slot left: the
criticality's approvals minus the round's approvals and live claims) or `security` (the last
slot of a security-sensitive task waits for a security-flagged reviewer). The round is the
task's open reviews; one without a verdict counts only while its lease is alive (`lease_alive`,
the grace included), so a dead claim is a free slot, exactly as `review_claim` reclaims it.

`boards.coordination.selectors.reviews` asks it for the queue (`reviewable_tasks`: review
claim-next's pick and `/work`, one statement) and for one task (`review_slot_refusal`: a named
review claim, which words the refusal); nothing else in the product writes this rule.
tests/coordination/selectors/test_reviews_slot.py holds it equal to a Python reference model.

The approvals each criticality needs (`protocol.REQUIRED_APPROVALS`) and the project's
security-flagged reviewers come in as arguments, so that their tables stay where they are.
Versioned: a change of the rule is a new function (`_v2`) in a new migration, never an edit of
this one. States are seed 000's names (boards.protocol), spelled here once.
"""

from django.db import migrations

CREATE = """
CREATE FUNCTION liza_review_slot_v1(
    t boards_task, p_reviewer text, p_reviewer_status text, p_security_reviewer boolean,
    p_security text[], p_required jsonb, p_now timestamptz, p_grace integer
) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    WITH held AS (
        -- The round's reviews still held: a verdict given, or a claim whose lease is alive.
        SELECT r.reviewer, r.verdict FROM boards_review r
        WHERE r.task_id = t.id AND r.closed_at IS NULL
          AND (r.verdict <> '' OR r.lease_expires + make_interval(secs => p_grace) > p_now)
    ), round AS (
        SELECT
            coalesce(bool_or(reviewer = p_reviewer), false) AS mine,
            count(*) FILTER (WHERE verdict = 'APPROVED') AS approving,
            count(*) FILTER (WHERE verdict = '') AS active,
            coalesce(bool_or(verdict IN ('APPROVED', '') AND reviewer = ANY(p_security)), false)
                AS secured
        FROM held
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
    END
    FROM round
$$;
"""

DROP = """
DROP FUNCTION liza_review_slot_v1(
    boards_task, text, text, boolean, text[], jsonb, timestamptz, integer
);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0025_task_pr_url")]

    operations = [migrations.RunSQL(CREATE, DROP)]

"""The claim queue's predicate in SQL, once (issue 26): `liza_claim_queue_v1`.

For one task row, at `now`, for the claiming coder: which of claim-next's four queues it is in
(1 the coder's own REJECTED, 2 INTEGRATION_FAILED, 3 UNCLAIMED with every dependency MERGED,
4 CLAIMED whose lease died and whose retry backoff has passed, seed 003), or NULL when it is
not claimable (suspended, of a COMPLETED/ABORTED goal, a pending handoff, waiting on a
dependency, in backoff, or any other state). `boards.selectors.tasks.claim_candidates` — what
claim-next locks and what `/work` asks — calls it; nothing else in the product writes this rule.

The function takes the row itself (`boards_task.*`) so that `FOR UPDATE SKIP LOCKED` re-checks
it on the row version it locks (PostgreSQL re-evaluates the WHERE clause on a row updated
since the statement's snapshot), as it did when the rule was an ORM filter.

Versioned: a change of the rule is a new function (`_v2`) in a new migration, never an edit of
this one. States are seed 000's names (boards.protocol), spelled here once.
"""

from django.db import migrations, models

CREATE = """
CREATE FUNCTION liza_claim_queue_v1(
    t boards_task, p_agent text, p_now timestamptz, p_grace integer, p_backoff integer[]
) RETURNS integer LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN t.suspended_at IS NOT NULL THEN NULL
        -- Tasks of a completed or aborted goal are nobody's to claim (SPEC §13).
        WHEN t.goal_id IS NOT NULL AND EXISTS (
            SELECT 1 FROM boards_goal g
            WHERE g.id = t.goal_id AND g.status IN ('COMPLETED', 'ABORTED')
        ) THEN NULL
        WHEN t.status = 'REJECTED' THEN CASE WHEN t.assigned_to = p_agent THEN 1 END
        WHEN t.status = 'INTEGRATION_FAILED' THEN 2
        WHEN t.status NOT IN ('UNCLAIMED', 'CLAIMED') THEN NULL
        -- UNCLAIMED and CLAIMED wait on their dependencies (seed 002).
        WHEN EXISTS (
            SELECT 1 FROM boards_task_depends_on d JOIN boards_task dep ON dep.id = d.to_task_id
            WHERE d.from_task_id = t.id AND dep.status <> 'MERGED'
        ) THEN NULL
        WHEN t.status = 'UNCLAIMED' THEN 3
        -- A dead lease is retried at lease_expires + lease_grace + backoff[crashes], strictly
        -- after (as lease_alive); past the schedule at once after the grace, and the claim
        -- blocks it (retry_exhausts). A pending handoff is held for its agent (SPEC §13).
        WHEN NOT t.handoff_pending AND t.crashes >= 0 AND t.lease_expires < p_now
            - make_interval(secs => p_grace + CASE
                WHEN t.crashes >= coalesce(array_length(p_backoff, 1), 0) THEN 0
                ELSE p_backoff[t.crashes + 1] END)
        THEN 4
    END
$$;
"""

DROP = "DROP FUNCTION liza_claim_queue_v1(boards_task, text, timestamptz, integer, integer[]);"


class Migration(migrations.Migration):
    dependencies = [("boards", "0023_board2_planner_right_repo_url")]

    operations = [
        migrations.RunSQL(CREATE, DROP),
        # The claim order in full (`CLAIM_ORDER` ends with the id): a pick walks the index in
        # that order and asks the function row by row until one matches, instead of asking it
        # of every row of the state to sort them (tasks created together tie on the rest).
        migrations.RemoveIndex(model_name="task", name="boards_task_project_08bdab_idx"),
        migrations.AddIndex(
            model_name="task",
            index=models.Index(
                fields=["project", "status", "priority", "created", "id"],
                name="boards_task_project_1ef120_idx",
            ),
        ),
    ]

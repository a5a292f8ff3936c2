"""Claim-next in one round trip (issue 26): `liza_claim_v3`, the reads of its checks in the call.

Claim-next checked who may claim in Python before calling `liza_claim_v2`: five statements of
reads (the agent locked, the current sprint, what the coder holds, the project's budgets, the
agent's recent failures), then the call. The rules of those checks stay in Python, each in its
one place — the role (`authority.role_refusal`), stop work (`selectors.work.stop_reason`), the
budgets (`selectors.budgets`), one task at a time and where claim-next looks
(`selectors.tasks.claimer_refusal`, `claim_next_queues`), availability
(`selectors.availability`), the enforced limits (`selectors.limits.admission_refusal`) — because
`/work`, the named claim, review claims, heartbeats and run starts ask them too: an SQL copy
would be a second implementation. What moves into the call is their *reads*:

* `liza_claim_v3(..., p_gate)` locks the agent (as v2 does: first in the lock order), reads the
  task the coder holds (one at a time among `p_rules->'holding'`, by id: `holder_task`) and
  whether the project has any budget. With `p_gate`, a coder that holds a task or a project
  with a budget is answered `check` before anything is written — the held task and whether
  there are budgets — and the service runs the checks that need them in Python, then calls
  again without the gate. Otherwise (the common case: a coder holding nothing, no budget) it
  claims at once: `liza_claim_v2`, unchanged, with the queues the service chose for a coder
  holding nothing.
* The statement that calls it (`services.tasks.claims`) reads, beside the call, the current
  sprint (`selectors.sprints.sprint_current_sql`) and the agent's failures in the error window
  (`selectors.availability.failures_sql`), each written once in Python and shared with their
  selectors, as the heartbeat's statement reads the sprint.

The service then checks the answer in the order the checks always ran (role, stop work,
budget, one task at a time, availability, limits, then the claim's own refusals) and raises the
first refusal, which rolls the claim back: the rows end as they were and `records_refusals`
logs the same rejected attempt as before.

v2 stays (v3 calls it; a server of the previous release calls it directly). Never edit this
one: a change of a rule is a new version. tests/coordination/services/tasks/test_claims_sql.py
holds claim-next, its checks and refusals included, equal to the reference model.
"""

from django.db import migrations

CREATE = r"""
CREATE FUNCTION liza_claim_v3(
    p_agent bigint, p_mode text, p_task bigint, p_queues integer[], p_now timestamptz,
    p_lease integer, p_grace integer, p_backoff integer[], p_worktree text, p_base_commit text,
    p_spent_tasks bigint[], p_spent_goals bigint[], p_rules jsonb, p_gate boolean
) RETURNS TABLE (
    outcome text, task_row boards_task, agent_row agents_agent, events jsonb, released bigint[],
    has_budgets boolean
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    a agents_agent;
    held boards_task;
    budgets boolean := false;
BEGIN
    IF p_gate THEN
        -- The agent first (the lock order); then, under its lock, what it holds: a second
        -- claim by the same coder waits here and sees the task the first one took.
        SELECT * INTO a FROM agents_agent WHERE id = p_agent FOR UPDATE;
        SELECT * INTO held FROM boards_task
        WHERE project_id = a.project_id AND assigned_to = a.agent_id
          AND status IN (SELECT jsonb_array_elements_text(p_rules->'holding'))
        ORDER BY id LIMIT 1;
        budgets := EXISTS (SELECT 1 FROM agents_budget WHERE project_id = a.project_id);
        IF held.id IS NOT NULL OR budgets THEN
            RETURN QUERY SELECT 'check'::text, held, a, '[]'::jsonb, '{}'::bigint[], budgets;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT c.outcome, c.task_row, c.agent_row, c.events, c.released, budgets
    FROM liza_claim_v2(p_agent, p_mode, p_task, p_queues, p_now, p_lease, p_grace, p_backoff,
                       p_worktree, p_base_commit, p_spent_tasks, p_spent_goals, p_rules) c;
END
$$;
"""

DROP = """
DROP FUNCTION liza_claim_v3(
    bigint, text, bigint, integer[], timestamptz, integer, integer, integer[], text, text,
    bigint[], bigint[], jsonb, boolean
);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0030_claim_limit_sql")]

    operations = [migrations.RunSQL(CREATE, DROP)]

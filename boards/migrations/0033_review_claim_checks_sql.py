"""Review claim-next in one round trip (issue 26): `liza_review_claim_v2`, the reads of its
checks in the call, as `liza_claim_v3` (migration 0031) did for the coders' claim-next.

Review claim-next checked who may claim in Python before calling `liza_review_claim_v1`: the
stop answer (the current sprint), the agent locked, the project's budgets, the agent's recent
failures, each a statement, then the call. The rules of those checks stay in Python, each in
its one place — the role (`authority.role_refusal`), stop work (`selectors.work.stop_reason`),
the budgets (`selectors.budgets`), availability (`selectors.availability`), the enforced limits
(`selectors.limits.admission_refusal`) — because the named claim, `/work`, the coders' claims
and heartbeats ask them too: an SQL copy would be a second implementation. What moves into the
call is their *reads*:

* `liza_review_claim_v2(..., p_check)` locks the agent (first in the lock order after the
  project row, which the service locks first when a limit is enforced) and reads whether the
  project has any budget. `p_check` = `budgets`: a project with a budget is answered `check`
  before anything is written (the agent as locked, whether there are budgets), and the service
  runs the budget check and reads the spent subjects in Python, then calls again with
  `p_check` = `none`; `always`: answered `check` whatever the budgets (an enforced limit counts
  the reviewers at work, which must be read before the claim). Otherwise (the common case: no
  budget, no limit) it claims at once: `liza_review_claim_v1`, unchanged.
* The statement that calls it (`services.review_claims`) reads, beside the call, the current
  sprint (`selectors.sprints.sprint_current_sql`) and the agent's failures in the error window
  (`selectors.availability.failures_sql`), each written once in Python and shared with their
  selectors.

The service then checks the answer in the order the checks always ran (role, stop work,
budget, availability, limits) and raises the first refusal, which rolls the claim back; a
reviewer that may take no new review is answered as before (its held review, else the refusal
naming the first review it could take) after the claim is rolled back.

v1 stays (v2 calls it; the named claim calls it directly). Never edit this one: a change of a
rule is a new version. tests/coordination/services/test_review_claims_sql.py holds review
claim-next, its checks and refusals included, equal to the reference model.
"""

from django.db import migrations

CREATE = r"""
CREATE FUNCTION liza_review_claim_v2(
    p_agent bigint, p_mode text, p_task bigint, p_now timestamptz, p_lease integer,
    p_grace integer, p_required jsonb, p_spent_tasks bigint[], p_spent_goals bigint[],
    p_rules jsonb, p_check text
) RETURNS TABLE (
    outcome text, task_row boards_task, review_row boards_review, agent_row agents_agent,
    events jsonb, busy_reviewer text, has_budgets boolean
) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    a agents_agent;
    no_task boards_task;
    no_review boards_review;
    budgets boolean := false;
BEGIN
    IF p_check IN ('budgets', 'always') THEN
        SELECT * INTO a FROM agents_agent WHERE id = p_agent FOR UPDATE;
        budgets := EXISTS (SELECT 1 FROM agents_budget WHERE project_id = a.project_id);
        IF budgets OR p_check = 'always' THEN
            RETURN QUERY SELECT 'check'::text, no_task, no_review, a, '[]'::jsonb, NULL::text,
                                budgets;
            RETURN;
        END IF;
    END IF;
    RETURN QUERY SELECT c.outcome, c.task_row, c.review_row, c.agent_row, c.events,
                        c.busy_reviewer, budgets
    FROM liza_review_claim_v1(p_agent, p_mode, p_task, p_now, p_lease, p_grace, p_required,
                              p_spent_tasks, p_spent_goals, p_rules) c;
END
$$;
"""

DROP = """
DROP FUNCTION liza_review_claim_v2(
    bigint, text, bigint, timestamptz, integer, integer, jsonb, bigint[], bigint[], jsonb, text
);
"""


class Migration(migrations.Migration):
    dependencies = [("boards", "0032_review_claim_sql")]

    operations = [migrations.RunSQL(CREATE, DROP)]

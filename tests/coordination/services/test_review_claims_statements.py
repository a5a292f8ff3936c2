"""What one review claim-next costs in SQL (issue 26): in a project without budgets or limits,
one statement — `liza_review_claim_v2` (boards migration 0033) locks the agent and reads whether
there are budgets, the current sprint and the agent's failures are read beside it, and
`liza_review_claim_v1` (0032) picks, locks and writes (the dead claims of the round closed, the
review, the reviewer, the events). With a budget: the gated call, the budget checks' reads, the
call. Pinned so that neither the checks' reads nor the writes creep back into statements of
their own."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Budget
from boards.coordination.models.tasks import Review
from boards.coordination.services import reviews


def statements(world, reviewer: str = "code-reviewer-1") -> tuple[object, list[str]]:
    agent = world.agent(reviewer)  # as the key gives it
    with CaptureQueriesContext(connection) as queries:
        got = reviews.review_claim_next(project=world.project, agent=agent, now=world.tick())
    # The test's own transaction makes the service's atomic block a savepoint: not a statement
    # the service runs in production (there it is BEGIN … COMMIT).
    return got, [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


@pytest.mark.django_db
def test_a_review_claim_next_writes_in_one_statement(world):
    world.ready_for_review("task-1")
    got, sql = statements(world)
    assert got.task.key == "task-1" and got.reviewer == "code-reviewer-1"
    # The checks' reads, the pick and every write: one statement.
    assert len(sql) == 1, "\n".join(s[:120] for s in sql)
    assert "FROM liza_review_claim_v2(" in sql[0] and "LEFT JOIN LATERAL" in sql[0]


@pytest.mark.django_db
def test_a_review_claim_next_that_closes_a_dead_claim_costs_no_more(world):
    """The dead claim of the round closed, its reviewer freed and the reclaim's event written
    are the same one call."""
    world.under_review("task-1")
    Review.objects.filter(reviewer="code-reviewer-1").update(
        lease_expires=world.now - timedelta(hours=1)
    )
    got, sql = statements(world, "code-reviewer-2")
    assert got.reviewer == "code-reviewer-2"
    assert Review.objects.get(reviewer="code-reviewer-1").closed_at is not None
    assert len(sql) == 1, "\n".join(s[:120] for s in sql)
    assert "FROM liza_review_claim_v2(" in sql[0]


@pytest.mark.django_db
def test_a_review_claim_next_in_a_project_with_budgets_reads_them_once(world):
    """A budget makes the call answer `check` before any write: then the budgets, read once
    for the over-budget refusal and the spent tasks, and the call that claims."""
    world.ready_for_review("task-1")
    Budget.objects.create(
        project=world.project, scope="project", limit_tokens=10**9, updated_at=world.now
    )
    got, sql = statements(world)
    assert got.task.key == "task-1"
    assert sum('FROM "agents_budget"' in s for s in sql) == 1, "\n".join(sql)
    calls = [s.count("liza_review_claim_v2(") for s in sql]
    assert calls[0] == calls[-1] == 1 and sum(calls) == 2, "\n".join(sql)
    assert "'budgets'::text" in sql[0] and "'none'::text" in sql[-1]

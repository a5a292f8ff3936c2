"""What one review claim-next costs in SQL (issue 26): the reads of its checks (the stop answer,
the agent locked, budgets, availability) and one call of `liza_review_claim_v1` (boards migration
0032), which picks, locks and writes — the dead claims of the round closed, the review, the
reviewer, the events. Pinned so that the writes cannot creep back into Python statements."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

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
    # The pick and every write are the last statement; before it, only the checks' reads.
    assert "FROM liza_review_claim_v1(" in sql[-1]
    assert all(s.lstrip().startswith("SELECT") for s in sql), "\n".join(sql)
    assert not any("liza_review_claim_v1" in s for s in sql[:-1])
    # The project's budgets are read once, for the over-budget refusal and the spent tasks.
    assert sum('FROM "agents_budget"' in s for s in sql) == 1, "\n".join(sql)
    assert len(sql) <= 5, "\n".join(s[:120] for s in sql)


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
    assert "FROM liza_review_claim_v1(" in sql[-1]
    assert len(sql) <= 5, "\n".join(s[:120] for s in sql)

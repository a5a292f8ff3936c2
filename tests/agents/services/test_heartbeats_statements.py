"""What one heartbeat costs in SQL (issue 26): one statement, whatever the agent holds — the
call of `liza_heartbeat_v1` (boards migration 0027), which locks, checks and writes, beside the
reads of the stop answer (the current sprint, whether the project has a budget). It was a read
and a write per lease while the rules were Python. Pinned so that it cannot creep back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.services import agent_heartbeat


def statements(agent, now) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        agent_heartbeat(agent=agent, now=now)
    # The test's own transaction makes the service's atomic block a savepoint: not a statement
    # the service runs in production (there it is BEGIN … COMMIT).
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


@pytest.mark.django_db
def test_a_coders_heartbeat_is_one_statement(world):
    task = world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    agent_heartbeat(agent=coder, now=world.tick())  # STARTING → IDLE out of the way
    sql = statements(coder, world.tick())
    assert len(sql) == 1, "\n".join(sql)
    assert sql[0].startswith("SELECT") and "FROM liza_heartbeat_v1(" in sql[0]
    task.refresh_from_db()
    assert task.lease_expires is not None and task.lease_expires > world.now


@pytest.mark.django_db
def test_a_reviewers_heartbeat_is_one_statement(world):
    world.under_review("task-2")  # code-reviewer-1 holds its review lease
    reviewer = world.reviewer  # its project and config loaded, as the key cache keeps them
    agent_heartbeat(agent=reviewer, now=world.tick())
    sql = statements(reviewer, world.tick())
    assert len(sql) == 1, "\n".join(sql)
    assert "FROM liza_heartbeat_v1(" in sql[0]
    beat = agent_heartbeat(agent=reviewer, now=world.tick())
    assert [r.task.key for r in beat.reviews] == ["task-2"]
    assert beat.reviews[0].lease_expires > world.now

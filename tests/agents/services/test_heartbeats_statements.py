"""What one heartbeat costs in SQL (issue 26): one statement, whatever the agent holds — the
call of `liza_heartbeat_v3` (boards migration 0035), which locks, checks and writes, beside the
reads of the stop answer (the current sprint, whether the project has a budget). It was a read
and a write per lease while the rules were Python. Pinned so that it cannot creep back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from psycopg import pq

from agents.models import Agent
from agents.services import agent_heartbeat
from boards.errors import Forbidden
from boards.models import Event


def statements(agent, now, generation=None) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        agent_heartbeat(agent=agent, now=now, generation=generation)
    # The test's own transaction gives the service a savepoint (as a request's with an
    # Idempotency-Key): not a statement it runs without one (there it runs in autocommit).
    return [q["sql"] for q in queries.captured_queries if "SAVEPOINT" not in q["sql"]]


@pytest.mark.django_db
@pytest.mark.parametrize("generation", [None, 1], ids=["no generation", "its generation"])
def test_a_coders_heartbeat_is_one_statement(world, generation):
    """With its session's generation too: the fence is checked in the same statement."""
    task = world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    agent_heartbeat(agent=coder, now=world.tick())  # STARTING → IDLE out of the way
    sql = statements(coder, world.tick(), generation)
    assert len(sql) == 1, "\n".join(sql)
    assert sql[0].startswith("SELECT") and "FROM liza_heartbeat_v3(" in sql[0]
    task.refresh_from_db()
    assert task.lease_expires is not None and task.lease_expires > world.now


@pytest.mark.django_db
def test_a_reviewers_heartbeat_is_one_statement(world):
    world.under_review("task-2")  # code-reviewer-1 holds its review lease
    reviewer = world.reviewer  # its project and config loaded, as the key cache keeps them
    agent_heartbeat(agent=reviewer, now=world.tick())
    sql = statements(reviewer, world.tick())
    assert len(sql) == 1, "\n".join(sql)
    assert "FROM liza_heartbeat_v3(" in sql[0]
    beat = agent_heartbeat(agent=reviewer, now=world.tick())
    assert [r.task.key for r in beat.reviews] == ["task-2"]
    assert beat.reviews[0].lease_expires > world.now


def _in_autocommit(agent, now) -> list[tuple[bool, bool]]:
    """Whether each statement of the heartbeat ran in autocommit, outside any atomic block."""
    seen = []

    def record(execute, sql, params, many, context):
        seen.append((connection.connection.autocommit, connection.in_atomic_block))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        agent_heartbeat(agent=agent, now=now)
    return seen


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_call_is_its_own_transaction(world):
    # As a request without an Idempotency-Key runs it: the one statement in autocommit, so no
    # BEGIN and COMMIT round trips around it (psycopg sends them apart from the statement).
    task = world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    agent_heartbeat(agent=coder, now=world.tick())
    assert _in_autocommit(coder, world.tick()) == [(True, False)]
    assert connection.connection.info.transaction_status == pq.TransactionStatus.IDLE
    task.refresh_from_db()
    assert task.lease_expires > world.now  # committed: another read sees it


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_a_refusal_writes_only_its_event(world):
    world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    Agent.objects.filter(pk=coder.pk).update(enabled=False)
    row = Agent.objects.values().get(pk=coder.pk)
    with pytest.raises(Forbidden):
        agent_heartbeat(agent=coder, now=world.tick())
    assert Agent.objects.values().get(pk=coder.pk) == row
    refusal = Event.objects.filter(project=world.project, action="agent_heartbeat_failed").get()
    assert (refusal.actor_id, refusal.outcome) == ("coder-2", "rejected")

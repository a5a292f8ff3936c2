"""What one heartbeat costs in SQL (issue 26): the common case — a coder holding one task in a
project with no budget — is one read (the agent locked, its task, the current sprint, whether
the project has a budget) and the two lease writes. Pinned so that it cannot creep back."""

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
def test_a_coders_heartbeat_is_one_read_and_two_writes(world):
    task = world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    agent_heartbeat(agent=coder, now=world.tick())  # STARTING → IDLE out of the way
    sql = statements(coder, world.tick())
    assert len(sql) == 3, "\n".join(sql)
    assert sql[0].startswith("SELECT") and "FOR UPDATE OF a" in sql[0]
    assert sql[1].startswith('UPDATE "boards_task"') and "xmin" in sql[1]
    assert sql[2].startswith('UPDATE "agents_agent"')
    task.refresh_from_db()
    assert task.lease_expires is not None and task.lease_expires > world.now


@pytest.mark.django_db
def test_a_task_changed_since_the_read_is_locked_and_decided_on_again(world, monkeypatch):
    """The lease write is made only on the row as read; else the task is locked and the
    heartbeat decides on it as it is (here: still its claim, extended)."""
    from boards.coordination import rows

    world.claimed("task-1", coder="coder-2")
    coder = world.agent("coder-2")
    real = rows.save_fields

    def stale_version(instance, fields=None, *, version=""):
        return real(instance, fields, version="1" if version else "")

    monkeypatch.setattr(rows, "save_fields", stale_version)
    beat = agent_heartbeat(agent=coder, now=world.tick())
    assert beat.task is not None and beat.task.lease_expires > world.now


@pytest.mark.django_db
def test_a_reviewers_heartbeat_reads_its_review_leases_apart(world):
    world.under_review("task-2")  # code-reviewer-1 holds its review lease
    reviewer = world.reviewer  # its project and config loaded, as the key cache keeps them
    agent_heartbeat(agent=reviewer, now=world.tick())
    sql = statements(reviewer, world.tick())
    # the one read, its review leases locked, the review lease, the agent
    assert len(sql) == 4, "\n".join(sql)
    assert sql[2].startswith('UPDATE "boards_review"')

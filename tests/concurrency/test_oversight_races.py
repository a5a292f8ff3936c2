"""Human oversight racing the agents it acts on: threads with their own PostgreSQL connections.

An admin releasing a claim, or suspending a task under review, while its holder heartbeats:
whatever the order, the action succeeds, the heartbeat either lands before it or is told
`lease_lost` (exit 42), and nobody sees a deadlock or any other database error.
"""

from __future__ import annotations

import pytest

from agents.services import agent_heartbeat
from boards.coordination.models.tasks import Review
from boards.coordination.services import tasks
from boards.errors import ProtocolError
from tests.concurrency.conftest import run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 15


def _heartbeat_outcome(outcome) -> str:
    if outcome.ok:
        return "beat first"
    assert isinstance(outcome.error, ProtocolError), repr(outcome.error)
    assert (outcome.error.code, outcome.error.details["exit"]) == ("lease_lost", 42)
    return "lease_lost"


def test_release_claim_racing_the_holders_heartbeat():
    world = World()
    for i in range(ROUNDS):
        key = f"stuck-{i}"
        world.claimed(key)
        now = world.tick()
        heartbeat, release = run_together(
            lambda now=now: agent_heartbeat(agent=world.agent("coder-1"), now=now),
            lambda now=now, key=key: tasks.task_release_claim(
                task=world.task(key), actor=world.admin, reason="Looping", now=now
            ),
        )
        assert release.ok, f"round {i}: {release.error!r}"
        _heartbeat_outcome(heartbeat)
        task = world.task(key)
        assert (task.status, task.assigned_to) == ("UNCLAIMED", "")
        assert world.agent("coder-1").current_task_id is None
        # Whatever the order, the coder is told before it does anything else.
        with pytest.raises(ProtocolError) as lost:
            agent_heartbeat(agent=world.agent("coder-1"), now=world.tick())
        assert lost.value.code == "lease_lost"
        tasks.task_cancel(task=task, actor=world.admin, reason="Done", now=world.tick())


def test_suspend_racing_the_reviewers_heartbeat():
    world = World()
    for i in range(ROUNDS):
        key = f"review-{i}"
        world.under_review(key, coder=("coder-1", "coder-2", "coder-3")[i % 3])
        now = world.tick()
        heartbeat, suspend = run_together(
            lambda now=now: agent_heartbeat(agent=world.agent("code-reviewer-1"), now=now),
            lambda now=now, key=key: tasks.task_suspend(
                task=world.task(key), actor=world.admin, reason="Hold", now=now
            ),
        )
        assert suspend.ok, f"round {i}: {suspend.error!r}"
        _heartbeat_outcome(heartbeat)
        assert not Review.objects.filter(task__key=key, closed_at__isnull=True).exists()
        assert world.agent("code-reviewer-1").status == "IDLE"
        # The coder's task goes: next round another coder and the same reviewer start afresh.
        tasks.task_cancel(task=world.task(key), actor=world.admin, reason="x", now=world.tick())

"""A coder's heartbeat and its lease (agents.services.heartbeats): lease lost after a takeover or
an expiry, extended while alive.

Split from the milestone file test_limits.py (issue #22 item 3).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.services import agent_heartbeat
from boards.errors import (
    LeaseLost,
)
from tests.coordination.services.helpers import (
    assert_refused_unchanged,
    assert_valid,
    goal_world,
)
from tests.coordination.services.tasks.test_limits import (
    _lease_gone,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    """The services' world (tests/coordination/services/conftest.py): seed 002 requires a goal
    IN_PROGRESS."""
    return goal_world()


# coder leases and identity
# ---------------------------------------------------------------------------------------------


def test_heartbeat_after_takeover_is_lease_lost(world):
    world.claimed("task-1", "coder-1")
    world.tick(_lease_gone(world))
    world.claim("task-1", "coder-2")
    coder = world.agent("coder-1")

    exc, event = assert_refused_unchanged(
        lambda: agent_heartbeat(agent=coder, now=world.tick()),
        project=world.project,
        obj=coder,
        exc_type=LeaseLost,
        code="lease_lost",
        status_code=409,
    )
    assert exc.details["exit"] == 42
    assert event.actor_id == "coder-1"
    # The new holder's heartbeat extends its lease.
    now = world.tick()
    agent_heartbeat(agent=world.agent("coder-2"), now=now)
    assert world.task("task-1").lease_expires == now + timedelta(
        seconds=world.project.config.lease_duration
    )


def test_heartbeat_after_lease_expiry_is_lease_lost(world):
    world.claimed("task-1", "coder-1")
    world.tick(_lease_gone(world))
    coder = world.agent("coder-1")
    assert_refused_unchanged(
        lambda: agent_heartbeat(agent=coder, now=world.tick()),
        project=world.project,
        obj=coder,
        exc_type=LeaseLost,
        details={"task": "task-1", "exit": 42},
    )


def test_heartbeat_extends_the_task_lease(world):
    world.claimed("task-1", "coder-1")
    now = world.tick(200)
    result = agent_heartbeat(agent=world.coder, now=now)
    lease = now + timedelta(seconds=world.project.config.lease_duration)
    assert result.stop is None
    assert world.task("task-1").lease_expires == lease
    assert world.coder.lease_expires == lease
    assert_valid(world.project, now=now)

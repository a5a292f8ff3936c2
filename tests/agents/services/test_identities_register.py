"""Registering an agent identity (agents.services.identities.agent_register): a collision while
its lease is live, a restart after it expired.

Split from the milestone file test_limits.py (issue #22 item 3).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.services import agent_register
from boards.errors import (
    ProtocolError,
)
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    goal_world,
    row_snapshot,
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


def test_register_collision_while_the_lease_is_live(world):
    coder = world.agent("coder-1")
    assert coder.has_live_lease(world.now)
    _, event = assert_refused_unchanged(
        lambda: agent_register(
            project=world.project, agent_id="coder-1", role="coder", now=world.tick()
        ),
        project=world.project,
        obj=coder,
        exc_type=ProtocolError,
        code="collision",
        status_code=409,
    )
    assert event.actor_id == "coder-1"


def test_register_after_lease_expiry_restarts_the_row(world):
    world.claimed("task-1", "coder-1")
    world.submit("task-1")
    before = row_snapshot(world.agent("coder-1"))
    assert before["status"] == "WAITING"
    world.tick(_lease_gone(world))
    now = world.tick()

    agent = agent_register(project=world.project, agent_id="coder-1", role="coder", now=now)

    after = row_snapshot(agent)
    assert after["id"] == before["id"]
    assert after["status"] == "STARTING"
    assert after["lease_expires"] == now + timedelta(seconds=world.project.config.lease_duration)
    assert (after["heartbeat"], after["registered_at"]) == (now, now)
    (event,) = applied_events(world.project, action="restarted")
    assert (event.actor_id, event.to_status) == ("coder-1", "STARTING")

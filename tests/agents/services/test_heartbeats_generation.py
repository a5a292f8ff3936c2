"""A generation per registration (agents.services.heartbeats): every `agent_register` adds one
to `Agent.generation` and answers it; a process that sends an older one (its session
superseded: its lease lapsed while it hung and the id registered again) is refused
`not_registered` (exit 8) by the heartbeat and by `agent_leave`, on the row each locks, and
changes nothing of the live session (reference/original-liza.md §4 item 2)."""

from __future__ import annotations

import pytest

from agents.services import agent_heartbeat, agent_leave, agent_register
from boards.errors import NotRegistered
from boards.protocol import format_timestamp
from tests.coordination.services.helpers import assert_refused_unchanged, goal_world

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    return goal_world()


def superseded(world, agent_id: str = "coder-1", role: str = "coder"):
    """Session 1 of `agent_id` hangs past its lease; the id registers again (session 2)."""
    world.tick(3600)
    return agent_register(project=world.project, agent_id=agent_id, role=role, now=world.tick())


def test_every_registration_adds_one_to_the_generation_and_answers_it(world):
    assert world.agent("coder-1").generation == 1  # the world's one registration

    again = superseded(world)

    assert again.generation == 2
    assert world.agent("coder-1").generation == 2
    assert world.agent("coder-2").generation == 1  # another id's sessions are its own


def test_a_superseded_sessions_heartbeat_is_refused_and_extends_nothing(world):
    """Before: session 1, back from its hang, extended session 2's lease as its own."""
    live = superseded(world)
    registered_at = format_timestamp(live.registered_at)

    error, event = assert_refused_unchanged(
        lambda: agent_heartbeat(agent=world.agent("coder-1"), now=world.tick(), generation=1),
        project=world.project,
        obj=world.agent("coder-1"),
        exc_type=NotRegistered,
        code="not_registered",
    )

    assert error.message == (
        f"session 1 of coder-1 was superseded by session 2 registered at {registered_at}; exit"
    )
    assert error.details == {
        "agent_id": "coder-1",
        "generation": 1,
        "current_generation": 2,
        "registered_at": registered_at,
        "exit": 8,
    }
    assert (event.action, event.data["code"]) == ("heartbeat_failed", "not_registered")
    # The live session heartbeats, with its generation or without one (an older client).
    for generation in (2, None):
        beat = agent_heartbeat(
            agent=world.agent("coder-1"), now=world.tick(), generation=generation
        )
        assert beat.agent.lease_expires > world.now


def test_a_superseded_sessions_late_leave_does_not_end_the_live_session(world):
    """Before: session 1's supervisor, exiting late, ended session 2 (left_at set) and its
    next heartbeat was refused — a stale process killed a healthy one."""
    superseded(world)

    error, _ = assert_refused_unchanged(
        lambda: agent_leave(
            project=world.project, agent=world.agent("coder-1"), now=world.tick(), generation=1
        ),
        project=world.project,
        obj=world.agent("coder-1"),
        exc_type=NotRegistered,
        code="not_registered",
    )

    assert error.details["current_generation"] == 2
    live = world.agent("coder-1")
    assert live.left_at is None and live.has_live_lease(world.now)
    agent_heartbeat(agent=live, now=world.tick(), generation=2)
    # Its own leave, by the live session, still ends it.
    left = agent_leave(project=world.project, agent=live, now=world.tick(), generation=2)
    assert left.left_at == world.now

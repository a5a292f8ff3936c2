"""Disabling an agent (agents.services.identities.agent_set_enabled; SPEC §7): its claim and its
own review go back.

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from agents.services import agent_heartbeat, agent_set_enabled
from boards.coordination.models.tasks import Review
from boards.errors import (
    Conflict,
    Forbidden,
)
from tests.coordination.services.helpers import (
    _actions,
    _claim_next,
    _last_event_id,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    goal_world,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    """The services' world (tests/coordination/services/conftest.py): seed 002 requires a goal
    IN_PROGRESS."""
    return goal_world()


# ---------------------------------------------------------------------------------------------
# disabling an agent
# ---------------------------------------------------------------------------------------------


def test_disabling_a_coder_takes_its_claim_back(world):
    world.claimed("t1")
    since = _last_event_id(world)

    agent = agent_set_enabled(agent=world.coder, actor=world.admin, enabled=False, now=world.tick())

    assert (agent.enabled, agent.status, agent.current_task) == (False, "IDLE", None)
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
    ]
    (event,) = applied_events(world.project, action="agent_disabled")
    assert (event.actor_kind, event.detail) == ("human", "coder-1 disabled; released t1")
    assert_valid(world.project, now=world.now)
    # Its requests are refused; another coder takes the task at once.
    with pytest.raises(Forbidden):
        agent_heartbeat(agent=world.coder, now=world.tick())
    with pytest.raises(PermissionDenied):
        _claim_next(world, "coder-1")
    assert _claim_next(world, "coder-2").key == "t1"
    assert_refused_unchanged(
        lambda: agent_set_enabled(
            agent=world.coder, actor=world.admin, enabled=False, now=world.tick()
        ),
        project=world.project,
        obj=world.coder,
        exc_type=Conflict,
    )

    agent = agent_set_enabled(agent=world.coder, actor=world.admin, enabled=True, now=world.tick())

    assert agent.enabled
    assert [e.action for e in applied_events(world.project)][-1] == "agent_enabled"
    world.unclaimed("t2")
    assert _claim_next(world, "coder-1").key == "t2"
    assert agent_heartbeat(agent=world.coder, now=world.tick()).task.key == "t2"
    assert_valid(world.project, now=world.now)


def test_disabling_a_reviewer_releases_only_its_own_review(world):
    world.ready_for_review("t1", criticality="complex")
    world.claim_review("t1", "code-reviewer-1")
    world.claim_review("t1", "code-reviewer-2")

    agent_set_enabled(agent=world.reviewer, actor=world.admin, enabled=False, now=world.tick())

    open_reviews = Review.objects.filter(task__key="t1", closed_at__isnull=True)
    assert [r.reviewer for r in open_reviews] == ["code-reviewer-2"]
    assert world.reviewer.status == "IDLE"
    assert world.agent("code-reviewer-2").status == "REVIEWING"
    assert_valid(world.project, now=world.now)

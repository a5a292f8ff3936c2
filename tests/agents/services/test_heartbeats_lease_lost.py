"""A heartbeat whose task is no longer its agent's, over HTTP (agents.services.heartbeats):
taken over after its lease lapsed, blocked by an admin's override, or lapsed and untaken, it
is a 409 `lease_lost` with exit 42 that extends nothing; the service's own cases are in
test_heartbeats.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents.models import Agent
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    assert_valid,
    domain_snapshot,
    http_goal_world,
    session_client,
)
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


def _expire(world: World, key: str, agent_id: str) -> None:
    """The coder stopped heartbeating ten minutes ago: its task lease and its own lease lapsed
    (lease_duration 300 s, lease_grace 60 s)."""
    past = timezone.now() - timedelta(minutes=10)
    Task.objects.filter(project=world.project, key=key).update(lease_expires=past)
    Agent.objects.filter(project=world.project, agent_id=agent_id).update(lease_expires=past)


def test_heartbeat_after_a_takeover_is_lease_lost_exit_42(world):
    world.unclaimed("t1")
    base = api_base(world.project.slug)
    old, new = agent_client(world.agent("coder-1")), agent_client(world.agent("coder-2"))
    assert old.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json").json()[
        "task"
    ]["key"] == ("t1")
    _expire(world, "t1", "coder-1")

    taken = new.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json").json()
    assert (taken["task"]["key"], taken["task"]["assigned_to"]) == ("t1", "coder-2")
    assert taken["task"]["failed_by"] == ["coder-1"]
    assert_valid(world.project.slug, "the takeover")

    before = domain_snapshot(world.project)
    error = assert_envelope(
        old.post(f"{base}/agents/heartbeat", {}, format="json"), 409, "lease_lost"
    )
    assert error["details"]["exit"] == 42
    assert (error["details"]["task"], error["details"]["assigned_to"]) == ("t1", "coder-2")
    assert domain_snapshot(world.project) == before  # the heartbeat extended nothing
    refusal = Event.objects.filter(project=world.project, action="heartbeat_failed").get()
    assert (refusal.actor_id, refusal.outcome, refusal.task.key) == ("coder-1", "rejected", "t1")
    # Any other write by the old holder is lease_lost too.
    submit = old.post(
        f"{base}/tasks/t1/request-review",
        {"review_commit": "c1", "tree_clean": True},
        format="json",
    )
    assert assert_envelope(submit, 409, "lease_lost")["details"]["exit"] == 42
    # The new holder heartbeats normally; the old one, restarted fresh, too.
    assert new.post(f"{base}/agents/heartbeat", {}, format="json").json()["task"] == "t1"
    assert old.post(f"{base}/agents/register", {}, format="json").status_code == 200
    beat = old.post(f"{base}/agents/heartbeat", {}, format="json")
    assert beat.status_code == 200 and beat.json()["task"] is None
    assert_valid(world.project.slug, "the restart")


def test_heartbeat_after_an_override_block_is_lease_lost_exit_42(world):
    world.unclaimed("t1")
    base = api_base(world.project.slug)
    coder = agent_client(world.coder)
    coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")
    admin = session_client(world.admin)
    blocked = admin.post(
        f"{base}/tasks/t1/override-block", {"reason": "The spec changed"}, format="json"
    )
    assert blocked.json()["task"]["status"] == "BLOCKED"
    error = assert_envelope(
        coder.post(f"{base}/agents/heartbeat", {}, format="json"), 409, "lease_lost"
    )
    assert (error["details"]["task"], error["details"]["exit"]) == ("t1", 42)
    assert "override" in error["details"]["reason"]
    assert_valid(world.project.slug, "the override block")


def test_heartbeat_after_the_lease_lapsed_untaken_is_lease_lost(world):
    world.unclaimed("t1")
    base = api_base(world.project.slug)
    coder = agent_client(world.agent("coder-1"))
    coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")
    _expire(world, "t1", "coder-1")
    error = assert_envelope(
        coder.post(f"{base}/agents/heartbeat", {}, format="json"), 409, "lease_lost"
    )
    assert error["details"] == {"task": "t1", "exit": 42}
    assert world.task("t1").lease_expires < timezone.now()  # not revived

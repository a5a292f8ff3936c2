"""Seed 000's graceful-abort triggers the board owns, over HTTP (`selectors.work.stop_reason`):
a paused project or a sprint at CHECKPOINT refuses claims with exit 42 and tells heartbeats
and `/work` to stop."""

from __future__ import annotations

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Goal, Project, Sprint
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    domain_snapshot,
    http_goal_world,
    validate,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return http_goal_world()


def test_a_paused_project_refuses_claims_and_tells_heartbeats_to_stop(world):
    world.unclaimed("t1")
    world.ready_for_review("t2", coder="coder-2")
    base = api_base(world.project.slug)
    Project.objects.filter(pk=world.project.pk).update(paused_at=timezone.now())
    coder, reviewer = agent_client(world.agent("coder-1")), agent_client(world.reviewer)
    before = domain_snapshot(world.project)

    claim = coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")
    assert assert_envelope(claim, 409, "paused")["details"]["exit"] == 42
    named = coder.post(f"{base}/tasks/t1/claim", {"base_commit": "b1"}, format="json")
    assert assert_envelope(named, 409, "paused")["details"]["exit"] == 42
    review = reviewer.post(f"{base}/tasks/t2/review/claim")
    assert assert_envelope(review, 409, "paused")["details"]["exit"] == 42
    assert domain_snapshot(world.project) == before
    assert world.task("t1").status == "UNCLAIMED"

    beat = coder.post(f"{base}/agents/heartbeat", {}, format="json")
    assert beat.status_code == 200, beat.json()
    assert (beat.json()["stop"], beat.json()["exit"]) == ("paused", 42)
    work = coder.get(f"{base}/work").json()
    assert (work["work"], work["exit"]) == (False, 42)
    assert validate(world.project.slug) == "VALID"


def test_a_sprint_at_checkpoint_stops_agents_the_same_way(world):
    from boards.coordination.services.sprints import sprint_checkpoint, sprint_create

    world.unclaimed("t1")
    sprint = sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project),
        planned=["t1"],
        now=world.tick(),
    )
    sprint_checkpoint(sprint=sprint, actor=world.admin, now=world.tick(), reason="Look first")
    assert Sprint.objects.get(pk=sprint.pk).status == "CHECKPOINT"
    base = api_base(world.project.slug)
    coder = agent_client(world.coder)
    claim = coder.post(f"{base}/tasks/claim-next", {"base_commit": "b1"}, format="json")
    assert assert_envelope(claim, 409, "checkpoint")["details"]["exit"] == 42
    beat = coder.post(f"{base}/agents/heartbeat", {}, format="json").json()
    assert (beat["stop"], beat["exit"]) == ("checkpoint", 42)

"""An agent leaves STARTING once it acts with its key (issue 25: planner-1 showed STARTING for a
whole run, since a planner neither heartbeats nor claims)."""

from __future__ import annotations

import pytest

from agents.models import Agent
from boards.coordination import outbox
from boards.protocol import AgentStatus
from tests.api.helpers import api_base, bearer, http_start, key_for
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


def test_a_planner_that_only_plans_is_idle_after_its_first_request(monkeypatch):
    world = World(now=http_start())
    assert world.planner.status == AgentStatus.STARTING
    published: list[tuple[str, int]] = []
    real_changed = outbox.changed
    monkeypatch.setattr(
        outbox,
        "changed",
        lambda project_id, kind, object_id, **kw: (
            published.append((kind, object_id)),
            real_changed(project_id, kind, object_id, **kw),
        ),
    )
    client = bearer(key_for(world.planner))

    response = client.post(
        f"{api_base(world.project.slug)}/goal", {"description": "Ship it"}, format="json"
    )

    assert response.status_code == 201, response.json()
    assert Agent.objects.get(pk=world.planner.pk).status == AgentStatus.IDLE
    assert (outbox.AGENT, world.planner.pk) in published  # open boards redraw its row


def test_an_agent_past_starting_is_left_as_it_is():
    world = World(now=http_start())
    world.unclaimed("T-1")
    world.claim("T-1")
    client = bearer(key_for(world.coder))
    assert client.get(f"{api_base(world.project.slug)}/work").status_code == 200
    assert Agent.objects.get(pk=world.coder.pk).status == AgentStatus.WORKING

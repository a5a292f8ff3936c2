"""An agent leaves STARTING once it acts with its key (issue 25: planner-1 showed STARTING for a
whole run, since a planner neither heartbeats nor claims); a key's last use is written rarely."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.models import Agent, AgentKey
from agents.services import agent_key_used
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


def test_a_fleets_key_row_is_written_once_in_five_minutes_of_heartbeats():
    """A key heartbeating every 30 s through two workers, each judging by its own cached copy of
    the key (agents.keycache): its row is written once per copy in five minutes, not on nearly
    heartbeat (bench/fleet.py counted 0.6 key writes a heartbeat at a resolution of a minute)."""
    world = World(now=http_start())
    prefix = key_for(world.coder).split("_")[1]
    copies = [AgentKey.objects.get(prefix=prefix) for _ in range(2)]  # one a worker
    start = world.now
    with CaptureQueriesContext(connection) as queries:
        for beat in range(10):  # 0 s … 270 s, alternating workers
            agent_key_used(key=copies[beat % 2], now=start + timedelta(seconds=30 * beat))
    writes = [q for q in queries.captured_queries if q["sql"].startswith("UPDATE")]
    assert len(writes) == 2
    assert AgentKey.objects.get(prefix=prefix).last_used_at == start + timedelta(seconds=30)

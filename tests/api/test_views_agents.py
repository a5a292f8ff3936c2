"""The agents the REST API shows (boards.api.views AgentListView, AgentDetailView:
`AgentSerializer`): an agent that left says when (`left_at`), one registered says null."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents.services import agent_leave, agent_register
from tests.api.helpers import agent_client, api_base, http_start
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


def test_an_agent_that_left_says_when_in_the_list_and_its_own_answer():
    world = World(now=http_start())
    left = agent_leave(project=world.project, agent=world.agent("coder-2"), now=timezone.now())
    client, base = agent_client(world.coder), api_base(world.project.slug)

    listed = {a["agent_id"]: a for a in client.get(f"{base}/agents").json()}
    alone = client.get(f"{base}/agents/coder-2")

    assert alone.status_code == 200
    assert listed["coder-2"]["left_at"] == alone.json()["left_at"]
    assert parse_datetime(alone.json()["left_at"]) == left.left_at
    assert listed["coder-1"]["left_at"] is None
    # A new session: registered again, it is no longer shown as gone.
    agent_register(project=world.project, agent_id="coder-2", role="coder", now=timezone.now())
    assert client.get(f"{base}/agents/coder-2").json()["left_at"] is None

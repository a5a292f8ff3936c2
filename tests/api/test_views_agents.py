"""The agents the REST API shows (boards.api.views AgentListView, AgentDetailView:
`AgentSerializer`): an agent that left says when (`left_at`), one registered says null; the
register answer says its generation, which a superseded session's process sends in vain."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents.services import agent_leave, agent_register
from tests.api.helpers import agent_client, api_base, assert_envelope, http_start
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


def test_registering_answers_the_generation_a_superseded_sessions_requests_are_409():
    """Session 1 of coder-1 ended (its supervisor's `liza leave`), but its coding CLI still
    runs; session 2 registers. Session 1's heartbeat (the DRF view: a query string) and leave,
    sent with its generation, are `not_registered` (exit 8); before, its leave ended session 2."""
    world = World(now=http_start())
    agent_leave(project=world.project, agent=world.coder, now=timezone.now())
    client, base = agent_client(world.coder), api_base(world.project.slug)

    registered = client.post(f"{base}/agents/register", {}, format="json")

    assert registered.status_code == 200, registered.content
    assert registered.json()["generation"] == 2
    stale = {"headers": {"Liza-Generation": "1"}, "format": "json"}
    for path in ("agents/heartbeat?via=drf", "agents/leave"):
        error = assert_envelope(client.post(f"{base}/{path}", {}, **stale), 409, "not_registered")
        assert error["message"].startswith("session 1 of coder-1 was superseded by session 2")
        assert (error["details"]["current_generation"], error["details"]["exit"]) == (2, 8)
    beat = client.post(
        f"{base}/agents/heartbeat", {}, headers={"Liza-Generation": "2"}, format="json"
    )
    assert beat.status_code == 200, beat.content
    assert (beat.json()["agent"]["generation"], beat.json()["agent"]["left_at"]) == (2, None)

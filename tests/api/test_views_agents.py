"""The agents the REST API shows (boards.api.views AgentListView, AgentDetailView:
`AgentSerializer`): an agent that left says when (`left_at`), one registered says null; the
register answer says its generation, which a superseded session's process sends in vain."""

from __future__ import annotations

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agents.services import agent_leave, agent_register
from tests.api.helpers import agent_client, api_base, assert_envelope, http_start, session_client
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


def test_work_tells_a_session_that_is_over_as_its_heartbeat_does():
    """`GET /work` is what a supervisor's loop asks between runs: an agent that left hears
    there, as from its heartbeat, 409 `not_registered` (exit 8) — before, it was told "work is
    in progress elsewhere" and polled forever. A superseded session's process likewise; the live
    session, and a process that sends no generation once registered again, are answered."""
    world = World(now=http_start())
    world.drive_to("UNCLAIMED", "t1")
    client, base = agent_client(world.coder), api_base(world.project.slug)
    heartbeat_ended = None
    for path in ("work", "work?role=planner"):  # asking about another role changes nothing
        agent_leave(project=world.project, agent=world.agent("coder-1"), now=timezone.now())
        error = assert_envelope(client.get(f"{base}/{path}"), 409, "not_registered")
        heartbeat_ended = assert_envelope(
            client.post(f"{base}/agents/heartbeat?via=drf", {}, format="json"),
            409,
            "not_registered",
        )
        assert error == heartbeat_ended  # one rule, one answer
        assert error["message"].startswith("coder-1 is not registered: it left at ")
        assert (error["details"]["agent_id"], error["details"]["exit"]) == ("coder-1", 8)
        client.post(f"{base}/agents/register", {}, format="json")

    generation = world.agent("coder-1").generation
    stale = client.get(f"{base}/work", headers={"Liza-Generation": str(generation - 1)})
    error = assert_envelope(stale, 409, "not_registered")
    assert error["message"].startswith(f"session {generation - 1} of coder-1 was superseded")
    for headers in ({"Liza-Generation": str(generation)}, {}):
        live = client.get(f"{base}/work", headers=headers)
        assert live.status_code == 200, live.content
        assert live.json()["work"] is True
    # A person asking about the role is not an agent's session: answered as before.
    admin = session_client(world.admin)
    assert admin.get(f"{base}/work?role=coder").json()["work"] is True

"""The escalation webhook (its URL often carries a token) is shown to project admins only, never
to agents, viewers or members; the rest of the config stays readable by all of them."""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import ProjectConfig
from tests.api.helpers import agent_client, api_base, http_start, session_client
from tests.factories import UserFactory, member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

WEBHOOK = "https://hooks.example.com/services/T000/B000/secret-token"


def test_only_project_admins_read_the_webhook():
    world = World(now=http_start())
    ProjectConfig.objects.filter(project=world.project).update(escalation_webhook=WEBHOOK)
    url = f"{api_base(world.project.slug)}/config"
    clients = {
        "planner": agent_client(world.planner),
        "coder": agent_client(world.agent("coder-1")),
        "viewer": session_client(member(world.project, "viewer")),
        "member": session_client(member(world.project, "member")),
        "admin": session_client(world.admin),
        "staff": session_client(UserFactory(is_staff=True)),
    }
    answers = {name: client.get(url) for name, client in clients.items()}

    assert {name: r.status_code for name, r in answers.items()} == dict.fromkeys(clients, 200)
    shown = {name for name, r in answers.items() if "escalation_webhook" in r.json()}
    assert shown == {"admin", "staff"}
    assert answers["admin"].json()["escalation_webhook"] == WEBHOOK
    assert all(WEBHOOK not in r.content.decode() for n, r in answers.items() if n not in shown)
    assert answers["coder"].json()["lease_duration"] == answers["admin"].json()["lease_duration"]


def test_an_admins_edit_answers_with_the_webhook_and_an_agent_never_sees_it():
    world = World(now=http_start())
    url = f"{api_base(world.project.slug)}/config"
    response = session_client(world.admin).patch(
        url, {"escalation_webhook": WEBHOOK}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["escalation_webhook"] == WEBHOOK
    assert WEBHOOK not in agent_client(world.planner).get(url).content.decode()

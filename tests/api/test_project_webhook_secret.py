"""The webhook's secret is write-only (issue #11): set through the API, then never in any
answer, page, admin page, export or event, for anybody; only "set"/"not set" is shown. A URL
the sender would refuse, or a short secret, is a 400 naming the field."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.coordination.models.records import Event
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.interop.exporting import write_liza_dir
from tests.api.helpers import agent_client, api_base, http_start, session_client
from tests.factories import UserFactory, member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db

SECRET = "whsec-api-0123456789abcdef"
URL = "https://hooks.example.test/liza"


def test_the_secret_is_written_once_and_never_read_back(tmp_path):
    world = World(now=http_start())
    slug = world.project.slug
    admin = session_client(world.admin)
    set_answer = admin.patch(
        f"{api_base(slug)}/config",
        {"escalation_webhook": URL, "webhook_secret": SECRET},
        format="json",
    )
    assert set_answer.status_code == 200, set_answer.json()
    assert set_answer.json()["webhook_secret_set"] is True
    assert "webhook_secret" not in set_answer.json()
    world.blocked("T-1")  # something on the board and in the export
    goal = goal_create(
        project=world.project, actor=world.planner, description="G", now=world.tick()
    )
    sprint_create(
        project=world.project, actor=world.planner, goal=goal, planned=["T-1"], now=world.tick()
    )

    staff = UserFactory(is_staff=True, is_superuser=True)
    readers = {
        "admin": admin,
        "staff": session_client(staff),
        "viewer": session_client(member(world.project, "viewer")),
        "member": session_client(member(world.project, "member")),
        "planner": agent_client(world.planner),
    }
    bodies = {"set answer": set_answer.content.decode()}
    for who, client in readers.items():
        for path in ("config", "events", "alerts", "inbox", "tasks", "agents", "sprint"):
            bodies[f"{who} GET {path}"] = client.get(f"{api_base(slug)}/{path}").content.decode()
    assert (
        readers["viewer"].get(f"{api_base(slug)}/config").json().get("webhook_secret_set") is None
    )
    page_client = Client()
    page_client.force_login(staff)
    config_pk = world.project.config.pk
    for path in (
        f"/p/{slug}/",
        f"/p/{slug}/settings",
        f"/p/{slug}/webhook",
        f"/p/{slug}/inbox",
        f"/admin/boards/projectconfig/{config_pk}/change/",
        "/admin/boards/projectconfig/",
        "/admin/boards/event/?q=config_updated",
    ):
        response = page_client.get(path)
        assert response.status_code == 200, path
        bodies[path] = response.content.decode()
    assert "not set" not in bodies[f"/admin/boards/projectconfig/{config_pk}/change/"]
    for path in write_liza_dir(world.project, tmp_path):
        bodies[path.name] = path.read_text()
    bodies["events"] = "".join(
        f"{e.detail} {e.data}" for e in Event.objects.filter(project=world.project)
    )

    assert {name for name, body in bodies.items() if SECRET in body} == set()
    assert URL in bodies["state.yaml"]  # the URL is exported (seed 002); the secret never
    assert "webhook_secret none → set" in bodies["events"]


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"escalation_webhook": "http://127.0.0.1:9/hook"}, "escalation_webhook", "loopback"),
        ({"escalation_webhook": "http://[::1]/hook"}, "escalation_webhook", "loopback"),
        ({"escalation_webhook": "http://169.254.169.254/"}, "escalation_webhook", "link-local"),
        ({"escalation_webhook": "http://10.0.0.1/"}, "escalation_webhook", "private"),
        ({"escalation_webhook": "http://localhost/"}, "escalation_webhook", "loopback"),
        ({"webhook_secret": "short"}, "webhook_secret", "at least 16"),
    ],
)
def test_refused_values_are_a_400_naming_the_field(settings, body, field, says):
    settings.LIZA_WEBHOOK_ALLOW_PRIVATE = False
    world = World(now=http_start())
    response = session_client(world.admin).patch(
        f"{api_base(world.project.slug)}/config", body, format="json"
    )
    assert response.status_code == 400, response.json()
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert says in " ".join(error["details"]["fields"][field])

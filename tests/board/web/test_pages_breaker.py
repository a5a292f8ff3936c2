"""The circuit breaker on the board: the banner in the header while TRIGGERED, the report page
(any member reads it), its resolution form (admins), what agents' keys get there. The role
matrix of the page and the form is in test_actions.py and test_pages_roles.py."""

from __future__ import annotations

import pytest
from django.test import Client

from boards.coordination.models.records import CircuitBreaker
from tests.api.helpers import key_for
from tests.factories import ProjectFactory, member, register
from tests.watch.breaker_fixtures import trip

pytestmark = pytest.mark.django_db


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_board_header_shows_a_banner_linking_to_the_report_while_triggered(world):
    viewer = _client(member(world.project, "viewer"))
    board = f"/p/{world.project.slug}/"
    assert 'id="breaker-banner"' not in viewer.get(board).content.decode()

    trip(world)
    html = viewer.get(board).content.decode()
    assert 'id="breaker-banner"' in html
    assert f'href="/p/{world.project.slug}/breaker"' in html
    assert "external_service_outage (EXTERNAL_DEPENDENCY)" in html


@pytest.mark.parametrize(("role", "form"), [("viewer", False), ("member", False), ("admin", True)])
def test_members_read_the_report_and_only_admins_get_the_form(world, role, form):
    trip(world)
    user = world.admin if role == "admin" else member(world.project, role)
    response = _client(user).get(f"/p/{world.project.slug}/breaker")
    html = response.content.decode()
    assert response.status_code == 200
    assert 'id="breaker-evidence"' in html and "payment-gateway-api" in html
    assert 'id="breaker-anomalies"' in html and "external_blocker" in html
    assert 'id="breaker-checklist"' in html and "Halt and wait" in html
    assert ('id="breaker-resolve"' in html) is form


@pytest.mark.parametrize("whose", ["this project", "another project"])
def test_an_agent_key_opens_neither_the_page_nor_the_form(world, whose):
    """The board is for people: an agent's bearer key is no session (sign-in redirect)."""
    trip(world)
    project = world.project if whose == "this project" else ProjectFactory()
    agent = world.planner if whose == "this project" else register(project, "planner-1")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key_for(agent)}"}
    client = Client()
    page = client.get(f"/p/{world.project.slug}/breaker", **headers)
    post = client.post(f"/p/{world.project.slug}/breaker/resolve", {"reason": "x"}, **headers)
    for response in (page, post):
        assert response.status_code == 302
        assert response["Location"].startswith("/login/?next=")
    assert CircuitBreaker.objects.get(project=world.project).status == "TRIGGERED"


def test_a_resolution_without_a_reason_renders_the_report_again_with_the_error(world):
    trip(world)
    response = _client(world.admin).post(
        f"/p/{world.project.slug}/breaker/resolve", {"reason": "  ", "next": "breaker"}
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert 'id="breaker-report"' in html and 'role="alert"' in html
    assert CircuitBreaker.objects.get(project=world.project).status == "TRIGGERED"


def test_the_resolution_is_shown_in_the_history(world):
    trip(world)
    client = _client(world.admin)
    response = client.post(
        f"/p/{world.project.slug}/breaker/resolve", {"reason": "Gateway back", "next": "breaker"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/p/{world.project.slug}/breaker"
    html = client.get(response["Location"]).content.decode()
    assert 'id="breaker-status">OK<' in html
    assert "Last trip (resolved)" in html
    assert "Gateway back" in html and world.admin.username in html
    assert 'id="breaker-resolve"' not in html

"""First-run guidance (issue 25): an empty board says what to do next, and the tour is one
click away on every page."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import ProjectFactory, member

pytestmark = pytest.mark.django_db


def test_an_empty_board_points_to_the_plan_the_supervisor_and_the_tour():
    project = ProjectFactory()
    client = Client()
    client.force_login(member(project, "admin"))
    html = client.get(f"/p/{project.slug}/").content.decode()
    assert "No goal yet" in html
    assert f'href="/p/{project.slug}/plan/">create a goal</a>' in html
    assert "No agents yet" in html and "liza supervise --agent claude --role coder" in html
    assert 'href="/tour/"' in html  # the header's link, on every page
    # Reachable without a mouse: a skip link first, the board's heading.
    assert html.index('class="skip-link" href="#main"') < html.index('class="topbar"')
    assert '<main id="main"' in html
    assert html.count("<h1") == 1


def test_the_tour_is_public_and_says_how_to_start():
    html = Client().get("/tour/").content.decode()
    assert "<h1>How Liza Board works</h1>" in html
    for step in ('id="goal"', 'id="tasks"', 'id="sprint"', 'id="agents"', 'id="watch"'):
        assert step in html
    assert "liza supervise --agent claude --role coder" in html


def test_states_and_fields_read_as_words_with_the_raw_name_in_a_tooltip():
    from tests.lifecycle import World

    world = World()
    world.ready_for_review("T-1")
    client = Client()
    client.force_login(world.admin)
    board = client.get(f"/p/{world.project.slug}/").content.decode()
    assert '<span class="name" title="READY_FOR_REVIEW">Ready for review</span>' in board
    assert '<span class="name" title="INTEGRATION_FAILED">Integration failed</span>' in board
    drawer = client.get(f"/p/{world.project.slug}/tasks/T-1/").content.decode()
    assert "<dt>Done when</dt>" in drawer and "<dt>Lease expires</dt>" in drawer
    assert "done_when</dt>" not in drawer
    assert 'title="READY_FOR_REVIEW">Ready for review</span>' in drawer

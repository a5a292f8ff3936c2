"""The board at a past moment (`/p/<slug>/?at=…`, issue #13): the page shows each task where it
was then, marks what changed since, refuses a malformed moment, and keeps tenancy."""

from __future__ import annotations

import html as htmlmod
import json
import re
from datetime import timedelta

import pytest
from django.test import Client

from boards import protocol as p
from boards.coordination.services.goals import goal_create
from tests.board.web.helpers import read_columns
from tests.factories import ProjectFactory, UserFactory, member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world(db):
    world = World()
    goal_create(project=world.project, actor=world.planner, description="Travel", now=world.now)
    world.unclaimed("task-1")
    world.claimed("task-2", coder="coder-2")
    world.moment = world.tick()
    world.claim("task-1")
    world.submit("task-2")
    world.unclaimed("task-3")
    return world


def iso(moment) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("role", ["viewer", "member", "admin"])
def test_every_member_sees_the_board_as_it_was(world, role):
    user = member(world.project, role)
    page = client_for(user).get(f"/p/{world.project.slug}/", {"at": iso(world.moment)})
    assert page.status_code == 200
    columns = read_columns(page.content.decode())
    keys = {status: [c["data-key"] for c in col.cards] for status, col in columns.items()}
    assert keys[p.TaskStatus.UNCLAIMED] == ["task-1"]
    assert keys[p.TaskStatus.CLAIMED] == ["task-2"]
    assert keys[p.TaskStatus.READY_FOR_REVIEW] == []
    # task-3 did not exist yet; both others have moved since, and say so in words.
    html = page.content.decode()
    assert "task-3" in html and "1 created since" in html
    changed = {
        c["data-key"] for col in columns.values() for c in col.cards if "changed" in c["class"]
    }
    assert changed == {"task-1", "task-2"}
    assert html.count("changed since</span>") == 2


def test_a_moment_before_the_first_task_shows_an_empty_board(world):
    page = client_for(world.admin).get(
        f"/p/{world.project.slug}/", {"at": iso(world.moment - timedelta(days=1))}
    )
    assert page.status_code == 200
    assert all(not col.cards for col in read_columns(page.content.decode()).values())


@pytest.mark.parametrize("bad", ["", "yesterday", "2026-13-45T99:00:00Z", "\x00"])
def test_a_malformed_moment_is_a_400_with_the_reason(world, bad):
    page = client_for(world.admin).get(f"/p/{world.project.slug}/", {"at": bad})
    assert page.status_code == 400
    assert "ISO 8601" in page.content.decode()


def test_another_projects_member_gets_404_and_anonymous_goes_to_sign_in(world):
    stranger = member(ProjectFactory(), "admin")
    url = f"/p/{world.project.slug}/"
    assert client_for(stranger).get(url, {"at": iso(world.moment)}).status_code == 404
    assert client_for(UserFactory()).get(url, {"at": iso(world.moment)}).status_code == 404
    assert Client().get(url, {"at": iso(world.moment)})["Location"].startswith("/login/")


def test_the_live_board_links_to_time_travel(world):
    page = client_for(world.admin).get(f"/p/{world.project.slug}/")
    assert 'class="time-travel-link" href="?at=' in page.content.decode()


def test_the_slider_steps_by_event_and_the_board_comes_alone(world):
    """Issue 25: one slider step per task event (not per second), starting on the last event at
    or before the moment; `?part=board` answers the replayed columns alone, for the page to
    swap in place as it is scrubbed."""
    from boards.coordination.models.records import Event

    client = client_for(member(world.project, "viewer"))
    events = list(
        Event.objects.filter(project=world.project, task__isnull=False).order_by("timestamp", "id")
    )
    before = sum(1 for e in events if e.timestamp <= world.moment)
    html = client.get(f"/p/{world.project.slug}/", {"at": iso(world.moment)}).content.decode()
    slider = re.search(r'<input type="range" id="replay-slider"[^>]*>', html).group(0)
    assert f'max="{len(events) - 1}"' in slider and f'value="{before - 1}"' in slider
    steps = json.loads(htmlmod.unescape(re.search(r'data-steps="([^"]*)"', slider).group(1)))
    assert [s["label"].split()[0] for s in steps] == [e.task.key for e in events]
    assert f"event {before} of {len(events)}" in html

    # An event's exact time (to the microsecond) shows the board as that event left it.
    last = steps[-1]["at"]
    part = client.get(f"/p/{world.project.slug}/", {"at": last, "part": "board"})
    assert part.status_code == 200
    body = part.content.decode()
    assert "<html" not in body and "replay-slider" not in body
    columns = read_columns(body)
    assert [c["data-key"] for c in columns[p.TaskStatus.UNCLAIMED].cards] == ["task-3"]
    bad = client.get(f"/p/{world.project.slug}/", {"at": "nope", "part": "board"})
    assert bad.status_code == 400 and "ISO 8601" in bad.content.decode()

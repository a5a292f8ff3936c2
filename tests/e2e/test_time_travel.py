"""Time travel in a real browser (issue #13): the slider replays the board as it was, equal to
what the live board showed at that moment, with what changed since marked in words."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.records import Event
from boards.coordination.services.goals import goal_create
from tests.e2e.support import mark_page, open_board, page_not_reloaded, screenshot, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def board_columns(page) -> dict[str, list[str]]:
    """Each column's card keys, as the page shows them."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('.column')].map((c) => [
            c.dataset.status, [...c.querySelectorAll('.card')].map((k) => k.dataset.key)]))"""
    )


def test_the_slider_replays_the_board_of_a_past_moment(page, world_in_the_past, agent_client):
    world = world_in_the_past
    world.unclaimed("T-1")
    world.unclaimed("T-2")
    world.claimed("T-3", coder="coder-2")
    # A whole second after the last change, still in the past: the slider's resolution.
    moment = datetime.fromtimestamp(math.ceil(world.tick().timestamp()), UTC)
    assert moment < timezone.now()

    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    then = {status: keys for status, keys in board_columns(page).items() if keys}

    agent_client(world.coder).claim("T-1")  # the present moves on
    agent_client(world.agent("coder-2")).submit("T-3")

    # The slider steps by event (issue 25): from the last one, one ArrowLeft per event back to
    # the moment, each step swapping the board in place — no reload.
    after = Event.objects.filter(
        project=world.project, task__isnull=False, timestamp__gt=moment
    ).count()
    assert after >= 2
    open_board(page, world.project.slug)  # the present, whose link starts on the last event
    with page.expect_navigation():
        page.click("a.time-travel-link")
    page.wait_for_selector("#replay-slider")
    page.wait_for_load_state("load")  # the slider's deferred script listens
    total = Event.objects.filter(project=world.project, task__isnull=False).count()
    assert page.inner_text("#replay-step").startswith(f"event {total} of {total}")
    mark_page(page)
    page.focus("#replay-slider")
    for _ in range(after):
        page.keyboard.press("ArrowLeft")
    page.wait_for_function(
        "(step) => document.getElementById('replay-step').textContent.startsWith(step)",
        arg=f"event {total - after} of {total}",
    )
    page.wait_for_function("() => location.search.includes('at=')")
    page.wait_for_function(
        "(keys) => JSON.stringify([...document.querySelectorAll('.card.changed')]"
        ".map((c) => c.dataset.key).sort()) === keys",
        arg='["T-1","T-3"]',
    )
    assert page_not_reloaded(page)
    replayed = {status: keys for status, keys in board_columns(page).items() if keys}
    assert replayed == then
    changed = page.locator(".card.changed")
    assert sorted(changed.evaluate_all("(cards) => cards.map((c) => c.dataset.key)")) == [
        "T-1",
        "T-3",
    ]
    assert "changed since" in changed.first.inner_text()
    screenshot(page, "time-travel")


@pytest.fixture
def world_in_the_past():
    world = World(now=timezone.now() - timedelta(seconds=30))
    goal_create(project=world.project, actor=world.planner, description="Travel", now=world.now)
    return world

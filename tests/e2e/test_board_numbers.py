"""The board's numbers stay true while people watch (issue 25, "what misleads people watching"):
each test opens a board, lets agents change the project through the server's API, and reads the
number a person reads, without a reload."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from boards.watch.services.watch import watch_sweep
from tests.e2e.support import LIVE_TIMEOUT_MS, mark_page, open_board, page_not_reloaded, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(seconds=30))


def _text_is(page, selector: str, text: str) -> None:
    page.wait_for_function(
        "([s, t]) => { const el = document.querySelector(s);"
        " return !!el && el.textContent.trim().replace(/\\s+/g, ' ').includes(t); }",
        arg=[selector, text],
        timeout=LIVE_TIMEOUT_MS,
    )


def test_the_tasks_counter_follows_tasks_created_and_moved_live(page, world, agent_client):
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    assert page.inner_text("#board-total") == "0 tasks"

    planner = agent_client(world.planner)
    for key in ("T-1", "T-2"):
        status, body = planner.post(
            "tasks",
            {"key": key, "description": f"Do {key}", "done_when": "it works", "spec_ref": "s.md"},
        )
        assert status == 201, body
    _text_is(page, "#board-total", "2 tasks")
    status, body = planner.post("tasks/T-1/finalize", {})
    assert status == 200, body
    page.wait_for_selector('.column[data-status="UNCLAIMED"] .card[data-key="T-1"]')
    assert page.inner_text("#board-total") == "2 tasks"  # a move counts once
    assert page_not_reloaded(page)


def test_header_and_banner_show_one_blocked_count_that_moves_live(page, world, agent_client):
    # An open sprint planning T-1 only; T-2 is its stretch: seed 002's metrics count planned
    # tasks, the humans' queue every blocked task. The board shows one number for both.
    goal = goal_create(project=world.project, actor=world.planner, description="G", now=world.now)
    world.unclaimed("T-1")
    world.unclaimed("T-2")
    sprint_create(
        project=world.project,
        actor=world.planner,
        goal=goal,
        planned=["T-1"],
        stretch=["T-2"],
        now=world.tick(),
    )
    world.claim("T-2", "coder-2")
    world.block("T-2")

    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    assert page.inner_text("#board-header .blocked-count") == "1"
    assert "1 blocked task" in page.inner_text("#blocked-banner")

    coder = agent_client(world.agent("coder-1"))
    coder.claim("T-1")
    status, body = coder.post(
        "tasks/T-1/block",
        {"reason": "No spec", "questions": ["Which?"], "attempted": ["Reading"]},
    )
    assert status == 200, body
    _text_is(page, "#blocked-banner", "2 blocked tasks")
    assert page.inner_text("#board-header .blocked-count") == "2"
    assert page_not_reloaded(page)


def test_a_cards_alert_clears_with_the_move_that_ends_it(page, world, agent_client):
    world.blocked("T-1")
    watch_sweep(project=world.project, now=timezone.now())  # raises the BLOCKED alert
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    card = page.locator('.card[data-key="T-1"]')
    assert card.locator(".alert-badge").inner_text().startswith("⚠ 1 alert")
    assert page.locator("#open-alerts").is_visible()

    status, body = agent_client(world.planner).post(
        "tasks/T-1/release", {"reason": "Errors are logged and retried"}
    )
    assert status == 200, body
    # No watcher runs here: the release itself ends the alert, on the card and in the header.
    page.wait_for_selector(
        '.column[data-status="UNCLAIMED"] .card[data-key="T-1"]', timeout=LIVE_TIMEOUT_MS
    )
    assert card.locator(".alert-badge").count() == 0
    assert page.locator("#open-alerts").count() == 0
    assert page_not_reloaded(page)

"""The live kanban board in a real browser (SPEC §7), against daphne on the test database.

Data is made through the services in this process and committed; every change a page must see
live is made by an agent through the HTTP API of the server the page is connected to.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Membership
from tests.e2e.support import (
    LIVE_TIMEOUT_MS,
    card_in,
    column_count,
    mark_page,
    open_board,
    page_not_reloaded,
    screenshot,
    sign_in,
)
from tests.factories import ProjectFactory, member
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    """A project whose clock is the wall clock: leases and time-in-state read as the browser's.

    Started ten seconds ago so that every step (one second apart) lies in the past.
    """
    return World(now=timezone.now() - timedelta(seconds=10))


def wait_live(page, selector: str) -> None:
    """`selector` shows up on the open page within LIVE_TIMEOUT_MS, or the test fails."""
    page.wait_for_selector(selector, timeout=LIVE_TIMEOUT_MS)


def test_sign_in_project_list_and_board(page, world, server):
    world.unclaimed("T-1", description="Parse the sprint file")
    other = ProjectFactory(name="Someone Else's")

    page.goto("/")
    assert "/login/" in page.url  # the board is for signed-in people only

    page.fill("input[name=username]", world.admin.get_username())
    page.fill("input[name=password]", "not-the-password")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert page.locator("p.error[role=alert]").inner_text() == "Wrong username or password."

    sign_in(page, world.admin)
    assert page.url == server.url + "/"  # `next`, after the form
    projects = page.locator(".project-table tbody tr")
    assert projects.count() == 1  # not `other`, of which this user is no member
    assert world.project.name in projects.inner_text()
    assert other.name not in page.content()
    assert page.locator(".project-table .role").inner_text() == "admin"

    with page.expect_navigation():
        page.click(f".project-table a:has-text('{world.project.name}')")
    assert page.url.endswith(f"/p/{world.project.slug}/")
    page.wait_for_selector('#board[data-live="1"]', timeout=5_000)
    assert page.inner_text("#live-status") == "live"
    card = page.locator(card_in("UNCLAIMED", "T-1"))
    assert card.locator(".desc").inner_text() == "Parse the sprint file"
    assert column_count(page, "UNCLAIMED") == 1
    assert column_count(page, "CLAIMED") == 0
    assert page.locator(".agent").count() == 7  # World's planner, coders and reviewers


def test_agent_claim_and_submit_move_the_card_live(page, world, agent_client):
    world.unclaimed("T-2")
    coder = agent_client(world.coder)
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    page.wait_for_selector(card_in("UNCLAIMED", "T-2"))
    screenshot(page, "board-before-live-move")
    mark_page(page)

    coder.claim("T-2")
    wait_live(page, card_in("CLAIMED", "T-2"))
    assert page.locator(card_in("UNCLAIMED", "T-2")).count() == 0
    assert (column_count(page, "UNCLAIMED"), column_count(page, "CLAIMED")) == (0, 1)
    assert page.inner_text(card_in("CLAIMED", "T-2") + " .assignee") == "coder-1"
    # The agent panel follows too: coder-1 now works on T-2.
    page.wait_for_selector('.agent[data-agent="coder-1"] .agent-task:text-is("T-2")')

    coder.submit("T-2")
    wait_live(page, card_in("READY_FOR_REVIEW", "T-2"))
    assert page.locator(card_in("CLAIMED", "T-2")).count() == 0
    assert (column_count(page, "CLAIMED"), column_count(page, "READY_FOR_REVIEW")) == (0, 1)

    assert page_not_reloaded(page)
    # Moved by the live events themselves, in sequence: no gap, so no resync was needed.
    assert page.get_attribute("#board", "data-seq") == "2"
    assert page.get_attribute("#board", "data-resyncs") is None
    screenshot(page, "board-after-live-move")


def test_a_live_card_follows_the_filters_as_the_server_applied_them(page, world, agent_client):
    """board.js filters live cards with what the server applied (the board's data-filters), not
    the raw query: " t-2 " is searched as "t-2" and the refused priority "01" filters nothing,
    so the claimed card moves live instead of leaving the page."""
    world.unclaimed("T-2", priority=2)
    world.unclaimed("T-3", priority=2)
    coder = agent_client(world.coder)
    sign_in(page, world.admin)
    response = page.goto(f"/p/{world.project.slug}/?q=%20t-2%20&priority=01")
    assert response is not None and response.status == 400  # the refused priority, reported
    page.wait_for_selector('#board[data-live="1"]', timeout=5_000)
    assert page.locator(card_in("UNCLAIMED", "T-2")).count() == 1
    assert page.locator(card_in("UNCLAIMED", "T-3")).count() == 0  # the search applies

    coder.claim("T-2")
    wait_live(page, card_in("CLAIMED", "T-2"))
    assert (column_count(page, "UNCLAIMED"), column_count(page, "CLAIMED")) == (0, 1)
    # Moved by the live event itself (BoardRules.matches kept it), not by a resync.
    assert page.get_attribute("#board", "data-resyncs") is None


def test_a_viewer_of_one_project_cannot_see_another(page, world):
    viewer = member(world.project, Membership.Role.VIEWER)
    elsewhere = World()
    elsewhere.unclaimed("SECRET-1", description="Not for project A's eyes")
    other_slug = elsewhere.project.slug

    sign_in(page, viewer)
    open_board(page, world.project.slug)
    for path in (
        f"/p/{other_slug}/",
        f"/p/{other_slug}/fragment",
        f"/p/{other_slug}/tasks/SECRET-1/",
    ):
        response = page.request.get(path)
        assert response.status == 404, path
        assert "SECRET-1" not in response.text()
    response = page.goto(f"/p/{other_slug}/")
    assert response.status == 404
    assert "Not for project A" not in page.content()

    open_board(page, world.project.slug)
    attempt = """
      (path) => new Promise((resolve) => {
        const seen = [];
        const socket = new WebSocket(`ws://${location.host}${path}`);
        socket.onopen = () => seen.push("open");
        socket.onmessage = (e) => {
          seen.push("message " + JSON.parse(e.data).type);
          socket.close();
        };
        socket.onerror = () => seen.push("error");
        socket.onclose = () => { seen.push("close"); resolve(seen); };
        setTimeout(() => resolve([...seen, "no close within 5 s"]), 5000);
      })
    """
    refused = page.evaluate(attempt, f"/ws/p/{other_slug}/")
    assert "open" not in refused and not any(s.startswith("message") for s in refused), refused
    assert refused[-1] == "close", refused
    # The same page, the same cookies, its own project: the socket opens. The refusal above is
    # about the project, not about sockets from this page.
    allowed = page.evaluate(attempt, f"/ws/p/{world.project.slug}/")
    assert allowed == ["open", "message hello", "close"], allowed


def test_lease_countdown_and_drawer_with_timeline_and_time_in_states(page, world):
    world.claimed("T-4", description="Render the lease")
    sign_in(page, world.admin)
    open_board(page, world.project.slug)

    countdown = page.locator(card_in("CLAIMED", "T-4") + " .countdown")
    page.wait_for_function(
        "el => / left$/.test(el.textContent)", arg=countdown.element_handle(), timeout=3_000
    )
    text = countdown.inner_text()
    minutes, seconds = re.fullmatch(r"(\d+):(\d\d) left", text).groups()
    left = int(minutes) * 60 + int(seconds)
    expected = (world.task("T-4").lease_expires - timezone.now()).total_seconds()
    assert expected > 60 and abs(left - expected) <= 3, (text, expected)
    page.wait_for_function(
        "([el, before]) => el.textContent !== before", arg=[countdown.element_handle(), text]
    )  # it counts down by itself, once a second

    page.click(card_in("CLAIMED", "T-4"))
    drawer = page.locator("#drawer")
    drawer.locator('.drawer-body[data-key="T-4"]').wait_for(timeout=3_000)
    assert drawer.is_visible()
    # The state in words, its raw name in the tooltip (issue 25).
    assert drawer.locator("h2 .badge").inner_text() == "Claimed"
    assert drawer.locator("h2 .badge").get_attribute("title") == "CLAIMED"
    assert drawer.locator("p.desc").inner_text() == "Render the lease"

    timeline = drawer.locator(".timeline .event")
    actions = timeline.locator(".action").all_inner_texts()
    assert actions == ["created", "finalized", "claimed"], actions
    claimed = timeline.filter(has=page.locator(".action", has_text="claimed"))
    assert claimed.locator(".actor").inner_text() == "coder-1"
    assert claimed.locator(".transition").inner_text() == "UNCLAIMED → CLAIMED"

    rows = drawer.locator(".time-in-states tr")
    states = [th.get_attribute("title") for th in rows.locator("th").all()]
    assert states == ["DRAFT", "UNCLAIMED", "CLAIMED"], states
    assert rows.locator("th").all_inner_texts() == ["Draft", "Unclaimed", "Claimed"]
    seconds = {
        state: int(rows.nth(i).locator("td").get_attribute("data-seconds"))
        for i, state in enumerate(states)
    }
    assert seconds["DRAFT"] == 1 and seconds["UNCLAIMED"] == 1, seconds  # World's 1 s steps
    assert seconds["CLAIMED"] >= 5, seconds  # and still counting
    assert drawer.locator(".countdown").inner_text().endswith(" left")
    screenshot(page, "drawer")

    page.click("#drawer [data-close]")
    assert drawer.is_hidden()


def test_a_reconnecting_board_catches_up_without_a_reload(page, world, agent_client):
    world.unclaimed("T-5")
    coder = agent_client(world.coder)
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    mark_page(page)
    assert page.evaluate("window.__sockets.length") == 1

    # The connection drops, and stays down while an agent claims the task.
    page.evaluate("window.__holdSockets = true; window.__sockets.at(-1).socket.close()")
    page.wait_for_selector('#board[data-live="0"]')
    coder.claim("T-5")
    # Nothing reached the page while it was disconnected.
    assert page.locator(card_in("UNCLAIMED", "T-5")).count() == 1
    assert page.locator(card_in("CLAIMED", "T-5")).count() == 0

    page.evaluate("window.__holdSockets = false")
    # Backoff is 0.5 s, 1 s, 2 s between attempts; a held attempt can cost one more step.
    page.wait_for_selector(card_in("CLAIMED", "T-5"), timeout=6_000)
    page.wait_for_selector('#board[data-live="1"]')
    assert page.locator(card_in("UNCLAIMED", "T-5")).count() == 0
    assert (column_count(page, "UNCLAIMED"), column_count(page, "CLAIMED")) == (0, 1)
    assert page_not_reloaded(page)
    assert page.get_attribute("#board", "data-resyncs") == "1"  # caught up by one resync
    assert page.get_attribute("#board", "data-seq") == "1"
    sockets = page.evaluate("window.__sockets.map((s) => s.held)")
    assert sockets[0] is False and sockets[-1] is False and len(sockets) >= 2, sockets

    # Live again after the resync: the next change arrives as an event, in sequence.
    coder.submit("T-5")
    wait_live(page, card_in("READY_FOR_REVIEW", "T-5"))
    assert page.get_attribute("#board", "data-seq") == "2"
    assert page.get_attribute("#board", "data-resyncs") == "1"
    assert page_not_reloaded(page)
    screenshot(page, "board-after-reconnect")


def test_two_open_boards_see_the_same_change_live(new_context, world, agent_client):
    world.unclaimed("T-6")
    coder = agent_client(world.coder)
    viewer = member(world.project, Membership.Role.VIEWER)
    pages = []
    for user in (world.admin, viewer):
        page = new_context().new_page()
        sign_in(page, user)
        open_board(page, world.project.slug)
        page.wait_for_selector(card_in("UNCLAIMED", "T-6"))
        mark_page(page)
        pages.append(page)
    assert pages[0].context is not pages[1].context

    coder.claim("T-6")
    for page in pages:
        wait_live(page, card_in("CLAIMED", "T-6"))
        assert page.locator(card_in("UNCLAIMED", "T-6")).count() == 0
        assert page_not_reloaded(page)
    screenshot(pages[1], "second-board-after-live-move")

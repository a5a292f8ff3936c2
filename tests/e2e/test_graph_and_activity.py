"""The dependency graph and the live activity feed in a real browser (issue #13), against
daphne on the test database; the live change is made by an agent through the HTTP API."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Membership
from boards.coordination.services.goals import goal_create
from tests.e2e.support import (
    LIVE_TIMEOUT_MS,
    HeldAnswer,
    mark_page,
    page_not_reloaded,
    screenshot,
    sign_in,
)
from tests.factories import member
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    world = World(now=timezone.now() - timedelta(seconds=30))
    goal_create(project=world.project, actor=world.planner, description="Graph", now=world.tick())
    # a(merged) -> b(claimed) -> c -> d, and e alone: the critical path is b, c, d.
    world.merged("a")
    world.claimed("b", depends_on=["a"], coder="coder-2")
    world.unclaimed("c", depends_on=["b"])
    world.unclaimed("d", depends_on=["c"])
    world.unclaimed("e")
    return world


def test_the_graph_shows_states_and_the_critical_path(page, world):
    sign_in(page, member(world.project, Membership.Role.VIEWER))
    response = page.goto(f"/p/{world.project.slug}/graph/")
    assert response is not None and response.status == 200
    nodes = page.locator("#dependency-graph .node")
    states = {
        nodes.nth(i).get_attribute("data-key"): nodes.nth(i).get_attribute("data-status")
        for i in range(nodes.count())
    }
    assert states == {
        "a": "MERGED",
        "b": "CLAIMED",
        "c": "UNCLAIMED",
        "d": "UNCLAIMED",
        "e": "UNCLAIMED",
    }
    critical = page.locator("#dependency-graph .node.critical")
    assert sorted(critical.nth(i).get_attribute("data-key") for i in range(critical.count())) == [
        "b",
        "c",
        "d",
    ]
    # Drawn differently (not by colour alone): a thicker outline, and a star in the label.
    width = page.evaluate(
        """(sel) => getComputedStyle(document.querySelector(sel)).strokeWidth""",
        '#dependency-graph .node[data-key="c"] rect',
    )
    plain = page.evaluate(
        """(sel) => getComputedStyle(document.querySelector(sel)).strokeWidth""",
        '#dependency-graph .node[data-key="e"] rect',
    )
    assert float(width.rstrip("px")) > float(plain.rstrip("px"))
    assert page.text_content('#dependency-graph .node[data-key="c"] .node-key').startswith("★")
    assert page.locator("#dependency-graph .edge.critical").count() == 2
    assert "b → c → d" in page.inner_text("#critical-path")
    # The boxes are laid out left to right along the dependencies.
    xs = {
        key: page.locator(f'#dependency-graph .node[data-key="{key}"]').bounding_box()["x"]
        for key in "abcd"
    }
    assert xs["a"] < xs["b"] < xs["c"] < xs["d"]
    screenshot(page, "dependency-graph")
    # A node opens the task's drawer on the board.
    with page.expect_navigation():
        page.locator('#dependency-graph .node[data-key="c"]').click()
    page.wait_for_selector('#drawer:not([hidden]) .drawer-body[data-key="c"]', timeout=5_000)


def test_the_activity_feed_receives_an_agents_event_live(page, world, agent_client):
    coder = agent_client(world.coder)
    sign_in(page, world.admin)
    page.goto(f"/p/{world.project.slug}/activity/")
    page.wait_for_selector('#activity-view[data-live="1"]', timeout=5_000)
    newest = page.locator("#activity li[data-id]").first.get_attribute("data-id")
    mark_page(page)

    coder.claim("e")
    page.wait_for_selector(
        '#activity li.fresh[data-action="claimed"][data-task="e"]', timeout=LIVE_TIMEOUT_MS
    )
    first = page.locator("#activity li[data-id]").first
    assert int(first.get_attribute("data-id")) > int(newest)
    assert first.get_attribute("data-actor") == "coder-1"
    assert "UNCLAIMED → CLAIMED" in first.inner_text()
    assert page_not_reloaded(page)
    screenshot(page, "activity-live")


def test_a_filtered_feed_ignores_other_events(page, world, agent_client):
    coder = agent_client(world.coder)
    sign_in(page, world.admin)
    page.goto(f"/p/{world.project.slug}/activity/?task=d")
    page.wait_for_selector('#activity-view[data-live="1"]', timeout=5_000)
    before = page.locator("#activity li[data-id]").count()
    coder.claim("e")  # not task d: the feed stays as it is
    page.wait_for_timeout(LIVE_TIMEOUT_MS)
    assert page.get_attribute("#activity-view", "data-live") == "1"
    assert page.locator("#activity li[data-id]").count() == before
    assert page.locator('#activity li[data-task="e"]').count() == 0


def _drop_the_socket_while(page, change) -> None:
    """The feed's socket drops and stays down while `change` happens; on reconnect its hello
    says events were missed, and the feed asks for a catch-up."""
    page.evaluate("window.__holdSockets = true; window.__sockets.at(-1).socket.close()")
    page.wait_for_selector('#activity-view[data-live="0"]')
    change()
    page.evaluate("window.__holdSockets = false")
    page.wait_for_selector('#activity-view[data-live="1"]', timeout=6_000)


def test_a_catch_up_asked_for_during_another_is_not_lost(page, world, agent_client):
    """Two gaps in a row: the second catch-up is asked for while the first one's answer, taken
    before the second gap's events, is still on its way. It must still run."""
    sign_in(page, world.admin)
    page.goto(f"/p/{world.project.slug}/activity/")
    page.wait_for_selector('#activity-view[data-live="1"]', timeout=5_000)
    mark_page(page)
    first = HeldAnswer(page, re.compile(r"/activity/rows\?"))
    _drop_the_socket_while(page, lambda: agent_client(world.coder).claim("e"))
    first.wait("the first catch-up")

    _drop_the_socket_while(page, lambda: agent_client(world.agent("coder-2")).submit("b"))
    first.deliver()  # e's claim, not b's submission
    page.wait_for_selector('#activity li.fresh[data-task="e"]', timeout=LIVE_TIMEOUT_MS)
    page.wait_for_selector('#activity li.fresh[data-task="b"]', timeout=LIVE_TIMEOUT_MS)
    assert page_not_reloaded(page)

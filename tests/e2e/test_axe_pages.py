"""axe-core (from npm, injected locally) on every page a person reads (issue 25): the board, its
drawer, the inbox, insights, activity, the dependency graph, time travel, settings and the
project list, in the light and the dark theme: no serious or critical violation."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.services import agent_leave
from tests.e2e.support import ROOT, open_board, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN = """async () => {
    const result = await axe.run(document, { resultTypes: ["violations"] });
    return {
        checked: result.passes.length + result.violations.length,
        serious: result.violations
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => ({ id: v.id, nodes: v.nodes.slice(0, 3).map((n) => n.target) })),
    };
}"""
# code-reviewer-2 left (its page, the agents page and the board's panel read "left <time>").
PAGES = [
    "inbox",
    "insights/",
    "activity/",
    "graph/",
    "settings",
    "plan/",
    "agents",
    "agents/code-reviewer-2/",
]


@pytest.fixture
def world():
    world = World(now=timezone.now())
    world.sprint_started()
    scope = {"sprint_scope": "planned"}
    world.unclaimed("T-1", description="Parse the sprint file", **scope)
    world.unclaimed("T-2", description="Export the CSV", depends_on=["T-1"], **scope)
    world.claimed("T-3", description="Render the chart", **scope)
    world.blocked("T-4", coder="coder-2", description="Which timezone?", **scope)
    world.change_summary("T-4")
    agent_leave(project=world.project, agent=world.agent("code-reviewer-2"), now=world.tick())
    return world


def _axe(page, where: str) -> list[dict]:
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(AXE_RUN)
    assert result["checked"] > 10, (where, result)  # axe really ran on this page
    return [{"page": where, **v} for v in result["serious"]]


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_violation_on_any_page(browser, server, world, scheme):
    if not AXE.is_file():
        pytest.fail(f"axe-core is not installed at {AXE}: run .ci/setup test (npm)")
    # The CSP refuses inline scripts, which is how Playwright injects one: this context alone
    # bypasses it, to run the checker in the page.
    context = browser.new_context(
        base_url=server.url,
        viewport={"width": 1440, "height": 900},
        bypass_csp=True,
        color_scheme=scheme,
    )
    found: list[dict] = []
    try:
        page = context.new_page()
        sign_in(page, world.admin)
        found += _axe(page, "projects")
        open_board(page, world.project.slug)
        found += _axe(page, "board")
        page.click('.card[data-key="T-4"]')
        page.wait_for_selector('#drawer:not([hidden]) .drawer-body[data-key="T-4"]')
        found += _axe(page, "drawer")
        page.keyboard.press("Escape")
        page.click("details.filter-menu > summary")
        found += _axe(page, "filters open")
        page.click("a.time-travel-link")
        page.wait_for_selector("#replay-slider")
        found += _axe(page, "time travel")
        for path in PAGES:
            page.goto(f"/p/{world.project.slug}/{path}")
            found += _axe(page, path)
    finally:
        context.close()
    assert found == []

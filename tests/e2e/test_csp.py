"""The Content-Security-Policy holds in a real browser (docs/security.md "Content-Security-Policy").

Chromium opens the board (live over its websocket), a task drawer, the oversight pages, the
Django admin and Swagger UI under the policy the server sends. Every violation the browser
reports — a `securitypolicyviolation` event on any page, or a console report — fails the test,
as does a page that arrives without the policy.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.e2e.support import LIVE_TIMEOUT_MS, card_in, open_board, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Recorded before any page script runs, on every document of the context (frames included).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(
    `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`
  );
});
"""


@pytest.fixture
def browsing(new_context):
    """A signed-in context whose every page records CSP violations; yields (page, violations)."""
    context = new_context()
    context.add_init_script(RECORD_VIOLATIONS)
    violations: list[str] = []
    context.on(
        "console",
        lambda message: (
            violations.append(f"console: {message.text}")
            if "Content Security Policy" in message.text or "Refused to" in message.text
            else None
        ),
    )
    page = context.new_page()
    return page, violations


def _visit(page, violations: list[str], path: str, *, ready: str | None = None) -> None:
    response = page.goto(path)
    assert response is not None and response.status == 200, (path, response and response.status)
    policy = response.headers.get("content-security-policy", "")
    assert "script-src 'self'" in policy and "style-src 'self'" in policy, (path, policy)
    if ready:
        page.wait_for_selector(ready, timeout=5_000)
    _collect(page, violations, path)


def _collect(page, violations: list[str], where: str) -> None:
    page.wait_for_timeout(200)  # violations are reported asynchronously
    violations.extend(f"{where}: {v}" for v in page.evaluate("window.__cspViolations || []"))


def test_board_drawer_oversight_admin_and_docs_run_without_a_violation(browsing, agent_client):
    page, violations = browsing
    world = World(now=timezone.now() - timedelta(seconds=10))
    world.claimed("T-1", description="Render under the policy")
    world.unclaimed("T-2", description="Claimed live")
    world.blocked("T-3", coder="coder-3")  # the inbox has something to show
    world.admin.is_staff = world.admin.is_superuser = True
    world.admin.save()
    slug = world.project.slug
    coder = agent_client(world.agent("coder-2"))

    sign_in(page, world.admin)
    _collect(page, violations, "login")

    # The board, live: a change made through the API arrives over the websocket.
    open_board(page, slug)
    _collect(page, violations, "board")
    coder.claim("T-2")
    page.wait_for_selector(card_in("CLAIMED", "T-2"), timeout=LIVE_TIMEOUT_MS)
    # A drawer, loaded into the page by script.
    page.click(card_in("CLAIMED", "T-1"))
    page.locator('#drawer .drawer-body[data-key="T-1"]').wait_for(timeout=3_000)
    _collect(page, violations, "drawer")

    for path in (
        f"/p/{slug}/inbox",
        f"/p/{slug}/settings",
        f"/p/{slug}/webhook",
        f"/p/{slug}/agents",
    ):
        _visit(page, violations, path)

    task = world.task("T-1")
    for path in (
        "/admin/",
        "/admin/boards/task/",
        f"/admin/boards/task/{task.pk}/change/",
        "/admin/agents/agent/",
        f"/admin/auth/user/{world.admin.pk}/change/",
        "/admin/axes/accesslog/",
    ):
        _visit(page, violations, path, ready="#content")

    _visit(page, violations, "/api/v1/docs/", ready=".swagger-ui .info")

    assert violations == []

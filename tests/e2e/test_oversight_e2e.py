"""Human oversight in a real browser (SPEC §7), against daphne on the test database.

An admin acts through the board's forms; the server runs the same services as the API, so an
agent on the HTTP API meets the outcome at once, and a second person's open board (another
browser context, a viewer) shows every change live, without a reload.

Setup data is made through the services in this process and committed (it publishes nothing:
tests/e2e/conftest.py); every change a page must see live is made through the server.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from datetime import timedelta

import pytest
from django.utils import timezone

from boards.coordination.models.projects import Membership
from boards.coordination.models.tasks import HumanNote
from boards.coordination.services.goals import goal_create
from boards.coordination.services.sprints import sprint_create
from tests.e2e.support import (
    LIVE_TIMEOUT_MS,
    card_in,
    mark_page,
    open_board,
    page_not_reloaded,
    screenshot,
    sign_in,
)
from tests.factories import member
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def world():
    """A project on the wall clock (started ten seconds ago, steps one second apart)."""
    return World(now=timezone.now() - timedelta(seconds=10))


def wait_live(page, selector: str) -> None:
    page.wait_for_selector(selector, timeout=LIVE_TIMEOUT_MS)


def watcher(new_context, world):
    """A viewer's board in its own browser context: the second person watching."""
    page = new_context().new_page()
    sign_in(page, member(world.project, Membership.Role.VIEWER))
    open_board(page, world.project.slug)
    mark_page(page)
    return page


def admin_board(new_context, world):
    page = new_context().new_page()
    sign_in(page, world.admin)
    open_board(page, world.project.slug)
    return page


def open_drawer(page, key: str) -> None:
    page.click(f'.card[data-key="{key}"]')
    page.locator(f'#drawer .drawer-body[data-key="{key}"]').wait_for(timeout=3_000)


def agent_get(client, path: str) -> tuple[int, dict]:
    """GET on the agent API with the client's bearer key (AgentClient only posts)."""
    request = urllib.request.Request(
        f"{client.server.url}/api/v1/projects/{client.slug}/{path}",
        headers={"Authorization": f"Bearer {client.key}", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def submit(page, form: str) -> None:
    """Submit `form` (a selector) and wait for the page the server answers with."""
    with page.expect_navigation():
        page.click(f"{form} button[type=submit]")


def test_an_answered_block_reaches_the_next_claim(new_context, world, agent_client):
    world.blocked("T-1", description="Store the sessions")
    world.blocked("T-2", coder="coder-2", description="Export the log")
    viewer = watcher(new_context, world)
    open_drawer(viewer, "T-1")
    assert viewer.locator("#drawer form").count() == 0  # a viewer gets no forms
    viewer.click("#drawer [data-close]")
    admin = admin_board(new_context, world)

    # From the board: the drawer of the BLOCKED card, answered.
    open_drawer(admin, "T-1")
    drawer = admin.locator("#drawer")
    assert "Spec is silent on errors" in drawer.inner_text()
    drawer.locator("form[data-action=release] textarea[name=answer]").fill(
        "Keep sessions in Redis, 24 h expiry"
    )
    screenshot(admin, "oversight-drawer-answer")
    submit(admin, "#drawer form[data-action=release]")
    assert "T-1 answered and back in the queue" in admin.inner_text(".messages")
    # A decision closes the drawer (issue 25): the next BLOCKED card has the focus, in view
    # and under nothing; the address is the plain board's.
    admin.wait_for_function(
        "document.activeElement && document.activeElement.dataset.key === 'T-2'"
    )
    assert admin.url.endswith(f"/p/{world.project.slug}/")
    assert admin.locator("#drawer").is_hidden() and admin.locator("#drawer-backdrop").is_hidden()
    assert admin.evaluate(
        """() => {
            const card = document.querySelector('.card[data-key="T-2"]');
            const r = card.getBoundingClientRect();
            const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
            return card.contains(hit) && r.bottom <= window.innerHeight;
        }"""
    )
    assert admin.locator(card_in("UNCLAIMED", "T-1")).count() == 1
    # Its drawer, opened again, has the answer among its notes; the backdrop dims the board,
    # and a click on the board beside the drawer closes it.
    open_drawer(admin, "T-1")
    assert "Keep sessions in Redis, 24 h expiry" in admin.inner_text("#drawer .notes")
    assert admin.locator("#drawer-backdrop").is_visible()
    admin.click("#board-keys")
    admin.locator("#drawer").wait_for(state="hidden", timeout=3_000)
    assert admin.locator("#drawer-backdrop").is_hidden()

    # The other person's board moved the card live.
    wait_live(viewer, card_in("UNCLAIMED", "T-1"))
    assert viewer.locator(card_in("BLOCKED", "T-1")).count() == 0

    # The next claim through the agent API gets it, with the human's note in the payload.
    coder = agent_client(world.agent("coder-3"))
    status, body = coder.post("tasks/claim-next", {"base_commit": "base0003"})
    assert status == 200, body
    assert (body["task"]["key"], body["task"]["status"]) == ("T-1", "CLAIMED")
    assert body["task"]["failed_by"] == ["coder-1"]  # kept through the release
    # The task as the coder reads it (the claim answer is the short form): the answer is there.
    status, task = agent_get(coder, "tasks/T-1")
    assert status == 200, task
    notes = [(n["message"], n["author"]) for n in task["human_notes"]]
    assert notes == [("Keep sessions in Redis, 24 h expiry", world.admin.get_username())]
    wait_live(viewer, card_in("CLAIMED", "T-1"))

    # From the inbox: T-2 rescoped into two new tasks.
    admin.goto(f"/p/{world.project.slug}/inbox")
    item = admin.locator('#blocked .inbox-item[data-task="T-2"]')
    assert "What should happen on error?" in item.inner_text()
    assert admin.locator('#blocked .inbox-item[data-task="T-1"]').count() == 0
    item.locator("summary", has_text="Rescope").click()
    form = item.locator("form[data-action=rescope]")
    form.locator("textarea[name=reason]").fill("Two separate concerns")
    item.locator("[data-add-row]").click()  # a third row, from board.js
    rows = form.locator(".new-task")
    assert rows.count() == 3
    for i, (key, text) in enumerate([("T-2a", "Export"), ("T-2b", "Rotate"), ("T-2c", "Ship")]):
        rows.nth(i).locator("input[name=new_key]").fill(key)
        rows.nth(i).locator("input[name=new_description]").fill(f"{text} the log")
        rows.nth(i).locator("input[name=new_done_when]").fill(f"{text.lower()}ed")
    screenshot(admin, "oversight-inbox-rescope")
    with admin.expect_navigation():
        form.locator("button[type=submit]").click()
    assert admin.url.endswith(f"/p/{world.project.slug}/inbox")
    assert "T-2 rescoped into T-2a, T-2b, T-2c" in admin.inner_text(".messages")
    assert admin.locator('.inbox-item[data-task="T-2"]').count() == 0
    for key in ("T-2a", "T-2b", "T-2c"):
        wait_live(viewer, card_in("UNCLAIMED", key))
    assert viewer.locator(card_in("BLOCKED", "T-2")).count() == 0
    assert page_not_reloaded(viewer)
    screenshot(viewer, "oversight-viewer-after-resolve")
    assert HumanNote.objects.filter(task__key="T-1").count() == 1


def test_a_checkpoint_stops_claims_until_the_admin_continues(new_context, world, agent_client):
    goal = goal_create(
        project=world.project, actor=world.planner, description="Sessions", now=world.tick()
    )
    sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    world.unclaimed("T-3", sprint_scope="planned")
    world.unclaimed("T-4", sprint_scope="planned")
    coder = agent_client(world.agent("coder-2"))
    viewer = watcher(new_context, world)
    admin = admin_board(new_context, world)
    assert viewer.inner_text("#board-header .sprint-status") == "IN_PROGRESS"

    admin.click("#oversight-controls summary:has-text('Request checkpoint')")
    admin.fill("form[data-action=sprint-checkpoint] textarea[name=reason]", "Scope is wrong")
    submit(admin, "form[data-action=sprint-checkpoint]")
    assert "sprint-1 is at CHECKPOINT" in admin.inner_text(".messages")
    wait_live(viewer, "#board-header .sprint-status:text-is('CHECKPOINT')")

    status, body = coder.post("tasks/claim-next", {"base_commit": "base0002"})
    assert status == 409, body
    assert body["error"]["code"] == "checkpoint"
    assert body["error"]["details"]["exit"] == 42
    status, body = coder.post("tasks/T-3/claim", {"base_commit": "base0002"})
    assert (status, body["error"]["code"]) == (409, "checkpoint")
    screenshot(admin, "oversight-checkpoint")

    # The admin's controls now offer the decision; continuing lets claims through again.
    decision = admin.locator("form[data-action=sprint-resume] textarea[name=decision]")
    decision.fill("Drop T-4 from the demo, continue")
    submit(admin, "form[data-action=sprint-resume]")
    assert "sprint-1 continues" in admin.inner_text(".messages")
    wait_live(viewer, "#board-header .sprint-status:text-is('IN_PROGRESS')")

    status, body = coder.post("tasks/claim-next", {"base_commit": "base0002"})
    assert status == 200, body
    assert body["task"]["key"] == "T-3"
    wait_live(viewer, card_in("CLAIMED", "T-3"))
    assert page_not_reloaded(viewer)


def test_a_second_board_sees_each_intervention_live(new_context, world, agent_client):
    world.claimed("T-5", description="Rotate keys")
    world.unclaimed("T-6", description="Audit log")
    viewer = watcher(new_context, world)
    admin = admin_board(new_context, world)
    # The admin's controls follow the live header too (refetched on each change).
    admin_controls = admin.locator("#oversight-controls")

    # Suspend: the claim goes back to the queue and the card carries a badge.
    open_drawer(admin, "T-6")
    admin.click("#drawer summary:has-text('Suspend')")
    admin.fill("#drawer form[data-action=suspend] textarea[name=reason]", "Waiting on legal")
    submit(admin, "#drawer form[data-action=suspend]")
    wait_live(viewer, card_in("UNCLAIMED", "T-6") + " .badge.suspended")
    # A suspended task is claimable by nobody.
    coder = agent_client(world.agent("coder-2"))
    status, body = coder.post("tasks/claim-next", {"base_commit": "base0002"})
    assert (status, body["task"]) == (200, None), body
    screenshot(viewer, "oversight-viewer-suspended")

    # Resume from the drawer the action re-opened: the badge goes.
    admin.locator('#drawer .drawer-body[data-key="T-6"]').wait_for(timeout=3_000)
    submit(admin, "#drawer form[data-action=resume]")
    viewer.wait_for_selector(
        card_in("UNCLAIMED", "T-6") + " .badge.suspended", state="detached", timeout=2_000
    )

    # Override block of a CLAIMED task, with a question for the coder.
    open_drawer(admin, "T-5")
    admin.click("#drawer summary:has-text('Override block')")
    admin.fill("#drawer form[data-action=override-block] textarea[name=reason]", "Wrong library")
    admin.locator("#drawer form[data-action=override-block] input[name=questions]").first.fill(
        "Which KMS?"
    )
    submit(admin, "#drawer form[data-action=override-block]")
    wait_live(viewer, card_in("BLOCKED", "T-5"))
    assert "Wrong library" in viewer.inner_text(card_in("BLOCKED", "T-5") + " .blocked-reason")

    # Pause and resume the project: the header says so on both boards.
    admin.click("#oversight-controls summary:has-text('Pause project')")
    admin.fill("form[data-action=project-pause] textarea[name=reason]", "Release freeze")
    submit(admin, "form[data-action=project-pause]")
    wait_live(viewer, "#board-header .badge:text-is('project paused')")
    status, body = coder.post("tasks/claim-next", {"base_commit": "base0002"})
    assert (status, body["error"]["code"], body["error"]["details"]["exit"]) == (409, "paused", 42)
    assert admin_controls.locator("form[data-action=project-resume]").count() == 1
    screenshot(admin, "oversight-paused")
    submit(admin, "form[data-action=project-resume]")
    viewer.wait_for_selector(
        "#board-header .badge:text-is('project paused')", state="detached", timeout=2_000
    )

    assert page_not_reloaded(viewer)
    screenshot(viewer, "oversight-viewer-after-interventions")


def test_an_agent_made_on_the_agents_page_works_until_disabled(new_context, world, server):
    from tests.e2e.support import AgentClient

    viewer = watcher(new_context, world)
    admin = new_context().new_page()
    sign_in(admin, world.admin)
    admin.goto(f"/p/{world.project.slug}/agents")
    admin.select_option("form[data-action=agent-create] select[name=role]", "coder")
    admin.fill("form[data-action=agent-create] input[name=label]", "laptop")
    submit(admin, "form[data-action=agent-create]")
    assert "Agent coder-4 created" in admin.inner_text("h1")  # the next free coder id
    plain = admin.inner_text("#plain-key")
    # The answer to the POST, addressed as the agents page: a reload reads, never posts again.
    assert admin.url.endswith(f"/p/{world.project.slug}/agents")
    screenshot(admin, "oversight-key-shown-once")

    # The key works on the API at once: coder-4 registers, and the board shows it live.
    agent = AgentClient(server=server, slug=world.project.slug, key=plain)
    status, body = agent.post("agents/register", {"terminal": "tty9"})
    assert (status, body.get("agent_id")) == (200, "coder-4"), body
    wait_live(viewer, '.agent[data-agent="coder-4"]')

    # Shown once: the agents page lists its prefix, never the key.
    admin.goto(f"/p/{world.project.slug}/agents")
    row = admin.locator('.agent-row[data-agent="coder-4"]')
    assert plain.split("_")[1] in row.inner_text() and plain not in admin.content()

    # Disabled: its requests are refused.
    with admin.expect_navigation():
        row.locator("form[data-action=disable] button").click()
    assert "coder-4 disabled." in admin.inner_text(".messages")
    status, body = agent.post("agents/heartbeat", {})
    assert status == 403, body
    wait_live(viewer, '.agent.disabled[data-agent="coder-4"]')
    screenshot(admin, "oversight-agents")

    # Enabled again, then its key revoked: the key no longer authenticates.
    with admin.expect_navigation():
        admin.locator('.agent-row[data-agent="coder-4"] form[data-action=enable] button').click()
    status, _ = agent.post("agents/heartbeat", {})
    assert status == 200
    with admin.expect_navigation():
        admin.locator('.agent-row[data-agent="coder-4"] form[data-action=revoke] button').click()
    assert "revoked" in admin.inner_text(".messages")
    status, _ = agent.post("agents/heartbeat", {})
    assert status == 401
    assert page_not_reloaded(viewer)


def test_settings_page_saves_the_config(new_context, world):
    admin = new_context().new_page()
    sign_in(admin, world.admin)
    admin.goto(f"/p/{world.project.slug}/settings")
    admin.fill("input[name=max_review_cycles]", "3")
    admin.fill("input[name=lease_duration]", "30")  # not longer than the heartbeat: refused
    submit(admin, "form.settings-form")
    assert admin.locator('.field-error[data-field="lease_duration"]').count() == 1
    screenshot(admin, "oversight-settings-error")
    admin.fill("input[name=lease_duration]", "600")
    submit(admin, "form.settings-form")
    assert "Settings saved: lease_duration, max_review_cycles." in admin.inner_text(".messages")
    assert admin.input_value("input[name=max_review_cycles]") == "3"

"""A person plans from the board and the team works the plan (issue 25 "Done when"): in
Chromium, an admin writes a goal, three tasks (one depending on another), finalizes them and
starts a sprint, with no admin site and no API; then agents work the tasks to MERGED through the
API while the board watches."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from boards.models import Event, Sprint, Task
from tests.e2e.support import LIVE_TIMEOUT_MS, open_board, sign_in
from tests.lifecycle import World

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

TASKS = [
    ("api", "Build the API", "1", []),
    ("ui", "Build the UI", "2", ["api"]),
    ("docs", "Write the docs", "3", []),
]


def _post_form(page, selector: str) -> None:
    with page.expect_navigation():
        page.click(selector)
    assert page.locator(".messages .error, p.error").count() == 0, page.content()[:3000]


def test_a_person_plans_and_the_team_merges_the_plan(page, agent_client):
    world = World(now=timezone.now() - timedelta(seconds=30))
    sign_in(page, world.admin)
    page.goto(f"/p/{world.project.slug}/")
    with page.expect_navigation():
        page.click("nav.project-nav a:has-text('Plan')")
    assert page.locator("h1").inner_text().startswith("Plan")

    page.fill("form[data-action=goal-create] textarea[name=description]", "Ship the retry work")
    _post_form(page, "form[data-action=goal-create] button[type=submit]")
    for key, description, priority, depends in TASKS:
        form = "form[data-action=task-create]"
        page.fill(f"{form} input[name=key]", key)
        page.fill(f"{form} textarea[name=description]", description)
        page.fill(f"{form} textarea[name=done_when]", f"{key} is tested")
        page.fill(f"{form} input[name=spec_ref]", f"specs/{key}.md")
        page.select_option(f"{form} select[name=priority]", priority)
        if depends:
            page.select_option(f"{form} select[name=depends_on]", depends)
        _post_form(page, f"{form} button[type=submit]")
    for key, *_ in TASKS:
        _post_form(page, f"tr[data-key='{key}'] form[data-action=task-finalize] button")
    for key, *_ in TASKS:
        assert page.locator(f"form[data-action=sprint-create] input[value='{key}']").is_checked()
    _post_form(page, "form[data-action=sprint-create] button[type=submit]")
    sprint = Sprint.objects.get(project=world.project)
    assert sorted(t.key for t in sprint.planned.all()) == ["api", "docs", "ui"]
    assert [t.key for t in Task.objects.get(project=world.project, key="ui").depends_on.all()] == [
        "api"
    ]
    humans = Event.objects.filter(project=world.project, actor_kind="human")
    assert humans.filter(action="goal_created").exists()
    # Goal, three creations, three finalizations, the sprint: all audited as the person.
    assert humans.count() >= 8
    assert set(humans.values_list("actor_id", flat=True)) == {world.admin.get_username()}
    assert (
        not Event.objects.filter(project=world.project, actor_id="planner-1")
        .exclude(action="registered")
        .exists()
    )

    # The team works the plan; the board follows it live.
    open_board(page, world.project.slug)
    coder, reviewer = agent_client(world.coder), agent_client(world.reviewer)
    for n, key in enumerate(["api", "docs", "ui"]):  # ui waits for api
        coder.claim(key)
        commit = f"c0ffee{n:02d}"
        coder.submit(key, commit)
        status, body = reviewer.post(f"tasks/{key}/review/claim")
        assert status in (200, 201), body
        status, body = reviewer.post(
            f"tasks/{key}/verdict", {"verdict": "APPROVED", "review_commit": commit}
        )
        assert status in (200, 201), body
        status, body = reviewer.post(f"tasks/{key}/merge", {"merge_commit": f"beef00{n:02d}"})
        assert status in (200, 201), body
        page.wait_for_selector(
            f'.column[data-status="MERGED"] .count[data-count="{n + 1}"]',
            state="attached",
            timeout=LIVE_TIMEOUT_MS,
        )
    assert set(Task.objects.filter(project=world.project).values_list("status", flat=True)) == {
        "MERGED"
    }

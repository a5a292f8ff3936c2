"""A person plans from the board and the team works the plan (issue 25 "Done when"): in
Chromium, an admin writes a goal, three tasks (one depending on another), finalizes them and
starts a sprint, with no admin site and no API; then agents work the tasks to MERGED through the
API while the board watches."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from agents.client.demo_agents.common import strict
from agents.services import agent_create_with_key
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from tests.e2e.support import LIVE_TIMEOUT_MS, open_board, sign_in
from tests.factories import ProjectFactory, member
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
    _open_the_plan(page, world.project.slug)
    assert page.locator("h1").inner_text().startswith("Plan")

    _plan_goal_and_tasks(page)
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


# -- the scripted team (issue 25 "Done when") ---------------------------------------------------

TEAM = [("planner-1", "planner"), ("coder-1", "coder"), ("code-reviewer-1", "code_reviewer")]
FAST = ["--poll-interval", "0.3", "--heartbeat-interval", "2", "--restart-delay", "0.2"]


def _open_the_plan(page, slug: str) -> None:
    """From the board to its Plan page, as a person gets there: the project nav."""
    page.goto(f"/p/{slug}/")
    with page.expect_navigation():
        page.click("nav.project-nav a:has-text('Plan')")


def _plan_goal_and_tasks(page) -> None:
    """On the Plan page: a goal and three tasks (ui depends on api), each finalized."""
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


def _plan_in_the_browser(page, slug: str) -> None:
    """Goal, three tasks (ui depends on api), finalized, a sprint: the person's clicks."""
    _open_the_plan(page, slug)
    _plan_goal_and_tasks(page)
    _post_form(page, "form[data-action=sprint-create] button[type=submit]")


def test_the_scripted_team_works_a_plan_made_in_the_browser(page, server, tmp_path):
    """No admin site, no API call by the person: the plan is clicked; the scripted team (a
    planner, a coder, a reviewer, each under `liza supervise`) works it to MERGED; the drawer
    shows each round's files and diff (ui is a "strict" task: rejected once, two rounds)."""
    assert strict("ui") and not strict("api")
    project = ProjectFactory()
    admin = member(project, "admin")
    keys = tmp_path / "keys"
    keys.mkdir()
    for agent_id, role in TEAM:
        _, (_, plain) = agent_create_with_key(
            project=project, actor=admin, role=role, agent_id=agent_id, now=timezone.now()
        )
        (keys / f"{agent_id}.key").write_text(plain + "\n")
        (keys / f"{agent_id}.key").chmod(0o600)
    (keys / "project").write_text(project.slug + "\n")

    sign_in(page, admin)
    # The code host, set on the settings page: the drawer's commits will link there.
    page.goto(f"/p/{project.slug}/settings")
    page.fill("input[name=repo_url]", "https://github.com/acme/shop")
    with page.expect_navigation():
        page.click("form button[type=submit]:has-text('Save')")
    assert page.locator(".messages .error").count() == 0, page.content()[:3000]
    _plan_in_the_browser(page, project.slug)
    assert Sprint.objects.get(project=project).status == "IN_PROGRESS"

    open_board(page, project.slug)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    team = subprocess.Popen(
        [sys.executable, "-m", "agents.client.cli", "--url", server.url,
         "demo-team", "--keys", str(keys), "--timeout", "200", *FAST],
        cwd=tmp_path, env={**env, "TMPDIR": str(tmp_path)},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        page.wait_for_selector(
            '.column[data-status="MERGED"] .count[data-count="3"]',
            state="attached",
            timeout=200_000,
        )
        output, _ = team.communicate(timeout=120)
    finally:
        if team.poll() is None:
            team.kill()
            output = team.communicate()[0]
    assert team.returncode == 0, output[-6000:]
    assert set(Task.objects.filter(project=project).values_list("status", flat=True)) == {"MERGED"}
    assert Goal.objects.get(project=project).status == "COMPLETED"
    # The team planned nothing of its own: the tasks are the person's three.
    assert sorted(Task.objects.filter(project=project).values_list("key", flat=True)) == [
        "api", "docs", "ui"
    ]  # fmt: skip

    # The drawer: what each round changed, the newest open, each with its files and diff.
    # (The sprint has ended, so the board's default view is empty: the drawer opens by address.)
    page.goto(f"/p/{project.slug}/?task=ui")
    drawer = page.locator("#drawer")
    drawer.locator('.drawer-body[data-key="ui"]').wait_for(timeout=5_000)
    rounds = drawer.locator("details.change-round")
    assert rounds.count() == 2
    for n in range(2):
        round_ = rounds.nth(n)
        if n:
            round_.locator("summary").click()
        assert "demo/ui.md" in round_.locator("td.path").all_inner_texts()
        assert round_.locator(".diff .diff-add").count() >= 1
    # Links follow repo_url: the branch, each commit, each round's commit.
    ui = Task.objects.get(project=project, key="ui")
    repo = "https://github.com/acme/shop"
    for href in (f"{repo}/tree/task/ui", f"{repo}/commit/{ui.merge_commit}",
                 f"{repo}/commit/{ui.review_commit}"):  # fmt: skip
        assert drawer.locator(f'a.code-link[href="{href}"]').count() >= 1, href
    assert rounds.nth(1).locator(f'summary a.code-link[href^="{repo}/commit/"]').count() == 1
    # The second round answered the rejection: its diff says so.
    assert rounds.nth(0).locator(".diff", has_text="Checked:").count() == 1


def test_priorities_reorder_by_keyboard_and_by_drag(page):
    """Alt+↑ on a focused row raises its task (and focus stays on it after the page reloads);
    dropping a row on another gives it that row's priority."""
    world = World(now=timezone.now() - timedelta(seconds=30))
    world.draft("T-1", priority=1)
    world.draft("T-2", priority=3)
    world.draft("T-3", priority=4)
    sign_in(page, world.admin)
    page.goto(f"/p/{world.project.slug}/plan/")

    page.focus("tr[data-key='T-2']")
    with page.expect_navigation():
        page.keyboard.press("Alt+ArrowUp")
    assert world.task("T-2").priority == 2
    page.wait_for_function("document.activeElement?.dataset?.key === 'T-2'")
    with page.expect_navigation():
        page.keyboard.press("Alt+ArrowDown")
    assert world.task("T-2").priority == 3

    with page.expect_navigation():
        page.drag_and_drop("tr[data-key='T-3']", "tr[data-key='T-1']")
    assert world.task("T-3").priority == 1
    assert page.locator("tr[data-key='T-3'] td.plan-priority").inner_text().startswith("P1")
    edits = Event.objects.filter(project=world.project, action="edited")
    assert set(edits.values_list("actor_id", flat=True)) == {world.admin.get_username()}
    assert edits.count() == 3

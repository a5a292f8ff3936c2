"""The scripted demo agents, each run as the supervisor would run it: claim first (over HTTP, as
`liza supervise` does), prepare the git worktree, set the LIZA_* environment, spawn
`python -m agents.client.demo_agents.<role>` in a temporary repository with an `integration`
branch, then read its exit code and what it did on the server.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from agents.client import Client, LizaError
from agents.client.demo_agents.common import strict
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import Event
from boards.coordination.services.tasks import task_cancel, task_release_claim
from boards.protocol import Action, GoalStatus, SprintStatus, TaskStatus
from tests.api.helpers import assert_valid, key_for
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

ROLE_OF = {"planner": "planner", "coder": "coder", "code-reviewer": "code_reviewer"}
PROGRAM = {"planner": "planner", "coder": "coder", "code_reviewer": "code_reviewer"}


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def world():
    return World(now=timezone.now() - timedelta(minutes=2))


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository whose `integration` branch has one commit."""
    root = tmp_path / "repo"
    root.mkdir()
    git("init", "-q", "-b", "main", cwd=root)
    (root / "README.md").write_text("# demo\n")
    git("add", "README.md", cwd=root)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "init", cwd=root)
    git("branch", "integration", cwd=root)
    return root


class Supervisor:
    """What `liza supervise` does around one agent: keys, claims, worktrees, the spawn."""

    def __init__(self, server, world: World, repo: Path) -> None:
        self.server, self.world, self.repo = server, world, repo
        self.keys: dict[str, Path] = {}

    def key_file(self, agent_id: str) -> Path:
        if agent_id not in self.keys:
            path = self.repo.parent / f"{agent_id}.key"
            path.write_text(key_for(self.world.agent(agent_id)))
            path.chmod(0o600)
            self.keys[agent_id] = path
        return self.keys[agent_id]

    def client(self, agent_id: str) -> Client:
        key = self.key_file(agent_id).read_text()
        return Client(self.server.url, self.world.project.slug, key, retries=0)

    def base(self) -> str:
        return git("rev-parse", "integration", cwd=self.repo)

    def claim(self, agent_id: str, key: str) -> Path:
        """Claim `key` for a coder and prepare (or reuse) its worktree on `task/<key>`."""
        worktree = self.repo / ".worktrees" / key
        with self.client(agent_id) as client:
            client.claim(key, base_commit=self.base(), worktree=str(worktree))
        if not worktree.exists():
            git(
                "worktree",
                "add",
                "-q",
                "-b",
                f"task/{key}",
                str(worktree),
                "integration",
                cwd=self.repo,
            )
        return worktree

    def claim_review(self, agent_id: str, key: str) -> None:
        with self.client(agent_id) as client:
            client.review_claim(key)

    def spawn(self, agent_id: str, *, task: str = "", cwd: Path | None = None):
        role = ROLE_OF[agent_id.rsplit("-", 1)[0]]
        cwd = cwd or self.repo
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(self.repo.parent),
            "LIZA_URL": self.server.url,
            "LIZA_PROJECT": self.world.project.slug,
            "LIZA_KEY_FILE": str(self.key_file(agent_id)),
            "LIZA_ROLE": role,
            "LIZA_AGENT_ID": agent_id,
            "LIZA_TASK": task,
            "LIZA_WORKTREE": str(cwd) if role == "coder" else "",
            "LIZA_PROMPT_FILE": "",
            "LIZA_INTEGRATION_BRANCH": "integration",
            "LIZA_BASE_COMMIT": self.base(),
            "LIZA_REPO": str(self.repo),
        }
        done = subprocess.run(
            [sys.executable, "-m", f"agents.client.demo_agents.{PROGRAM[role]}"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.returncode, done.stdout + done.stderr


@pytest.fixture
def supervisor(cli_server, world, repo) -> Supervisor:
    return Supervisor(cli_server, world, repo)


def test_the_deterministic_variation_rejects_some_tasks_and_not_others():
    assert strict("T4") and not strict("T1")


def test_a_coder_commits_in_its_worktree_and_a_reviewer_approves(supervisor, world):
    world.unclaimed("T1", description="Write the intro")
    worktree = supervisor.claim("coder-1", "T1")

    code, out = supervisor.spawn("coder-1", task="T1", cwd=worktree)

    assert code == 42, out  # this session's work is done, the role's is not
    task = world.task("T1")
    assert task.status == TaskStatus.READY_FOR_REVIEW, out
    head = git("rev-parse", "task/T1", cwd=supervisor.repo)
    assert task.review_commit == head
    assert "Write the intro" in git("show", f"{head}:demo/T1.md", cwd=supervisor.repo)
    assert git("status", "--porcelain", cwd=worktree) == ""

    supervisor.claim_review("code-reviewer-1", "T1")
    code, out = supervisor.spawn("code-reviewer-1", task="T1")

    assert code == 42, out  # the approved task still awaits its merge
    task = world.task("T1")
    assert task.status == TaskStatus.APPROVED, out
    assert task.approved_by == ["code-reviewer-1"]


def test_a_strict_task_is_rejected_with_a_reason_then_redone_and_approved(supervisor, world):
    world.unclaimed("T4", description="Write the glossary")
    worktree = supervisor.claim("coder-1", "T4")
    supervisor.spawn("coder-1", task="T4", cwd=worktree)
    supervisor.claim_review("code-reviewer-1", "T4")

    _, out = supervisor.spawn("code-reviewer-1", task="T4")

    task = world.task("T4")
    assert task.status == TaskStatus.REJECTED, out
    assert "Checked:" in task.rejection_reason

    worktree = supervisor.claim("coder-1", "T4")  # the coder's own REJECTED task, same branch
    _, out = supervisor.spawn("coder-1", task="T4", cwd=worktree)
    assert world.task("T4").status == TaskStatus.READY_FOR_REVIEW, out
    assert "Checked:" in git("show", "task/T4:demo/T4.md", cwd=supervisor.repo)
    assert git("rev-list", "--count", "integration..task/T4", cwd=supervisor.repo) == "2"

    supervisor.claim_review("code-reviewer-2", "T4")
    supervisor.spawn("code-reviewer-2", task="T4")
    assert world.task("T4").status == TaskStatus.APPROVED


def test_a_commit_without_the_tasks_file_is_rejected(supervisor, world):
    world.unclaimed("T1")
    worktree = supervisor.claim("coder-1", "T1")
    (worktree / "other.txt").write_text("not the task's file\n")
    git("add", "other.txt", cwd=worktree)
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "x", cwd=worktree)
    with supervisor.client("coder-1") as client:
        client.submit("T1", review_commit=git("rev-parse", "HEAD", cwd=worktree), tree_clean=True)
    supervisor.claim_review("code-reviewer-1", "T1")

    supervisor.spawn("code-reviewer-1", task="T1")

    task = world.task("T1")
    assert task.status == TaskStatus.REJECTED
    assert "demo/T1.md is not in" in task.rejection_reason


def test_a_question_blocks_once_and_the_planners_answer_reaches_the_file(supervisor, world):
    world.unclaimed("T1", description="Answer the first questions [ask]")
    worktree = supervisor.claim("coder-1", "T1")

    code, out = supervisor.spawn("coder-1", task="T1", cwd=worktree)

    # The BLOCKED task is open past DRAFT: work may still come (selectors.work_may_still_come),
    # so the role is not complete and the session ends with 42.
    assert code == 42, out
    task = world.task("T1")
    assert task.status == TaskStatus.BLOCKED, out
    assert task.blocked_questions and "audience" in task.blocked_questions[0]

    _, out = supervisor.spawn("planner-1")  # BLOCKED_TASKS: answers it
    assert world.task("T1").status == TaskStatus.UNCLAIMED, out

    worktree = supervisor.claim("coder-2", "T1")
    _, out = supervisor.spawn("coder-2", task="T1", cwd=worktree)
    assert world.task("T1").status == TaskStatus.READY_FOR_REVIEW, out
    assert "Answer: write for newcomers" in (worktree / "demo" / "T1.md").read_text()


def test_a_coder_whose_lease_was_lost_exits_42_without_committing(supervisor, world):
    world.unclaimed("T1")
    worktree = supervisor.claim("coder-1", "T1")
    task_release_claim(task=world.task("T1"), actor=world.admin, reason="stuck", now=timezone.now())

    code, out = supervisor.spawn("coder-1", task="T1", cwd=worktree)

    assert code == 42, out
    assert "lease lost" in out
    assert git("rev-list", "--count", "integration..task/T1", cwd=supervisor.repo) == "0"


def test_the_planner_plans_a_sprint_then_completes_the_goal(supervisor, world):
    code, out = supervisor.spawn("planner-1")

    assert code == 42, out  # planned; the role goes on until the goal is done
    goal = Goal.objects.get(project=world.project)
    tasks = {t.key: t for t in world.project.tasks.all()}
    assert len(tasks) == 4 and {t.status for t in tasks.values()} == {TaskStatus.UNCLAIMED}
    usage = tasks[f"{goal.goal_id}-usage"]
    assert [d.key for d in usage.depends_on.all()] == [f"{goal.goal_id}-intro"]
    sprint = Sprint.objects.get(project=world.project)
    assert sprint.status == SprintStatus.IN_PROGRESS
    assert set(sprint.planned.values_list("key", flat=True)) == set(tasks)

    code, out = supervisor.spawn("planner-1")  # nothing new: no second plan
    assert code == 42 and world.project.tasks.count() == 4, out

    for key in tasks:
        task_cancel(task=world.task(key), actor=world.admin, reason="demo", now=timezone.now())
    # The last planned task ending closed the sprint (sprint_complete_if_done).
    assert Sprint.objects.get(project=world.project).status == SprintStatus.COMPLETED
    code, out = supervisor.spawn("planner-1")

    assert code == 0, out
    goal.refresh_from_db()
    assert goal.status == GoalStatus.COMPLETED
    code, out = supervisor.spawn("planner-1")  # a finished goal is not planned again
    assert code == 0 and world.project.tasks.count() == 4, out


def test_the_scripted_team_finishes_the_demo_goal(supervisor, world, capsys):
    """A stand-in for `liza supervise` (claim first, worktrees, spawn, merge) drives the three
    programs, two coders and two reviewers, until the planner completes the goal."""
    repo = supervisor.repo
    git("checkout", "-q", "integration", cwd=repo)
    coders, reviewers = ("coder-1", "coder-2"), ("code-reviewer-1", "code-reviewer-2")
    started = time.monotonic()
    planner_code, spawns = None, 0
    for _ in range(25):
        planner_code, out = supervisor.spawn("planner-1")
        spawns += 1
        if planner_code == 0:
            break
        for coder in coders:
            with supervisor.client(coder) as client:
                task = client.claim_next(base_commit=supervisor.base())
            if task is None:
                continue
            worktree = repo / ".worktrees" / task["key"]
            if not worktree.exists():
                git(
                    "worktree",
                    "add",
                    "-q",
                    "-B",
                    f"task/{task['key']}",
                    str(worktree),
                    "integration",
                    cwd=repo,
                )
            supervisor.spawn(coder, task=task["key"], cwd=worktree)
            spawns += 1
        for reviewer in reviewers:
            with supervisor.client(reviewer) as client:
                for row in client.tasks(status=TaskStatus.READY_FOR_REVIEW):
                    try:
                        client.review_claim(row["key"])
                    except LizaError:
                        continue
                    supervisor.spawn(reviewer, task=row["key"])
                    spawns += 1
                    break
                for row in client.tasks(status=TaskStatus.APPROVED):
                    if reviewer in row["approved_by"]:  # the approving reviewer's supervisor
                        git(
                            "merge",
                            "-q",
                            "--no-ff",
                            "-m",
                            f"merge {row['key']}",
                            f"task/{row['key']}",
                            cwd=repo,
                        )
                        client.merge(row["key"], merge_commit=supervisor.base())
    elapsed = time.monotonic() - started

    assert planner_code == 0, out
    assert Goal.objects.get(project=world.project).status == GoalStatus.COMPLETED
    tasks = list(world.project.tasks.all())
    assert {t.status for t in tasks} == {TaskStatus.MERGED}
    events = Event.objects.filter(project=world.project)
    assert events.filter(action=Action.REJECTED).count() == 2  # the two strict tasks, once each
    assert events.filter(action=Action.BLOCKED).count() == 1  # the [ask] task, once
    for task in tasks:
        assert f"# {task.key}" in (repo / "demo" / f"{task.key}.md").read_text()
    assert_valid(world.project.slug, "the scripted team's sprint")
    with capsys.disabled():
        print(f"\nscripted team: {spawns} agent runs, {elapsed:.1f} s")

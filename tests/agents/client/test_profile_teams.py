"""A planner, two coders and a reviewer, each `liza supervise --agent <profile> --role <role>`
with no command and no wrapper, run a fresh project's goal to COMPLETED — for every profile,
against a fake of its CLI (tests/agents/client/fakes/: its documented flags only, its own
configuration files, the official `mcp` client or aider's reply, its output format, exit 0
after every session as the real CLIs do)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.utils import timezone

from agents.models import Run
from boards.coordination.models.projects import Goal
from boards.coordination.models.tasks import Task
from boards.demo.projects import team_build
from tests.agents.client.fakes.brain import pr_url_of
from tests.agents.client.gitrepo import git, new_repo

pytestmark = pytest.mark.django_db(transaction=True)

FAKE = Path(__file__).with_name("fakes") / "cli.py"
ROOT = Path(__file__).resolve().parents[3]
# A waiting supervisor asks /work once a second: at 0.3 s its idle polls (and the server's
# answers) were a fifth of a team's CPU (claude's team, alone: 34.5-35.9 core-s at 0.3, 27.4
# at 1), and the goal waits at most a second more at each hand-over.
FAST = ["--poll-interval", "1", "--heartbeat-interval", "1", "--restart-delay", "0.2",
        "--crash-delay", "0.3"]  # fmt: skip
TEAM = {"planner-1": "planner", "coder-1": "coder", "coder-2": "coder",
        "code-reviewer-1": "code-reviewer"}  # fmt: skip


def fake_bin(directory: Path) -> Path:
    """`claude`, `codex`, … on PATH: each the fake of that CLI."""
    directory.mkdir()
    for name in ("claude", "codex", "gemini", "aider", "opencode"):
        path = directory / name
        path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE}" {name} "$@"\n')
        path.chmod(0o755)
    return directory


def supervise(url, slug, key_file, repo, bin_dir, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIZA_")}
    env.update(
        LIZA_URL=url,
        LIZA_PROJECT=slug,
        LIZA_KEY_FILE=str(key_file),
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}",
        PYTHONPATH=str(ROOT),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "agents.client.cli", "supervise", *args],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("name", ["claude", "aider", "codex", "gemini", "opencode"])
def test_a_team_of_one_profile_completes_the_goal_with_no_wrapper(cli_server, tmp_path, name):
    team = team_build(slug=f"team-{name}", now=timezone.now())
    repo = new_repo(
        tmp_path / "repo", {"README": "project\n", ".gitignore": ".worktrees/\n"},
        email="team@example.com", name="Team",
    )  # fmt: skip
    bin_dir = fake_bin(tmp_path / "bin")
    procs = {}
    for agent_id, role in TEAM.items():
        key_file = tmp_path / f"{agent_id}.key"
        key_file.write_text(team.keys[agent_id] + "\n")
        key_file.chmod(0o600)
        procs[agent_id] = supervise(
            cli_server.url, team.project.slug, key_file, repo, bin_dir,
            "--agent", name, "--role", role, "--id", agent_id, *FAST,
        )  # fmt: skip
    outputs = {}
    try:
        deadline = time.monotonic() + 150
        goal = Goal.objects.get(project=team.project)
        while time.monotonic() < deadline and goal.status != "COMPLETED":
            time.sleep(0.5)
            goal.refresh_from_db()
            if all(p.poll() is not None for p in procs.values()):
                break
        # Role complete: each supervisor stops by itself, exit 0.
        stop_by = time.monotonic() + (30 if goal.status == "COMPLETED" else 0)
        for agent_id, proc in procs.items():
            try:
                wait = max(0.1, stop_by - time.monotonic())
                outputs[agent_id] = proc.communicate(timeout=wait)[0]
            except subprocess.TimeoutExpired:
                proc.kill()
                outputs[agent_id] = proc.communicate()[0]
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    everything = "\n".join(f"--- {a}\n{o[:3000]}\n…\n{o[-3000:]}" for a, o in outputs.items())
    assert goal.status == "COMPLETED", everything
    assert {p.returncode for p in procs.values()} == {0}, everything
    tasks = Task.objects.filter(project=team.project)
    assert sorted(t.key for t in tasks) == ["T1", "T2"]
    assert {t.status for t in tasks} == {"MERGED"}, everything
    assert git(repo, "show", "integration:T2.txt") == "T2 done"
    # Each coder reported its pull request with its submit (issue 25): through the MCP tool,
    # or for aider through the `liza submit --pr-url` its supervisor ran from its reply.
    assert {t.key: t.pr_url for t in tasks} == {k: pr_url_of(k) for k in ("T1", "T2")}
    runs = Run.objects.filter(project=team.project)
    assert runs.exists() and not any(r.crashed for r in runs), everything
    # The CLI ran as the profile says, and printed its own format.
    assert all(r.command.startswith(name) for r in runs), {r.command for r in runs}
    assert all(r.exit_code == 0 for r in runs), [(r.command, r.exit_code) for r in runs]
    assert "refused" not in everything

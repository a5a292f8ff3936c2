"""Issue 24 end to end: a real server, a real `liza supervise` and scripted agents. A run's
output reaches the server while it runs; an agent that hangs without output is stopped by the
progress watchdog (SIGTERM, then SIGKILL), its run is stalled, an alert opens, the task is
retried on seed 003's schedule, then BLOCKED at `max_stalls`."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.models import Run, RunState
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.records import Alert
from boards.protocol import TaskStatus
from boards.watch.services.watch import watch_sweep
from tests.agents.client import test_supervise as base
from tests.agents.client.test_supervise import wait_for, write_agent

# The end-to-end harness's fixtures (a server, a repository, supervisors of a world).
repo, world, supervisors = base.repo, base.world, base.supervisors

pytestmark = pytest.mark.django_db(transaction=True)

# Prints nothing, ignores SIGTERM (so only the SIGKILL after the grace ends it), sleeps.
HANG = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(600)
"""

# Prints a line every 0.2 s for a while, then exits 42.
CHATTY = """
import sys, time
for n in range(40):
    print("step", n, flush=True)
    time.sleep(0.2)
sys.exit(42)
"""


def _config(world, **fields):
    ProjectConfig.objects.filter(project=world.project).update(**fields)


def test_a_hanging_agent_is_stalled_killed_retried_then_blocked(supervisors, world):
    _config(world, stall_timeout=2, max_stalls=2, retry_backoff=[1, 1, 1], lease_grace=1)
    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1", write_agent(supervisors.tmp, "hang", HANG), "--terminate-grace", "0.5"
    )
    runs = Run.objects.filter(project=world.project, task__key="T1")
    try:
        wait_for(lambda: runs.filter(state=RunState.STALLED).exists(), 60, "the first stalled run")
        first = runs.get(state=RunState.STALLED)
        assert first.reason == "stalled" and first.exit_code == -9  # SIGTERM ignored: SIGKILL
        assert 2 <= first.duration().total_seconds() < 15
        project = Project.objects.get(pk=world.project.pk)  # its config as updated
        sweep = watch_sweep(project=project, now=first.ended)
        alert = Alert.objects.get(
            project=world.project, type=Alert.Type.RUN_STALLED, resolved_at__isnull=True
        )
        assert alert.subject == "T1" and "stall 1/2" in alert.message, sweep
        # Retried by the same coder after the backoff, stalled again: the 2nd stall blocks it.
        wait_for(lambda: world.task("T1").status == TaskStatus.BLOCKED, 60, "the block")
    finally:
        supervisors.stop()
    out = proc.stdout.read()
    task = world.task("T1")
    assert "stalled 2 times" in task.blocked_reason, out
    assert runs.filter(state=RunState.STALLED).count() == 2, out
    assert task.crashes == 1  # one retry on seed 003's schedule before the block
    assert "stalled; stopping it" in out


def test_a_runs_output_reaches_the_server_while_it_runs(supervisors, world):
    world.unclaimed("T1")
    proc = supervisors.start("coder-1", write_agent(supervisors.tmp, "chatty", CHATTY))
    run = Run.objects.filter(project=world.project)
    try:
        wait_for(
            lambda: run.filter(ended__isnull=True, output__contains="step 3").exists(),
            60,
            "streamed output while the run runs",
        )
        live = run.get(ended__isnull=True)
        assert live.state == RunState.RUNNING and live.last_output_at is not None
        wait_for(lambda: run.filter(ended__isnull=False).exists(), 60, "the run's end")
    finally:
        supervisors.stop()
    proc.stdout.read()
    ended = run.filter(ended__isnull=False).first()
    assert (ended.state, ended.reason) == ("finished", "session ended, work left")
    assert "step 39" in ended.output


# First session: the provider's wall (and it would hang there); later ones: work, then exit 42.
QUOTA = """
import os, sys, time
marker = os.path.join(os.environ["LIZA_REPO"], ".git", "quota-seen")
if not os.path.exists(marker):
    open(marker, "w").close()
    print("You've hit your usage limit. Try again in 4 seconds.", flush=True)
    time.sleep(600)
print("working again", flush=True)
time.sleep(0.5)
sys.exit(42)
"""


def test_a_quota_wall_pauses_spawning_until_the_reset_then_resumes(supervisors, world):
    from agents.models import Agent

    world.unclaimed("T1")
    proc = supervisors.start(
        "coder-1",
        write_agent(supervisors.tmp, "quota", QUOTA),
        "--terminate-grace",
        "0.5",
        LIZA_PROFILE="codex",
    )
    runs = Run.objects.filter(project=world.project).order_by("started")
    try:
        wait_for(lambda: runs.filter(reason="quota").exists(), 60, "the quota run's end")
        agent = Agent.objects.get(project=world.project, agent_id="coder-1")
        wait_for(lambda: Agent.objects.get(pk=agent.pk).quota_until is not None, 30, "the report")
        agent = Agent.objects.get(pk=agent.pk)
        assert agent.quota_provider == "codex" and "usage limit" in agent.quota_message
        # The board and the watcher say when it resumes, while it waits.
        project = Project.objects.get(pk=world.project.pk)
        watch_sweep(project=project, now=agent.quota_until - timedelta(seconds=1))
        alert = Alert.objects.get(project=project, type=Alert.Type.QUOTA, subject="coder-1")
        assert "paused until" in alert.message
        wait_for(lambda: runs.filter(output__contains="working again").exists(), 60, "resume")
    finally:
        supervisors.stop()
    out = proc.stdout.read()
    first, second = list(runs)[:2]
    assert (first.state, first.reason, first.crashed) == ("finished", "quota", False), out
    assert second.started >= agent.quota_until, (second.started, agent.quota_until, out)
    assert "resuming" in out and "crash loop" not in out

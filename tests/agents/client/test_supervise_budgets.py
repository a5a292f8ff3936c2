"""Issue 24 "Done when", end to end: a real server, a real `liza supervise --` running a scripted
agent that prints its usage in Claude Code's stream-json format (`result` events carrying
`modelUsage` and `total_cost_usd`, as agents.client.usage parses them for the claude profile).

At 85 % of the project's budget the watcher raises one BUDGET alert; past 100 % the running
agent is stopped through its heartbeat (its run: killed, reason "budget"), new claims are
refused (409 budget_exhausted, exit 14), the supervisor waits; an admin raising the budget lets
it resume by itself; the cost reaches insights and `/metrics`."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from django.test import Client as PageClient
from django.utils import timezone

from agents.client import Client, LizaError
from agents.models import Run, RunState, RunUsage
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert, Event
from boards.coordination.services.budgets import budget_set
from boards.watch.services.watch import watch_sweep
from tests.agents.client import test_supervise as base
from tests.agents.client.test_supervise import wait_for, write_agent
from tests.api.helpers import key_for
from tests.factories import UserFactory

repo, world, supervisors = base.repo, base.world, base.supervisors

pytestmark = pytest.mark.django_db(transaction=True)

# Spends $0.85 at once, then $0.30 more when the test says "go", then works on (sleeps) until
# stopped. Once the budget was raised (its marker written), a session works and exits 42.
SPENDER = """
import json, os, sys, time
E = os.environ
git = os.path.join(E["LIZA_REPO"], ".git")
if os.path.exists(os.path.join(git, "spent")):
    print("resumed on", E["LIZA_TASK"], flush=True)
    time.sleep(0.5)
    sys.exit(42)
def result(cost, tokens):
    usage = {"inputTokens": tokens, "outputTokens": 100, "cacheReadInputTokens": 2000,
             "cacheCreationInputTokens": 0, "costUSD": cost}
    print(json.dumps({"type": "result", "subtype": "success", "is_error": False,
                      "total_cost_usd": cost, "modelUsage": {"claude-sonnet-4-5": usage}}),
          flush=True)
result(0.85, 1000)
while not os.path.exists(os.path.join(git, "go")):
    time.sleep(0.05)
open(os.path.join(git, "spent"), "w").close()
result(0.30, 500)
time.sleep(600)
"""


def _budget(world, usd: str) -> None:
    budget_set(
        project=world.project,
        actor=world.admin,
        now=timezone.now(),
        scope="project",
        limit_usd=Decimal(usd),
    )


def test_a_budget_alerts_at_80_stops_the_running_agent_at_100_and_resumes_when_raised(
    supervisors, world, repo, cli_server
):
    world.unclaimed("T1")
    world.unclaimed("T2")
    _budget(world, "1.00")
    proc = supervisors.start(
        "coder-1",
        write_agent(supervisors.tmp, "spender", SPENDER),
        "--terminate-grace",
        "0.5",
        LIZA_PROFILE="claude",
    )
    usage = RunUsage.objects.filter(project=world.project)
    runs = Run.objects.filter(project=world.project).order_by("started", "id")
    alerts = Alert.objects.filter(project=world.project, type=Alert.Type.BUDGET)
    try:
        wait_for(lambda: usage.filter(cost_usd=Decimal("0.85")).exists(), 60, "the first report")
        row = usage.get()
        assert (row.model, row.input_tokens, row.cache_read_tokens) == (
            "claude-sonnet-4-5",
            1000,
            2000,
        )
        project = Project.objects.get(pk=world.project.pk)
        for _ in range(3):  # three sweeps, one alert
            watch_sweep(project=project, now=timezone.now())
        alert = alerts.get()
        assert alert.level == Alert.Level.WARNING and "$0.85 of $1.00" in alert.message
        assert runs.get().state == RunState.RUNNING  # 85 %: it works on

        (repo / ".git" / "go").touch()
        went = time.monotonic()
        wait_for(lambda: runs.filter(ended__isnull=False).exists(), 60, "the budget's stop")
        stopped_after = time.monotonic() - went
        run = runs.first()
        # Stopped by its supervisor on the heartbeat's word, not by itself (it sleeps 600 s).
        assert (run.state, run.reason, run.stopped_by) == ("killed", "budget", "budget_exhausted")
        assert usage.get().cost_usd == Decimal("1.15")
        watch_sweep(project=project, now=timezone.now())
        alert = alerts.get()
        assert alert.level == Alert.Level.CRITICAL and "BUDGET EXHAUSTED" in alert.message

        # New claims are refused, with the budget's code and exit.
        with (
            Client(cli_server.url, world.project.slug, key_for(world.agent("coder-2"))) as other,
            pytest.raises(LizaError) as refused,
        ):
            other.claim_next(base_commit="c0ffee01")
        assert (refused.value.code, refused.value.exit) == ("budget_exhausted", 14)
        # The supervisor waits (no spawn, no crash) while the budget is spent.
        time.sleep(2)
        assert runs.count() == 1

        _budget(world, "5.00")  # an admin raises it: the supervisor resumes by itself
        wait_for(
            lambda: runs.filter(output__contains="resumed on T1").exists(), 60, "the resumed run"
        )
        watch_sweep(project=project, now=timezone.now())
        assert alerts.get().resolved_at is not None
    finally:
        supervisors.stop()
    out = proc.stdout.read()
    assert "budget_exhausted: the agent was stopped" in out, out
    assert "waiting for an admin to raise it" in out, out
    assert "crash" not in out.replace("crash: exit", ""), out
    assert Event.objects.filter(project=world.project, action="budget_set").count() == 2
    print(f"stopped {stopped_after:.2f} s after the spend past 100 % (heartbeat 0.5 s)")

    # The cost reaches insights and /metrics.
    page = PageClient()
    page.force_login(world.admin)
    insights = page.get(f"/p/{world.project.slug}/insights/").content.decode()
    assert "$1.15" in insights and "T1" in insights
    staff = PageClient()
    staff.force_login(UserFactory(is_staff=True))
    metrics = staff.get("/metrics").content.decode()
    line = f'liza_cost_usd_total{{project="{world.project.slug}"}} 1.15'
    assert line in metrics, metrics[:2000]
    assert f'liza_tokens_total{{kind="input",project="{world.project.slug}"}} 1500.0' in metrics
    assert (
        f'liza_budget_spent_ratio{{project="{world.project.slug}",scope="project",subject=""}} 0.23'
        in metrics
    )

"""Issue 24: usage per run and model, budgets and THE budget rule (ok / warning at 80 % /
exhausted at 100 %), with what it does: the watcher's one alert per crossing, claims, review
claims and run starts refused, the heartbeat's `stop`, `/work`'s wait, and a raise that lets
work resume."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents.models import Budget, RunUsage
from agents.services import agent_heartbeat, run_start, usage_record
from boards.coordination.models.records import Alert, Event
from boards.coordination.selectors.budgets import (
    EXHAUSTED,
    OK,
    WARNING,
    Spend,
    budget_level,
    budget_state_of,
    budget_states,
)
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, tasks
from boards.coordination.services.budgets import budget_set
from boards.coordination.services.goals import goal_create
from boards.errors import BudgetExhausted, Conflict, Forbidden, ProtocolValidationError, exit_code
from boards.protocol import Action, TaskStatus
from boards.watch.services.watch import watch_sweep

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("spent", "limit_usd", "limit_tokens", "state"),
    [
        # USD only
        (Spend(usd=Decimal("7.99")), Decimal(10), None, OK),
        (Spend(usd=Decimal("8.00")), Decimal(10), None, WARNING),
        (Spend(usd=Decimal("9.99")), Decimal(10), None, WARNING),
        (Spend(usd=Decimal("10.00")), Decimal(10), None, EXHAUSTED),
        # tokens only
        (Spend(tokens=799), None, 1000, OK),
        (Spend(tokens=800), None, 1000, WARNING),
        (Spend(tokens=999), None, 1000, WARNING),
        (Spend(tokens=1000), None, 1000, EXHAUSTED),
        # both: the further of the two decides
        (Spend(usd=Decimal("7.99"), tokens=799), Decimal(10), 1000, OK),
        (Spend(usd=Decimal("8.00"), tokens=10), Decimal(10), 1000, WARNING),
        (Spend(usd=Decimal("0.01"), tokens=800), Decimal(10), 1000, WARNING),
        (Spend(usd=Decimal("9.99"), tokens=1000), Decimal(10), 1000, EXHAUSTED),
        (Spend(usd=Decimal("10"), tokens=0), Decimal(10), 1000, EXHAUSTED),
        # a zero USD budget allows nothing
        (Spend(), Decimal(0), None, EXHAUSTED),
    ],
)
def test_the_budget_rule_at_its_boundaries(spent, limit_usd, limit_tokens, state):
    share = budget_level(spent=spent, limit_usd=limit_usd, limit_tokens=limit_tokens)
    assert budget_state_of(share) == state


def _spend(world, agent, usd: str = "0", tokens: int = 0, task: str | None = None, model="m"):
    run = run_start(project=world.project, agent=agent, now=world.tick(), task=task)
    return usage_record(
        project=world.project,
        agent=agent,
        now=world.tick(),
        run=run.pk,
        usage=[{"model": model, "input_tokens": tokens, "cost_usd": Decimal(usd)}],
    )


def _budget(world, scope="project", subject="", usd=None, tokens=None):
    return budget_set(
        project=world.project,
        actor=world.admin,
        now=world.tick(),
        scope=scope,
        subject=subject,
        limit_usd=None if usd is None else Decimal(usd),
        limit_tokens=tokens,
    )


def test_usage_reports_are_running_totals_counted_once(world):
    world.claimed("T1")
    run = run_start(project=world.project, agent=world.coder, now=world.tick(), task="T1")
    report = {"model": "opus", "input_tokens": 100, "output_tokens": 10, "cost_usd": Decimal("0.5")}
    for _ in range(3):  # a retry, a repeat: counted once
        usage_record(project=world.project, agent=world.coder, now=world.tick(), usage=[report])
    # A later report grows it; a stale (smaller) one never shrinks it.
    usage_record(
        project=world.project,
        agent=world.coder,
        now=world.tick(),
        usage=[{**report, "input_tokens": 300, "cost_usd": Decimal("0.7")}],
    )
    usage_record(project=world.project, agent=world.coder, now=world.tick(), usage=[report])
    row = RunUsage.objects.get(run=run)
    assert (row.input_tokens, row.output_tokens, row.cost_usd) == (300, 10, Decimal("0.7"))
    assert row.task.key == "T1" and row.agent == world.coder and row.tokens == 310


def test_usage_needs_a_running_run_of_ones_own(world):
    with pytest.raises(Conflict):
        usage_record(project=world.project, agent=world.coder, now=world.tick(), usage=[{}])
    run = run_start(project=world.project, agent=world.coder, now=world.tick())
    with pytest.raises(Forbidden):
        usage_record(
            project=world.project, agent=world.agent("coder-2"), now=world.tick(), run=run.pk,
            usage=[{"model": "m"}],
        )  # fmt: skip
    with pytest.raises(ProtocolValidationError):
        usage_record(
            project=world.project, agent=world.coder, now=world.tick(), usage=[{}, {}]
        )  # two entries for one model


def test_spend_is_attributed_to_task_agent_sprint_goal_and_project(world):
    goal_create(project=world.project, actor=world.admin, description="ship", now=world.tick())
    world.claimed("T1")
    _spend(world, world.coder, "2", 100, task="T1")
    _spend(world, world.planner, "1", 50)  # no task: project, agent, the goal in progress
    goal_id = RunUsage.objects.filter(agent=world.planner).get().goal.goal_id
    for scope, subject in [
        ("project", ""),
        ("task", "T1"),
        ("agent", "coder-1"),
        ("agent", "planner-1"),
        ("goal", goal_id),
    ]:
        _budget(world, scope, subject, usd="100")
    spent = {
        (s.budget.scope, s.budget.subject): s.spent for s in budget_states(project=world.project)
    }
    assert spent[("project", "")] == Spend(Decimal(3), 150)
    assert spent[("task", "T1")] == Spend(Decimal(2), 100)
    assert spent[("agent", "coder-1")] == Spend(Decimal(2), 100)
    assert spent[("agent", "planner-1")] == Spend(Decimal(1), 50)
    assert spent[("goal", goal_id)] == Spend(Decimal(3), 150)


def test_the_80_percent_alert_is_raised_once_and_escalated_at_100(world):
    _budget(world, usd="10")
    _spend(world, world.coder, "8.5")
    for _ in range(3):
        watch_sweep(project=world.project, now=world.tick(10))
    alerts = Alert.objects.filter(project=world.project, type=Alert.Type.BUDGET)
    alert = alerts.get()  # one alert, seen by three sweeps, not three alerts
    assert alert.level == Alert.Level.WARNING and alert.count == 3
    assert "BUDGET AT 80 %" in alert.message and "$8.50 of $10.00" in alert.message
    _spend(world, world.agent("coder-2"), "2")
    watch_sweep(project=world.project, now=world.tick(10))
    alert = alerts.get()
    assert alert.level == Alert.Level.CRITICAL and "BUDGET EXHAUSTED" in alert.message
    _budget(world, usd="100")  # raised: the condition clears, the alert resolves
    watch_sweep(project=world.project, now=world.tick(10))
    assert alerts.get().resolved_at is not None


def test_a_spent_budget_refuses_claims_reviews_and_runs_until_raised(world):
    world.unclaimed("T1")
    world.ready_for_review("T2", coder="coder-2")
    _budget(world, usd="1")
    _spend(world, world.agent("coder-3"), "1")
    refusals = [
        lambda: tasks.task_claim_next(
            project=world.project, agent=world.coder, now=world.tick(), base_commit="c0ffee01"
        ),
        lambda: tasks.task_claim(task=world.task("T1"), agent=world.coder, now=world.tick()),
        lambda: reviews.review_claim_next(
            project=world.project, agent=world.reviewer, now=world.tick()
        ),
        lambda: reviews.review_claim(task=world.task("T2"), agent=world.reviewer, now=world.tick()),
        lambda: run_start(project=world.project, agent=world.planner, now=world.tick()),
    ]
    for attempt in refusals:
        with pytest.raises(BudgetExhausted) as refused:
            attempt()
        assert refused.value.status_code == 409 and refused.value.details["budget"] == "project"
    assert exit_code("budget_exhausted") == 14
    assert Event.objects.filter(project=world.project, action="claim_failed").exists()
    answer = work_for_role(project=world.project, role="coder", agent=world.coder, now=world.now)
    assert answer["work"] is False and answer["exit"] is None and answer["budget"] == "project"
    assert "waiting for an admin" in answer["reason"]
    _budget(world, usd="5")  # raised: work resumes
    assert work_for_role(project=world.project, role="coder", agent=world.coder, now=world.now)[
        "work"
    ]
    assert (
        tasks.task_claim_next(
            project=world.project, agent=world.coder, now=world.tick(), base_commit="c0ffee01"
        ).key
        == "T1"
    )


def test_a_spent_task_budget_passes_over_that_task_only(world):
    world.unclaimed("T1", priority=1)
    world.unclaimed("T2", priority=2)
    _budget(world, "task", "T1", tokens=100)
    world.claim("T1", coder="coder-3")
    _spend(world, world.agent("coder-3"), tokens=100, task="T1")
    claimed = tasks.task_claim_next(
        project=world.project, agent=world.coder, now=world.tick(), base_commit="c0ffee01"
    )
    assert claimed.key == "T2"


def test_the_heartbeat_says_stop_once_the_budget_is_spent(world):
    world.claimed("T1")
    _budget(world, "agent", "coder-1", usd="1")
    run = run_start(project=world.project, agent=world.coder, now=world.tick(), task="T1")
    beat = agent_heartbeat(agent=world.coder, now=world.tick())
    assert beat.stop is None
    usage_record(
        project=world.project, agent=world.coder, now=world.tick(), run=run.pk,
        usage=[{"model": "m", "cost_usd": Decimal("1.01")}],
    )  # fmt: skip
    beat = agent_heartbeat(agent=world.coder, now=world.tick())
    assert beat.stop is not None and beat.stop.code == "budget_exhausted"
    assert "agent coder-1" in beat.stop.message
    # Another agent's work is not this budget's.
    assert agent_heartbeat(agent=world.agent("coder-2"), now=world.tick()).stop is None
    assert world.task("T1").status == TaskStatus.CLAIMED  # its claim is kept, as for a pause


def test_setting_a_budget_is_for_admins_and_audited(world):
    with pytest.raises(Forbidden):
        budget_set(
            project=world.project, actor=world.coder, now=world.tick(), scope="project",
            limit_usd=Decimal(5),
        )  # fmt: skip
    _budget(world, usd="5")
    _budget(world, usd="7.5", tokens=1000)
    _budget(world)  # neither limit: removed
    assert not Budget.objects.filter(project=world.project).exists()
    details = list(
        Event.objects.filter(project=world.project, action=Action.BUDGET_SET)
        .order_by("pk")
        .values_list("actor_id", "detail")
    )
    assert [d for _, d in details] == [
        "budget of project: none → $5.00 (0 % spent)",
        "budget of project: $5.00 → $7.50 and 1,000 tokens (0 % spent)",
        "budget of project: $7.50 and 1,000 tokens → none",
    ]
    assert {actor for actor, _ in details} == {world.admin.username}
    with pytest.raises(ProtocolValidationError):
        _budget(world, "task", "", usd="1")  # a task budget names its task
    with pytest.raises(ProtocolValidationError):
        _budget(world, usd="-1")


def test_a_spent_budget_leaves_a_reviewers_merges_to_report(world):
    world.approved("T1")
    _budget(world, "agent", "code-reviewer-1", usd="0")
    answer = work_for_role(
        project=world.project, role="code_reviewer", agent=world.reviewer, now=world.now
    )
    assert answer["work"] is False and answer["budget"] == "agent"
    assert answer["merge"] == ["T1"]  # git on its supervisor's side: no model spends
    merged = tasks.task_report_merge(
        task=world.task("T1"), agent=world.reviewer, merge_commit="merge001", now=world.tick()
    )
    assert merged.status == TaskStatus.MERGED


def test_a_runs_cost_is_shown_in_the_task_drawer_and_on_the_agent_page(world, client):
    world.claimed("T1")
    _spend(world, world.coder, "0.42", 1234, task="T1")
    client.force_login(world.admin)
    drawer = client.get(f"/p/{world.project.slug}/tasks/T1/").content.decode()
    assert 'class="run-cost" title="1234 tokens, as its CLI reported them">$0.42<' in drawer
    page = client.get(f"/p/{world.project.slug}/agents/coder-1/").content.decode()
    assert ">$0.42<" in page

"""Budgets (issue 24): what has been spent against each, and THE rule of a budget's state.

Spend is the sum of the usage rows (`agents.models.RunUsage`) attributed to the budget's
subject: the project's every row, a goal's / sprint's / agent's / task's rows by the key each
row was attributed to when it was recorded. A budget in USD and tokens is as far as the further
of the two; its state is `ok` below 80 %, `warning` from 80 %, `exhausted` from 100 %.

Read by claims, claim-next, review claims and run starts (refused, `budget_exhausted`), the
heartbeat (`stop`), `/work` (wait), the watcher (one alert per budget crossing 80 %, escalated
at 100 %), the settings page and the API.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.db import connection
from django.db.models import F, Q, Sum
from django.db.models.functions import Coalesce

from agents.models import Agent, Budget, RunUsage
from boards import protocol as p
from boards.coordination.models.projects import Project, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.sprints import goal_in_progress, sprint_current

OK, WARNING, EXHAUSTED = "ok", "warning", "exhausted"

# The usage rows' key for each scope (the project's budget counts every row of the project).
SCOPE_KEY = {
    Budget.Scope.GOAL: "goal_id",
    Budget.Scope.SPRINT: "sprint_id",
    Budget.Scope.AGENT: "agent_id",
    Budget.Scope.TASK: "task_id",
}


@dataclass(frozen=True)
class Spend:
    usd: Decimal = Decimal(0)
    tokens: int = 0


TOKENS = F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")


def spend_of(rows) -> Spend:
    """The summed cost and tokens of usage rows (a queryset)."""
    total = rows.aggregate(
        usd=Coalesce(Sum("cost_usd"), Decimal(0)), tokens=Coalesce(Sum(TOKENS), 0)
    )
    return Spend(usd=total["usd"], tokens=int(total["tokens"]))


def budget_level(*, spent: Spend, limit_usd: Decimal | None, limit_tokens: int | None) -> float:
    """How far a budget is spent, as a share (1.0 = all of it): the further of its two limits.
    A zero USD limit is spent from the start."""
    shares = []
    if limit_usd is not None:
        shares.append(float(spent.usd / limit_usd) if limit_usd > 0 else float("inf"))
    if limit_tokens is not None:
        shares.append(spent.tokens / limit_tokens)
    return max(shares, default=0.0)


def budget_state_of(share: float) -> str:
    """THE rule: exhausted at 100 %, warning from 80 %, else ok."""
    if share >= 1:
        return EXHAUSTED
    if share >= p.BUDGET_WARNING:
        return WARNING
    return OK


@dataclass(frozen=True)
class BudgetState:
    budget: Budget
    spent: Spend
    share: float
    state: str

    @property
    def percent(self) -> int:
        return int(self.share * 100) if self.share != float("inf") else 100

    @property
    def message(self) -> str:
        b = self.budget
        limits = []
        if b.limit_usd is not None:
            limits.append(f"${self.spent.usd:.2f} of ${b.limit_usd:.2f}")
        if b.limit_tokens is not None:
            limits.append(f"{self.spent.tokens:,} of {b.limit_tokens:,} tokens")
        return f"budget of {b.label}: {' and '.join(limits)} spent ({self.percent} %)"

    def as_details(self) -> dict[str, object]:
        b = self.budget
        return {
            "budget": b.scope,
            "subject": b.subject,
            "spent_usd": str(self.spent.usd.quantize(Decimal("0.000001"))),
            "spent_tokens": self.spent.tokens,
            "limit_usd": None if b.limit_usd is None else str(b.limit_usd),
            "limit_tokens": b.limit_tokens,
        }


def _usage_of(budget: Budget):
    rows = RunUsage.objects.filter(project_id=budget.project_id)
    key = SCOPE_KEY.get(budget.scope)
    if key is not None:
        rows = rows.filter(**{key: getattr(budget, key)})
    return rows


def budget_state(budget: Budget) -> BudgetState:
    spent = spend_of(_usage_of(budget))
    share = budget_level(spent=spent, limit_usd=budget.limit_usd, limit_tokens=budget.limit_tokens)
    return BudgetState(budget=budget, spent=spent, share=share, state=budget_state_of(share))


def budget_list(*, project: Project) -> list[Budget]:
    return list(
        Budget.objects.filter(project=project).select_related("goal", "sprint", "agent", "task")
    )


def budget_states(*, project: Project) -> list[BudgetState]:
    """Every budget of the project with its spend and state (the settings page, the API, the
    watcher). One aggregate per budget: a project has a handful."""
    return [budget_state(budget) for budget in budget_list(project=project)]


def open_sprint(project: Project) -> Sprint | None:
    sprint = sprint_current(project=project)
    return sprint if sprint is not None and sprint.status in p.OPEN_SPRINT_STATES else None


def _applies(budget: Budget, *, agent: Agent | None, tasks: list[Task], sprint, goal_ids) -> bool:
    if budget.scope == Budget.Scope.PROJECT:
        return True
    if budget.scope == Budget.Scope.AGENT:
        return agent is not None and budget.agent_id == agent.pk
    if budget.scope == Budget.Scope.SPRINT:
        return sprint is not None and budget.sprint_id == sprint.pk
    if budget.scope == Budget.Scope.GOAL:
        return budget.goal_id in goal_ids
    return any(budget.task_id == task.pk for task in tasks)


def budget_refusal(
    *,
    project: Project,
    agent: Agent | None,
    tasks: list[Task] = (),
    has_budgets: bool | None = None,
) -> BudgetState | None:
    """The first exhausted budget that the next spend of `agent` (on `tasks`, or on nothing
    yet) would count against: the project's, the agent's, the open sprint's, the goal's (the
    tasks' goals, else the goal in progress) and the tasks' own. None: it may spend.

    With no budget in the project this is one cheap query (every claim and heartbeat asks);
    none at all when the caller knows it (`has_budgets` False: the heartbeat reads whether the
    project has any in its agent row's statement, `budget_exists_sql`)."""
    if has_budgets is False:
        return None
    budgets = list(Budget.objects.filter(project=project))
    if not budgets:
        return None
    tasks = [t for t in tasks if t is not None]
    sprint = open_sprint(project)
    goal_ids = {t.goal_id for t in tasks if t.goal_id is not None}
    if not goal_ids:
        goal = goal_in_progress(project=project)
        goal_ids = {goal.pk} if goal is not None else set()
    for budget in budgets:
        if not _applies(budget, agent=agent, tasks=tasks, sprint=sprint, goal_ids=goal_ids):
            continue
        state = budget_state(budget)
        if state.state == EXHAUSTED:
            return state
    return None


def budget_exists_sql(project: str) -> str:
    """Whether the project `project` (a column of an enclosing statement) has any budget, as an
    SQL expression: `budget_refusal`'s `has_budgets`."""
    quote = connection.ops.quote_name
    table = quote(Budget._meta.db_table)
    return f"EXISTS (SELECT 1 FROM {table} WHERE {quote('project_id')} = {project})"


def exhausted_subjects(*, project: Project) -> Q:
    """Tasks that may not be claimed or reviewed because their own budget or their goal's is
    spent, as a filter to exclude (an empty Q when none is): claim-next and review claim-next
    pass over them, so `/work` offers what a claim then gives."""
    tasks, goals = spent_subjects(project=project)
    q = Q()
    if tasks:
        q |= Q(pk__in=tasks)
    if goals:
        q |= Q(goal_id__in=goals)
    return q


def spent_subjects(*, project: Project) -> tuple[list[int], list[int]]:
    """The keys of the tasks and of the goals whose own budget is spent (`exhausted_subjects`
    as keys, for `liza_claim_v1`)."""
    tasks: list[int] = []
    goals: list[int] = []
    for budget in Budget.objects.filter(
        project=project, scope__in=(Budget.Scope.TASK, Budget.Scope.GOAL)
    ):
        if budget_state(budget).state == EXHAUSTED:
            (tasks if budget.scope == Budget.Scope.TASK else goals).append(
                budget.task_id if budget.scope == Budget.Scope.TASK else budget.goal_id
            )
    return tasks, goals


def usage_attribution(*, project: Project, task: Task | None) -> dict[str, object]:
    """What a run's spend is attributed to when recorded (the keys of `RunUsage`): its task,
    the open sprint, and the task's goal — else the goal in progress (docs/decisions.md "Spend
    without a task")."""
    sprint = open_sprint(project)
    goal_id = task.goal_id if task is not None else None
    if goal_id is None:
        goal = goal_in_progress(project=project)
        goal_id = goal.pk if goal is not None else None
    return {"task": task, "sprint": sprint, "goal_id": goal_id}

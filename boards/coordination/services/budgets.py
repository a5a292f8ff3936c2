"""Budgets (issue 24): an admin sets or raises one (audited), and the one refusal every place
that starts spending asks (claims, claim-next, review claims, run starts). The rule itself —
what a budget has spent and whether it is exhausted — is `boards.coordination.selectors.budgets`.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db import transaction

from agents.models import Agent, Budget
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import in_project
from boards.coordination.selectors.budgets import budget_refusal, budget_state
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.locking import lock_project
from boards.errors import BudgetExhausted, ProtocolValidationError
from boards.protocol import BUDGET_BOUNDS, Action


def refuse_if_over_budget(
    project: Project,
    *,
    agent: Agent,
    action: str,
    now: datetime,
    tasks: list[Task | None] = (),
    task: Task | None = None,
    budgets: list[Budget] | None = None,
) -> None:
    """A spent budget that the agent's next work would count against refuses it (409
    `budget_exhausted`, exit 14), written as a rejected attempt. `budgets`: the project's,
    when the caller has read them (`project_budgets`)."""
    exhausted = budget_refusal(project=project, agent=agent, tasks=[*tasks, task], budgets=budgets)
    if exhausted is not None:
        raise Attempt(project=project, actor=agent, action=action, now=now).refuse(
            BudgetExhausted(
                f"{exhausted.message}: no new work until an admin raises it",
                exhausted.as_details(),
            ),
            task=task,
        )


def _subject(project: Project, scope: str, subject: str) -> dict[str, object]:
    """The budget's row keys for `scope` and its subject's id (404 when there is none)."""
    if scope == Budget.Scope.PROJECT:
        if subject:
            raise ProtocolValidationError("subject", "the project's budget names no subject")
        return {}
    if not subject:
        raise ProtocolValidationError("subject", f"the {scope}'s id")
    if scope == Budget.Scope.GOAL:
        return {"goal": in_project(Goal.objects.all(), project, what="goal", goal_id=subject)}
    if scope == Budget.Scope.SPRINT:
        return {
            "sprint": in_project(Sprint.objects.all(), project, what="sprint", sprint_id=subject)
        }
    if scope == Budget.Scope.AGENT:
        return {"agent": in_project(Agent.objects.all(), project, what="agent", agent_id=subject)}
    if scope == Budget.Scope.TASK:
        return {"task": in_project(Task.objects.all(), project, what="task", key=subject)}
    raise ProtocolValidationError("scope", f"one of {', '.join(Budget.Scope.values)}")


def limit_text(usd: Decimal | None, tokens: int | None) -> str:
    parts = []
    if usd is not None:
        parts.append(f"${usd:.2f}")
    if tokens is not None:
        parts.append(f"{tokens:,} tokens")
    return " and ".join(parts) or "none"


@people(ADMIN)
@records_refusals
def budget_set(
    *,
    project: Project,
    actor: Actor,
    now: datetime,
    scope: str,
    subject: str = "",
    limit_usd: Decimal | None = None,
    limit_tokens: int | None = None,
) -> Budget | None:
    """Set (raise, lower) a budget, or remove it when neither limit is given. Project admins
    only; audited as a `budget_set` event naming who changed what, from and to. Returns the
    budget (None once removed). Work stopped by the budget resumes at its next claim."""
    attempt = Attempt(project, actor, "budget_set", now)
    require_role(attempt, agent_roles=())
    if scope not in Budget.Scope.values:
        raise ProtocolValidationError("scope", f"one of {', '.join(Budget.Scope.values)}")
    subject = (subject or "").strip()
    for name, value in (("limit_usd", limit_usd), ("limit_tokens", limit_tokens)):
        low, high = BUDGET_BOUNDS[name]
        if value is not None and not (low <= value <= high):
            raise ProtocolValidationError(name, f"from {low} to {high}")
    keys = _subject(project, scope, subject)
    with transaction.atomic():
        lock_project(project)  # one budget change at a time per project
        budget = Budget.objects.filter(project=project, scope=scope, subject=subject).first()
        before = limit_text(budget.limit_usd, budget.limit_tokens) if budget is not None else "none"
        label = "project" if scope == Budget.Scope.PROJECT else f"{scope} {subject}"
        if limit_usd is None and limit_tokens is None:
            if budget is not None:
                budget.delete()
            budget = None
        else:
            if budget is None:
                budget = Budget(project=project, scope=scope, subject=subject, **keys)
            budget.limit_usd = limit_usd
            budget.limit_tokens = limit_tokens
            budget.updated_at = now
            budget.updated_by = str(getattr(actor, "username", "") or actor)[:150]
            budget.save()
        after = limit_text(limit_usd, limit_tokens)
        state = budget_state(budget) if budget is not None else None
        attempt.record(
            action=Action.BUDGET_SET,
            task=keys.get("task"),
            detail=f"budget of {label}: {before} → {after}"
            + (f" ({state.percent} % spent)" if state is not None else ""),
            data={
                "scope": scope,
                "subject": subject,
                "from": before,
                "to": after,
                "limit_usd": None if limit_usd is None else str(limit_usd),
                "limit_tokens": limit_tokens,
            },
        )
    return budget

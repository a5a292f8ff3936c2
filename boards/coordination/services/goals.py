"""Goals (seed 000 "Goal State Machine"): IN_PROGRESS → COMPLETED | ABORTED."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from boards import protocol as p
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, PLAN, people, require_role
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.stops import sprint_abort_within
from boards.coordination.services.tasks import task_cancel
from boards.errors import InvalidTransition, ProtocolValidationError
from boards.protocol import GoalStatus

# Run inside the goal's transaction: a refusal is logged once, by the goal's own operation.
_cancel = task_cancel.__wrapped__


def cancel_within(task: Task, *, actor: Actor, now: datetime, reason: str) -> Task:
    return _cancel(task=task, actor=actor, now=now, reason=reason)


def _alignment(now: datetime, event: str, summary: str) -> dict[str, str]:
    """One entry of a goal's alignment_history, which records how the goal drifted (seed 002:
    append-only {timestamp, event, summary})."""
    return {"timestamp": p.format_timestamp(now), "event": event, "summary": summary}


@people(PLAN)
@records_refusals
def goal_create(
    *,
    project: Project,
    actor: Actor,
    description: str,
    now: datetime,
    goal_id: str = "",
    spec_ref: str = "",
) -> Goal:
    """A new IN_PROGRESS goal; a project has at most one at a time (SPEC §4)."""
    attempt = Attempt(project, actor, "goal_create", now)
    require_role(attempt, agent_roles=("planner",))
    description = (description or "").strip()
    if not description:
        raise ProtocolValidationError("description", "is required")
    with transaction.atomic():
        if (
            Goal.objects.select_for_update()
            .filter(project=project, status=GoalStatus.IN_PROGRESS)
            .exists()
        ):
            raise ProtocolValidationError("status", "the project already has a goal IN_PROGRESS")
        if not goal_id:
            goal_id = f"goal-{Goal.objects.filter(project=project).count() + 1}"
        goal = Goal.objects.create(
            project=project,
            goal_id=goal_id,
            description=description,
            spec_ref=spec_ref,
            created=now,
            alignment_history=[_alignment(now, "initialization", description)],
        )
        attempt.record(action="goal_created", detail=description, data={"goal": goal.goal_id})
    return goal


@people(PLAN)
@records_refusals
def goal_edit(
    *,
    goal: Goal,
    actor: Actor,
    now: datetime,
    description: str | None = None,
    spec_ref: str | None = None,
) -> Goal:
    """The planner restates the goal IN_PROGRESS; the new statement joins its
    alignment_history (seed 002: the record of how the goal drifted)."""
    project = goal.project
    attempt = Attempt(project, actor, "goal_edit", now)
    require_role(attempt, agent_roles=("planner",))
    changes: dict[str, str] = {}
    if description is not None:
        changes["description"] = clean_text(description, "description")
    if spec_ref is not None:
        changes["spec_ref"] = clean_text(spec_ref, "spec_ref", required=False, max_length=500)
    with transaction.atomic():
        goal = Goal.objects.select_for_update().get(pk=goal.pk)
        diff = {n: (getattr(goal, n), v) for n, v in changes.items() if getattr(goal, n) != v}
        if not diff:
            return goal
        if goal.status != GoalStatus.IN_PROGRESS:
            raise attempt.conflict(
                f"{goal.goal_id} is {goal.status}: only a goal IN_PROGRESS is edited",
                details={"goal": goal.goal_id, "status": goal.status},
            )
        for name, (_, new) in diff.items():
            setattr(goal, name, new)
        goal.alignment_history = [
            *goal.alignment_history,
            _alignment(now, "goal_edited", goal.description),
        ]
        goal.save(update_fields=[*diff, "alignment_history"])
        attempt.record(
            action=p.Action.GOAL_EDITED,
            detail=f"{goal.goal_id}: {', '.join(diff)} edited",
            data={
                "goal": goal.goal_id,
                "changes": {n: {"old": o, "new": v} for n, (o, v) in diff.items()},
            },
        )
    return goal


def _goal_transition(
    goal: Goal, method: str, *, actor: Actor, reason: str, now: datetime, action: str
) -> Goal:
    project = goal.project
    require_role(
        Attempt(project, actor, f"goal_{method}", now),
        agent_roles=("planner",) if method == "complete" else (),
    )
    attempt = Attempt(project, actor, action, now)  # the move's: goal_completed, goal_aborted
    reason = clean_text(reason, "reason", max_length=2000)
    target = {"complete": GoalStatus.COMPLETED, "abort": GoalStatus.ABORTED}[method]
    with transaction.atomic():
        goal = Goal.objects.select_for_update().get(pk=goal.pk)
        if goal.status != GoalStatus.IN_PROGRESS:
            raise attempt.refuse(
                InvalidTransition(
                    from_status=goal.status,
                    to_status=target,
                    allowed=p.goal_targets(goal.status),
                    message=f"goal {goal.goal_id} is {goal.status}",
                ),
                from_status=goal.status,
                to_status=target,
            )
        open_tasks = list(
            Task.objects.filter(goal=goal)
            .exclude(status__in=p.TERMINAL_TASK_STATES)
            .order_by("pk")
            .values_list("key", flat=True)
        )
        open_sprint = Sprint.objects.filter(goal=goal, status__in=p.OPEN_SPRINT_STATES).first()
        if method == "complete" and (open_tasks or open_sprint is not None):
            # SPEC §13: a goal is done when all its work is, and no sprint of it is open.
            raise attempt.conflict(
                f"goal {goal.goal_id} still has work: "
                + "; ".join(
                    part
                    for part in (
                        f"tasks {', '.join(open_tasks)} not terminal" if open_tasks else "",
                        f"sprint {open_sprint.sprint_id} is {open_sprint.status}"
                        if open_sprint
                        else "",
                    )
                    if part
                ),
                details={
                    "goal": goal.goal_id,
                    "open_tasks": open_tasks,
                    "open_sprint": open_sprint.sprint_id if open_sprint else None,
                },
                from_status=goal.status,
            )
        goal.abort() if method == "abort" else goal.complete()
        goal.alignment_history = [*goal.alignment_history, _alignment(now, action, reason)]
        goal.save()
        attempt.record(
            from_status=GoalStatus.IN_PROGRESS,
            to_status=target,
            detail=reason,
            data={"goal": goal.goal_id},
        )
        if method == "abort":
            # SPEC §13: the goal's open sprint is aborted and its unfinished tasks cancelled
            # (override block → ABANDONED), their holders told they lost them (exit 42).
            if open_sprint is not None:
                sprint_abort_within(
                    sprint=open_sprint,
                    actor=actor,
                    now=now,
                    reason=f"goal {goal.goal_id} aborted: {reason}",
                )
            for task in Task.objects.filter(goal=goal, key__in=open_tasks).order_by("pk"):
                cancel_within(
                    task, actor=actor, now=now, reason=f"goal {goal.goal_id} aborted: {reason}"
                )
    return goal


@people(ADMIN)
@records_refusals
def goal_complete(*, goal: Goal, actor: Actor, reason: str, now: datetime) -> Goal:
    """The planner (or an admin) declares the goal done: every task of it terminal and no
    sprint of it open (SPEC §13)."""
    return _goal_transition(
        goal, "complete", actor=actor, reason=reason, now=now, action="goal_completed"
    )


@people(ADMIN)
@records_refusals
def goal_abort(*, goal: Goal, actor: Actor, reason: str, now: datetime) -> Goal:
    """A human stops the goal: its open sprint is aborted and its unfinished tasks cancelled."""
    return _goal_transition(
        goal, "abort", actor=actor, reason=reason, now=now, action="goal_aborted"
    )

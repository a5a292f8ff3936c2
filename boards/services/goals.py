"""Goals (seed 000 "Goal State Machine"): IN_PROGRESS → COMPLETED | ABORTED."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django_fsm import TransitionNotAllowed

from boards import protocol as p
from boards.errors import InvalidTransition, ProtocolValidationError
from boards.models import Goal, Project
from boards.protocol import GoalStatus
from boards.services.kernel import Actor, record_event, records_refusals, refusal, require_role


def _goal_targets(status: str) -> list[str]:
    return [to for (frm, to) in p.GOAL_EDGES if frm == status]


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
    require_role(actor, project, agent_roles=("planner",))
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
            alignment_history=[
                {
                    "timestamp": p.format_timestamp(now),
                    "event": "initialization",
                    "summary": description,
                }
            ],
        )
        record_event(
            project=project,
            actor=actor,
            action="goal_created",
            now=now,
            detail=description,
            data={"goal": goal.goal_id},
        )
    return goal


def goal_record_alignment(*, goal: Goal, event: str, summary: str, now: datetime) -> Goal:
    """Append to alignment_history (append-only: the drift trajectory through rescopes)."""
    goal = Goal.objects.select_for_update().get(pk=goal.pk)
    goal.alignment_history = [
        *goal.alignment_history,
        {"timestamp": p.format_timestamp(now), "event": event, "summary": summary},
    ]
    goal.save(update_fields=["alignment_history"])
    return goal


def _goal_transition(
    goal: Goal, method: str, *, actor: Actor, reason: str, now: datetime, action: str
) -> Goal:
    project = goal.project
    require_role(actor, project, agent_roles=("planner",) if method == "complete" else ())
    reason = (reason or "").strip()
    if not reason:
        raise ProtocolValidationError("reason", "is required")
    target = {"complete": GoalStatus.COMPLETED, "abort": GoalStatus.ABORTED}[method]
    with transaction.atomic():
        goal = Goal.objects.select_for_update().get(pk=goal.pk)
        try:
            getattr(goal, method)()
        except TransitionNotAllowed as exc:
            raise refusal(
                InvalidTransition(
                    from_status=goal.status,
                    to_status=target,
                    allowed=_goal_targets(goal.status),
                    message=f"goal {goal.goal_id} is {goal.status}",
                ),
                project=project,
                actor=actor,
                action=action,
                now=now,
                from_status=goal.status,
                to_status=target,
            ) from exc
        goal.alignment_history = [
            *goal.alignment_history,
            {"timestamp": p.format_timestamp(now), "event": action, "summary": reason},
        ]
        goal.save()
        record_event(
            project=project,
            actor=actor,
            action=action,
            now=now,
            from_status=GoalStatus.IN_PROGRESS,
            to_status=target,
            detail=reason,
            data={"goal": goal.goal_id},
        )
    return goal


@records_refusals
def goal_complete(*, goal: Goal, actor: Actor, reason: str, now: datetime) -> Goal:
    """The planner (or an admin) declares the goal done."""
    return _goal_transition(
        goal, "complete", actor=actor, reason=reason, now=now, action="goal_completed"
    )


@records_refusals
def goal_abort(*, goal: Goal, actor: Actor, reason: str, now: datetime) -> Goal:
    """A human stops the goal."""
    return _goal_transition(
        goal, "abort", actor=actor, reason=reason, now=now, action="goal_aborted"
    )

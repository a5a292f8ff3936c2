"""Sprints (seed 000 "Sprint State Machine" and "Sprint Transition Triggers")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction
from django_fsm import TransitionNotAllowed

from boards import protocol as p
from boards.coordination.models.projects import Goal, Project, Sprint
from boards.coordination.selectors.sprints import goal_in_progress, sprint_metrics
from boards.coordination.services.actors import SYSTEM, Actor
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import ADMIN, PLAN, people, require_role
from boards.coordination.services.cleaning import clean_text, resolve_keys
from boards.errors import Conflict, InvalidTransition, ProtocolValidationError
from boards.protocol import GoalStatus, SprintStatus


def _sprint_targets(status: str) -> list[str]:
    return [to for (frm, to) in p.SPRINT_EDGES if frm == status]


@people(PLAN)
@records_refusals
def sprint_create(
    *,
    project: Project,
    actor: Actor,
    now: datetime,
    goal: Goal | None = None,
    planned: Sequence[str] = (),
    stretch: Sequence[str] = (),
    deadline: datetime | None = None,
    sprint_id: str = "",
) -> Sprint:
    """Open a sprint for `goal`; at most one sprint is open per project (SPEC §4)."""
    attempt = Attempt(project, actor, "sprint_create", now)
    require_role(attempt, agent_roles=("planner",))
    if goal is None:
        goal = goal_in_progress(project=project)
        if goal is None:
            raise ProtocolValidationError("goal", "the project has no goal IN_PROGRESS")
    if goal.project_id != project.pk or goal.status != GoalStatus.IN_PROGRESS:
        raise ProtocolValidationError("goal", "an IN_PROGRESS goal of this project")
    if deadline is not None and deadline <= now:
        raise ProtocolValidationError("deadline", "must be in the future")
    with transaction.atomic():
        if (
            Sprint.objects.select_for_update()
            .filter(project=project, status__in=[SprintStatus.IN_PROGRESS, SprintStatus.CHECKPOINT])
            .exists()
        ):
            raise ProtocolValidationError("status", "the project already has an open sprint")
        planned_tasks = resolve_keys(project, planned, "planned") if planned else []
        stretch_tasks = resolve_keys(project, stretch, "stretch") if stretch else []
        if not sprint_id:
            sprint_id = f"sprint-{Sprint.objects.filter(project=project).count() + 1}"
        sprint = Sprint.objects.create(
            project=project, sprint_id=sprint_id, goal=goal, started=now, deadline=deadline
        )
        sprint.planned.set(planned_tasks)
        sprint.stretch.set(stretch_tasks)
        attempt.record(
            action="sprint_started",
            to_status=SprintStatus.IN_PROGRESS,
            detail=f"{sprint_id}: {len(planned_tasks)} planned, {len(stretch_tasks)} stretch",
            data={"sprint": sprint_id},
        )
    return sprint


def _sprint_move(
    sprint: Sprint,
    method: str,
    *,
    actor: Actor,
    now: datetime,
    detail: str,
    action: str,
    decision: str | None = None,
) -> Sprint:
    """Move the (re-read, locked) sprint by `method`; a human's checkpoint `decision`
    (continue or abort, with `detail` as its note) joins the retrospective."""
    project = sprint.project
    target = {
        "checkpoint": SprintStatus.CHECKPOINT,
        "resume": SprintStatus.IN_PROGRESS,
        "complete": SprintStatus.COMPLETED,
        "abort": SprintStatus.ABORTED,
    }[method]
    sprint = Sprint.objects.select_for_update().get(pk=sprint.pk)
    from_status = sprint.status
    try:
        getattr(sprint, method)()
    except TransitionNotAllowed as exc:
        raise Attempt(project=project, actor=actor, action=action, now=now).refuse(
            InvalidTransition(
                from_status=from_status,
                to_status=target,
                allowed=_sprint_targets(from_status),
                message=f"sprint {sprint.sprint_id} is {from_status}",
            ),
            from_status=from_status,
            to_status=target,
        ) from exc
    if method == "checkpoint":
        sprint.checkpoint_at = now
    elif method == "resume":
        sprint.checkpoint_at = None
    if target in p.TERMINAL_SPRINT_STATES:
        sprint.ended = now
        sprint.metrics = sprint_metrics(sprint)
    if decision is not None:
        retrospective = sprint.retrospective or {}
        entry = {"timestamp": p.format_timestamp(now), "decision": decision, "note": detail}
        decisions = [*retrospective.get("checkpoint_decisions", []), entry]
        sprint.retrospective = {**retrospective, "checkpoint_decisions": decisions}
    sprint.save()
    record_event(
        project=project,
        actor=actor,
        action=action,
        now=now,
        from_status=from_status,
        to_status=target,
        detail=detail,
        data={"sprint": sprint.sprint_id},
    )
    return sprint


@people(ADMIN)
@records_refusals
def sprint_checkpoint(*, sprint: Sprint, actor: Actor, reason: str, now: datetime) -> Sprint:
    """Human request, deadline or circuit breaker: work stops until a human decides."""
    require_role(
        Attempt(sprint.project, actor, "sprint_checkpoint", now), agent_roles=(), system=True
    )
    reason = (reason or "").strip()
    if not reason:
        raise ProtocolValidationError("reason", "is required")
    with transaction.atomic():
        return _sprint_move(
            sprint, "checkpoint", actor=actor, now=now, detail=reason, action="sprint_checkpoint"
        )


@people(ADMIN)
@records_refusals
def sprint_resume(*, sprint: Sprint, actor: Actor, decision: str, now: datetime) -> Sprint:
    """CHECKPOINT → IN_PROGRESS; the decision goes into the retrospective."""
    require_role(Attempt(sprint.project, actor, "sprint_resume", now), agent_roles=())
    decision = clean_text(decision, "decision", max_length=2000)
    with transaction.atomic():
        locked = Sprint.objects.select_for_update().get(pk=sprint.pk)
        if locked.deadline is not None and locked.deadline <= now:
            # SPEC §13: continuing needs a new future deadline or none, else the watcher would
            # send the sprint straight back to CHECKPOINT for the deadline already decided on.
            raise Attempt(
                project=sprint.project, actor=actor, action="sprint_resumed", now=now
            ).refuse(
                Conflict(
                    f"sprint {locked.sprint_id}'s deadline "
                    f"{p.format_timestamp(locked.deadline)} has passed: set a new future "
                    "deadline or clear it before continuing",
                    {"sprint": locked.sprint_id, "deadline": p.format_timestamp(locked.deadline)},
                ),
                from_status=locked.status,
                to_status=SprintStatus.IN_PROGRESS,
            )
        return _sprint_move(
            sprint,
            "resume",
            actor=actor,
            now=now,
            detail=decision,
            action="sprint_resumed",
            decision="continue",
        )


@people(ADMIN)
@records_refusals
def sprint_abort(*, sprint: Sprint, actor: Actor, reason: str, now: datetime) -> Sprint:
    """A human (or the circuit breaker) stops the sprint."""
    require_role(Attempt(sprint.project, actor, "sprint_abort", now), agent_roles=(), system=True)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        return _sprint_move(
            sprint,
            "abort",
            actor=actor,
            now=now,
            detail=reason,
            action="sprint_aborted",
            decision="abort",
        )


@people(ADMIN)
@records_refusals
def sprint_set_deadline(
    *, sprint: Sprint, actor: Actor, deadline: datetime | None, now: datetime
) -> Sprint:
    """A human moves (or clears, with None) the deadline of an open sprint.

    Passing the deadline sends the sprint to CHECKPOINT (seed 000 triggers); a new deadline
    does not lift a checkpoint already reached: that stays the human's decision to continue.
    """
    project = sprint.project
    attempt = Attempt(project, actor, "sprint_set_deadline", now)
    require_role(attempt, agent_roles=())
    if deadline is not None:
        if not isinstance(deadline, datetime) or deadline.tzinfo is None:
            raise ProtocolValidationError("deadline", "an ISO 8601 timestamp with a time zone")
        if deadline <= now:
            raise ProtocolValidationError("deadline", "must be in the future")
    with transaction.atomic():
        sprint = Sprint.objects.select_for_update().get(pk=sprint.pk)
        if not sprint.is_open:
            raise Attempt(project=project, actor=actor, action="sprint_deadline", now=now).refuse(
                Conflict(
                    f"sprint {sprint.sprint_id} is {sprint.status}; its deadline no longer applies",
                    {"sprint": sprint.sprint_id, "status": sprint.status},
                ),
                from_status=sprint.status,
            )
        old = sprint.deadline
        if old == deadline:
            return sprint
        sprint.deadline = deadline
        sprint.save(update_fields=["deadline"])
        shown_old = p.format_timestamp(old) or "none"
        shown_new = p.format_timestamp(deadline) or "none"
        attempt.record(
            action="sprint_deadline_set",
            detail=f"{sprint.sprint_id} deadline {shown_old} → {shown_new}",
            data={"sprint": sprint.sprint_id, "previous": shown_old, "deadline": shown_new},
        )
    return sprint


@people(PLAN)
@records_refusals
def sprint_complete(*, sprint: Sprint, actor: Actor, now: datetime) -> Sprint:
    """IN_PROGRESS → COMPLETED, only once every planned task is terminal."""
    require_role(
        Attempt(sprint.project, actor, "sprint_complete", now),
        agent_roles=("planner",),
        system=True,
    )
    with transaction.atomic():
        sprint = Sprint.objects.select_for_update().get(pk=sprint.pk)
        open_keys = list(
            sprint.planned.exclude(status__in=p.TERMINAL_TASK_STATES).values_list("key", flat=True)
        )
        if open_keys:
            raise Attempt(
                project=sprint.project, actor=actor, action="sprint_completed", now=now
            ).refuse(
                InvalidTransition(
                    from_status=sprint.status,
                    to_status=SprintStatus.COMPLETED,
                    allowed=_sprint_targets(sprint.status),
                    message=f"planned tasks not terminal: {', '.join(open_keys)}",
                ),
                from_status=sprint.status,
                to_status=SprintStatus.COMPLETED,
            )
        return _sprint_move(
            sprint,
            "complete",
            actor=actor,
            now=now,
            detail=f"{sprint.sprint_id}: all planned tasks terminal",
            action="sprint_completed",
        )


def sprint_complete_if_done(*, project: Project, now: datetime) -> Sprint | None:
    """Seed 000 trigger "All planned tasks terminal → COMPLETED" (called inside a transaction)."""
    sprint = Sprint.objects.filter(project=project, status=SprintStatus.IN_PROGRESS).first()
    if sprint is None or not sprint.planned.exists():
        return None
    if sprint.planned.exclude(status__in=p.TERMINAL_TASK_STATES).exists():
        return None
    return _sprint_move(
        sprint,
        "complete",
        actor=SYSTEM,
        now=now,
        detail=f"{sprint.sprint_id}: all planned tasks terminal",
        action="sprint_completed",
    )

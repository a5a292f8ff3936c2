"""Resolving a BLOCKED task (seed 000 edges out of BLOCKED, SPEC §6): release it to be claimed
again, abandon it, or rescope it into replacements.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.db import transaction

from boards import protocol as p
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.tasks import HumanNote, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.tasks import is_limit_blocked
from boards.coordination.services.actors import PLANNER, Actor, is_human
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import clean_text, resolve_keys
from boards.coordination.services.edges import (
    move_task,
    require_task_status,
    save_task,
    task_transition_run,
)
from boards.coordination.services.locking import agent_row, lock_task_in
from boards.coordination.services.sprints import sprint_complete_if_done
from boards.coordination.services.tasks.holders import lock_task_and_its_agents, release_holder
from boards.coordination.services.tasks.planning import NEW_TASK_FIELDS, new_task
from boards.errors import (
    Forbidden,
    ProtocolValidationError,
)
from boards.protocol import GoalStatus, TaskStatus


@people(ADMIN)
@records_refusals
def task_release(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → UNCLAIMED: failed_by kept, worktree deleted (seed 000 requirements).

    A task blocked by a limit returns only by a human's written release (SPEC §5.1).
    """
    project = task.project
    require_role(Attempt(project, actor, "task_release", now), agent_roles=PLANNER, task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    config = config_of(project)
    release = Attempt(project, actor, "release", now)
    with transaction.atomic():
        # Its previous holder before the task (the lock order, locking).
        task = lock_task_and_its_agents(task)
        require_task_status(task, [TaskStatus.BLOCKED], to=TaskStatus.UNCLAIMED, attempt=release)
        if is_limit_blocked(task, config) and not is_human(actor):
            raise release.refuse(
                Forbidden(
                    f"{task.key} reached a limit ({task.blocked_reason}); only rescope, "
                    "abandon or a human's written release can move it"
                ),
                task=task,
                to_status=TaskStatus.UNCLAIMED,
            )
        previous = task.assigned_to
        task.worktree = ""
        task.base_commit = ""
        task.assigned_to = ""
        task.lease_expires = None
        task.integration_fix = False
        task.blocked_reason = ""
        task.blocked_questions = []
        move_task(task, "release", release, detail=reason)
        release_holder(agent_row(project, previous), task, lost="released to UNCLAIMED")
        if is_human(actor):
            # The answer is what the next coder needs: it travels with the task (seed 002).
            HumanNote.objects.create(
                project=project, task=task, timestamp=now, message=reason, author=actor
            )
    return task


@people(ADMIN)
@records_refusals
def task_abandon(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """BLOCKED → ABANDONED with a rationale."""
    project = task.project
    require_role(Attempt(project, actor, "task_abandon", now), agent_roles=PLANNER, task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    abandon = Attempt(project, actor, "abandon", now)
    with transaction.atomic():
        task = lock_task_in(task, [TaskStatus.BLOCKED], to=TaskStatus.ABANDONED, attempt=abandon)
        task.worktree = ""
        task.lease_expires = None
        move_task(task, "abandon", abandon, detail=reason)
        sprint_complete_if_done(project=task.project, now=now)
    return task


@people(ADMIN)
@records_refusals
def task_rescope(
    *, task: Task, actor: Actor, reason: str, new_tasks: Sequence[dict[str, Any]], now: datetime
) -> list[Task]:
    """BLOCKED → SUPERSEDED, replaced by new tasks (seed 002 Rescope task).

    The new tasks carry `supersedes`, inherit the old task's dependencies unless they name
    their own, take its place in every dependent's depends_on and in the sprint scope, and the
    goal's alignment_history records the change.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_rescope", now)
    require_role(attempt, agent_roles=PLANNER, task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    if not isinstance(new_tasks, list | tuple) or not new_tasks:
        raise ProtocolValidationError("new_tasks", "at least one replacement task is required")
    rescope = Attempt(project, actor, "rescope", now)
    with transaction.atomic():
        task = lock_task_in(task, [TaskStatus.BLOCKED], to=TaskStatus.SUPERSEDED, attempt=rescope)
        old_deps = list(task.depends_on.all())
        created: list[Task] = []
        for index, spec in enumerate(new_tasks):
            created.append(_replacement(task, spec, index, created, old_deps, rescope))
        _take_its_place(task, created)
        task.superseded_by = [c.key for c in created]
        task.rescope_reason = reason
        task.worktree = ""
        task.lease_expires = None
        task_transition_run(task, "supersede", rescope)
        save_task(task, now)
        keys = ", ".join(task.superseded_by)
        goal = (
            task.goal or Goal.objects.filter(project=project, status=GoalStatus.IN_PROGRESS).first()
        )
        if goal is not None:
            goal_record_alignment(
                goal=goal,
                event=f"rescope_{task.key}",
                summary=f"{task.key} split into {keys}: {reason}",
                now=now,
            )
        attempt.record(
            action="rescoped",
            task=task,
            from_status=TaskStatus.BLOCKED,
            to_status=TaskStatus.SUPERSEDED,
            detail=f"SUPERSEDED → {keys} ({reason})",
            data={"superseded_by": task.superseded_by},
        )
        sprint_complete_if_done(project=task.project, now=now)
    return created


def _replacement(
    task: Task,
    spec: Any,
    index: int,
    created: list[Task],
    old_deps: list[Task],
    rescope: Attempt,
) -> Task:
    """The `index`th replacement of the rescoped `task`: its fields (the old task's priority,
    spec_ref, criticality and human gate unless it says its own), its dependencies (the old
    task's unless it names its own, earlier replacements included), finalized when it can be."""
    project = task.project
    if not isinstance(spec, dict):
        raise ProtocolValidationError(f"new_tasks[{index}]", "must be an object")
    spec = dict(spec)
    deps = spec.pop("depends_on", None)
    unknown = sorted(set(spec) - NEW_TASK_FIELDS)
    if unknown:
        raise ProtocolValidationError(
            f"new_tasks[{index}]", f"unknown field(s) {', '.join(unknown)}"
        )
    spec.setdefault("priority", task.priority)
    spec.setdefault("spec_ref", task.spec_ref)
    spec.setdefault("criticality", task.criticality)
    if task.needs_human_approval:
        # The human gate travels to the replacements (seed 004 APPROVAL_REQUIRED).
        spec.setdefault("needs_human_approval", True)
    try:
        new = new_task(project=project, now=rescope.now, supersedes=task.key, **spec)
    except TypeError as exc:
        raise ProtocolValidationError(
            f"new_tasks[{index}]", "key and description are required"
        ) from exc
    rescope.record(
        action=p.Action.CREATED,
        task=new,
        to_status=new.status,
        detail=f"{new.key} (rescoped from {task.key})",
    )
    dep_tasks = (
        old_deps
        if deps is None
        else resolve_keys(
            project,
            [d for d in deps if d not in {c.key for c in created}],
            f"new_tasks[{index}].depends_on",
        )
        + [c for c in created if c.key in (deps or [])]
    )
    new.depends_on.set(dep_tasks)
    if new.done_when and new.spec_ref:
        move_task(new, "finalize", rescope, detail=f"{new.key} ready to claim")
    return new


def _take_its_place(task: Task, created: list[Task]) -> None:
    """The replacements take the rescoped task's place in every dependent's depends_on and in
    the sprint scope."""
    for dependent in task.dependents.all():
        dependent.depends_on.remove(task)
        dependent.depends_on.add(*created)
    for sprint in Sprint.objects.filter(project=task.project, planned=task):
        sprint.planned.add(*created)
    for sprint in Sprint.objects.filter(project=task.project, stretch=task):
        sprint.stretch.add(*created)


def goal_record_alignment(*, goal: Goal, event: str, summary: str, now: datetime) -> Goal:
    """Append to alignment_history (append-only: the drift trajectory through rescopes)."""
    goal = Goal.objects.select_for_update().get(pk=goal.pk)
    goal.alignment_history = [
        *goal.alignment_history,
        {"timestamp": p.format_timestamp(now), "event": event, "summary": summary},
    ]
    goal.save(update_fields=["alignment_history"])
    return goal

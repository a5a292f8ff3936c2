"""Running one edge of a state machine (django-fsm-2): a refused edge or guard is
`invalid_transition` with the allowed targets and the row unchanged; `move_task` is a task
edge with its save and its one event."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from django_fsm import TransitionNotAllowed

from boards import protocol as p
from boards.coordination import rows
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, record_event
from boards.errors import InvalidTransition


def transition(
    row: Any,
    method: str,
    *,
    to: str,
    allowed: Callable[[str], list[str]],
    actor: Actor,
    project: Project,
    now: datetime,
    action: str | None = None,
    name: str = "",
) -> None:
    """Run the django-fsm transition `method` of `row`; a refused edge or guard is
    `invalid_transition` with the allowed targets, the row unchanged."""
    try:
        getattr(row, method)()
    except TransitionNotAllowed as exc:
        task = row if isinstance(row, Task) else None
        attempt = Attempt(project=project, actor=actor, action=action or method, now=now)
        raise attempt.refuse(
            InvalidTransition(
                from_status=row.status,
                to_status=to,
                allowed=allowed(row.status),
                message=f"{name or row}: {exc}" if task else f"{name} is {row.status}",
            ),
            task=task,
            from_status=row.status,
            to_status=to,
        ) from exc


def task_transition_run(
    task: Task, method: str, *, actor: Actor, project: Project, now: datetime, to: str
) -> None:
    """`transition` for a task edge of seed 000."""
    transition(
        task,
        method,
        to=to,
        allowed=p.task_targets,
        actor=actor,
        project=project,
        now=now,
        name=task.key,
    )


def save_task(task: Task, now: datetime) -> None:
    task.updated = now
    rows.save_fields(task)


def move_task(
    task: Task,
    method: str,
    *,
    to: str,
    actor: Actor,
    now: datetime,
    action: str,
    detail: str,
    data: dict[str, Any] | None = None,
) -> Event:
    """Take seed 000's edge `method` on the locked `task` (a refused guard is
    `invalid_transition`), save the row and write its one event."""
    from_status = task.status
    task_transition_run(task, method, actor=actor, project=task.project, now=now, to=to)
    save_task(task, now)
    return record_event(
        project=task.project,
        actor=actor,
        action=action,
        task=task,
        now=now,
        from_status=from_status,
        to_status=to,
        detail=detail,
        data=data,
    )


def require_task_status(task: Task, expected: Iterable[str], *, to: str, attempt: Attempt) -> None:
    """`task` must be in one of the `expected` states for the attempt, else `invalid_transition`
    towards `to`."""
    expected = tuple(expected)
    if task.status not in expected:
        action = attempt.action
        raise attempt.refuse(
            InvalidTransition(
                from_status=task.status,
                to_status=to,
                allowed=p.task_targets(task.status),
                message=(f"{task.key} is {task.status}; {action} needs {' or '.join(expected)}"),
            ),
            task=task,
            to_status=to,
        )

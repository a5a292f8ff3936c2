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
from boards.coordination.services.audit import Attempt
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


# The state each task edge leads to: seed 000's edges, and SPEC §5.1's override block.
EDGE_TARGETS: dict[str, str] = {edge: to for (_, to), edge in p.TASK_EDGES.items()} | {
    "override_block": p.TaskStatus.BLOCKED
}

# The event each edge writes (seed 002 log.yaml names), unless its service names the move
# otherwise (a human's verdict at the gate, a limit's block).
EDGE_ACTIONS: dict[str, str] = {
    "finalize": p.Action.FINALIZED,
    "submit_for_review": p.Action.READY_FOR_REVIEW,
    "block": p.Action.BLOCKED,
    "approve": p.Action.APPROVED,
    "reject": p.Action.REJECTED,
    "merge": p.Action.MERGED,
    "fail_integration": p.Action.INTEGRATION_FAILED,
    "release": p.Action.RELEASED,
    "abandon": p.Action.ABANDONED,
    "override_block": p.Action.OVERRIDE_BLOCKED,
}


def task_transition_run(task: Task, edge: str, attempt: Attempt) -> None:
    """`transition` for the task edge `edge` (towards its `EDGE_TARGETS` state), by the
    attempt's actor; a refusal is logged as the edge's own attempt."""
    transition(
        task,
        edge,
        to=EDGE_TARGETS[edge],
        allowed=p.task_targets,
        actor=attempt.actor,
        project=attempt.project,
        now=attempt.now,
        name=task.key,
    )


def save_task(task: Task, now: datetime) -> None:
    task.updated = now
    rows.save_fields(task)


def move_task(
    task: Task,
    edge: str,
    attempt: Attempt,
    *,
    detail: str,
    data: dict[str, Any] | None = None,
    action: str | None = None,
) -> Event:
    """Take the edge `edge` on the locked `task` (a refused guard is `invalid_transition`),
    save the row and write its one event, named `action` or the edge's `EDGE_ACTIONS` name."""
    from_status = task.status
    task_transition_run(task, edge, attempt)
    save_task(task, attempt.now)
    return attempt.record(
        action=action or EDGE_ACTIONS[edge],
        task=task,
        from_status=from_status,
        to_status=task.status,
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

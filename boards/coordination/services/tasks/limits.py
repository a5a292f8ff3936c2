"""Limits (SPEC §5.1) and per-task overrides (seed 002 "Config Scope").

At max review cycles, at max iterations without approval, and when two distinct coders
failed a task, the system override-blocks it with the reason and questions and records the
anomaly; an admin may set a task's own limits.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection, transaction

from boards import protocol as p
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.records import Anomaly
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.reviews import round_approvals
from boards.coordination.services.actors import SYSTEM, Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import require_known_names
from boards.coordination.services.edges import move_task, save_task
from boards.coordination.services.locking import lock_task
from boards.coordination.services.tasks.holders import append_failed_by
from boards.errors import (
    ProtocolValidationError,
)
from boards.protocol import TaskStatus

LIMIT_QUESTIONS = {
    "review_deadlock": [
        "Is the spec for this task ambiguous or contradictory?",
        "Should the task be rescoped or split?",
    ],
    "max_iterations": [
        "Is the task too large for one coder?",
        "Should the task be rescoped or abandoned?",
    ],
    "hypothesis_exhaustion": [
        "What did both coders miss: is the spec incomplete?",
        "Should the task be split into smaller tasks?",
    ],
    "retry_exhausted": [
        "Why does the coder's process keep dying on this task (crash, timeout, resources)?",
        "Should the task be split, or given to another coder?",
    ],
}


def _limit_reason(task: Task, config: ProjectConfig, limit: str) -> str:
    """The block's reason for `limit`, in `liza_limit_reason_v1`'s words (boards migration
    0030): the claim's blocks word theirs there, so every limit block reads alike."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT liza_limit_reason_v1(%s::text, %s::integer, %s::text, %s::integer[], "
            "%s::jsonb, %s::integer, %s::integer, %s::integer, %s::integer)",
            [
                limit,
                task.crashes,
                task.assigned_to,
                [int(s) for s in config.retry_backoff],
                json.dumps(list(task.failed_by)),
                task.review_cycles_current,
                task.effective_max_review_cycles(config),
                task.iteration,
                task.effective_max_iterations(config),
            ],
        )
        return cursor.fetchone()[0]


def limit_anomaly(task: Task, *, now: datetime, limit: str) -> None:
    # max_iterations has no anomaly type of its own in seed 002; a coder looping over the same
    # rejection is what `retry_loop` records.
    if limit == "max_iterations":
        kind, details = (
            "retry_loop",
            {"count": task.iteration, "error_pattern": task.rejection_reason or "rejected"},
        )
    else:
        kind, details = (
            limit,
            {
                "failed_by": list(task.failed_by),
                "review_cycles_current": task.review_cycles_current,
            },
        )
    Anomaly.objects.create(
        project=task.project,
        task=task,
        timestamp=now,
        reporter=SYSTEM.name,
        type=kind,
        details=details,
    )


def limit_block(task: Task, *, now: datetime, config: ProjectConfig, limit: str) -> None:
    """Override-block `task` (locked) because `limit` was reached."""
    task.blocked_reason = _limit_reason(task, config, limit)
    task.blocked_questions = LIMIT_QUESTIONS[limit]
    task.lease_expires = None
    move_task(
        task,
        "override_block",
        Attempt.on(task, actor=SYSTEM, action="override_block", now=now),
        action=p.Action.BLOCKED,  # the system's block, not a human's override
        detail=task.blocked_reason,
        data={"limit": limit},
    )
    if limit != "retry_exhausted":
        # A system-written retry_loop would feed the circuit breaker without the details its
        # pattern needs (issue 11): the block and its event are the record.
        limit_anomaly(task, now=now, limit=limit)


def crash_limit_block(task: Task, *, now: datetime, config: ProjectConfig) -> str:
    """The locked CLAIMED `task`'s lease died one time more than the retry schedule has steps
    (seed 003 PERMANENTLY_FAILED): count the crash, put its coder in failed_by (a limit took the
    work out of its hands, SPEC §5.1) and block the task. Hypothesis exhaustion comes first:
    when that coder makes two distinct ones in failed_by, the block (and anomaly) is that.
    Returns the limit. The caller releases the coder's agent row."""
    task.crashes += 1
    append_failed_by(task, task.assigned_to)
    limit = "hypothesis_exhaustion" if len(set(task.failed_by)) >= 2 else "retry_exhausted"
    limit_block(task, now=now, config=config, limit=limit)
    return limit


LIMIT_FIELDS: tuple[str, ...] = (
    "priority",
    "max_iterations",
    "max_review_cycles",
    "lease_duration_override",
    "needs_human_approval",
)


def clean_limit(name: str, value: Any) -> Any:
    """One per-task limit, within `protocol.TASK_LIMIT_BOUNDS` (None = the project's)."""
    if name == "needs_human_approval":
        if not isinstance(value, bool):
            raise ProtocolValidationError(name, "true or false")
        return value
    if name == "priority":
        low, high = p.PRIORITY_RANGE
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ProtocolValidationError(name, f"an integer from {low} (highest) to {high}")
        return value
    if value is None:
        return None  # back to the project's setting
    low, high = p.TASK_LIMIT_BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProtocolValidationError(
            name, f"an integer from {low} to {high}, or null for the project's setting"
        )
    return value


def _shown(value: Any) -> str:
    return "project default" if value is None else str(value).lower()


@people(ADMIN)
@records_refusals
def task_set_limits(*, task: Task, actor: Actor, now: datetime, **changes: Any) -> Task:
    """Per-task overrides (seed 002 "Config Scope"): max_iterations, max_review_cycles,
    lease_duration_override (positive or null = the project's), needs_human_approval, priority.

    An unknown key is a 400 naming it. Values equal to the current ones are no change; when
    nothing changes, nothing is written.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_set_limits", now)
    require_role(attempt, agent_roles=(), task=task)
    require_known_names(changes, LIMIT_FIELDS, what="per-task limit", field_if_none="limits")
    cleaned = {name: clean_limit(name, value) for name, value in changes.items()}
    with transaction.atomic():
        task = lock_task(task)
        if task.is_terminal:
            raise Attempt(project=project, actor=actor, action="set_limits", now=now).conflict(
                f"{task.key} is {task.status}; its limits no longer apply",
                task=task,
                details={"status": task.status},
            )
        diff = {
            name: (getattr(task, name), value)
            for name in LIMIT_FIELDS
            if name in cleaned and getattr(task, name) != (value := cleaned[name])
        }
        if not diff:
            return task
        if "needs_human_approval" in diff:
            refuse_gate_lift(task, cleaned["needs_human_approval"], actor=actor, now=now)
        for name, (_, new) in diff.items():
            setattr(task, name, new)
        save_task(task, now)
        attempt.record(
            action="limits_set",
            task=task,
            detail=f"{task.key}: "
            + ", ".join(
                f"{name} {_shown(old)} → {_shown(new)}" for name, (old, new) in diff.items()
            ),
            data={"changes": {name: {"old": old, "new": new} for name, (old, new) in diff.items()}},
        )
    return task


def refuse_gate_lift(
    task: Task, gate: bool, *, actor: Actor, now: datetime, action: str = "set_limits"
) -> None:
    """The human gate is not lifted from a task a human is being asked to approve: they
    approve or reject it (seed 004). For every edit of `needs_human_approval`."""
    if not gate and _awaiting(task):
        raise Attempt(project=task.project, actor=actor, action=action, now=now).conflict(
            f"{task.key} is awaiting human approval: approve or reject it instead",
            task=task,
            details={"awaiting_human_approval": True},
        )


def _awaiting(task: Task) -> bool:
    return (
        task.status == TaskStatus.READY_FOR_REVIEW
        and task.needs_human_approval
        and round_approvals(task)[1]
    )

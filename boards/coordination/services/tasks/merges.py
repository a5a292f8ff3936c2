"""The approving reviewer reports the merge: MERGED, or INTEGRATION_FAILED (seed 000)."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from agents.models import Agent
from boards.coordination.models.tasks import Task
from boards.coordination.services.actors import REVIEWER
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import agents_only, require_role
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.edges import move_task
from boards.coordination.services.locking import lock_task_in
from boards.coordination.services.sprints import sprint_complete_if_done
from boards.errors import (
    Forbidden,
)
from boards.protocol import TaskStatus


@agents_only
@records_refusals
def task_report_merge(*, task: Task, agent: Agent, merge_commit: str, now: datetime) -> Task:
    """APPROVED → MERGED, by an approving reviewer; the worktree is cleaned up (seed 000)."""
    _require_reviewer(task, agent, "task_report_merge", now=now)
    merge_commit = clean_text(merge_commit, "merge_commit", max_length=64)
    merge = Attempt(task.project, agent, "merge", now)
    with transaction.atomic():
        task = _lock_approved(task, merge, to=TaskStatus.MERGED)
        task.merge_commit = merge_commit
        task.worktree = ""
        task.lease_expires = None
        task.handoff_pending = False
        move_task(
            task,
            "merge",
            merge,
            detail=f"{task.key} merged as {merge_commit}",
            data={"merge_commit": merge_commit},
        )
        sprint_complete_if_done(project=task.project, now=now)
    return task


@agents_only
@records_refusals
def task_report_integration_failure(
    *, task: Task, agent: Agent, reason: str, now: datetime
) -> Task:
    """APPROVED → INTEGRATION_FAILED: merge conflict or failing integration tests."""
    _require_reviewer(task, agent, "task_report_integration_failure", now=now)
    reason = clean_text(reason, "reason", max_length=2000)
    failure = Attempt(task.project, agent, "integration_failure", now)
    with transaction.atomic():
        task = _lock_approved(task, failure, to=TaskStatus.INTEGRATION_FAILED)
        move_task(task, "fail_integration", failure, detail=reason)
    return task


def _require_reviewer(task: Task, agent: Agent, operation: str, *, now: datetime) -> None:
    """Both reports are a reviewer's, checked before their input is (a refusal first)."""
    require_role(
        Attempt(task.project, agent, operation, now),
        agent_roles=REVIEWER,
        task=task,
    )


def _lock_approved(task: Task, attempt: Attempt, *, to: str) -> Task:
    """`task` locked, APPROVED, and reported on (merged or failed) by one of its approving
    reviewers, the attempt's actor: else the attempt is refused."""
    task = lock_task_in(task, [TaskStatus.APPROVED], to=to, attempt=attempt)
    if attempt.actor.agent_id not in (task.approved_by or []):
        raise attempt.refuse(
            Forbidden(f"only an approving reviewer of {task.key} may report its merge"), task=task
        )
    return task

"""Stopping work: an aborted sprint takes back the work agents hold in it (SPEC §13).

Seed 000's ABORT file makes agents exit 42; here the server also takes the work out of their
hands, so that nothing a stopped agent does later lands: a CLAIMED task of the sprint returns to
the queue (override block + release, the coder not blamed in `failed_by`) and a pending review
claim closes; each former holder then answers `lease_lost`, exit 42, to every operation on it.
Aborting a goal aborts its open sprint this way, then cancels its tasks
(boards.coordination.services.goals).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from boards.coordination.models.projects import Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.filters import in_sprint_q
from boards.coordination.services.actors import Actor, actor_ref
from boards.coordination.services.audit import records_refusals
from boards.coordination.services.authority import ADMIN, people
from boards.coordination.services.sprints import sprint_abort as _sprint_abort
from boards.coordination.services.tasks.holders import lock_task_and_its_agents, release_reviewers
from boards.coordination.services.tasks.overrides import take_claim_back
from boards.protocol import TaskStatus

_abort = _sprint_abort.__wrapped__


def take_back_sprint_work(sprint: Sprint, *, actor: Actor, now: datetime, reason: str) -> None:
    """Inside the caller's transaction: every task of `sprint` an agent holds is taken back."""
    who = actor_ref(actor)[1]
    lost = f"sprint {sprint.sprint_id} aborted by {who}: {reason}"[:200]
    held = Task.objects.filter(in_sprint_q(sprint_pk=sprint.pk)).filter(
        status__in=(TaskStatus.CLAIMED, TaskStatus.READY_FOR_REVIEW)
    )
    for task in held.order_by("pk"):
        # Agents before the task (the lock order (locking)); the sprint row is locked last.
        task = lock_task_and_its_agents(task)
        if task.status == TaskStatus.CLAIMED:
            take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=lost,
                block_reason=f"Sprint {sprint.sprint_id} aborted: {reason}"[:2000],
                answer=f"Sprint {sprint.sprint_id} aborted: back to the queue"[:2000],
            )
        elif task.status == TaskStatus.READY_FOR_REVIEW:
            release_reviewers(task, now=now, lost=lost)


def sprint_abort_within(*, sprint: Sprint, actor: Actor, reason: str, now: datetime) -> Sprint:
    """The abort itself, inside a caller's transaction (the goal's abort)."""
    take_back_sprint_work(sprint, actor=actor, now=now, reason=reason)
    return _abort(sprint=sprint, actor=actor, reason=reason, now=now)


@people(ADMIN)
@records_refusals
def sprint_abort(*, sprint: Sprint, actor: Actor, reason: str, now: datetime) -> Sprint:
    """A human (or the circuit breaker) stops the sprint, and the work held in it is taken
    back (SPEC §13)."""
    with transaction.atomic():
        return sprint_abort_within(sprint=sprint, actor=actor, reason=reason, now=now)

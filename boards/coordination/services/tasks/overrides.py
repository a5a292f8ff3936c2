"""Work taken out of agents' hands by a human (SPEC §7, §12; seed 004): override block,
release a stuck claim, cancel, suspend and resume.

Each moves the task through seed 000's own edges and SPEC §5.1's override block, each edge
with its event: the task machine keeps its 11 states. Suspension is an overlay (seed 004
SUSPENDED), not a 12th state.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from django.db import transaction

from boards import protocol as p
from boards.coordination.models.tasks import Task
from boards.coordination.services.actors import Actor, actor_ref, is_agent
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.cleaning import clean_string_list, clean_text
from boards.coordination.services.edges import move_task, require_task_status, save_task
from boards.coordination.services.locking import agent_row
from boards.coordination.services.tasks.holders import (
    close_review_round,
    lock_task_and_its_agents,
    release_holder,
    release_reviewers,
)
from boards.coordination.services.tasks.resolutions import task_abandon, task_release
from boards.errors import (
    InvalidTransition,
)
from boards.protocol import TaskStatus


@people(ADMIN)
@records_refusals
def task_override_block(
    *, task: Task, actor: Actor, reason: str, now: datetime, questions: Sequence[str] = ()
) -> Task:
    """SPEC §5.1 override block: a human admin (or the system) blocks any non-terminal task.

    Never available to agents. Whoever held the task is released; its next write gets
    lease_lost and exits 42.
    """
    project = task.project
    block = Attempt(project, actor, "override_block", now)
    if is_agent(actor):
        raise block.refuse(
            InvalidTransition(
                from_status=task.status,
                to_status=TaskStatus.BLOCKED,
                allowed=p.task_targets(task.status),
                message="agents cannot override-block a task",
            ),
            task=task,
            to_status=TaskStatus.BLOCKED,
        )
    require_role(
        Attempt(project, actor, "task_override_block", now), agent_roles=(), system=True, task=task
    )
    reason = clean_text(reason, "reason", max_length=2000)
    questions = clean_string_list(
        list(questions or []), "questions", max_items=p.MAX_BLOCKED_QUESTIONS
    )
    with transaction.atomic():
        # Its holder and pending reviewers before the task (the lock order, locking): their
        # heartbeats lock their agent row, then the task.
        task = lock_task_and_its_agents(task)
        require_task_status(task, p.OVERRIDE_BLOCK_SOURCES, to=TaskStatus.BLOCKED, attempt=block)
        task.blocked_reason = reason
        task.blocked_questions = questions or [f"What should happen to {task.key}?"]
        task.lease_expires = None
        if task.status == TaskStatus.READY_FOR_REVIEW:
            close_review_round(task, now)
        move_task(
            task, "override_block", block, detail=reason, data={"questions": task.blocked_questions}
        )
        release_holder(
            agent_row(project, task.assigned_to), task, lost=f"override-blocked: {reason}"
        )
    return task


# The services of tasks.py, without their own refusal logging: called inside an oversight
# transaction, a refusal must be logged once, after that transaction rolled back, by the
# oversight service's own `records_refusals`.
_override_block = task_override_block.__wrapped__

_release = task_release.__wrapped__

_abandon = task_abandon.__wrapped__


def _who(actor: Actor) -> str:
    return actor_ref(actor)[1]


def _reason(text: str) -> str:
    """A reason built around the human's own, within what the task services accept."""
    return text if len(text) <= 2000 else text[:1999] + "…"


def take_claim_back(
    task: Task, *, actor: Actor, now: datetime, lost: str, block_reason: str, answer: str
) -> Task:
    """A CLAIMED task (locked) returns to UNCLAIMED by two of the machine's own edges, each with
    its event: override block (SPEC §5.1), then release (BLOCKED → UNCLAIMED: worktree and
    assignee cleared, failed_by and counters kept). Its coder is told it lost the task.

    A human's decision is not the coder's failure (docs/decisions.md, override block), so the
    coder does not join failed_by.
    """
    project = task.project
    holder = agent_row(project, task.assigned_to)
    # Released first, with the real reason; the override block then finds no holder to release.
    release_holder(holder, task, lost=lost)
    task = _override_block(task=task, actor=actor, reason=_reason(block_reason), now=now)
    return _release(task=task, actor=actor, reason=_reason(answer), now=now)


@people(ADMIN)
@records_refusals
def task_release_claim(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Release a stuck claim (SPEC §7).

    CLAIMED: the task returns to the queue (override block + release), so any coder can claim
    it at once; its coder's next heartbeat answers lease_lost (exit 42). READY_FOR_REVIEW: the
    pending review claims are closed, so the review can be claimed again. Anything else holds
    no claim: 409 conflict.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_release_claim", now)
    require_role(attempt, agent_roles=(), task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    who = _who(actor)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        if task.status == TaskStatus.CLAIMED:
            holder = task.assigned_to
            return take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=f"claim released by {who}: {reason}",
                block_reason=f"Claim of {holder} released by {who}: {reason}",
                answer=f"Claim of {holder} released: {reason}",
            )
        if task.status == TaskStatus.READY_FOR_REVIEW:
            released = release_reviewers(task, now=now, lost=f"review released by {who}: {reason}")
            if released:
                save_task(task, now)
                attempt.record(
                    action="review_claim_released",
                    task=task,
                    detail=f"review of {', '.join(released)} released: {reason}",
                    data={"reviewers": released},
                )
                return task
        raise Attempt(project=project, actor=actor, action="release_claim", now=now).conflict(
            f"{task.key} is {task.status}: nothing is claimed",
            task=task,
            details={"status": task.status},
        )


@people(ADMIN)
@records_refusals
def task_cancel(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Seed 004 `cancel`: override block + abandon in one transaction, each edge with its event.

    A BLOCKED task is simply abandoned; a terminal one cannot be cancelled (409).
    """
    project = task.project
    require_role(Attempt(project, actor, "task_cancel", now), agent_roles=(), task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        if task.is_terminal:
            raise Attempt(project=project, actor=actor, action="cancel", now=now).refuse(
                InvalidTransition(
                    from_status=task.status,
                    to_status=TaskStatus.ABANDONED,
                    allowed=[],
                    message=f"{task.key} is {task.status}; a terminal task cannot be cancelled",
                ),
                task=task,
                to_status=TaskStatus.ABANDONED,
            )
        lost = f"cancelled by {_who(actor)}: {reason}"
        if task.is_suspended:
            _clear_suspension(task)  # seed 004: SUSPENDED → cancel → CANCELED
            save_task(task, now)
        if task.status == TaskStatus.READY_FOR_REVIEW:
            release_reviewers(task, now=now, lost=lost)
        elif task.status == TaskStatus.CLAIMED:
            release_holder(agent_row(project, task.assigned_to), task, lost=lost)
        if task.status != TaskStatus.BLOCKED:
            task = _override_block(
                task=task, actor=actor, reason=_reason(f"Cancelled: {reason}"), now=now
            )
        return _abandon(task=task, actor=actor, reason=_reason(f"Cancelled: {reason}"), now=now)


def _clear_suspension(task: Task) -> None:
    task.suspended_at = None
    task.suspended_by = ""
    task.suspended_reason = ""


@people(ADMIN)
@records_refusals
def task_suspend(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Suspend a non-terminal task: nobody can claim it or its review until it is resumed.

    Whoever holds it is released and learns at its next heartbeat (lease_lost, exit 42): a
    CLAIMED task goes back to the queue by override block + release before the overlay is set
    (its coder is then free to take other work), a task under review loses its pending review
    claims. Suspending a terminal or an already suspended task: 409.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_suspend", now)
    require_role(attempt, agent_roles=(), task=task)
    reason = clean_text(reason, "reason", max_length=2000)
    who = _who(actor)
    suspend = Attempt(project, actor, "suspend", now)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        if task.is_suspended:
            raise suspend.conflict(
                f"{task.key} is already suspended (by {task.suspended_by}: "
                f"{task.suspended_reason})",
                task=task,
                details={"suspended": True},
            )
        if task.is_terminal:
            raise suspend.conflict(
                f"{task.key} is {task.status}; a terminal task cannot be suspended",
                task=task,
                details={"status": task.status},
            )
        lost = f"suspended: {reason}"
        released: list[str] = []
        if task.status == TaskStatus.CLAIMED:
            released = [task.assigned_to]
            task = take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=lost,
                block_reason=f"Suspended by {who}: {reason}",
                answer=f"Suspended by {who}: {reason}",
            )
        elif task.status == TaskStatus.READY_FOR_REVIEW:
            released = release_reviewers(task, now=now, lost=lost)
        task.suspended_at = now
        task.suspended_by = who
        task.suspended_reason = reason
        save_task(task, now)
        attempt.record(
            action="suspended",
            task=task,
            detail=reason,
            data={"status": task.status, **({"released": released} if released else {})},
        )
    return task


@people(ADMIN)
@records_refusals
def task_resume(*, task: Task, actor: Actor, now: datetime) -> Task:
    """Lift the suspension; the task is claimable again where it stands.

    A suspended task is not CLAIMED (suspending returned its claim to the queue), except one
    imported that way: it returns to UNCLAIMED by override block + release, like seed 004's
    `resume → PENDING`.
    """
    project = task.project
    attempt = Attempt(project, actor, "task_resume", now)
    require_role(attempt, agent_roles=(), task=task)
    who = _who(actor)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        if not task.is_suspended:
            raise Attempt(project=project, actor=actor, action="resume", now=now).conflict(
                f"{task.key} is not suspended", task=task, details={"suspended": False}
            )
        reason = task.suspended_reason
        _clear_suspension(task)
        save_task(task, now)
        if task.status == TaskStatus.CLAIMED:
            task = take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=f"resumed by {who} into the queue",
                block_reason=f"Resumed by {who} after suspension ({reason})",
                answer=f"Resumed by {who}: back to the queue",
            )
        attempt.record(
            action="resumed",
            task=task,
            detail=f"{task.key} resumed ({task.status}); it was suspended: {reason}",
            data={"status": task.status},
        )
    return task

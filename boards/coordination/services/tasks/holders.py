"""Who holds a task, and letting go of it: the agent-side effects of task operations.

A coder holds a task (CLAIMED, READY_FOR_REVIEW, REJECTED: one at a time); reviewers hold
review claims. When work leaves an agent's hands without the agent giving it up (a takeover,
a limit, a human), the agent is told at its next request: `lost_task` makes every operation
of the former holder answer `lease_lost`, exit 42 (SPEC §13).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.db.models import Q

from agents.models import Agent
from boards.coordination import outbox
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.reviews import review_live
from boards.coordination.services.locking import agent_row, lock_task
from boards.errors import Conflict
from boards.protocol import AgentStatus


def append_failed_by(task: Task, agent_id: str) -> None:
    """failed_by holds unique agent ids (seed 002 Validation Rules)."""
    if agent_id and agent_id not in task.failed_by:
        task.failed_by = [*task.failed_by, agent_id]


def release_holder(agent: Agent | None, task: Task, *, lost: str = "") -> None:
    """The agent no longer works on `task`: back to IDLE, no current task.

    `lost` says why, when the task was taken out of the agent's hands rather than finished or
    given up by the agent itself; its next heartbeat then tells it to exit 42.
    """
    if agent is None or agent.current_task_id != task.pk:
        # It already moved on (a restarted coder may be working on something else).
        return
    outbox.changed(agent.project_id, outbox.AGENT, agent.pk)
    agent.current_task = None
    if lost:
        agent.lost_task = task
        agent.lost_reason = lost[:200]
    if (
        agent.status in (AgentStatus.WORKING, AgentStatus.WAITING)
        and agent.role == Agent.Role.CODER
    ):
        agent.stop_work()
    agent.save()


def close_review_round(task: Task, now: datetime, *, except_reviewer: str = "") -> None:
    """The task leaves READY_FOR_REVIEW: every open review of the round closes."""
    open_reviews = list(
        Review.objects.select_for_update().filter(task=task, closed_at__isnull=True)
    )
    for review in open_reviews:
        review.closed_at = now
        if not review.verdict:
            review.lease_expires = None
        review.save()
        if review.reviewer != except_reviewer and not review.verdict:
            reviewer = agent_row(task.project, review.reviewer)
            if reviewer is not None and reviewer.status == AgentStatus.REVIEWING:
                reviewer.finish_review()
                reviewer.save()


def release_reviewers(
    task: Task, *, now: datetime, lost: str, reviewer: str | None = None
) -> list[str]:
    """Close the pending review claims of `task` (locked) — only `reviewer`'s when given; their
    reviewers go IDLE and, if they were still on it, learn at their next heartbeat that they
    lost it (lease_lost, exit 42).

    Verdicts already given stay in the round. Returns the reviewers whose claims were closed.
    """
    pending = Review.objects.select_for_update().filter(
        task=task, closed_at__isnull=True, verdict=""
    )
    if reviewer is not None:
        pending = pending.filter(reviewer=reviewer)
    pending = list(pending)
    config = config_of(task.project)
    for review in pending:
        live = review_live(review, now, config)
        review.closed_at = now
        review.lease_expires = None
        review.save()
        holder = agent_row(task.project, review.reviewer)
        if holder is None or not live:
            continue  # a lapsed claim: its reviewer may already be reviewing something else
        if holder.status == AgentStatus.REVIEWING:
            holder.finish_review()
        holder.lost_task = task
        holder.lost_reason = lost[:200]
        holder.save()
        outbox.changed(task.project_id, outbox.AGENT, holder.pk)
    return [r.reviewer for r in pending]


def task_agents(task: Task) -> list[str]:
    """The agents working on `task`: its coder and the reviewers of its pending review claims."""
    pending = Review.objects.filter(task=task, closed_at__isnull=True, verdict="")
    return [task.assigned_to, *pending.values_list("reviewer", flat=True)]


class _AgentsMoved(Exception):
    """The task's agents changed between the unlocked read and the locks."""


def lock_task_and_its_agents(task: Task, *also: Agent) -> Task:
    """Lock the agents working on `task` (its coder, its pending reviewers) and `also`, by
    primary key, then the task: the lock order (locking), so a heartbeat (agent, then task)
    never waits on this in a circle.

    Who works on it is read before the task is locked; if that changed by then, the locks are
    given back (a rolled-back savepoint releases them) and taken again, for the agents the
    locked row named.
    """
    extra = {a.pk for a in also}
    project = task.project
    seen = task
    for _attempt in range(3):
        wanted = {agent_id for agent_id in task_agents(seen) if agent_id}
        try:
            with transaction.atomic():
                list(
                    Agent.objects.select_for_update(of=("self",))
                    .filter(Q(agent_id__in=wanted) | Q(pk__in=extra), project_id=task.project_id)
                    .order_by("pk")
                )
                seen = lock_task(task)
                if not {a for a in task_agents(seen) if a} <= wanted:
                    raise _AgentsMoved
        except _AgentsMoved:
            continue
        seen.project = project  # already loaded: spare a query
        return seen
    raise Conflict(f"{task.key} is changing hands right now; try again", {"task": task.key})

"""The watcher's sweep of one project (SPEC §9, the original's liza-watch.sh): what time alone
makes due — dead leases, stale review claims, a passed sprint deadline, a finished sprint — done
through the ordinary services, as the system actor.

Several watchers may run at once: a sweep holds a per-project PostgreSQL advisory lock for its
transaction and a watcher that cannot take it skips the project (another one is sweeping it);
each action re-reads its rows under the services' row locks, so what a previous sweep already
did is no longer due.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from agents.models import Agent
from boards import protocol as p
from boards.errors import ProtocolError
from boards.models import Project, Review, Sprint
from boards.protocol import Action, SprintStatus, TaskStatus
from boards.selectors.access import config_of
from boards.selectors.leases import lease_alive
from boards.selectors.watch import (
    coders_with_dead_leases,
    sprint_past_deadline,
    stale_review_claims,
)
from boards.services.kernel import SYSTEM, agent_row, record_event
from boards.services.sprints import sprint_checkpoint, sprint_complete_if_done
from boards.services.tasks.holders import (
    lock_task_and_its_agents,
    release_holder,
    release_reviewers,
)

# First key of the two-int advisory lock: this application's namespace for watcher sweeps.
_LOCK_NAMESPACE = zlib.crc32(b"liza_watch") & 0x7FFFFFFF


@dataclass
class Sweep:
    """What one sweep did: `skipped` when another watcher held the project's lock."""

    project: str
    skipped: bool = False
    actions: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def _take_sweep_lock(project: Project) -> bool:
    """The project's sweep lock until the transaction ends; False if another watcher has it.

    On SQLite (development) there is no advisory lock: its writes are serialized anyway.
    """
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", [_LOCK_NAMESPACE, project.pk])
        return bool(cursor.fetchone()[0])


def watch_sweep(*, project: Project, now: datetime) -> Sweep:
    """One sweep of `project` at `now`, in one transaction holding the project's sweep lock."""
    sweep = Sweep(project=project.slug)
    with transaction.atomic():
        if not _take_sweep_lock(project):
            sweep.skipped = True
            return sweep
        config = config_of(project)
        steps = [
            *(
                (f"lease of {a.agent_id}", lambda a=a: _expire_coder_lease(project, a, now))
                for a in coders_with_dead_leases(project=project, now=now, config=config)
            ),
            *(
                (f"review claim of {r.reviewer}", lambda r=r: _release_stale_review(r, now))
                for r in stale_review_claims(project=project, now=now, config=config)
            ),
            ("sprint completion", lambda: _complete_sprint(project, now)),
            ("sprint deadline", lambda: _deadline_checkpoint(project, now)),
        ]
        for what, step in steps:
            try:
                with transaction.atomic():  # a savepoint: one refused action spoils no other
                    line = step()
            except ProtocolError as exc:
                sweep.errors.append(f"{what}: {exc.message}")
                continue
            if line:
                sweep.actions.append(line)
    return sweep


def _expire_coder_lease(project: Project, agent: Agent, now: datetime) -> str:
    """The coder's task lease died: it no longer holds the task (its next request answers
    lease_lost, exit 42). The task keeps its status: a claim takes it over (seed 002)."""
    task = lock_task_and_its_agents(agent.current_task)
    holder = agent_row(project, agent.agent_id)  # locked with the task's agents
    config = config_of(project)
    if (
        holder is None
        or holder.current_task_id != task.pk
        or task.status != TaskStatus.CLAIMED
        or task.assigned_to != holder.agent_id
        or lease_alive(task.lease_expires, now, config)
    ):
        return ""  # it heartbeated, finished or moved on since the unlocked read
    expired = p.format_timestamp(task.lease_expires)
    record_event(
        project=project,
        actor=SYSTEM,
        action=Action.LEASE_EXPIRED,
        now=now,
        task=task,
        detail=f"{holder.agent_id}'s lease on {task.key} expired at {expired}; "
        "the task waits for a takeover",
        data={"agent": holder.agent_id, "lease_expires": expired},
    )
    release_holder(holder, task, lost=f"lease expired at {expired}")
    return f"lease expired: {holder.agent_id} on {task.key}"


def _release_stale_review(review: Review, now: datetime) -> str:
    """A review claim whose lease died is closed, so another reviewer can claim the task."""
    task = lock_task_and_its_agents(review.task)
    review = Review.objects.select_for_update().get(pk=review.pk)
    if (
        review.closed_at is not None
        or review.verdict
        or lease_alive(review.lease_expires, now, config_of(task.project))
    ):
        return ""
    expired = p.format_timestamp(review.lease_expires)
    released = release_reviewers(
        task, now=now, lost=f"review lease expired at {expired}", reviewer=review.reviewer
    )
    if not released:
        return ""
    record_event(
        project=task.project,
        actor=SYSTEM,
        action=Action.REVIEW_CLAIM_RELEASED,
        now=now,
        task=task,
        detail=f"{review.reviewer}'s review lease on {task.key} expired at {expired}; "
        "the review can be claimed again",
        data={"reviewer": review.reviewer, "lease_expires": expired},
    )
    return f"review lease expired: {review.reviewer} on {task.key}"


def _complete_sprint(project: Project, now: datetime) -> str:
    sprint = sprint_complete_if_done(project=project, now=now)
    return f"sprint completed: {sprint.sprint_id}" if sprint is not None else ""


def _deadline_checkpoint(project: Project, now: datetime) -> str:
    """Seed 000: the sprint deadline passed → CHECKPOINT, once per deadline value (continuing
    needs a new future deadline or none: `sprint_resume`)."""
    sprint = sprint_past_deadline(project=project, now=now)
    if sprint is None:
        return ""
    locked = Sprint.objects.select_for_update().get(pk=sprint.pk)
    if (
        locked.status != SprintStatus.IN_PROGRESS
        or locked.deadline is None
        or locked.deadline > now
    ):
        return ""
    deadline = p.format_timestamp(locked.deadline)
    sprint_checkpoint(
        sprint=locked, actor=SYSTEM, reason=f"sprint deadline {deadline} passed", now=now
    )
    return f"sprint checkpoint: {locked.sprint_id} deadline {deadline} passed"

"""Review claim-next's and the named review claim's writes as a small reference model (the
oracle of tests/coordination/services/test_review_claims_sql.py).

This is the Python the service ran before issue 26 moved the pick and a review claim's writes
into `liza_review_claim_v1` (boards migration 0032): the reviewer's held review handed back
(read through the ORM and `review_live`), the candidates of `reviewable_tasks` tried in order
(each claim in its own transaction, a lost race passed over), the round's dead claims closed
(their reviewer locked NOWAIT, IDLE again if still REVIEWING, a `review_reclaimed` event each),
the Review row, the reviewer REVIEWING, the `review_claimed` event. It runs on the real rows
through the ORM with the product's own helpers for what did not move (the role, stop work,
budgets, a reviewer that left, a named claim's locks and checks `checked_review_claim`, the
slot rule, the event writer), so that the comparison is of the moved rules alone. Product
code never imports it.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.reviews import review_live, reviewable_tasks
from boards.coordination.services.actors import REVIEWER
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    refuse_if_departed,
    refuse_if_stopped,
    require_role,
)
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.review_claims import checked_review_claim, holder_busy
from boards.errors import Conflict, InvalidTransition
from boards.protocol import Action, AgentStatus, TaskStatus
from tests.coordination.services.tasks.claim_oracle import HolderBusy, lock_previous_holder


def held_review(
    *, project: Project, reviewer: Agent, now: datetime, config: ProjectConfig
) -> Review | None:
    """The live review claim `reviewer` holds (no verdict yet), if any (the product asks
    `liza_review_held_v1`)."""
    candidates = (
        Review.objects.filter(
            project=project,
            reviewer=reviewer.agent_id,
            closed_at__isnull=True,
            verdict="",
            task__status=TaskStatus.READY_FOR_REVIEW,
            task__suspended_at__isnull=True,
        )
        .select_related("task")
        .order_by("claimed_at", "id")
    )
    return next((r for r in candidates if review_live(r, now, config)), None)


def _close_stale_review(stale: Review, task: Task, claim: Attempt) -> None:
    """A dead review claim gives its slot back; its reviewer learns it lost the review.

    The lapsed reviewer's agent row is locked after the task (against the lock order), so
    without waiting: busy means it is heartbeating right now; the claimer is told to try again.
    """
    try:
        holder = lock_previous_holder(task.project, stale.reviewer)
    except HolderBusy as exc:
        raise holder_busy(task, claim.actor, claim.now, stale.reviewer) from exc
    stale.closed_at = claim.now
    stale.save()
    if holder is not None and holder.status == AgentStatus.REVIEWING:
        holder.finish_review()
        holder.save()
    claim.record(
        action=Action.REVIEW_RECLAIMED,
        task=task,
        detail=f"review lease of {stale.reviewer} expired",
        data={"previous": stale.reviewer},
    )


def _claim_locked(task: Task, agent: Agent, *, now: datetime, config: ProjectConfig) -> Review:
    """The writes of a review claim of `task` (locked, checked) by `agent` (locked)."""
    project = task.project
    claim = Attempt(project, agent, "claim_review", now)
    reviews = list(Review.objects.select_for_update().filter(task=task, closed_at__isnull=True))
    for stale in [r for r in reviews if not r.verdict and not review_live(r, now, config)]:
        _close_stale_review(stale, task, claim)
    review = Review.objects.create(
        project=project,
        task=task,
        reviewer=agent.agent_id,
        review_commit=task.review_commit,
        claimed_at=now,
        lease_expires=now + timedelta(seconds=task.lease_seconds(config)),
    )
    if agent.status == AgentStatus.STARTING:
        agent.ready()
    agent.start_review()
    # Whatever it lost before (a review taken back by a human) is behind it now.
    agent.lost_task, agent.lost_reason = None, ""
    agent.heartbeat = now
    agent.lease_expires = max(filter(None, [agent.lease_expires, review.lease_expires]))
    agent.save()
    claim.record(
        action=Action.REVIEW_CLAIMED,
        task=task,
        detail=f"reviewing {task.key} at {task.review_commit}",
        data={"commit": task.review_commit},
    )
    return review


@records_refusals
def review_claim(*, task: Task, agent: Agent, now: datetime) -> Review:
    """READY_FOR_REVIEW with a review slot open to `agent` → a review lease for it."""
    project = task.project
    require_role(Attempt(project, agent, "review_claim", now), agent_roles=REVIEWER, task=task)
    refuse_if_stopped(project, actor=agent, action="claim_review", now=now, task=task)
    refuse_if_over_budget(project, agent=agent, action="claim_review", now=now, task=task)
    config = config_of(project)
    with transaction.atomic():
        # The checks before the writes are the service's own (not what moved to SQL).
        agent, task = checked_review_claim(task, agent, now=now, config=config)
        return _claim_locked(task, agent, now=now, config=config)


@records_refusals
def review_claim_next(*, project: Project, agent: Agent, now: datetime) -> Review | None:
    """The held review, else the first task of `reviewable_tasks` claimed through
    `review_claim`; a candidate lost to a race (`Conflict`) is passed over. None when none."""
    require_role(Attempt(project, agent, "review_claim_next", now), agent_roles=REVIEWER)
    refuse_if_stopped(project, actor=agent, action="claim_review", now=now)
    refuse_if_over_budget(project, agent=agent, action="claim_review", now=now)
    refuse_if_departed(agent, action="claim_review", now=now)
    config = config_of(project)
    held = held_review(project=project, reviewer=agent, now=now, config=config)
    if held is not None:
        return held
    for task in reviewable_tasks(project=project, reviewer=agent, now=now, config=config):
        try:
            return review_claim(task=task, agent=agent, now=now)
        except (Conflict, InvalidTransition):
            continue  # lost the race for this one (its refusal is logged): the next
    return None

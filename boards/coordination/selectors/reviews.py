"""Review rounds and their slots (seed 000 "Review Lease Lifecycle", seed 001 criticality).

A round is the set of open reviews (`closed_at` null) of a READY_FOR_REVIEW task. Criticality
sets how many distinct approving reviewers it needs (standard 1, complex 2, security-sensitive 2
with at least one security-flagged reviewer); one rejection rejects it. The rules below are the
only copy: `review_claim` enforces them, `/work` and the board read them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import CharField
from django.db.models.expressions import RawSQL

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Project, ProjectConfig
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.budgets import exhausted_subjects
from boards.coordination.selectors.leases import lease_alive
from boards.protocol import TaskStatus


def open_reviews(task: Task) -> list[Review]:
    """The open round of `task` (reads a prefetch of `reviews` when there is one)."""
    return [r for r in task.reviews.all() if r.closed_at is None]


def review_live(review: Review, now: datetime, config: ProjectConfig) -> bool:
    """A review claim still held: no verdict, and its lease alive (grace included)."""
    return (
        review.closed_at is None
        and not review.verdict
        and lease_alive(review.lease_expires, now, config)
    )


def approvers(reviews: Iterable[Review]) -> list[str]:
    return [r.reviewer for r in reviews if r.verdict == Review.Verdict.APPROVED]


def security_reviewer_ids(project_id: int, agent_ids: Iterable[str] | None = None) -> set[str]:
    """The security-flagged reviewers of a project (among `agent_ids` when given)."""
    rows = Agent.objects.filter(project_id=project_id, security_reviewer=True)
    if agent_ids is not None:
        rows = rows.filter(agent_id__in=list(agent_ids))
    return set(rows.values_list("agent_id", flat=True))


def approvals_complete(task: Task, approving: Iterable[str], security_ids: set[str]) -> bool:
    """Enough distinct approvers for the task's criticality, one of them security-flagged for
    a security-sensitive task (seed 001)."""
    approving = set(approving)
    if len(approving) < task.required_approvals:
        return False
    if task.criticality == Task.Criticality.SECURITY_SENSITIVE:
        return bool(approving & security_ids)
    return True


def round_approvals(task: Task) -> tuple[list[str], bool]:
    """The open round's approving reviewers, and whether they suffice."""
    approving = approvers(Review.objects.filter(task=task, closed_at__isnull=True))
    security = security_reviewer_ids(task.project_id, approving)
    return approving, approvals_complete(task, approving, security)


def awaiting_human_approval(
    task: Task, approving: Iterable[str] | None = None, security_ids: set[str] | None = None
) -> bool:
    """The reviewers approved the round and the human gate holds it (seed 004
    APPROVAL_REQUIRED). Reads the task's open reviews unless the caller passes the round's
    approvers (and the project's security reviewers) it already read."""
    if task.status != TaskStatus.READY_FOR_REVIEW or not task.needs_human_approval:
        return False
    if approving is None:
        approving = approvers(open_reviews(task))
    approving = list(approving)
    if security_ids is None:
        security_ids = security_reviewer_ids(task.project_id, approving)
    return approvals_complete(task, approving, security_ids)


@dataclass(frozen=True)
class SlotRefusal:
    """Why a reviewer may not claim a review now: `forbidden` (never this reviewer) or
    `conflict` (not now)."""

    kind: str
    message: str
    details: dict


# The slot's answer when the reviewer gave back its review of this round (review_release), by
# judgement — not because its session was stopping (`stopping`): the slot is open, but review
# claim-next and `/work` pass the task over; a named `review_claim` takes it (docs/decisions.md
# "A review given back is not handed back").
RELEASED = "released"


# The slot rule is SQL, written once in a migration (boards 0028, `liza_review_slot_v2`): the
# task row and the reviewer → NULL when its slot is open, else why not (migrations 0026 and 0028
# list the codes). tests/coordination/selectors/test_reviews_slot.py holds it equal to a
# reference model.
def review_slot(
    reviewer: Agent, now: datetime, config: ProjectConfig, *, project_id: int
) -> RawSQL:
    """The expression `liza_review_slot_v2(task row, ...)` for `reviewer` at `now`: NULL when
    it may claim a review of the task, else the refusal's code — `released` when only its own
    release of this round's review stands in the way (`RELEASED`). The project's
    security-flagged reviewers are a subquery of the same statement."""
    return RawSQL(
        f"liza_review_slot_v2({Task._meta.db_table}.*, %s, %s, %s, "
        f"ARRAY(SELECT a.agent_id FROM {Agent._meta.db_table} a "
        "WHERE a.project_id = %s AND a.security_reviewer), %s::jsonb, %s, %s)",
        (
            reviewer.agent_id,
            reviewer.status,
            reviewer.security_reviewer,
            project_id,
            json.dumps(p.REQUIRED_APPROVALS),
            now,
            config.lease_grace,
        ),
        output_field=CharField(),
    )


def review_slot_refusal(
    task: Task, reviewer: Agent, *, reviews: list[Review], now: datetime, config: ProjectConfig
) -> SlotRefusal | None:
    """The one review-slot rule (`liza_review_slot_v2`, asked of the task's row): None when
    `reviewer` may claim a review of `task` now, else the refusal in words.

    A claim by name takes a review the reviewer gave back this round (`RELEASED`): it asks for
    that task on purpose, where claim-next would only hand it straight back.

    `reviews` is the task's open round as the caller read it (a claim: locked), only to name
    who holds the slots; a review whose lease is dead (grace included) counts as a free slot,
    exactly as `review_claim` then reclaims it.
    """
    code = (
        Task.objects.filter(pk=task.pk)
        .annotate(slot=review_slot(reviewer, now, config, project_id=task.project_id))
        .values_list("slot", flat=True)
        .first()
    )
    if code is None or code == RELEASED:
        return None

    def conflict(message: str, **details) -> SlotRefusal:
        return SlotRefusal("conflict", message, {"task": task.key, **details})

    if code == "status":
        return conflict(f"{task.key} is {task.status}, not READY_FOR_REVIEW")
    if code == "suspended":
        return conflict(f"{task.key} is suspended: {task.suspended_reason}", suspended=True)
    if code == "goal":
        return conflict(f"{task.key} belongs to a goal that is {task.goal.status}")
    if code == "coded":
        # Seed 001: nobody reviews their own work.
        return SlotRefusal(
            "forbidden", f"{reviewer.agent_id} coded {task.key} and cannot review it", {}
        )
    if code == "busy":
        return conflict(
            f"{reviewer.agent_id} is {reviewer.status}; finish the current review first"
        )
    if code == "held":
        return conflict(f"{reviewer.agent_id} already reviewed or is reviewing this round")
    if code == "full":
        active = [r.reviewer for r in reviews if review_live(r, now, config)]
        return conflict(
            f"{task.key} is already under review by {', '.join(active) or 'its approvers'}",
            reviewing_by=active,
        )
    return conflict(
        f"{task.key} is security-sensitive: its last review slot needs a security-flagged reviewer"
    )


def reviewable_tasks(
    *, project: Project, reviewer: Agent, now: datetime, config: ProjectConfig
) -> list[Task]:
    """The READY_FOR_REVIEW tasks `reviewer` could claim a review of now, by priority then age:
    the ones whose slot `liza_review_slot_v2` opens to it (one statement, after the spent
    budgets' read). A review it gave back this round (`RELEASED`) is not among them: offered
    again at once, the same reviewer would get the same review back in a loop."""
    ready = Task.objects.filter(project=project, status=TaskStatus.READY_FOR_REVIEW)
    if spent := exhausted_subjects(project=project):  # issue 24: a spent task or goal budget
        ready = ready.exclude(spent)
    return list(
        ready.alias(slot=review_slot(reviewer, now, config, project_id=project.pk))
        .filter(slot__isnull=True)
        .select_related("goal")
        .order_by("priority", "created", "id")
    )


def held_review(
    *, project: Project, reviewer: Agent, now: datetime, config: ProjectConfig
) -> Review | None:
    """The live review claim `reviewer` holds (no verdict yet, its task under review and not
    suspended), if any: what a review claim-next gives back to a reviewer restarted mid-review,
    as claim-next does for a coder. The claim's own SQL (`liza_review_held_v1`, boards migration
    0032), which `liza_review_claim_v1` asks first: `/work` and the claim cannot drift."""
    held = RawSQL(
        "liza_review_held_v1(%s, %s, %s, %s)",
        (project.pk, reviewer.agent_id, now, config.lease_grace),
    )
    return Review.objects.filter(pk=held).select_related("task").first()


def merges_awaiting(*, project: Project, reviewer_id: str) -> list[str]:
    """The APPROVED tasks `reviewer_id` approved, whose merge it must still report (seed 000
    T10: the approving reviewer's supervisor merges): its work before any new review."""
    if not reviewer_id:
        return []
    return list(
        Task.objects.filter(
            project=project, status=TaskStatus.APPROVED, approved_by__contains=[reviewer_id]
        )
        .order_by("priority", "created", "id")
        .values_list("key", flat=True)
    )

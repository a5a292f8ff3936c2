"""One entry point for "move this task to that state", whatever the edge.

The admin's transition actions and the protocol tests use it: it finds the seed 000 edge (or
the override block) for (current status, target) and runs that edge's service, so every rule
still lives in exactly one service. A pair with no edge is refused with `invalid_transition`,
the allowed targets, the row unchanged and a rejected-attempt event.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from boards import protocol as p
from boards.coordination.models.tasks import Review, Task
from boards.coordination.services.actors import Actor, is_agent
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.locking import lock_task
from boards.coordination.services.reviews import review_verdict
from boards.coordination.services.tasks import (
    task_abandon,
    task_block,
    task_claim,
    task_finalize,
    task_override_block,
    task_release,
    task_report_integration_failure,
    task_report_merge,
    task_rescope,
    task_submit_for_review,
)
from boards.errors import InvalidTransition
from boards.protocol import TaskStatus

# Edge name (protocol.TASK_EDGES) → (service, keyword the acting principal is passed as).
EDGE_SERVICES: dict[str, tuple[Any, str]] = {
    "finalize": (task_finalize, "actor"),
    "claim": (task_claim, "agent"),
    "reclaim": (task_claim, "agent"),
    "claim_integration_fix": (task_claim, "agent"),
    "submit_for_review": (task_submit_for_review, "agent"),
    "block": (task_block, "agent"),
    "approve": (review_verdict, "agent"),
    "reject": (review_verdict, "agent"),
    "merge": (task_report_merge, "agent"),
    "fail_integration": (task_report_integration_failure, "agent"),
    "release": (task_release, "actor"),
    "supersede": (task_rescope, "actor"),
    "abandon": (task_abandon, "actor"),
}


@records_refusals
def task_transition(*, task: Task, actor: Actor, target: str, now: datetime, **params: Any):
    """Move `task` to `target` through the service of the matching edge."""
    with transaction.atomic():
        locked = lock_task(task)
    current = locked.status
    if target == TaskStatus.BLOCKED and not is_agent(actor) and current in p.OVERRIDE_BLOCK_SOURCES:
        return task_override_block(task=task, actor=actor, now=now, **params)
    edge = p.TASK_EDGES.get((current, target))
    if edge is None:
        raise Attempt(project=task.project, actor=actor, action="transition", now=now).refuse(
            InvalidTransition(
                from_status=current, to_status=target, allowed=p.task_targets(current)
            ),
            task=task,
            to_status=target,
        )
    service, principal = EDGE_SERVICES[edge]
    if edge in ("approve", "reject"):
        params.setdefault(
            "verdict", Review.Verdict.APPROVED if edge == "approve" else Review.Verdict.REJECTED
        )
    return service(task=task, now=now, **{principal: actor}, **params)

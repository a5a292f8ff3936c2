"""One entry point for "move this task to that state", whatever the edge.

The admin's transition actions and the protocol tests use it: it finds the seed 000 edge (or
the override block) for (current status, target) and runs that edge's service, so every rule
still lives in exactly one service. A pair with no edge is refused with `invalid_transition`,
the allowed targets, the row unchanged and a rejected-attempt event.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
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

# Edge name (protocol.TASK_EDGES) → the service that takes it (the three claim edges are one
# claim, both verdicts one verdict).
EDGE_SERVICES: dict[str, Callable[..., Any]] = {
    "finalize": task_finalize,
    **dict.fromkeys(("claim", "reclaim", "claim_integration_fix"), task_claim),
    "submit_for_review": task_submit_for_review,
    "block": task_block,
    **dict.fromkeys(("approve", "reject"), review_verdict),
    "merge": task_report_merge,
    "fail_integration": task_report_integration_failure,
    "release": task_release,
    "supersede": task_rescope,
    "abandon": task_abandon,
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
    service = EDGE_SERVICES[edge]
    # An agent's operation names its principal `agent`, one humans may run too `actor`.
    principal = "agent" if "agent" in inspect.signature(service).parameters else "actor"
    if edge in ("approve", "reject"):
        params.setdefault(
            "verdict", Review.Verdict.APPROVED if edge == "approve" else Review.Verdict.REJECTED
        )
    return service(task=task, now=now, **{principal: actor}, **params)

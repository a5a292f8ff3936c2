"""Review claims, their leases and verdicts (seed 000 "Review Lease Lifecycle", seed 001), and
the human approval gate (seed 004 APPROVAL_REQUIRED).

Each review claim is a `Review` row with its own lease. Criticality sets how many distinct
approving reviewers a round needs; one rejection rejects the round and counts one review cycle.
The gate sits before APPROVED: the reviewers' approvals leave a gated task READY_FOR_REVIEW
until a human approves or rejects it. Claiming a review (by name, or claim-next) is
`services.review_claims`, whose two services are read from here too.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from agents.models import Agent
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.reviews import round_approvals
from boards.coordination.selectors.tasks import limit_reached
from boards.coordination.services.actors import REVIEWER, SYSTEM, Actor, actor_ref, is_agent
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import (
    ADMIN,
    agents_only,
    people,
    require_not_lost,
    require_role,
)
from boards.coordination.services.cleaning import clean_text
from boards.coordination.services.edges import move_task, require_task_status
from boards.coordination.services.locking import agent_row, lock_agent, lock_task
from boards.coordination.services.review_claims import review_claim as review_claim
from boards.coordination.services.review_claims import review_claim_next as review_claim_next
from boards.coordination.services.tasks.holders import (
    append_failed_by,
    close_review_round,
    lock_task_and_its_agents,
    release_holder,
)
from boards.coordination.services.tasks.limits import limit_anomaly, limit_block
from boards.errors import Conflict, LeaseLost, ProtocolValidationError
from boards.protocol import Action, AgentStatus, TaskStatus


def _own_open_review(task: Task, agent: Agent, *, now: datetime, action: str, config) -> Review:
    review = (
        Review.objects.select_for_update()
        .filter(task=task, reviewer=agent.agent_id, closed_at__isnull=True, verdict="")
        .first()
    )
    if review is None or not lease_alive(review.lease_expires, now, config):
        raise Attempt(project=task.project, actor=agent, action=action, now=now).refuse(
            LeaseLost(
                f"{agent.agent_id} holds no review lease on {task.key}; exit 42", {"task": task.key}
            ),
            task=task,
        )
    return review


def _lock_own_review(task: Task, agent: Agent, step: Attempt, config) -> tuple[Agent, Task, Review]:
    """The reviewer's own live review of `task`, under review, locked (agent rows before task
    rows, locking): what extending and giving back a review both act on."""
    agent = lock_agent(agent)
    task = lock_task(task)
    require_not_lost(task, agent, action=step.action, now=step.now)
    require_task_status(
        task, [TaskStatus.READY_FOR_REVIEW], to=TaskStatus.READY_FOR_REVIEW, attempt=step
    )
    review = _own_open_review(task, agent, now=step.now, action=step.action, config=config)
    return agent, task, review


@agents_only
@records_refusals
def review_extend(*, task: Task, agent: Agent, now: datetime) -> Review:
    """The reviewer extends its own review lease during a long review."""
    project = task.project
    attempt = Attempt(project, agent, "review_extend", now)
    require_role(attempt, agent_roles=REVIEWER, task=task)
    config = config_of(project)
    with transaction.atomic():
        agent, task, review = _lock_own_review(
            task, agent, Attempt(project, agent, "extend_review", now), config
        )
        review.lease_expires = now + timedelta(seconds=task.lease_seconds(config))
        review.save()
        attempt.record(
            action="review_extended",
            task=task,
            detail=f"review lease until {review.lease_expires:%H:%M:%SZ}",
        )
    return review


def _end_own_claim(review: Review, agent: Agent, now: datetime) -> None:
    """The reviewer's claim ends (its verdict, or given back): the review's lease goes and the
    reviewer, seen at `now`, is IDLE again."""
    review.lease_expires = None
    review.save()
    if agent.status == AgentStatus.REVIEWING:
        agent.finish_review()
    agent.heartbeat = now
    agent.save()


@agents_only
@records_refusals
def review_release(
    *, task: Task, agent: Agent, now: datetime, reason: str = "", stopping: bool = False
) -> Review:
    """The reviewer gives its open review claim back before a verdict: the slot opens at once
    for another reviewer (not when the lease lapses, seed 000 "Review Lease Lifecycle"), the
    task stays READY_FOR_REVIEW and the reviewer goes IDLE. Verdicts already given stay.

    Its event (`review_released`) is what the slot rule reads: this reviewer's claim-next passes
    the task over until the coder resubmits it; a claim by name still takes it. Unless
    `stopping` (stored in the event's data): the reviewer's session is ending — its supervisor
    stopped, restarted — which says nothing of whether it can finish the review, so it may be
    offered the review again at once."""
    project = task.project
    attempt = Attempt(project, agent, "review_release", now)
    require_role(attempt, agent_roles=REVIEWER, task=task)
    reason = clean_text(reason, "reason", required=False, max_length=2000)
    config = config_of(project)
    with transaction.atomic():
        agent, task, review = _lock_own_review(task, agent, attempt, config)
        review.closed_at = now
        _end_own_claim(review, agent, now)
        data: dict[str, object] = {"reason": reason} if reason else {}
        if stopping:
            data["stopping"] = True  # what liza_review_slot_v2 reads
        attempt.record(
            action=Action.REVIEW_RELEASED,
            task=task,
            detail=reason or f"{agent.agent_id} gave back its review of {task.key}",
            data=data,
        )
    return review


@agents_only
@records_refusals
def review_verdict(
    *, task: Task, agent: Agent, verdict: str, review_commit: str, now: datetime, reason: str = ""
) -> Task:
    """Record a reviewer's verdict; the round closes on one rejection or enough approvals."""
    project = task.project
    require_role(Attempt(project, agent, "review_verdict", now), agent_roles=REVIEWER, task=task)
    if verdict not in Review.Verdict.values:
        raise ProtocolValidationError("verdict", "APPROVED or REJECTED")
    review_commit = clean_text(review_commit, "review_commit", max_length=64)
    reason = clean_text(
        reason, "reason", required=verdict == Review.Verdict.REJECTED, max_length=5000
    )
    config = config_of(project)
    with transaction.atomic():
        # Lock order (locking): the agents on the task (its coder, the round's reviewers, this
        # one) by primary key, then the task: a coder's heartbeat locks it the same way.
        task = lock_task_and_its_agents(task)
        agent = lock_agent(agent)
        require_not_lost(task, agent, action="verdict", now=now)
        attempt = Attempt(project, agent, "verdict", now)
        require_task_status(task, [TaskStatus.READY_FOR_REVIEW], to=verdict, attempt=attempt)
        review = _own_open_review(task, agent, now=now, action="verdict", config=config)
        if review_commit != task.review_commit:
            raise attempt.refuse(
                Conflict(
                    f"verdict names {review_commit} but {task.key} is under review at "
                    f"{task.review_commit}",
                    {"expected": task.review_commit, "got": review_commit},
                ),
                task=task,
            )
        review.verdict = verdict
        review.reason = reason
        review.verdict_at = now
        _end_own_claim(review, agent, now)
        coder = agent_row(project, task.assigned_to)
        if verdict == Review.Verdict.REJECTED:
            _reject(task, attempt, reason, config=config, coder=coder)
        else:
            _approve_if_enough(task, attempt, reason, coder=coder)
    return task


def _reject(
    task: Task,
    attempt: Attempt,
    reason: str,
    *,
    config,
    coder: Agent | None,
    action: str | None = None,
) -> None:
    """The round is rejected (by a reviewer, or by the human gate): one more review cycle, and
    the limits apply (SPEC §5.1)."""
    now, actor = attempt.now, attempt.actor
    task.rejection_reason = reason
    task.review_cycles_current += 1
    task.review_cycles_total += 1
    close_review_round(task, now, except_reviewer=actor.agent_id if is_agent(actor) else "")
    move_task(
        task,
        "reject",
        attempt,
        action=action,
        detail=reason,
        data={"commit": task.review_commit, "review_cycles_current": task.review_cycles_current},
    )
    limit = limit_reached(task, config)
    if limit is not None:
        # "failed_by gets the coder appended when ... a limit blocks it" (SPEC §5.1).
        append_failed_by(task, task.assigned_to)
        release_holder(coder, task, lost=f"blocked: {limit}")
        limit_block(task, now=now, config=config, limit=limit)
        if len(set(task.failed_by)) >= 2 and limit != "hypothesis_exhaustion":
            limit_anomaly(task, now=now, limit="hypothesis_exhaustion")


def _approve_if_enough(task: Task, verdict: Attempt, reason: str, *, coder: Agent | None) -> None:
    approvers, enough = round_approvals(task)
    detail = reason or f"{task.key} approved at {task.review_commit}"
    if enough and not task.needs_human_approval:
        _approve(task, verdict, approvers, coder=coder, detail=detail)
        return
    # The round is not over: this approval is recorded, the task stays READY_FOR_REVIEW.
    approval = _approval_data(task, approvers)
    verdict.record(
        action=Action.APPROVED,
        task=task,
        detail=f"{detail} ({len(approvers)}/{task.required_approvals} approvals)",
        data=approval,
    )
    if enough:
        # Seed 004 APPROVAL_REQUIRED, placed before APPROVED so that seed 000's machine stays
        # as it is: the reviewers' approvals are in, the task stays READY_FOR_REVIEW (its coder
        # keeps waiting) until a human approves or rejects (boards.services.oversight).
        gate = Attempt.on(
            task, actor=SYSTEM, action=Action.AWAITING_HUMAN_APPROVAL, now=verdict.now
        )
        gate.record(
            task=task,
            detail=f"{task.key}: approved by {', '.join(approvers)}; a human approves the merge",
            data=approval,
        )


def _approve(
    task: Task,
    attempt: Attempt,
    approvers: list[str],
    *,
    coder: Agent | None,
    detail: str,
    action: str | None = None,
) -> None:
    """The round is approved (by its last reviewer, or by a human at the gate): APPROVED, the
    approving reviewers named for the merge, the round closed, the coder free for new work."""
    task.approved_by = approvers
    close_review_round(task, attempt.now)
    data = _approval_data(task, approvers)
    move_task(task, "approve", attempt, action=action, detail=detail, data=data)
    release_holder(coder, task)  # nothing when the coder already moved on


def _approval_data(task: Task, approvers: list[str]) -> dict[str, Any]:
    """What an approval event carries: the commit approved and who approved it."""
    return {"commit": task.review_commit, "approvals": approvers}


def _require_awaiting(task: Task, gate: Attempt, *, to: str) -> None:
    """The locked task must wait for a human: READY_FOR_REVIEW, gated, approvals complete."""
    require_task_status(task, [TaskStatus.READY_FOR_REVIEW], to=to, attempt=gate)
    if task.is_suspended:
        raise gate.conflict(
            f"{task.key} is suspended: {task.suspended_reason}",
            task=task,
            details={"suspended": True},
        )
    _, enough = round_approvals(task)
    if not task.needs_human_approval or not enough:
        reason = (
            "it does not need human approval"
            if not task.needs_human_approval
            else "its reviewers have not approved it yet"
        )
        raise gate.conflict(
            f"{task.key} is not awaiting human approval: {reason}",
            task=task,
            details={"awaiting_human_approval": False},
        )


@people(ADMIN)
@records_refusals
def task_human_approve(*, task: Task, actor: Actor, now: datetime, note: str = "") -> Task:
    """READY_FOR_REVIEW → APPROVED by a human, once the reviewers have approved.

    `approved_by` names the approving reviewers (the merge is theirs to report); the event
    names the human.
    """
    project = task.project
    require_role(Attempt(project, actor, "task_human_approve", now), agent_roles=(), task=task)
    note = clean_text(note, "note", required=False, max_length=2000)
    gate = Attempt(project, actor, "human_approve", now)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        _require_awaiting(task, gate, to=TaskStatus.APPROVED)
        approvers, _ = round_approvals(task)
        _approve(
            task,
            gate,
            approvers,
            coder=agent_row(project, task.assigned_to),
            action=Action.HUMAN_APPROVED,
            detail=note or f"{task.key} approved for merge by {actor_ref(actor)[1]}",
        )
    return task


@people(ADMIN)
@records_refusals
def task_human_reject(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """READY_FOR_REVIEW → REJECTED by a human: one review cycle, and the limits apply exactly as
    after a reviewer's rejection (review_deadlock, max iterations)."""
    project = task.project
    require_role(Attempt(project, actor, "task_human_reject", now), agent_roles=(), task=task)
    reason = clean_text(reason, "reason", max_length=5000)
    config = config_of(project)
    gate = Attempt(project, actor, "human_reject", now)
    with transaction.atomic():
        task = lock_task_and_its_agents(task)
        _require_awaiting(task, gate, to=TaskStatus.REJECTED)
        coder = agent_row(project, task.assigned_to)
        _reject(task, gate, reason, config=config, coder=coder, action=Action.HUMAN_REJECTED)
    return task

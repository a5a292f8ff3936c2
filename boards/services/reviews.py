"""Review claims, their leases and verdicts (seed 000 "Review Lease Lifecycle", seed 001).

Each review claim is a `Review` row with its own lease. Criticality sets how many distinct
approving reviewers a round needs (standard 1, complex 2, security-sensitive 2 with at least
one security-flagged reviewer); one rejection rejects the round and counts one review cycle.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction

from agents.models import Agent
from boards.errors import Conflict, Forbidden, LeaseLost, ProtocolValidationError
from boards.models import Review, Task
from boards.services.common import (
    SYSTEM,
    Actor,
    clean_text,
    config_of,
    is_agent,
    lease_alive,
    lock_agent,
    lock_task,
    record_event,
    records_refusals,
    refusal,
    refuse_if_stopped,
    require_role,
    require_task_status,
)
from boards.services.tasks import (
    REVIEWER,
    _agent_row,
    _append_failed_by,
    _close_review_round,
    _fsm,
    _limit_anomaly,
    _limit_block,
    _release_agent,
    _save,
    limit_reached,
)


def _open_reviews(task: Task) -> list[Review]:
    return list(Review.objects.select_for_update().filter(task=task, closed_at__isnull=True))


def _approvers(reviews: list[Review]) -> list[str]:
    return [r.reviewer for r in reviews if r.verdict == Review.Verdict.APPROVED]


def _security_reviewers(task: Task, agent_ids: list[str]) -> set[str]:
    return set(
        Agent.objects.filter(
            project_id=task.project_id, agent_id__in=agent_ids, security_reviewer=True
        ).values_list("agent_id", flat=True)
    )


@records_refusals
def review_claim(*, task: Task, agent: Agent, now: datetime) -> Review:
    """READY_FOR_REVIEW with a free review slot → a review lease for `agent`."""
    project = task.project
    require_role(agent, project, agent_roles=REVIEWER, human=None)
    refuse_if_stopped(project, actor=agent, action="claim_review", now=now, task=task)
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            ["READY_FOR_REVIEW"],
            to="READY_FOR_REVIEW",
            action="claim_review",
            actor=agent,
            now=now,
        )
        agent = lock_agent(agent)

        def refuse(message: str, details: dict | None = None) -> Conflict:
            return refusal(
                Conflict(message, {"task": task.key, **(details or {})}),
                project=project,
                actor=agent,
                action="claim_review",
                now=now,
                task=task,
            )

        if task.is_suspended:
            raise refuse(f"{task.key} is suspended: {task.suspended_reason}", {"suspended": True})
        if agent.agent_id == task.assigned_to or agent.agent_id in task.failed_by:
            # Seed 001: nobody reviews their own work.
            raise refusal(
                Forbidden(f"{agent.agent_id} coded {task.key} and cannot review it"),
                project=project,
                actor=agent,
                action="claim_review",
                now=now,
                task=task,
            )
        if agent.status not in ("STARTING", "IDLE"):
            raise refuse(f"{agent.agent_id} is {agent.status}; finish the current review first")
        reviews = _open_reviews(task)
        # A lapsed review lease makes the slot claimable again (seed 000 table).
        for stale in [r for r in reviews if not r.verdict and not r.is_active(now)]:
            stale.closed_at = now
            stale.save()
            holder = _agent_row(project, stale.reviewer)
            if holder is not None and holder.status == "REVIEWING":
                holder.finish_review()
                holder.save()
            record_event(
                project=project,
                actor=agent,
                action="review_reclaimed",
                task=task,
                now=now,
                detail=f"review lease of {stale.reviewer} expired",
                data={"previous": stale.reviewer},
            )
            reviews.remove(stale)
        if any(r.reviewer == agent.agent_id for r in reviews):
            raise refuse(f"{agent.agent_id} already reviewed or is reviewing this round")
        approvers = _approvers(reviews)
        active = [r for r in reviews if not r.verdict]
        free = task.required_approvals - len(approvers) - len(active)
        if free <= 0:
            holders = [r.reviewer for r in active]
            raise refuse(
                f"{task.key} is already under review by {', '.join(holders)}",
                {"reviewing_by": holders},
            )
        if (
            task.criticality == Task.Criticality.SECURITY_SENSITIVE
            and free == 1
            and not agent.security_reviewer
            and not _security_reviewers(task, approvers + [r.reviewer for r in active])
        ):
            raise refuse(
                f"{task.key} is security-sensitive: its last review slot needs a "
                "security-flagged reviewer"
            )
        review = Review.objects.create(
            project=project,
            task=task,
            reviewer=agent.agent_id,
            review_commit=task.review_commit,
            claimed_at=now,
            lease_expires=now + _seconds(task.lease_seconds(config)),
        )
        if agent.status == "STARTING":
            agent.ready()
        agent.start_review()
        # Whatever it lost before (a review taken back by a human) is behind it now.
        agent.lost_task, agent.lost_reason = None, ""
        agent.heartbeat = now
        agent.lease_expires = max(filter(None, [agent.lease_expires, review.lease_expires]))
        agent.save()
        record_event(
            project=project,
            actor=agent,
            action="review_claimed",
            task=task,
            now=now,
            detail=f"reviewing {task.key} at {task.review_commit}",
            data={"commit": task.review_commit},
        )
    return review


def _seconds(n: int) -> timedelta:
    return timedelta(seconds=n)


def _own_open_review(task: Task, agent: Agent, *, now: datetime, action: str, config) -> Review:
    review = (
        Review.objects.select_for_update()
        .filter(task=task, reviewer=agent.agent_id, closed_at__isnull=True, verdict="")
        .first()
    )
    if review is None or not lease_alive(review.lease_expires, now, config):
        raise refusal(
            LeaseLost(
                f"{agent.agent_id} holds no review lease on {task.key}; exit 42", {"task": task.key}
            ),
            project=task.project,
            actor=agent,
            action=action,
            now=now,
            task=task,
        )
    return review


@records_refusals
def review_extend(*, task: Task, agent: Agent, now: datetime) -> Review:
    """The reviewer extends its own review lease during a long review."""
    project = task.project
    require_role(agent, project, agent_roles=REVIEWER, human=None)
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        require_task_status(
            task,
            ["READY_FOR_REVIEW"],
            to="READY_FOR_REVIEW",
            action="extend_review",
            actor=agent,
            now=now,
        )
        review = _own_open_review(task, agent, now=now, action="extend_review", config=config)
        review.lease_expires = now + _seconds(task.lease_seconds(config))
        review.save()
        record_event(
            project=project,
            actor=agent,
            action="review_extended",
            task=task,
            now=now,
            detail=f"review lease until {review.lease_expires:%H:%M:%SZ}",
        )
    return review


@records_refusals
def review_verdict(
    *, task: Task, agent: Agent, verdict: str, review_commit: str, now: datetime, reason: str = ""
) -> Task:
    """Record a reviewer's verdict; the round closes on one rejection or enough approvals."""
    project = task.project
    require_role(agent, project, agent_roles=REVIEWER, human=None)
    if verdict not in Review.Verdict.values:
        raise ProtocolValidationError("verdict", "APPROVED or REJECTED")
    review_commit = clean_text(review_commit, "review_commit", max_length=64)
    reason = clean_text(
        reason, "reason", required=verdict == Review.Verdict.REJECTED, max_length=5000
    )
    config = config_of(project)
    with transaction.atomic():
        task = lock_task(task)
        target = verdict
        require_task_status(
            task, ["READY_FOR_REVIEW"], to=target, action="verdict", actor=agent, now=now
        )
        review = _own_open_review(task, agent, now=now, action="verdict", config=config)
        if review_commit != task.review_commit:
            raise refusal(
                Conflict(
                    f"verdict names {review_commit} but {task.key} is under review at "
                    f"{task.review_commit}",
                    {"expected": task.review_commit, "got": review_commit},
                ),
                project=project,
                actor=agent,
                action="verdict",
                now=now,
                task=task,
            )
        agent = lock_agent(agent)
        review.verdict = verdict
        review.reason = reason
        review.verdict_at = now
        review.lease_expires = None
        review.save()
        if agent.status == "REVIEWING":
            agent.finish_review()
        agent.heartbeat = now
        agent.save()
        coder = _agent_row(project, task.assigned_to)
        if verdict == Review.Verdict.REJECTED:
            _reject(task, agent, reason, now=now, config=config, coder=coder)
        else:
            _approve_if_enough(task, agent, reason, now=now, coder=coder)
    return task


def _reject(
    task: Task,
    agent: Actor,
    reason: str,
    *,
    now: datetime,
    config,
    coder: Agent | None,
    action: str = "rejected",
) -> None:
    """The round is rejected (by a reviewer, or by the human gate): one more review cycle, and
    the limits apply (SPEC §5.1)."""
    project = task.project
    task.rejection_reason = reason
    task.review_cycles_current += 1
    task.review_cycles_total += 1
    _close_review_round(task, now, except_reviewer=agent.agent_id if is_agent(agent) else "")
    _fsm(task, "reject", actor=agent, project=project, now=now, to="REJECTED")
    _save(task, now)
    record_event(
        project=project,
        actor=agent,
        action=action,
        task=task,
        now=now,
        from_status="READY_FOR_REVIEW",
        to_status="REJECTED",
        detail=reason,
        data={"commit": task.review_commit, "review_cycles_current": task.review_cycles_current},
    )
    limit = limit_reached(task, config)
    if limit is not None:
        # "failed_by gets the coder appended when ... a limit blocks it" (SPEC §5.1).
        _append_failed_by(task, task.assigned_to)
        _release_agent(coder, task, lost=f"blocked: {limit}")
        _limit_block(task, now=now, config=config, limit=limit)
        if len(set(task.failed_by)) >= 2 and limit != "hypothesis_exhaustion":
            _limit_anomaly(task, now=now, limit="hypothesis_exhaustion")


def round_approvals(task: Task) -> tuple[list[str], bool]:
    """The open round's approving reviewers, and whether they suffice (seed 001 criticality)."""
    reviews = list(Review.objects.filter(task=task, closed_at__isnull=True))
    approvers = _approvers(reviews)
    enough = len(set(approvers)) >= task.required_approvals
    if enough and task.criticality == Task.Criticality.SECURITY_SENSITIVE:
        enough = bool(_security_reviewers(task, approvers))
    return approvers, enough


def _approve_if_enough(
    task: Task, agent: Agent, reason: str, *, now: datetime, coder: Agent | None
) -> None:
    project = task.project
    approvers, enough = round_approvals(task)
    detail = reason or f"{task.key} approved at {task.review_commit}"
    if enough and task.needs_human_approval:
        # Seed 004 APPROVAL_REQUIRED, placed before APPROVED so that seed 000's machine stays
        # as it is: the reviewers' approvals are in, the task stays READY_FOR_REVIEW (its coder
        # keeps waiting) until a human approves or rejects (boards.services.oversight).
        record_event(
            project=project,
            actor=agent,
            action="approved",
            task=task,
            now=now,
            detail=f"{detail} ({len(approvers)}/{task.required_approvals} approvals)",
            data={"commit": task.review_commit, "approvals": approvers},
        )
        record_event(
            project=project,
            actor=SYSTEM,
            action="awaiting_human_approval",
            task=task,
            now=now,
            detail=f"{task.key}: approved by {', '.join(approvers)}; a human approves the merge",
            data={"commit": task.review_commit, "approvals": approvers},
        )
        return
    if not enough:
        record_event(
            project=project,
            actor=agent,
            action="approved",
            task=task,
            now=now,
            detail=f"{detail} ({len(approvers)}/{task.required_approvals} approvals)",
            data={"commit": task.review_commit, "approvals": approvers},
        )
        return
    task.approved_by = approvers
    _close_review_round(task, now)
    _fsm(task, "approve", actor=agent, project=project, now=now, to="APPROVED")
    _save(task, now)
    if coder is not None and coder.current_task_id == task.pk:
        _release_agent(coder, task)
    record_event(
        project=project,
        actor=agent,
        action="approved",
        task=task,
        now=now,
        from_status="READY_FOR_REVIEW",
        to_status="APPROVED",
        detail=detail,
        data={"commit": task.review_commit, "approvals": approvers},
    )

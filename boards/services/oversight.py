"""Human oversight (SPEC §7, §12; seed 004): what an admin does when the agents cannot go on.

Every action here is a human's: permission-checked (project admins, members where noted),
one transaction, and audited with an Event carrying the human actor and a one-line detail.
Where an action moves a task, it does so through seed 000's own edges (and SPEC §5.1's override
block), each with its event — the task machine keeps its 11 states:

- *release a stuck claim*: a CLAIMED task goes back to the queue by override block + release;
  a task under review gets its pending review claims back;
- *cancel* (seed 004): override block + abandon;
- *suspend / resume* (seed 004 SUSPENDED): an overlay on the status, not a 12th state;
- *the human approval gate* (seed 004 APPROVAL_REQUIRED): it sits before APPROVED, so the
  reviewers' approvals leave the task READY_FOR_REVIEW until a human approves or rejects;
- per-task limits, project pause / resume, config, discovery triage.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction

from agents.models import Agent
from boards import events
from boards import protocol as p
from boards.errors import Conflict, InvalidTransition, ProtocolValidationError
from boards.models import Discovery, Membership, Project, ProjectConfig, Review, Task
from boards.services.common import (
    Actor,
    actor_ref,
    clean_text,
    config_of,
    lock_task,
    record_event,
    records_refusals,
    refusal,
    require_role,
)
from boards.services.reviews import _reject, round_approvals
from boards.services.tasks import (
    _agent_row,
    _close_review_round,
    _fsm,
    _release_agent,
    _save,
    task_abandon,
    task_create,
    task_override_block,
    task_release,
)

# The services of tasks.py, without their own refusal logging: called inside an oversight
# transaction, a refusal must be logged once, after that transaction rolled back, by the
# oversight service's own `records_refusals`.
_override_block = task_override_block.__wrapped__
_release = task_release.__wrapped__
_abandon = task_abandon.__wrapped__
_create = task_create.__wrapped__


def _require_admin(actor: Actor, project: Project) -> None:
    """Human admins (and site staff) only: agents and the system get 403."""
    require_role(actor, project, agent_roles=())


def _who(actor: Actor) -> str:
    return actor_ref(actor)[1]


def _reason(text: str) -> str:
    """A reason built around the human's own, within what the task services accept."""
    return text if len(text) <= 2000 else text[:1999] + "…"


def _conflict(
    message: str,
    *,
    project: Project,
    actor: Actor,
    action: str,
    now: datetime,
    task: Task | None = None,
    details: dict[str, Any] | None = None,
    from_status: str | None = None,
) -> Conflict:
    return refusal(
        Conflict(message, {**({"task": task.key} if task else {}), **(details or {})}),
        project=project,
        actor=actor,
        action=action,
        now=now,
        task=task,
        from_status=from_status,
    )


def _lock_task_and_its_agents(task: Task) -> Task:
    """Lock the agents working on `task` (its coder, its pending reviewers), then the task.

    Heartbeats and claims lock an agent before its task; an oversight action that took the
    task first and then its holder's row could deadlock with the holder's heartbeat.
    """
    agent_ids = set(
        Review.objects.filter(task=task, closed_at__isnull=True, verdict="").values_list(
            "reviewer", flat=True
        )
    )
    holder = Task.objects.filter(pk=task.pk).values_list("assigned_to", flat=True).first()
    if holder:
        agent_ids.add(holder)
    if agent_ids:
        list(
            Agent.objects.select_for_update(of=("self",))
            .filter(project_id=task.project_id, agent_id__in=agent_ids)
            .order_by("pk")
        )
    return lock_task(task)


# ---------------------------------------------------------------------------------------------
# taking work out of agents' hands
# ---------------------------------------------------------------------------------------------


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
    for review in pending:
        live = review.is_active(now)
        review.closed_at = now
        review.lease_expires = None
        review.save()
        holder = _agent_row(task.project, review.reviewer)
        if holder is None or not live:
            continue  # a lapsed claim: its reviewer may already be reviewing something else
        if holder.status == "REVIEWING":
            holder.finish_review()
        holder.lost_task = task
        holder.lost_reason = lost[:200]
        holder.save()
        events.changed(task.project_id, events.AGENT, holder.pk)
    return [r.reviewer for r in pending]


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
    holder = _agent_row(project, task.assigned_to)
    # Released first, with the real reason; the override block then finds no holder to release.
    _release_agent(holder, task, lost=lost)
    task = _override_block(task=task, actor=actor, reason=_reason(block_reason), now=now)
    return _release(task=task, actor=actor, reason=_reason(answer), now=now)


@records_refusals
def task_release_claim(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Release a stuck claim (SPEC §7).

    CLAIMED: the task returns to the queue (override block + release), so any coder can claim
    it at once; its coder's next heartbeat answers lease_lost (exit 42). READY_FOR_REVIEW: the
    pending review claims are closed, so the review can be claimed again. Anything else holds
    no claim: 409 conflict.
    """
    project = task.project
    _require_admin(actor, project)
    reason = clean_text(reason, "reason", max_length=2000)
    who = _who(actor)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        if task.status == "CLAIMED":
            holder = task.assigned_to
            return take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=f"claim released by {who}: {reason}",
                block_reason=f"Claim of {holder} released by {who}: {reason}",
                answer=f"Claim of {holder} released: {reason}",
            )
        if task.status == "READY_FOR_REVIEW":
            released = release_reviewers(task, now=now, lost=f"review released by {who}: {reason}")
            if released:
                _save(task, now)
                record_event(
                    project=project,
                    actor=actor,
                    action="review_claim_released",
                    task=task,
                    now=now,
                    detail=f"review of {', '.join(released)} released: {reason}",
                    data={"reviewers": released},
                )
                return task
        raise _conflict(
            f"{task.key} is {task.status}: nothing is claimed",
            project=project,
            actor=actor,
            action="release_claim",
            now=now,
            task=task,
            details={"status": task.status},
        )


@records_refusals
def task_cancel(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Seed 004 `cancel`: override block + abandon in one transaction, each edge with its event.

    A BLOCKED task is simply abandoned; a terminal one cannot be cancelled (409).
    """
    project = task.project
    _require_admin(actor, project)
    reason = clean_text(reason, "reason", max_length=2000)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        if task.is_terminal:
            raise refusal(
                InvalidTransition(
                    from_status=task.status,
                    to_status="ABANDONED",
                    allowed=[],
                    message=f"{task.key} is {task.status}; a terminal task cannot be cancelled",
                ),
                project=project,
                actor=actor,
                action="cancel",
                now=now,
                task=task,
                to_status="ABANDONED",
            )
        lost = f"cancelled by {_who(actor)}: {reason}"
        if task.is_suspended:
            _clear_suspension(task)  # seed 004: SUSPENDED → cancel → CANCELED
            _save(task, now)
        if task.status == "READY_FOR_REVIEW":
            release_reviewers(task, now=now, lost=lost)
        elif task.status == "CLAIMED":
            _release_agent(_agent_row(project, task.assigned_to), task, lost=lost)
        if task.status != "BLOCKED":
            task = _override_block(
                task=task, actor=actor, reason=_reason(f"Cancelled: {reason}"), now=now
            )
        return _abandon(task=task, actor=actor, reason=_reason(f"Cancelled: {reason}"), now=now)


# ---------------------------------------------------------------------------------------------
# suspend / resume (seed 004 SUSPENDED, an overlay)
# ---------------------------------------------------------------------------------------------


def _clear_suspension(task: Task) -> None:
    task.suspended_at = None
    task.suspended_by = ""
    task.suspended_reason = ""


@records_refusals
def task_suspend(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """Suspend a non-terminal task: nobody can claim it or its review until it is resumed.

    Whoever holds it is released and learns at its next heartbeat (lease_lost, exit 42): a
    CLAIMED task goes back to the queue by override block + release before the overlay is set
    (its coder is then free to take other work), a task under review loses its pending review
    claims. Suspending a terminal or an already suspended task: 409.
    """
    project = task.project
    _require_admin(actor, project)
    reason = clean_text(reason, "reason", max_length=2000)
    who = _who(actor)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        if task.is_suspended:
            raise _conflict(
                f"{task.key} is already suspended (by {task.suspended_by}: "
                f"{task.suspended_reason})",
                project=project,
                actor=actor,
                action="suspend",
                now=now,
                task=task,
                details={"suspended": True},
            )
        if task.is_terminal:
            raise _conflict(
                f"{task.key} is {task.status}; a terminal task cannot be suspended",
                project=project,
                actor=actor,
                action="suspend",
                now=now,
                task=task,
                details={"status": task.status},
            )
        lost = f"suspended: {reason}"
        released: list[str] = []
        if task.status == "CLAIMED":
            released = [task.assigned_to]
            task = take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=lost,
                block_reason=f"Suspended by {who}: {reason}",
                answer=f"Suspended by {who}: {reason}",
            )
        elif task.status == "READY_FOR_REVIEW":
            released = release_reviewers(task, now=now, lost=lost)
        task.suspended_at = now
        task.suspended_by = who
        task.suspended_reason = reason
        _save(task, now)
        record_event(
            project=project,
            actor=actor,
            action="suspended",
            task=task,
            now=now,
            detail=reason,
            data={"status": task.status, **({"released": released} if released else {})},
        )
    return task


@records_refusals
def task_resume(*, task: Task, actor: Actor, now: datetime) -> Task:
    """Lift the suspension; the task is claimable again where it stands.

    A suspended task is not CLAIMED (suspending returned its claim to the queue), except one
    imported that way: it returns to UNCLAIMED by override block + release, like seed 004's
    `resume → PENDING`.
    """
    project = task.project
    _require_admin(actor, project)
    who = _who(actor)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        if not task.is_suspended:
            raise _conflict(
                f"{task.key} is not suspended",
                project=project,
                actor=actor,
                action="resume",
                now=now,
                task=task,
                details={"suspended": False},
            )
        reason = task.suspended_reason
        _clear_suspension(task)
        _save(task, now)
        if task.status == "CLAIMED":
            task = take_claim_back(
                task,
                actor=actor,
                now=now,
                lost=f"resumed by {who} into the queue",
                block_reason=f"Resumed by {who} after suspension ({reason})",
                answer=f"Resumed by {who}: back to the queue",
            )
        record_event(
            project=project,
            actor=actor,
            action="resumed",
            task=task,
            now=now,
            detail=f"{task.key} resumed ({task.status}); it was suspended: {reason}",
            data={"status": task.status},
        )
    return task


# ---------------------------------------------------------------------------------------------
# the human approval gate (seed 004 APPROVAL_REQUIRED; SPEC §12)
# ---------------------------------------------------------------------------------------------


def _require_awaiting(task: Task, *, actor: Actor, now: datetime, action: str, to: str) -> None:
    """The locked task must wait for a human: READY_FOR_REVIEW, gated, approvals complete."""
    project = task.project
    if task.status != "READY_FOR_REVIEW":
        raise refusal(
            InvalidTransition(
                from_status=task.status,
                to_status=to,
                allowed=p.task_targets(task.status),
                message=f"{task.key} is {task.status}; it is not awaiting human approval",
            ),
            project=project,
            actor=actor,
            action=action,
            now=now,
            task=task,
            to_status=to,
        )
    if task.is_suspended:
        raise _conflict(
            f"{task.key} is suspended: {task.suspended_reason}",
            project=project,
            actor=actor,
            action=action,
            now=now,
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
        raise _conflict(
            f"{task.key} is not awaiting human approval: {reason}",
            project=project,
            actor=actor,
            action=action,
            now=now,
            task=task,
            details={"awaiting_human_approval": False},
        )


@records_refusals
def task_human_approve(*, task: Task, actor: Actor, now: datetime, note: str = "") -> Task:
    """READY_FOR_REVIEW → APPROVED by a human, once the reviewers have approved.

    `approved_by` names the approving reviewers (the merge is theirs to report); the event
    names the human.
    """
    project = task.project
    _require_admin(actor, project)
    note = clean_text(note, "note", required=False, max_length=2000)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        _require_awaiting(task, actor=actor, now=now, action="human_approve", to="APPROVED")
        approvers, _ = round_approvals(task)
        task.approved_by = approvers
        _close_review_round(task, now)
        _fsm(task, "approve", actor=actor, project=project, now=now, to="APPROVED")
        _save(task, now)
        coder = _agent_row(project, task.assigned_to)
        if coder is not None and coder.current_task_id == task.pk:
            _release_agent(coder, task)
        record_event(
            project=project,
            actor=actor,
            action="human_approved",
            task=task,
            now=now,
            from_status="READY_FOR_REVIEW",
            to_status="APPROVED",
            detail=note or f"{task.key} approved for merge by {_who(actor)}",
            data={"commit": task.review_commit, "approvals": approvers},
        )
    return task


@records_refusals
def task_human_reject(*, task: Task, actor: Actor, reason: str, now: datetime) -> Task:
    """READY_FOR_REVIEW → REJECTED by a human: one review cycle, and the limits apply exactly as
    after a reviewer's rejection (review_deadlock, max iterations)."""
    project = task.project
    _require_admin(actor, project)
    reason = clean_text(reason, "reason", max_length=5000)
    config = config_of(project)
    with transaction.atomic():
        task = _lock_task_and_its_agents(task)
        _require_awaiting(task, actor=actor, now=now, action="human_reject", to="REJECTED")
        coder = _agent_row(project, task.assigned_to)
        _reject(task, actor, reason, now=now, config=config, coder=coder, action="human_rejected")
    return task


# ---------------------------------------------------------------------------------------------
# per-task limits
# ---------------------------------------------------------------------------------------------

LIMIT_FIELDS: tuple[str, ...] = (
    "priority",
    "max_iterations",
    "max_review_cycles",
    "lease_duration_override",
    "needs_human_approval",
)


def _clean_limit(name: str, value: Any) -> Any:
    if name == "needs_human_approval":
        if not isinstance(value, bool):
            raise ProtocolValidationError(name, "true or false")
        return value
    if name == "priority":
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 5:
            raise ProtocolValidationError(name, "an integer from 1 (highest) to 5")
        return value
    if value is None:
        return None  # back to the project's setting
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ProtocolValidationError(name, "a positive integer, or null for the project's")
    return value


def _shown(value: Any) -> str:
    return "project default" if value is None else str(value).lower()


@records_refusals
def task_set_limits(*, task: Task, actor: Actor, now: datetime, **changes: Any) -> Task:
    """Per-task overrides (seed 002 "Config Scope"): max_iterations, max_review_cycles,
    lease_duration_override (positive or null = the project's), needs_human_approval, priority.

    An unknown key is a 400 naming it. Values equal to the current ones are no change; when
    nothing changes, nothing is written.
    """
    project = task.project
    _require_admin(actor, project)
    unknown = sorted(set(changes) - set(LIMIT_FIELDS))
    if unknown:
        raise ProtocolValidationError(
            unknown[0], f"not a per-task limit; one of {', '.join(LIMIT_FIELDS)}"
        )
    if not changes:
        raise ProtocolValidationError("limits", f"give at least one of {', '.join(LIMIT_FIELDS)}")
    cleaned = {name: _clean_limit(name, value) for name, value in changes.items()}
    with transaction.atomic():
        task = lock_task(task)
        if task.is_terminal:
            raise _conflict(
                f"{task.key} is {task.status}; its limits no longer apply",
                project=project,
                actor=actor,
                action="set_limits",
                now=now,
                task=task,
                details={"status": task.status},
            )
        diff = {
            name: (getattr(task, name), value)
            for name in LIMIT_FIELDS
            if name in cleaned and getattr(task, name) != (value := cleaned[name])
        }
        if not diff:
            return task
        gate_lifted = "needs_human_approval" in diff and not cleaned["needs_human_approval"]
        if gate_lifted and _awaiting(task):
            raise _conflict(
                f"{task.key} is awaiting human approval: approve or reject it instead",
                project=project,
                actor=actor,
                action="set_limits",
                now=now,
                task=task,
                details={"awaiting_human_approval": True},
            )
        for name, (_, new) in diff.items():
            setattr(task, name, new)
        _save(task, now)
        record_event(
            project=project,
            actor=actor,
            action="limits_set",
            task=task,
            now=now,
            detail=f"{task.key}: "
            + ", ".join(
                f"{name} {_shown(old)} → {_shown(new)}" for name, (old, new) in diff.items()
            ),
            data={"changes": {name: {"old": old, "new": new} for name, (old, new) in diff.items()}},
        )
    return task


def _awaiting(task: Task) -> bool:
    return (
        task.status == "READY_FOR_REVIEW" and task.needs_human_approval and round_approvals(task)[1]
    )


# ---------------------------------------------------------------------------------------------
# the project: pause / resume, configuration
# ---------------------------------------------------------------------------------------------


@records_refusals
def project_pause(*, project: Project, actor: Actor, reason: str, now: datetime) -> Project:
    """Seed 000 PAUSE: claims are refused (`paused`), heartbeats answer stop / exit 42."""
    _require_admin(actor, project)
    reason = clean_text(reason, "reason", max_length=500)
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if locked.is_paused:
            raise _conflict(
                f"project {project.slug} is already paused since "
                f"{p.format_timestamp(locked.paused_at)}: {locked.paused_reason}",
                project=project,
                actor=actor,
                action="project_pause",
                now=now,
                details={"paused": True},
            )
        locked.paused_at = now
        locked.paused_reason = reason
        locked.save(update_fields=["paused_at", "paused_reason"])
        record_event(project=locked, actor=actor, action="project_paused", now=now, detail=reason)
    project.paused_at, project.paused_reason = locked.paused_at, locked.paused_reason
    return locked


@records_refusals
def project_resume(*, project: Project, actor: Actor, now: datetime) -> Project:
    """Lift the pause: agents may claim again."""
    _require_admin(actor, project)
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        if not locked.is_paused:
            raise _conflict(
                f"project {project.slug} is not paused",
                project=project,
                actor=actor,
                action="project_resume",
                now=now,
                details={"paused": False},
            )
        since, reason = locked.paused_at, locked.paused_reason
        locked.paused_at = None
        locked.paused_reason = ""
        locked.save(update_fields=["paused_at", "paused_reason"])
        record_event(
            project=locked,
            actor=actor,
            action="project_resumed",
            now=now,
            detail=f"resumed after pause since {p.format_timestamp(since)} ({reason})",
        )
    project.paused_at, project.paused_reason = None, ""
    return locked


CONFIG_FIELDS: tuple[str, ...] = tuple(
    f.name for f in ProjectConfig._meta.concrete_fields if f.name not in ("id", "project")
)


@records_refusals
def config_update(*, project: Project, actor: Actor, now: datetime, **fields: Any) -> ProjectConfig:
    """Edit the project's configuration; the model's own rules decide (400 naming the field)."""
    _require_admin(actor, project)
    unknown = sorted(set(fields) - set(CONFIG_FIELDS))
    if unknown:
        raise ProtocolValidationError(
            unknown[0], f"not a config setting; one of {', '.join(CONFIG_FIELDS)}"
        )
    if not fields:
        raise ProtocolValidationError("config", f"give at least one of {', '.join(CONFIG_FIELDS)}")
    for name, value in fields.items():
        if isinstance(value, bool):
            raise ProtocolValidationError(name, "not a boolean")
    config_of(project)  # created with the defaults if the project has none yet
    with transaction.atomic():
        config = ProjectConfig.objects.select_for_update().get(project=project)
        old = {name: getattr(config, name) for name in fields}
        for name, value in fields.items():
            if value is None and name == "escalation_webhook":
                value = ""  # null in state.yaml, blank here
            setattr(config, name, value)
        # Django's ValidationError names the field (400); the API and the settings form map it.
        # The field rules first: the model's clean() compares values it assumes are numbers.
        config.clean_fields(exclude=["project"])
        config.clean()
        diff = {name: (old[name], getattr(config, name)) for name in fields}
        diff = {name: pair for name, pair in diff.items() if pair[0] != pair[1]}
        if diff:
            config.save(update_fields=list(diff))
            record_event(
                project=project,
                actor=actor,
                action="config_updated",
                now=now,
                detail=", ".join(
                    f"{name} {old or 'none'} → {new or 'none'}" for name, (old, new) in diff.items()
                ),
                data={"changes": {n: {"old": o, "new": v} for n, (o, v) in diff.items()}},
            )
    project.config = config
    return config


# ---------------------------------------------------------------------------------------------
# discoveries
# ---------------------------------------------------------------------------------------------

TRIAGE_DECISIONS: dict[str, str] = {
    "convert": Discovery.Triage.CONVERTED,
    "defer": Discovery.Triage.DEFERRED,
    "reject": Discovery.Triage.REJECTED,
}
# What a discovery may be converted into: task_create's fields.
CONVERT_FIELDS: frozenset[str] = frozenset(
    {
        "key",
        "description",
        "priority",
        "spec_ref",
        "done_when",
        "scope",
        "criticality",
        "max_iterations",
        "max_review_cycles",
        "lease_duration_override",
        "needs_human_approval",
        "depends_on",
        "sprint_scope",
    }
)


@records_refusals
def discovery_triage(
    *,
    discovery: Discovery,
    actor: Actor,
    decision: str,
    now: datetime,
    note: str = "",
    task: dict[str, Any] | None = None,
) -> Discovery:
    """A human triages a discovery (SPEC §3, §7).

    `convert` creates a DRAFT task from `task` (key, and optionally description — the
    discovery's by default — and task_create's other fields) and needs the admin role: it
    creates work. `defer` and `reject` need a member. Converted or rejected discoveries are
    settled (409); a deferred one may still be converted or rejected.
    """
    project = discovery.project
    if decision not in TRIAGE_DECISIONS:
        raise ProtocolValidationError("decision", f"one of {', '.join(TRIAGE_DECISIONS)}")
    role = Membership.Role.ADMIN if decision == "convert" else Membership.Role.MEMBER
    require_role(actor, project, agent_roles=(), human=role)
    note = clean_text(note, "note", required=False, max_length=2000)
    spec: dict[str, Any] = {}
    if decision == "convert":
        if not isinstance(task, dict):
            raise ProtocolValidationError("task", "the task to create (key, description, …)")
        unknown = sorted(set(task) - CONVERT_FIELDS)
        if unknown:
            raise ProtocolValidationError(f"task.{unknown[0]}", "unknown field")
        if not task.get("key"):
            raise ProtocolValidationError("task.key", "is required to convert a discovery")
        spec = dict(task)
        spec.setdefault("description", discovery.description)
    elif task:
        raise ProtocolValidationError("task", "only a conversion creates a task")
    with transaction.atomic():
        discovery = Discovery.objects.select_for_update().get(pk=discovery.pk)
        settled = discovery.triage in (Discovery.Triage.CONVERTED, Discovery.Triage.REJECTED)
        if settled or discovery.converted_to_task or discovery.triage == TRIAGE_DECISIONS[decision]:
            state = "converted" if discovery.converted_to_task else discovery.triage
            raise _conflict(
                f"{discovery.disc_id} is already {state}",
                project=project,
                actor=actor,
                action="discovery_triage",
                now=now,
                details={"discovery": discovery.disc_id, "triage": state},
            )
        created: Task | None = None
        if decision == "convert":
            depends_on = spec.pop("depends_on", None) or ()
            created = _create(project=project, actor=actor, now=now, depends_on=depends_on, **spec)
            discovery.converted_to_task = created.key
        discovery.triage = TRIAGE_DECISIONS[decision]
        discovery.triage_note = note
        discovery.save(update_fields=["triage", "triage_note", "converted_to_task"])
        outcome = f"converted into {created.key}" if created else TRIAGE_DECISIONS[decision]
        record_event(
            project=project,
            actor=actor,
            action=f"discovery_{TRIAGE_DECISIONS[decision]}",
            task=created,
            now=now,
            detail=f"{discovery.disc_id} {outcome}" + (f": {note}" if note else ""),
            data={"discovery": discovery.disc_id},
        )
    return discovery

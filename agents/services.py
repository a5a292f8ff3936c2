"""Agent identities and keys: every write about agents (STYLE.md services)."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction

from agents.models import (
    Agent,
    AgentKey,
    IdempotentRequest,
    Run,
    RunState,
    RunUsage,
    run_outcome,
)
from agents.selectors import run_made_progress
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Handoff, Review, Task
from boards.coordination.selectors.access import config_of
from boards.coordination.selectors.availability import ERROR, OVERLOADED, agent_availability
from boards.coordination.selectors.budgets import budget_refusal, usage_attribution
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.work import Stop, stop_reason
from boards.coordination.services.actors import ANY_AGENT, Actor
from boards.coordination.services.audit import Attempt, record_event, records_refusals
from boards.coordination.services.authority import require_role
from boards.coordination.services.budgets import refuse_if_over_budget
from boards.coordination.services.cleaning import clean_string_list, clean_text
from boards.coordination.services.locking import lock_agent, lock_own_claim, lock_task
from boards.coordination.services.tasks.holders import release_holder, release_reviewers
from boards.coordination.services.tasks.overrides import take_claim_back
from boards.coordination.services.tasks.stalls import task_stalled
from boards.errors import (
    Collision,
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    LeaseLost,
    ProtocolError,
    ProtocolValidationError,
)
from boards.protocol import (
    AGENT_ID_PREFIX,
    Action,
    AgentStatus,
    TaskStatus,
    agent_id_matches_role,
    format_timestamp,
)


@records_refusals
def agent_key_issue(
    *, agent: Agent, actor: Actor, now: datetime, label: str = ""
) -> tuple[AgentKey, str]:
    """Generate a key for `agent`; the plain key is returned once and never stored."""
    project = agent.project
    require_role(actor, project, agent_roles=(), system=True)
    label = clean_text(label, "label", required=False, max_length=100)
    prefix = secrets.token_hex(AgentKey.PREFIX_LEN // 2)
    plain = f"liza_{prefix}_{secrets.token_urlsafe(32)}"
    with transaction.atomic():
        key = AgentKey.objects.create(
            agent=agent,
            project=project,
            prefix=prefix,
            key_hash=AgentKey.hash(plain),
            label=label,
            created=now,
        )
        record_event(
            project=project,
            actor=actor,
            action=Action.KEY_ISSUED,
            now=now,
            detail=f"key {prefix}… issued for {agent.agent_id}" + (f" ({label})" if label else ""),
            data={"agent": agent.agent_id, "prefix": prefix},
        )
    return key, plain


# last_used_at is for humans reading the key list; writing it on every request would add a
# write to every agent call, so it is refreshed at most once a minute.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def agent_key_used(*, key: AgentKey, now: datetime) -> None:
    """Note that `key` authenticated a request (no event: it is not an action of the protocol)."""
    if key.last_used_at is None or now - key.last_used_at > LAST_USED_RESOLUTION:
        AgentKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now


def agent_ready(*, agent: Agent) -> None:
    """Seed 000 STARTING → IDLE ("registration complete") once the agent's first write through
    the API succeeds (boards.api.base). Coders and reviewers also leave STARTING on their first
    heartbeat or claim; a planner that only plans does neither, and stayed STARTING for a whole
    run on the board (issue 25)."""
    with transaction.atomic():
        locked = Agent.objects.select_for_update().filter(pk=agent.pk).first()
        if locked is None or locked.status != AgentStatus.STARTING:
            return
        locked.ready()
        rows.save_fields(locked, ["status"])
        outbox.changed(locked.project_id, outbox.AGENT, locked.pk)


@records_refusals
def agent_key_revoke(*, key: AgentKey, actor: Actor, now: datetime) -> AgentKey:
    """Revoke a key: its next request is a 401. Revoking a revoked key changes nothing."""
    project = key.project
    require_role(actor, project, agent_roles=(), system=True)
    with transaction.atomic():
        key = AgentKey.objects.select_for_update().select_related("agent").get(pk=key.pk)
        if key.revoked_at is None:
            key.revoked_at = now
            key.save(update_fields=["revoked_at"])
            record_event(
                project=project,
                actor=actor,
                action=Action.KEY_REVOKED,
                now=now,
                detail=f"key {key.prefix}… of {key.agent.agent_id} revoked",
                data={"agent": key.agent.agent_id, "prefix": key.prefix},
            )
    return key


@records_refusals
def agent_key_label(*, key: AgentKey, actor: Actor, label: str, now: datetime) -> AgentKey:
    """A human's note on a key (what it is for); nothing the protocol reads."""
    project = key.project
    require_role(actor, project, agent_roles=())
    label = clean_text(label, "label", required=False, max_length=100)
    with transaction.atomic():
        key = AgentKey.objects.select_for_update().select_related("agent").get(pk=key.pk)
        if key.label != label:
            old, key.label = key.label, label
            key.save(update_fields=["label"])
            record_event(
                project=project,
                actor=actor,
                action=Action.KEY_LABELLED,
                now=now,
                detail=f"key {key.prefix}… label {old or 'none'} → {label or 'none'}",
                data={"agent": key.agent.agent_id, "prefix": key.prefix},
            )
    return key


@records_refusals
def agent_set_security_reviewer(
    *, agent: Agent, actor: Actor, security_reviewer: bool, now: datetime
) -> Agent:
    """Seed 001: whether the agent counts as a security reviewer (an admin's decision)."""
    project = agent.project
    require_role(actor, project, agent_roles=())
    if not isinstance(security_reviewer, bool):
        raise ProtocolValidationError("security_reviewer", "true or false")
    with transaction.atomic():
        agent = lock_agent(agent)
        if agent.security_reviewer != security_reviewer:
            agent.security_reviewer = security_reviewer
            agent.save(update_fields=["security_reviewer"])
            outbox.changed(project.pk, outbox.AGENT, agent.pk)
            record_event(
                project=project,
                actor=actor,
                action=Action.AGENT_UPDATED,
                now=now,
                detail=f"{agent.agent_id}: security_reviewer → {security_reviewer}",
                data={"agent_id": agent.agent_id, "security_reviewer": security_reviewer},
            )
    return agent


# ---------------------------------------------------------------------------------------------
# identity and liveness (seed 000 "Agent State Machine", seed 002 "Lease Model")
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeartbeatResult:
    agent: Agent
    task: Task | None
    reviews: list[Review]
    # "paused" / "checkpoint" when the agent must stop (exit 42) although its leases were kept.
    stop: Stop | None


@records_refusals
def agent_register(
    *, project: Project, agent_id: str, role: str, now: datetime, terminal: str = ""
) -> Agent:
    """Register (or restart) an identity; an id held by a live lease is a collision.

    Seed 000: "If agent registration fails (ID collision with active lease), the agent process
    exits immediately with error — it never enters the state machine."
    """
    if role not in Agent.Role.values:
        raise ProtocolValidationError("role", f"one of {', '.join(Agent.Role.values)}")
    if not isinstance(agent_id, str) or not agent_id_matches_role(agent_id, role):
        prefix = AGENT_ID_PREFIX[role]
        raise ProtocolValidationError("agent_id", f"must look like {prefix}-N for role {role}")
    if not isinstance(terminal, str) or len(terminal) > 200:
        raise ProtocolValidationError("terminal", "a string of at most 200 characters")
    config = config_of(project)
    with transaction.atomic():
        agent = Agent.objects.select_for_update().filter(project=project, agent_id=agent_id).first()
        # A handoff frees the identity at once for the same id's next session (seed 000 "Exit
        # 42 with Handoff"): only a live lease held by a process still at work is a collision.
        held = agent is not None and agent.has_live_lease(now)
        if agent is not None and (
            (held and agent.status != AgentStatus.HANDOFF) or agent.role != role
        ):
            raise Attempt(project=project, actor=agent, action="register", now=now).refuse(
                Collision(
                    f"{agent_id} is held by a live lease until "
                    f"{format_timestamp(agent.lease_expires)}; exit",
                    {"agent_id": agent_id},
                )
            )
        if agent is not None and not agent.enabled:
            raise Forbidden(f"agent {agent_id} is disabled")
        lease = now + timedelta(seconds=config.lease_duration)
        if agent is None:
            agent = Agent(project=project, agent_id=agent_id, role=role)
            action, detail = "registered", f"{agent_id} registered as {role}"
        else:
            agent.restart()
            # A fresh process starts clean: whatever it lost was its predecessor's.
            agent.lost_task, agent.lost_reason = None, ""
            action, detail = "restarted", f"{agent_id} restarted fresh"
        agent.lease_expires = lease
        agent.heartbeat = now
        agent.registered_at = now
        agent.terminal = terminal
        agent.save()
        record_event(
            project=project,
            actor=agent,
            action=action,
            now=now,
            detail=detail,
            to_status=agent.status,
        )
    return agent


@records_refusals
def agent_heartbeat(
    *,
    agent: Agent,
    now: datetime,
    context_percent: int | None = None,
    progress_at: datetime | None = None,
) -> HeartbeatResult:
    """Extend the agent lease and the task and review leases it holds (SPEC §6).

    A coder whose task was taken over gets lease_lost: it must exit 42 (seed 002 "If original
    agent returns after expiry → must self-abort immediately").

    `progress_at` (issue 24): its supervised run's last progress (output, a commit), as its
    supervisor saw it. Older than `progress_stale` (the supervisor's watchdog should have
    stopped it long before: a hung supervisor), the task lease is not extended — it lapses —
    and the answer says stop ("stalled").
    """
    project = agent.project
    if context_percent is not None and (
        isinstance(context_percent, bool)
        or not isinstance(context_percent, int)
        or not 0 <= context_percent <= 100
    ):
        raise ProtocolValidationError("context_percent", "an integer from 0 to 100")
    config = config_of(project)
    if progress_at is not None and progress_at > now:
        progress_at = now  # a supervisor's clock ahead of ours: progress now, not later
    stale = progress_at is not None and progress_stale(progress_at, now, config)
    with transaction.atomic():
        agent = lock_agent(agent)
        if not agent.enabled:
            raise Forbidden(f"agent {agent.agent_id} is disabled")
        task = None
        if agent.lost_task_id is not None:
            lost = agent.lost_task
            raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
                LeaseLost(
                    f"{agent.agent_id} lost {lost.key} ({agent.lost_reason}); exit 42",
                    {
                        "task": lost.key,
                        "reason": agent.lost_reason,
                        "assigned_to": lost.assigned_to or None,
                    },
                ),
                task=lost,
            )
        # Lock order (boards.coordination.services.locking): the agent, then its task, then its
        # reviews. A coder holds at most one task and no review, a reviewer review leases and no
        # task (seed 000): each asks only for its own rows. The review rows are locked alone (their
        # tasks are read, not locked: only the lease length is taken from them).
        if agent.current_task_id is not None:
            task = rows.get_locked(Task, agent.current_task_id)
            agent.current_task = task  # the answer shows it: no second read
            if task.status == TaskStatus.CLAIMED:
                lost = task.assigned_to != agent.agent_id or not lease_alive(
                    task.lease_expires, now, config
                )
                if lost:
                    raise Attempt(project=project, actor=agent, action="heartbeat", now=now).refuse(
                        LeaseLost(
                            f"{agent.agent_id} lost its lease on {task.key}; exit 42",
                            {"task": task.key},
                        ),
                        task=task,
                    )
                if not stale:
                    task.lease_expires = task.lease_until(now=now, config=config)
                    rows.save_fields(task, ["lease_expires"])
        reviews = []
        if agent.role == Agent.Role.CODE_REVIEWER:
            reviews = list(
                Review.objects.select_for_update(of=("self",))
                .select_related("task")
                .filter(
                    task__project=project,
                    reviewer=agent.agent_id,
                    closed_at__isnull=True,
                    verdict="",
                    lease_expires__isnull=False,
                )
                .order_by("pk")
            )
        for review in reviews:
            if lease_alive(review.lease_expires, now, config):
                review.lease_expires = now + timedelta(seconds=review.task.lease_seconds(config))
                rows.save_fields(review, ["lease_expires"])
        if agent.status == AgentStatus.STARTING:
            agent.ready()
        agent.heartbeat = now
        agent.lease_expires = max(
            [now + timedelta(seconds=config.lease_duration)]
            + [r.lease_expires for r in reviews if r.lease_expires]
            + ([task.lease_expires] if task is not None and task.lease_expires else [])
        )
        if context_percent is not None:
            agent.context_percent = context_percent
        fields = ["status", "heartbeat", "lease_expires", "context_percent"]
        if progress_at is not None:
            agent.progress_at = progress_at
            fields.append("progress_at")
        # Only what a heartbeat changes: a narrow UPDATE of unindexed columns stays HOT.
        rows.save_fields(agent, fields)
        # Heartbeats write no Event, but open boards show leases and heartbeat ages.
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        if task is not None:
            outbox.changed(project.pk, outbox.TASK, task.pk)
    stop = stop_reason(project)
    if stop is None:
        # Issue 24: a spent budget stops the running agent through its heartbeat, whatever it
        # holds; its supervisor terminates it (the run ends with reason "budget").
        exhausted = budget_refusal(
            project=project, agent=agent, tasks=[task, *(r.task for r in reviews)]
        )
        if exhausted is not None:
            stop = Stop("budget_exhausted", f"{exhausted.message}; stop the agent")
    if stop is None and stale:
        stop = Stop(
            "stalled",
            f"no progress reported since {format_timestamp(progress_at)} (stall_timeout "
            f"{config.stall_timeout} s): the task lease is not extended; stop the agent",
        )
    return HeartbeatResult(agent=agent, task=task, reviews=reviews, stop=stop)


def progress_stale(progress_at: datetime, now: datetime, config) -> bool:
    """THE server's side of the progress watchdog: a supervised run's last progress older than
    twice `stall_timeout` — its supervisor's own watchdog stops it at once `stall_timeout`, so
    a supervisor still heartbeating past twice that is hung itself."""
    return now - progress_at > timedelta(seconds=2 * config.stall_timeout)


@records_refusals
def agent_handoff(
    *,
    agent: Agent,
    task: Task,
    now: datetime,
    summary: str,
    next_action: str,
    context_used: str = "",
    approach: str = "",
    blockers: str = "",
    files_modified: list[str] | None = None,
    next_steps: list[str] | None = None,
) -> Handoff:
    """Context exhaustion: write the handoff, set handoff_pending, agent → HANDOFF (seed 000)."""
    project = task.project
    require_role(agent, project, agent_roles=("coder",), human=None)
    summary = clean_text(summary, "summary", max_length=500)
    next_action = clean_text(next_action, "next_action", max_length=500)
    config = config_of(project)
    with transaction.atomic():
        agent, task = lock_own_claim(
            agent, task, action="handoff", to=TaskStatus.CLAIMED, now=now, config=config
        )
        handoff, _ = Handoff.objects.update_or_create(
            task=task,
            defaults={
                "project": project,
                "agent": agent.agent_id,
                "context_used": clean_text(
                    context_used, "context_used", required=False, max_length=16
                ),
                "timestamp": now,
                "summary": summary,
                "next_action": next_action,
                "approach": clean_text(approach, "approach", required=False),
                "blockers": clean_text(blockers, "blockers", required=False),
                "files_modified": clean_string_list(
                    files_modified, "files_modified", max_items=500
                ),
                "next_steps": clean_string_list(next_steps, "next_steps"),
            },
        )
        task.handoff_pending = True
        task.save(update_fields=["handoff_pending"])
        if agent.status in (AgentStatus.WORKING, AgentStatus.REVIEWING):
            agent.hand_off()
            agent.save()
        record_event(
            project=project,
            actor=agent,
            action="handoff",
            task=task,
            now=now,
            detail=f"{summary} → next: {next_action}",
        )
    return handoff


@records_refusals
def agent_handoff_pickup(*, agent: Agent, task: Task, now: datetime) -> Handoff | None:
    """The next session reads the handoff and clears handoff_pending (seed 000)."""
    project = task.project
    require_role(agent, project, agent_roles=("coder",), human=None)
    config = config_of(project)
    with transaction.atomic():
        agent, task = lock_own_claim(
            agent, task, action="handoff_pickup", to=TaskStatus.CLAIMED, now=now, config=config
        )
        handoff = Handoff.objects.filter(task=task).first()
        if task.handoff_pending:
            task.handoff_pending = False
            task.save(update_fields=["handoff_pending"])
            record_event(
                project=project,
                actor=agent,
                action="handoff_read",
                task=task,
                now=now,
                detail=f"{agent.agent_id} resumed from the handoff",
            )
    return handoff


@records_refusals
def agent_create(
    *,
    project: Project,
    actor,
    role: str,
    now: datetime,
    agent_id: str = "",
    security_reviewer: bool = False,
) -> Agent:
    """A new identity (not yet registered); the id is the next free `<role-prefix>-N`."""
    require_role(actor, project, agent_roles=())
    if role not in Agent.Role.values:
        raise ProtocolValidationError("role", f"one of {', '.join(Agent.Role.values)}")
    with transaction.atomic():
        Project.objects.select_for_update().get(pk=project.pk)
        if agent_id:
            if not agent_id_matches_role(agent_id, role):
                raise ProtocolValidationError(
                    "agent_id", f"must look like {AGENT_ID_PREFIX[role]}-N for role {role}"
                )
            if Agent.objects.filter(project=project, agent_id=agent_id).exists():
                raise ProtocolValidationError("agent_id", f"{agent_id} already exists")
        else:
            taken = set(
                Agent.objects.filter(project=project, role=role).values_list("agent_id", flat=True)
            )
            number = 1
            while f"{AGENT_ID_PREFIX[role]}-{number}" in taken:
                number += 1
            agent_id = f"{AGENT_ID_PREFIX[role]}-{number}"
        agent = Agent.objects.create(
            project=project, agent_id=agent_id, role=role, security_reviewer=security_reviewer
        )
        record_event(
            project=project,
            actor=actor,
            action="agent_created",
            now=now,
            detail=f"{agent_id} created ({role})",
            data={"agent": agent_id},
        )
    return agent


@records_refusals
def agent_set_enabled(*, agent: Agent, actor, enabled: bool, now: datetime) -> Agent:
    """An admin disables (or enables again) an agent identity.

    A disabled agent's requests get 403 and it cannot register. What it held is taken back: a
    CLAIMED task returns to the queue (override block + release, as a released stuck claim),
    pending review claims close, and the agent is told at its next request that it lost them.
    """
    project = agent.project
    require_role(actor, project, agent_roles=())
    if not isinstance(enabled, bool):
        raise ProtocolValidationError("enabled", "true or false")
    action = "agent_enabled" if enabled else "agent_disabled"
    with transaction.atomic():
        agent = lock_agent(agent)
        if agent.enabled == enabled:
            raise Attempt(project=project, actor=actor, action=action, now=now).refuse(
                Conflict(
                    f"{agent.agent_id} is already {'enabled' if enabled else 'disabled'}",
                    {"agent": agent.agent_id, "enabled": enabled},
                )
            )
        released: list[str] = []
        if not enabled:
            lost = "agent disabled"
            if agent.current_task_id is not None:
                task = lock_task(agent.current_task)
                released.append(task.key)
                if task.status == TaskStatus.CLAIMED and task.assigned_to == agent.agent_id:
                    take_claim_back(
                        task,
                        actor=actor,
                        now=now,
                        lost=lost,
                        block_reason=f"{agent.agent_id} was disabled",
                        answer=f"{agent.agent_id} was disabled: back to the queue",
                    )
                else:
                    release_holder(agent, task, lost=lost)
                agent = lock_agent(agent)
            for review in Review.objects.filter(
                project=project, reviewer=agent.agent_id, closed_at__isnull=True, verdict=""
            ).select_related("task"):
                task = lock_task(review.task)
                if release_reviewers(task, now=now, lost=lost, reviewer=agent.agent_id):
                    released.append(task.key)
            agent = lock_agent(agent)
        agent.enabled = enabled
        agent.save()
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        record_event(
            project=project,
            actor=actor,
            action=action,
            now=now,
            detail=f"{agent.agent_id} {'enabled' if enabled else 'disabled'}"
            + (f"; released {', '.join(released)}" if released else ""),
            data={"agent": agent.agent_id, **({"released": released} if released else {})},
        )
    return agent


AVAILABILITY_CHOICES = ("available", "overloaded")


@records_refusals
def agent_set_availability(*, agent: Agent, actor, state: str, now: datetime) -> Agent:
    """A project admin marks an agent overloaded (it keeps what it holds and takes nothing new)
    or available again, which also clears an error state: only lease expiries after `now` count
    towards a new one (`boards.coordination.selectors.availability`, seed 003 ERROR → IDLE)."""
    project = agent.project
    require_role(actor, project, agent_roles=())
    if state not in AVAILABILITY_CHOICES:
        raise ProtocolValidationError("state", f"one of {', '.join(AVAILABILITY_CHOICES)}")
    with transaction.atomic():
        agent = lock_agent(agent)
        before = agent_availability(agent, now)

        def refused(message: str) -> ProtocolError:
            return Attempt(
                project=project, actor=actor, action="agent_availability_set", now=now
            ).refuse(Conflict(message, {"agent": agent.agent_id, "availability": before.state}))

        if state == "overloaded":
            if agent.overloaded:
                raise refused(f"{agent.agent_id} is already overloaded")
            agent.overloaded = True
            agent.save(update_fields=["overloaded"])
        else:
            if before.state != OVERLOADED and before.state != ERROR:
                raise refused(f"{agent.agent_id} is {before.state}, not overloaded or in error")
            agent.overloaded = False
            agent.error_cleared_at = now
            agent.save(update_fields=["overloaded", "error_cleared_at"])
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        record_event(
            project=project,
            actor=actor,
            action="agent_availability_set",
            now=now,
            detail=f"{agent.agent_id}: {before.state} → {state}",
            data={"agent": agent.agent_id, "from": before.state, "to": state},
        )
    return agent


@records_refusals
def agent_create_with_key(
    *,
    project: Project,
    actor: Actor,
    role: str,
    now: datetime,
    agent_id: str = "",
    security_reviewer: bool = False,
    label: str = "",
) -> tuple[Agent, tuple[AgentKey, str]]:
    """A new identity and its first key (shown once), in one transaction."""
    with transaction.atomic():
        agent = agent_create.__wrapped__(
            project=project,
            actor=actor,
            role=role,
            now=now,
            agent_id=agent_id,
            security_reviewer=security_reviewer,
        )
        return agent, agent_key_issue.__wrapped__(agent=agent, actor=actor, now=now, label=label)


# -- idempotent writes (docs/decisions.md "Idempotency-Key") --------------------------------------

IDEMPOTENCY_TTL = timedelta(hours=24)


def idempotent_request_begin(
    *, agent: Agent, key: str, method: str, path: str, fingerprint: str, now: datetime
) -> tuple[IdempotentRequest, bool]:
    """Claim `key` for this request, or find the answer already given to it.

    Must run inside the transaction that applies the write (the API wraps the whole request).
    Returns `(record, True)` when this request is the first: the caller applies it and then
    calls `idempotent_request_finish`. Returns `(record, False)` for a retry: the stored answer.
    A concurrent retry blocks on the unique (agent, key) index until the first attempt's
    transaction ends, then replays its answer (or, if it rolled back, applies the write itself).
    """
    # Expired keys of this agent go first (bounded: one agent's day of writes).
    IdempotentRequest.objects.filter(agent=agent, created_at__lt=now - IDEMPOTENCY_TTL).delete()
    try:
        with transaction.atomic():
            record = IdempotentRequest.objects.create(
                agent=agent,
                key=key,
                fingerprint=fingerprint,
                method=method,
                path=path,
                created_at=now,
            )
        return record, True
    except IntegrityError:
        record = IdempotentRequest.objects.get(agent=agent, key=key)
    if record.fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            message=f"Idempotency-Key {key!r} was first used for {record.method} {record.path} "
            "with another body; use a fresh key for a new request",
            details={"field": "Idempotency-Key"},
        )
    return record, False


def idempotent_request_finish(*, record: IdempotentRequest, status_code: int, body: Any) -> None:
    """Store the answer the first request got, for its retries to replay."""
    record.status_code = status_code
    record.body = body
    record.save(update_fields=["status_code", "body"])


def idempotent_request_abandon(*, record: IdempotentRequest) -> None:
    """Forget a key whose request failed on the server's side: its retry is applied anew."""
    record.delete()


def idempotent_requests_purge(*, now: datetime) -> int:
    """Delete every idempotency record older than its 24 hours (agents that stopped sending
    keys would otherwise keep theirs); returns how many went."""
    deleted, _ = IdempotentRequest.objects.filter(created_at__lt=now - IDEMPOTENCY_TTL).delete()
    return deleted


# -- runs: each spawn of `liza supervise` (issue 12 §2) -------------------------------------------

RUN_OUTPUT_LINES = 200
RUN_OUTPUT_CHARS = 64_000
# A streamed chunk (`run_output_append`): what one request may add (the supervisor sends at
# most one a second per run, and cuts what it prints beyond that rate).
RUN_CHUNK_CHARS = 16_000
# An agent key as boards issue them (liza_<12 hex>_<secret>): never stored, whoever printed it.
_KEY_SHAPE = re.compile(r"liza_[0-9a-f]{12}_[A-Za-z0-9_\-]+")


def redact_output(text: str) -> str:
    """The last RUN_OUTPUT_LINES lines of an agent's output, agent keys hidden (the supervisor
    hides the key and LIZA_* secrets it knows; this catches any key-shaped string)."""
    text = text.replace("\x00", "")
    lines = _KEY_SHAPE.sub("[redacted]", text).splitlines()[-RUN_OUTPUT_LINES:]
    return "\n".join(lines)[-RUN_OUTPUT_CHARS:]


@records_refusals
def run_start(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    task: str | None = None,
    restart_reason: str = "",
    command: str = "",
) -> Run:
    """A supervisor spawned its agent command (on `task`, a key of this project, or none)."""
    require_role(agent, project, agent_roles=ANY_AGENT, human=None)
    restart_reason = clean_text(restart_reason, "restart_reason", required=False, max_length=100)
    command = redact_output(clean_text(command, "command", required=False, max_length=500))
    row = None
    if task:
        row = Task.objects.filter(project=project, key=task).first()
        if row is None:
            raise ProtocolValidationError("task", f"no task {task} in this project")
    # Issue 24: a spent budget refuses the spawn before it spends anything.
    refuse_if_over_budget(project, agent=agent, action="run_start", now=now, task=row)
    with transaction.atomic():
        run = Run.objects.create(
            project=project,
            agent=agent,
            task=row,
            started=now,
            restart_reason=restart_reason,
            command=command,
        )
        if row is not None:  # its card says "agent running" (issue 24)
            outbox.changed(project.pk, outbox.TASK, row.pk)
        return run


@records_refusals
def run_finish(
    *,
    run: Run,
    agent: Agent,
    now: datetime,
    exit_code: int,
    stopped_by: str = "",
    output: str = "",
) -> Run:
    """The spawn ended: its exit code, whether the supervisor stopped it, its last lines. A
    crash (neither 0 nor 42, not stopped) is logged for the board and the watcher."""
    project = run.project
    require_role(agent, project, agent_roles=ANY_AGENT, human=None)
    if run.agent_id != agent.pk:
        raise Forbidden(f"run {run.pk} is {run.agent.agent_id}'s, not {agent.agent_id}'s")
    stopped_by = clean_text(stopped_by, "stopped_by", required=False, max_length=100)
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.ended is not None:
            raise Conflict(f"run {run.pk} already ended", {"run": run.pk})
        run.ended = now
        run.exit_code = exit_code
        run.stopped_by = stopped_by
        run.progress = run_made_progress(run=run, now=now)
        run.state, run.reason = run_outcome(exit_code, stopped_by, run.progress)
        if output or not run.output:  # a streamed run's output is already here
            run.output = redact_output(output)
        run.save(
            update_fields=[
                "ended",
                "exit_code",
                "stopped_by",
                "output",
                "progress",
                "state",
                "reason",
            ]
        )
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        if run.task_id is not None:
            outbox.changed(project.pk, outbox.TASK, run.task_id)
        if run.state == RunState.STALLED and run.task is not None:
            task_stalled(task=run.task, agent=agent, run_id=run.pk, now=now)
        if run.crashed:
            record_event(
                project=project,
                actor=agent,
                action=Action.AGENT_CRASHED,
                task=run.task,
                now=now,
                detail=f"{agent.agent_id}'s agent exited {exit_code}"
                + (f" on {run.task.key}" if run.task else ""),
                data={"run": run.pk, "exit_code": exit_code},
            )
    return run


@records_refusals
def run_output_append(*, run: Run, agent: Agent, now: datetime, text: str) -> Run:
    """A running run's next lines, streamed by its supervisor (issue 24): appended, key-shaped
    strings redacted, the whole kept to its last RUN_OUTPUT_LINES lines; open drawers of the
    project see it live (the run's task changes). Only the run's own agent, only while it runs."""
    project = run.project
    require_role(agent, project, agent_roles=ANY_AGENT, human=None)
    if run.agent_id != agent.pk:
        raise Forbidden(f"run {run.pk} is {run.agent.agent_id}'s, not {agent.agent_id}'s")
    if not isinstance(text, str) or len(text) > RUN_CHUNK_CHARS:
        raise ProtocolValidationError("text", f"text of at most {RUN_CHUNK_CHARS} characters")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.ended is not None:
            raise Conflict(f"run {run.pk} already ended", {"run": run.pk})
        run.output = redact_output(run.output + ("\n" if run.output else "") + text)
        run.last_output_at = now
        run.save(update_fields=["output", "last_output_at"])
        outbox.run_output(project.pk, run.pk)
    return run


USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@records_refusals
def usage_record(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    usage: list[dict[str, Any]],
    run: int | None = None,
) -> list[RunUsage]:
    """A run's usage so far, per model (issue 24): posted by its supervisor (parsed from the
    CLI's output) or by the agent itself (`liza usage`). `run`: the run's id, else the agent's
    running run. Each entry is a running total for the run: a row keeps, field by field, the
    larger of what it had and what came, so a retried or repeated report counts once and a
    supervisor and its agent reporting the same session do not add up. Input is validated by
    `inputs.UsageInput` (bounds in `protocol`); the entries' models are unique."""
    require_role(agent, project, agent_roles=ANY_AGENT, human=None)
    models = [entry.get("model", "") for entry in usage]
    if len(set(models)) != len(models):
        raise ProtocolValidationError("usage", "one entry per model")
    with transaction.atomic():
        rows_of = Run.objects.select_for_update(of=("self",)).select_related("task")
        if run is not None:
            found = rows_of.filter(project=project, pk=run).first()
            if found is None:
                raise ProtocolValidationError("run", f"no run {run} in this project")
            if found.agent_id != agent.pk:
                raise Forbidden(f"run {run} is not {agent.agent_id}'s")
        else:
            found = (
                rows_of.filter(project=project, agent=agent, ended__isnull=True)
                .order_by("-started", "-id")
                .first()
            )
            if found is None:
                raise Conflict(
                    f"{agent.agent_id} has no running run: usage is recorded per run "
                    "(`liza supervise` starts them)",
                    {"agent": agent.agent_id},
                )
        attributed = None
        recorded = []
        for entry in usage:
            row = RunUsage.objects.filter(run=found, model=entry.get("model", "")).first()
            if row is None:
                attributed = attributed or usage_attribution(project=project, task=found.task)
                row = RunUsage(
                    project=project,
                    run=found,
                    agent=agent,
                    model=entry.get("model", ""),
                    recorded_at=now,
                    **attributed,
                )
            for name in USAGE_FIELDS:
                setattr(row, name, max(getattr(row, name), int(entry.get(name) or 0)))
            row.cost_usd = max(row.cost_usd, Decimal(str(entry.get("cost_usd") or 0)))
            row.save()
            recorded.append(row)
        if found.task_id is not None:  # its card and drawer show the cost
            outbox.changed(project.pk, outbox.TASK, found.task_id)
    return recorded


QUOTA_PAUSE_MAX = timedelta(days=7)


@records_refusals
def agent_quota_pause(
    *,
    project: Project,
    agent: Agent,
    now: datetime,
    until: datetime,
    provider: str,
    message: str = "",
) -> Agent:
    """Its supervisor met the provider's quota or rate-limit wall (issue 24): it spawns nothing
    before `until`. Recorded on the agent (the board says "quota: resumes at HH:MM", the watcher
    raises a QUOTA alert while it stands) and in the log."""
    require_role(agent, project, agent_roles=ANY_AGENT, human=None)
    provider = clean_text(provider, "provider", max_length=64)
    message = redact_output(clean_text(message, "message", required=False, max_length=300))
    if until <= now or until > now + QUOTA_PAUSE_MAX:
        raise ProtocolValidationError("until", "a time in the future, at most 7 days ahead")
    with transaction.atomic():
        agent = lock_agent(agent)
        agent.quota_until, agent.quota_provider, agent.quota_message = until, provider, message
        agent.save(update_fields=["quota_until", "quota_provider", "quota_message"])
        record_event(
            project=project,
            actor=agent,
            action=Action.QUOTA_PAUSED,
            now=now,
            detail=f"{agent.agent_id}: {provider}'s quota wall; no spawn before "
            f"{format_timestamp(until)}" + (f" ({message})" if message else ""),
            data={"until": format_timestamp(until), "provider": provider},
        )
    return agent


RUN_OUTPUT_DAYS = 30  # LIZA_RUN_OUTPUT_DAYS: how long an ended run keeps its output


def runs_output_trim(*, now: datetime, days: int) -> int:
    """Old output trimmed by age (issue 24; by size it is at every write, `redact_output`): the
    output of runs that ended more than `days` ago is emptied, the run itself (state, reason,
    duration) kept. Returns how many runs lost their output."""
    return (
        Run.objects.filter(ended__lt=now - timedelta(days=days))
        .exclude(output="")
        .update(output="")
    )

"""Agent identities and keys: every write about agents (STYLE.md services)."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction

from agents.models import Agent, AgentKey
from boards import events
from boards.errors import (
    Conflict,
    Forbidden,
    LeaseLost,
    ProtocolError,
    ProtocolValidationError,
)
from boards.models import Handoff, Project, Review, Task
from boards.protocol import AGENT_ID_PREFIX, agent_id_matches_role, format_timestamp
from boards.services.common import (
    clean_string_list,
    clean_text,
    config_of,
    lease_alive,
    lock_agent,
    lock_task,
    open_sprint,
    record_event,
    records_refusals,
    refusal,
    require_lease_holder,
    require_role,
    require_task_status,
)

KEY_PREFIX_LEN = 12


def _hash_key(secret: str) -> str:
    # Keys are 256-bit random tokens, so a fast hash is enough: there is nothing to brute-force.
    return hashlib.sha256(secret.encode()).hexdigest()


@transaction.atomic
def agent_key_issue(*, agent: Agent, now: datetime, label: str = "") -> tuple[AgentKey, str]:
    """Generate a key for `agent`; the plain key is returned once and never stored."""
    prefix = secrets.token_hex(KEY_PREFIX_LEN // 2)
    secret = secrets.token_urlsafe(32)
    plain = f"liza_{prefix}_{secret}"
    key = AgentKey.objects.create(
        agent=agent,
        project=agent.project,
        prefix=prefix,
        key_hash=_hash_key(plain),
        label=label,
        created=now,
    )
    return key, plain


def agent_key_revoke(*, key: AgentKey, now: datetime) -> AgentKey:
    if key.revoked_at is None:
        key.revoked_at = now
        key.save(update_fields=["revoked_at"])
    return key


def agent_key_lookup(*, plain: str) -> AgentKey | None:
    """The active key for a presented bearer token, or None (unknown, malformed or revoked)."""
    parts = plain.split("_", 2)
    if len(parts) != 3 or parts[0] != "liza" or len(parts[1]) != KEY_PREFIX_LEN:
        return None
    key = (
        AgentKey.objects.select_related("agent", "agent__project")
        .filter(prefix=parts[1], revoked_at__isnull=True)
        .first()
    )
    if key is None or not hmac.compare_digest(key.key_hash, _hash_key(plain)):
        return None
    return key


# ---------------------------------------------------------------------------------------------
# identity and liveness (seed 000 "Agent State Machine", seed 002 "Lease Model")
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeartbeatResult:
    agent: Agent
    task: Task | None
    reviews: list[Review]
    # "paused" / "checkpoint" when the agent must stop (exit 42) although its leases were kept.
    stop: str | None


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
        if agent is not None and (agent.has_live_lease(now) or agent.role != role):
            raise refusal(
                ProtocolError(
                    "collision",
                    f"{agent_id} is held by a live lease until "
                    f"{format_timestamp(agent.lease_expires)}; exit",
                    {"agent_id": agent_id, "exit": 1},
                ),
                project=project,
                actor=agent,
                action="register",
                now=now,
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
    *, agent: Agent, now: datetime, context_percent: int | None = None
) -> HeartbeatResult:
    """Extend the agent lease and the task and review leases it holds (SPEC §6).

    A coder whose task was taken over gets lease_lost: it must exit 42 (seed 002 "If original
    agent returns after expiry → must self-abort immediately").
    """
    project = agent.project
    if context_percent is not None and (
        isinstance(context_percent, bool)
        or not isinstance(context_percent, int)
        or not 0 <= context_percent <= 100
    ):
        raise ProtocolValidationError("context_percent", "an integer from 0 to 100")
    config = config_of(project)
    with transaction.atomic():
        agent = lock_agent(agent)
        if not agent.enabled:
            raise Forbidden(f"agent {agent.agent_id} is disabled")
        task = None
        if agent.lost_task_id is not None:
            lost = agent.lost_task
            raise refusal(
                LeaseLost(
                    f"{agent.agent_id} lost {lost.key} ({agent.lost_reason}); exit 42",
                    {
                        "task": lost.key,
                        "reason": agent.lost_reason,
                        "assigned_to": lost.assigned_to or None,
                    },
                ),
                project=project,
                actor=agent,
                action="heartbeat",
                now=now,
                task=lost,
            )
        if agent.current_task_id is not None:
            task = lock_task(agent.current_task)
            if task.status == "CLAIMED":
                lost = task.assigned_to != agent.agent_id or not lease_alive(
                    task.lease_expires, now, config
                )
                if lost:
                    raise refusal(
                        LeaseLost(
                            f"{agent.agent_id} lost its lease on {task.key}; exit 42",
                            {"task": task.key},
                        ),
                        project=project,
                        actor=agent,
                        action="heartbeat",
                        now=now,
                        task=task,
                    )
                task.lease_expires = task.lease_until(now=now, config=config)
                task.save(update_fields=["lease_expires"])
        reviews = list(
            Review.objects.select_for_update()
            .filter(
                task__project=project,
                reviewer=agent.agent_id,
                closed_at__isnull=True,
                verdict="",
                lease_expires__isnull=False,
            )
            .select_related("task")
        )
        for review in reviews:
            if lease_alive(review.lease_expires, now, config):
                review.lease_expires = now + timedelta(seconds=review.task.lease_seconds(config))
                review.save(update_fields=["lease_expires"])
        if agent.status == "STARTING":
            agent.ready()
        agent.heartbeat = now
        agent.lease_expires = max(
            [now + timedelta(seconds=config.lease_duration)]
            + [r.lease_expires for r in reviews if r.lease_expires]
            + ([task.lease_expires] if task is not None and task.lease_expires else [])
        )
        if context_percent is not None:
            agent.context_percent = context_percent
        agent.save()
        # Heartbeats write no Event, but open boards show leases and heartbeat ages.
        events.changed(project.pk, events.AGENT, agent.pk)
        if task is not None:
            events.changed(project.pk, events.TASK, task.pk)
    stop = None
    if project.is_paused:
        stop = "paused"
    elif (sprint := open_sprint(project)) is not None and sprint.status == "CHECKPOINT":
        stop = "checkpoint"
    return HeartbeatResult(agent=agent, task=task, reviews=reviews, stop=stop)


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
        task = lock_task(task)
        require_task_status(task, ["CLAIMED"], to="CLAIMED", action="handoff", actor=agent, now=now)
        require_lease_holder(task, agent, action="handoff", now=now, config=config)
        agent = lock_agent(agent)
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
        if agent.status in ("WORKING", "REVIEWING"):
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
        task = lock_task(task)
        require_task_status(
            task, ["CLAIMED"], to="CLAIMED", action="handoff_pickup", actor=agent, now=now
        )
        require_lease_holder(task, agent, action="handoff_pickup", now=now, config=config)
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
    from boards.services.oversight import release_reviewers, take_claim_back
    from boards.services.tasks import _release_agent

    project = agent.project
    require_role(actor, project, agent_roles=())
    if not isinstance(enabled, bool):
        raise ProtocolValidationError("enabled", "true or false")
    action = "agent_enabled" if enabled else "agent_disabled"
    with transaction.atomic():
        agent = lock_agent(agent)
        if agent.enabled == enabled:
            raise refusal(
                Conflict(
                    f"{agent.agent_id} is already {'enabled' if enabled else 'disabled'}",
                    {"agent": agent.agent_id, "enabled": enabled},
                ),
                project=project,
                actor=actor,
                action=action,
                now=now,
            )
        released: list[str] = []
        if not enabled:
            lost = "agent disabled"
            if agent.current_task_id is not None:
                task = lock_task(agent.current_task)
                released.append(task.key)
                if task.status == "CLAIMED" and task.assigned_to == agent.agent_id:
                    take_claim_back(
                        task,
                        actor=actor,
                        now=now,
                        lost=lost,
                        block_reason=f"{agent.agent_id} was disabled",
                        answer=f"{agent.agent_id} was disabled: back to the queue",
                    )
                else:
                    _release_agent(agent, task, lost=lost)
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
        events.changed(project.pk, events.AGENT, agent.pk)
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

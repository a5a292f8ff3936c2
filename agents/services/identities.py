"""Agents as a project's admins make them: created (with a key), enabled or disabled, available
or overloaded, the security reviewer's right."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from agents.models import (
    Agent,
    AgentKey,
)
from agents.services.keys import agent_key_issue
from boards.coordination import outbox
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.availability import ERROR, OVERLOADED, agent_availability
from boards.coordination.services.actors import Actor
from boards.coordination.services.audit import Attempt, records_refusals
from boards.coordination.services.authority import ADMIN, people, require_role
from boards.coordination.services.locking import lock_agent, lock_project, lock_task
from boards.coordination.services.tasks.holders import release_holder, release_reviewers
from boards.coordination.services.tasks.overrides import take_claim_back
from boards.errors import (
    Conflict,
    ProtocolError,
    ProtocolValidationError,
)
from boards.protocol import (
    AGENT_ID_PREFIX,
    Action,
    TaskStatus,
    agent_id_matches_role,
)
from liza_site import key_generation


@people(ADMIN)
@records_refusals
def agent_set_security_reviewer(
    *, agent: Agent, actor: Actor, security_reviewer: bool, now: datetime
) -> Agent:
    """Seed 001: whether the agent counts as a security reviewer (an admin's decision)."""
    project = agent.project
    attempt = Attempt(project, actor, "agent_set_security_reviewer", now)
    require_role(attempt, agent_roles=())
    if not isinstance(security_reviewer, bool):
        raise ProtocolValidationError("security_reviewer", "true or false")
    with transaction.atomic():
        agent = lock_agent(agent)
        if agent.security_reviewer != security_reviewer:
            agent.security_reviewer = security_reviewer
            agent.save(update_fields=["security_reviewer"])
            outbox.changed(project.pk, outbox.AGENT, agent.pk)
            attempt.record(
                action=Action.AGENT_UPDATED,
                detail=f"{agent.agent_id}: security_reviewer → {security_reviewer}",
                data={"agent_id": agent.agent_id, "security_reviewer": security_reviewer},
            )
    return agent


@people(ADMIN)
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
    attempt = Attempt(project, actor, "agent_create", now)
    require_role(attempt, agent_roles=())
    if role not in Agent.Role.values:
        raise ProtocolValidationError("role", f"one of {', '.join(Agent.Role.values)}")
    with transaction.atomic():
        lock_project(project)
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
        attempt.record(
            action="agent_created", detail=f"{agent_id} created ({role})", data={"agent": agent_id}
        )
    return agent


@people(ADMIN)
@records_refusals
def agent_set_enabled(*, agent: Agent, actor, enabled: bool, now: datetime) -> Agent:
    """An admin disables (or enables again) an agent identity.

    A disabled agent's requests get 403 and it cannot register. What it held is taken back: a
    CLAIMED task returns to the queue (override block + release, as a released stuck claim),
    pending review claims close, and the agent is told at its next request that it lost them.
    """
    project = agent.project
    attempt = Attempt(project, actor, "agent_set_enabled", now)
    require_role(attempt, agent_roles=())
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
        key_generation.bump()  # its keys' cached lookups (agents.keycache)
        outbox.changed(project.pk, outbox.AGENT, agent.pk)
        attempt.record(
            action=action,
            detail=f"{agent.agent_id} {'enabled' if enabled else 'disabled'}"
            + (f"; released {', '.join(released)}" if released else ""),
            data={"agent": agent.agent_id, **({"released": released} if released else {})},
        )
    return agent


AVAILABILITY_CHOICES = ("available", "overloaded")


@people(ADMIN)
@records_refusals
def agent_set_availability(*, agent: Agent, actor, state: str, now: datetime) -> Agent:
    """A project admin marks an agent overloaded (it keeps what it holds and takes nothing new)
    or available again, which also clears an error state: only lease expiries after `now` count
    towards a new one (`boards.coordination.selectors.availability`, seed 003 ERROR → IDLE)."""
    project = agent.project
    attempt = Attempt(project, actor, "agent_set_availability", now)
    require_role(attempt, agent_roles=())
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
        attempt.record(
            action="agent_availability_set",
            detail=f"{agent.agent_id}: {before.state} → {state}",
            data={"agent": agent.agent_id, "from": before.state, "to": state},
        )
    return agent


@people(ADMIN)
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

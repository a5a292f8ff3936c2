"""Who may do what, and when the protocol refuses an actor: roles, a lost task, a lease not
held, a stopped project, an unavailable agent. Every check refuses with a `ProtocolError`
(boards.errors) that names its attempt (`audit.Attempt`: the service's project, actor, action
and `now`, given, never guessed), so the refusal is logged (`audit.records_refusals`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

from agents.models import Agent
from boards.coordination.models.projects import Membership, Project, ProjectConfig, Sprint
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import PLAN, config_of, person_may
from boards.coordination.selectors.availability import (
    agent_availability,
    departed_refusal,
    superseded_refusal,
)
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.work import UNREAD, stop_reason
from boards.coordination.services.actors import Actor, SystemActor
from boards.coordination.services.audit import Attempt
from boards.errors import AgentUnavailable, Conflict, Forbidden, LeaseLost, NotFound, StopWork

F = TypeVar("F", bound=Callable[..., Any])

ADMIN, MEMBER, VIEWER = Membership.Role.ADMIN, Membership.Role.MEMBER, Membership.Role.VIEWER

# Which people may call each service, by its name (SPEC §3: a viewer reads, a member writes notes
# and discoveries and triages them, an admin overrides, manages agents and config; `PLAN`, the
# planner right of issue 25; None: agents only). Declared once, on the service (`@people(...)`):
# `require_role` reads it by the attempt's action (the service's name), an operation's `role` by
# its service (boards.operations), and so the board's forms and the API's role matrix.
PEOPLE: dict[str, str | None] = {}


def people(role: str | None) -> Callable[[F], F]:
    """Declares `role` (and above) as the people a service is for (None: agents only)."""

    def declare(service: F) -> F:
        name = service.__name__
        if PEOPLE.get(name, role) != role:
            raise ValueError(f"{name} is declared for {PEOPLE[name]}, not {role}")
        PEOPLE[name] = role
        service.people = role  # type: ignore[attr-defined]
        return service

    return declare


# A service no person calls (the coder's, the reviewer's, the supervisor's).
agents_only = people(None)


# `require_role`'s default: the people its attempt's service is declared for.
DECLARED: Any = object()


def role_refusal(
    actor: Actor,
    project: Project,
    *,
    agent_roles: tuple[str, ...],
    human: str | None = Membership.Role.ADMIN,
    system: bool = False,
) -> Forbidden | None:
    """Authority: which agent roles, which human role (and above), whether the system. The
    refusal, or None when `actor` may; an agent of another project is not found (raised)."""
    if isinstance(actor, Agent):
        if actor.project_id != project.pk:
            # The same answer as for a missing object: another tenant's rows do not exist.
            raise NotFound()
        if not actor.enabled:
            return Forbidden(f"agent {actor.agent_id} is disabled")
        if actor.role not in agent_roles:
            allowed = ", ".join(agent_roles) or "no agent"
            return Forbidden(f"{actor.agent_id} ({actor.role}) may not do this; {allowed}")
        return None
    if isinstance(actor, SystemActor):
        return None if system else Forbidden("the system does not perform this action")
    if human is None:
        return Forbidden("this action is for agents only")
    if person_may(actor, project, human):
        return None
    if human == PLAN:
        return Forbidden(
            f"planning needs the admin role, or a member's planner right, in project {project.slug}"
        )
    return Forbidden(f"this action needs the {human} role in project {project.slug}")


def require_role(
    attempt: Attempt,
    *,
    agent_roles: tuple[str, ...],
    human: str | None = DECLARED,
    system: bool = False,
    task: Task | None = None,
) -> None:
    """The attempt's actor may do it in the attempt's project (`role_refusal`), else the refusal
    names the attempt (and `task`, the row it was tried on), so it is logged like any other.
    People: those its service is declared for (`people`), unless `human` names a stricter role
    for what the input asks (a triage that converts, another member's notifications)."""
    if human is DECLARED:
        if attempt.action not in PEOPLE:
            raise LookupError(f"{attempt.action}: no @people(...) says which people may call it")
        human = PEOPLE[attempt.action]
    refusal = role_refusal(
        attempt.actor, attempt.project, agent_roles=agent_roles, human=human, system=system
    )
    if refusal is not None:
        raise attempt.refuse(refusal, task=task)


def require_reader(
    actor: Actor, project: Project, *, human: str | None = Membership.Role.ADMIN
) -> None:
    """A read for people only (the inbox, keys, one's notifications): no attempt, nothing to log."""
    refusal = role_refusal(actor, project, agent_roles=(), human=human)
    if refusal is not None:
        raise refusal


def require_not_lost(task: Task, agent: Actor, *, action: str, now: datetime) -> None:
    """An agent the server took `task` from (a takeover, a human's release, cancel or suspend, an
    override or limit block, a disable, a cancelled goal) gets `lease_lost`, exit 42, for every
    operation on it, whatever state the task is in now (SPEC §13). `agent` must be fresh."""
    if isinstance(agent, Agent) and agent.lost_task_id == task.pk:
        raise Attempt.on(task, actor=agent, action=action, now=now).refuse(
            LeaseLost(
                f"{agent.agent_id} lost {task.key} ({agent.lost_reason}); exit 42",
                {"task": task.key, "reason": agent.lost_reason},
            ),
            task=task,
        )


def require_lease_holder(
    task: Task, agent: Agent, *, action: str, now: datetime, config: ProjectConfig
) -> None:
    """The acting coder must hold the CLAIMED task under a live lease, else lease_lost."""
    if task.assigned_to != agent.agent_id or not lease_alive(task.lease_expires, now, config):
        raise Attempt.on(task, actor=agent, action=action, now=now).refuse(
            LeaseLost(
                f"{agent.agent_id} does not hold the lease on {task.key}; exit 42",
                {"task": task.key, "assigned_to": task.assigned_to or None},
            ),
            task=task,
        )


def refuse_if_stopped(
    project: Project,
    *,
    actor: Actor,
    action: str,
    now: datetime,
    task: Task | None = None,
    sprint: Sprint | object | None = UNREAD,
) -> None:
    """SPEC §5.4, §13: paused project, sprint at CHECKPOINT, aborted sprint or goal → claims
    refused, exit 42 (`boards.coordination.selectors.work.stop_reason`, the one rule; `sprint`:
    the current one, when the caller has read it)."""
    stop = stop_reason(project, sprint=sprint)
    if stop is not None:
        raise Attempt(project=project, actor=actor, action=action, now=now).refuse(
            StopWork(stop.code, stop.message), task=task
        )


def refuse_if_departed(agent, *, action: str, now: datetime, task: Task | None = None) -> None:
    """An agent that left and has not registered since claims no review: refused as a
    departed coder's claim is (`claimer_refusal`), 409 `conflict` in the words of the one rule,
    `selectors.availability.departed_refusal`, which `/work` reads too."""
    refused = departed_refusal(agent)
    if refused is not None:
        raise Attempt(project=agent.project, actor=agent, action=action, now=now).refuse(
            Conflict(refused, {}), task=task
        )


def fenced(service: F) -> F:
    """Declares a service that fences a stale session itself, on the agent row its statement
    locks (`refuse_if_superseded` there, `liza_heartbeat_v3` for the heartbeat): the operation
    runner passes it the request's `generation` (boards.operations.base), so a registration
    that commits while it waits for the lock is seen."""
    service.fenced = True  # type: ignore[attr-defined]
    return service


def refuse_if_superseded(
    agent, generation: int | None, *, action: str, now: datetime, task: Task | None = None
) -> None:
    """A process of a superseded session (`generation` older than the agent's) acts for no
    one: `not_registered`, exit 8, in the words of the one rule,
    `selectors.availability.superseded_refusal`. Asked once for every agent operation by its
    runner, and again on the locked row by the heartbeat, `agent_leave` and the claims."""
    refused = superseded_refusal(agent, generation)
    if refused is not None:
        raise Attempt(project=agent.project, actor=agent, action=action, now=now).refuse(
            refused, task=task
        )


def refuse_if_unavailable(
    agent, *, action: str, now: datetime, task: Task | None = None, failures: list | None = None
) -> None:
    """Seed 003 availability: an agent in error or overloaded gets no new task or review
    (`boards.coordination.selectors.availability.agent_availability`, the one rule `/work` reads
    too; `failures`: the agent's, when the caller has read them)."""
    available = agent_availability(agent, now, failures)
    if available.takes_work:
        return
    config = config_of(agent.project)
    raise Attempt(project=agent.project, actor=agent, action=action, now=now).refuse(
        AgentUnavailable(
            available.reason,
            {
                "agent": agent.agent_id,
                "availability": available.state,
                "retry_after": available.retry_after(now, config.coder_poll_interval),
            },
        ),
        task=task,
    )

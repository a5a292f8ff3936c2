"""What every write service shares: who acts, how authority is checked, how events are written.

A service takes the acting principal explicitly (STYLE.md): an `Agent`, a Django `User`, or a
`SystemActor` (the watcher enforcing a limit). Refused attempts are recorded too (SPEC §4.1):
a service raises a `ProtocolError` carrying an `audit` note, and `records_refusals` writes the
rejected-attempt Event after the service's own transaction has rolled back, so the refusal is
logged while the row stays exactly as it was.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from agents.models import Agent
from boards import events
from boards import protocol as p
from boards.errors import (
    InvalidTransition,
    LeaseLost,
    ProtocolError,
    ProtocolValidationError,
    StopWork,
)
from boards.models import Event, Membership, Project, ProjectConfig, Sprint, Task


@dataclass(frozen=True)
class SystemActor:
    """The server itself: limits enforced, leases reclaimed, sprints completed."""

    name: str = "system"


SYSTEM = SystemActor()

Actor = Agent | AbstractBaseUser | SystemActor


def actor_ref(actor: Actor) -> tuple[str, str]:
    """(actor kind, actor id) as the event log records them."""
    if isinstance(actor, Agent):
        return Event.ActorKind.AGENT, actor.agent_id
    if isinstance(actor, SystemActor):
        return Event.ActorKind.SYSTEM, actor.name
    return Event.ActorKind.HUMAN, actor.get_username()


def is_agent(actor: Actor) -> bool:
    return isinstance(actor, Agent)


def is_human(actor: Actor) -> bool:
    return not isinstance(actor, Agent | SystemActor)


def human_role(user: AbstractBaseUser, project: Project) -> str | None:
    """The user's role in `project`; site staff act as admins everywhere (SPEC §3)."""
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return None
    if getattr(user, "is_staff", False) or getattr(user, "is_superuser", False):
        return Membership.Role.ADMIN
    membership = Membership.objects.filter(project=project, user=user).first()
    return membership.role if membership else None


def require_human_role(user: AbstractBaseUser, project: Project, role: str) -> None:
    current = human_role(user, project)
    if current is None or Membership.RANK[current] < Membership.RANK[role]:
        raise PermissionDenied(f"this action needs the {role} role in project {project.slug}")


def require_agent_of(agent: Agent, project: Project) -> None:
    if agent.project_id != project.pk:
        # The same answer as for a missing object: another tenant's rows do not exist.
        raise ProtocolError("not_found", "Not found.", status_code=404)
    if not agent.enabled:
        raise PermissionDenied(f"agent {agent.agent_id} is disabled")


def require_role(
    actor: Actor,
    project: Project,
    *,
    agent_roles: tuple[str, ...],
    human: str | None = Membership.Role.ADMIN,
    system: bool = False,
) -> None:
    """Authority check shared by services: which agent roles, which human role, the system."""
    if isinstance(actor, Agent):
        require_agent_of(actor, project)
        if actor.role not in agent_roles:
            allowed = ", ".join(agent_roles) or "no agent"
            raise PermissionDenied(f"{actor.agent_id} ({actor.role}) may not do this; {allowed}")
    elif isinstance(actor, SystemActor):
        if not system:
            raise PermissionDenied("the system does not perform this action")
    else:
        if human is None:
            raise PermissionDenied("this action is for agents only")
        require_human_role(actor, project, human)


def config_of(project: Project) -> ProjectConfig:
    try:
        return project.config
    except ProjectConfig.DoesNotExist:
        return ProjectConfig.objects.create(project=project)


def lock_task(task: Task) -> Task:
    """Re-read `task` under a row lock (a no-op lock on SQLite, where IMMEDIATE serializes)."""
    return Task.objects.select_for_update(of=("self",)).get(pk=task.pk)


def lock_agent(agent: Agent) -> Agent:
    return Agent.objects.select_for_update(of=("self",)).get(pk=agent.pk)


def record_event(
    *,
    project: Project,
    actor: Actor,
    action: str,
    detail: str,
    now: datetime,
    task: Task | None = None,
    from_status: str = "",
    to_status: str = "",
    data: dict[str, Any] | None = None,
    outcome: str = Event.Outcome.APPLIED,
) -> Event:
    kind, actor_id = actor_ref(actor)
    _note_board_changes(project, actor, action, task, to_status)
    return Event.objects.create(
        project=project,
        task=task,
        timestamp=now,
        actor_kind=kind,
        actor_id=actor_id,
        action=action,
        from_status=from_status,
        to_status=to_status,
        outcome=outcome,
        # "One-line detail is mandatory. Human must be able to skim." (seed 002 log.yaml)
        detail=" ".join(detail.split())[:500] or action,
        data=data or {},
    )


def _note_board_changes(
    project: Project, actor: Actor, action: str, task: Task | None, to_status: str
) -> None:
    """What open boards must redraw once this commits (boards.events)."""
    if task is not None:
        events.changed(project.pk, events.TASK, task.pk)
    if isinstance(actor, Agent):
        events.changed(project.pk, events.AGENT, actor.pk)
    if to_status or action.startswith(("sprint_", "goal_", "project_", "config_")):
        # A status change moves the sprint metrics in the header; a pause or a config change
        # shows there too.
        events.changed(project.pk, events.SPRINT, project.pk)


def refusal(
    exc: ProtocolError,
    *,
    project: Project,
    actor: Actor,
    action: str,
    now: datetime,
    task: Task | None = None,
    to_status: str = "",
    from_status: str | None = None,
) -> ProtocolError:
    """Attach what the rejected-attempt event must say; `records_refusals` writes it.

    `from_status` defaults to the task's status; goal and sprint refusals pass their own.
    """
    if from_status is None:
        from_status = task.status if task is not None else ""
    exc.audit = {  # type: ignore[attr-defined]
        "project": project,
        "actor": actor,
        "action": action,
        "now": now,
        "task": task,
        "from_status": from_status,
        "to_status": to_status,
    }
    return exc


F = TypeVar("F", bound=Callable[..., Any])


def records_refusals(func: F) -> F:
    """Write the rejected-attempt Event for a refused operation, outside its rolled-back work."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ProtocolError as exc:
            audit = getattr(exc, "audit", None)
            if audit is not None and not getattr(exc, "audit_written", False):
                exc.audit_written = True  # type: ignore[attr-defined]
                with transaction.atomic():
                    record_event(
                        project=audit["project"],
                        actor=audit["actor"],
                        action=_refused_action(audit["action"]),
                        detail=f"refused: {exc.message}",
                        now=audit["now"],
                        task=audit["task"],
                        from_status=audit["from_status"],
                        to_status=audit["to_status"],
                        data={"code": exc.code, "attempted": audit["action"], **_jsonable(exc)},
                        outcome=Event.Outcome.REJECTED,
                    )
            raise

    return wrapper  # type: ignore[return-value]


def _refused_action(action: str) -> str:
    # Seed 002's log names a lost claim race `claim_failed`; other refusals follow that pattern.
    return f"{action}_failed" if not action.endswith("_failed") else action


def _jsonable(exc: ProtocolError) -> dict[str, Any]:
    return {"details": {k: v for k, v in exc.details.items() if k != "exit"}}


# -- shared checks of protocol operations -----------------------------------------------------


def clean_text(value: Any, field: str, *, required: bool = True, max_length: int = 10_000) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise ProtocolValidationError(field, "must be a string")
    value = value.strip()
    if required and not value:
        raise ProtocolValidationError(field, "is required")
    if len(value) > max_length:
        raise ProtocolValidationError(field, f"must be at most {max_length} characters")
    return value


def clean_string_list(
    value: Any, field: str, *, min_items: int = 0, max_items: int = 100
) -> list[str]:
    if value is None:
        value = []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ProtocolValidationError(field, "must be a list of strings")
    items = [v.strip() for v in value if v.strip()]
    if not min_items <= len(items) <= max_items:
        raise ProtocolValidationError(field, f"needs between {min_items} and {max_items} items")
    return items


def lease_alive(expires: datetime | None, now: datetime, config: ProjectConfig) -> bool:
    """A holder may still act within lease_grace after expiry (seed 002 "Watcher grace")."""
    return expires is not None and expires + timedelta(seconds=config.lease_grace) > now


def require_task_status(
    task: Task, expected: Iterable[str], *, to: str, action: str, actor: Actor, now: datetime
) -> None:
    expected = tuple(expected)
    if task.status not in expected:
        raise refusal(
            InvalidTransition(
                from_status=task.status,
                to_status=to,
                allowed=p.task_targets(task.status),
                message=(f"{task.key} is {task.status}; {action} needs {' or '.join(expected)}"),
            ),
            project=task.project,
            actor=actor,
            action=action,
            now=now,
            task=task,
            to_status=to,
        )


def require_lease_holder(
    task: Task, agent: Agent, *, action: str, now: datetime, config: ProjectConfig
) -> None:
    """The acting coder must hold the CLAIMED task under a live lease, else lease_lost."""
    if task.assigned_to != agent.agent_id or not lease_alive(task.lease_expires, now, config):
        raise refusal(
            LeaseLost(
                f"{agent.agent_id} does not hold the lease on {task.key}; exit 42",
                {"task": task.key, "assigned_to": task.assigned_to or None},
            ),
            project=task.project,
            actor=agent,
            action=action,
            now=now,
            task=task,
        )


def open_sprint(project: Project) -> Sprint | None:
    return Sprint.objects.filter(project=project, status__in=["IN_PROGRESS", "CHECKPOINT"]).first()


def refuse_if_stopped(
    project: Project, *, actor: Actor, action: str, now: datetime, task: Task | None = None
) -> None:
    """SPEC §5.4: paused project or sprint at CHECKPOINT → claims refused, exit 42."""
    exc: ProtocolError | None = None
    if project.is_paused:
        exc = StopWork("paused", f"project {project.slug} is paused; exit 42")
    else:
        sprint = open_sprint(project)
        if sprint is not None and sprint.status == "CHECKPOINT":
            exc = StopWork("checkpoint", f"sprint {sprint.sprint_id} is at CHECKPOINT; exit 42")
    if exc is not None:
        raise refusal(exc, project=project, actor=actor, action=action, now=now, task=task)

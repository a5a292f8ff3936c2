"""What every write service shares: who acts, authority, the event, refusals, transitions.

A write service reads as lock → check → write → audit → publish on commit:

- it takes the acting principal explicitly (STYLE.md): an `Agent`, a Django `User`, or a
  `SystemActor` (the watcher, a limit), and `now`;
- `require_role` checks authority; every check refuses with a `ProtocolError` (boards.errors);
- `transition` runs a django-fsm edge, a refused guard becoming `invalid_transition`;
- `record_event` writes the one Event of the change and notes what open boards must redraw
  (boards.live publishes it once the transaction commits);
- `records_refusals` writes the rejected-attempt Event of a refused operation after the
  service's own transaction rolled back, so a refusal is logged while the row stays as it was
  (SPEC §4.1).

Lock order, everywhere (so two services never wait on each other in a circle): the project row
(when a service serializes per project), then agent rows (by primary key), then task rows, then
review rows. A service that must lock an agent after a task does so NOWAIT and treats "busy" as
a conflict to retry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django_fsm import TransitionNotAllowed

from agents.models import Agent
from boards import protocol as p
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Membership, Project, ProjectConfig
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import PLAN, config_of, human_role, may_plan, role_allows
from boards.coordination.selectors.alerts import task_alerts_ended_by
from boards.coordination.selectors.availability import agent_availability
from boards.coordination.selectors.leases import lease_alive
from boards.coordination.selectors.snapshots import task_snapshot
from boards.coordination.selectors.tasks import tasks_by_keys
from boards.coordination.selectors.work import stop_reason
from boards.errors import (
    AgentUnavailable,
    Conflict,
    Forbidden,
    InvalidTransition,
    LeaseLost,
    NotFound,
    ProtocolError,
    ProtocolValidationError,
    StopWork,
)
from liza_site import metrics


@dataclass(frozen=True)
class SystemActor:
    """The server itself: limits enforced, leases reclaimed, sprints completed."""

    name: str = "system"


SYSTEM = SystemActor()

Actor = Agent | AbstractBaseUser | SystemActor

PLANNER = ("planner",)
CODER = ("coder",)
REVIEWER = ("code_reviewer",)
ANY_AGENT = ("planner", "coder", "code_reviewer")


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


# -- authority --------------------------------------------------------------------------------


def require_agent_of(agent: Agent, project: Project) -> None:
    if agent.project_id != project.pk:
        # The same answer as for a missing object: another tenant's rows do not exist.
        raise NotFound()
    if not agent.enabled:
        raise Forbidden(f"agent {agent.agent_id} is disabled")


def require_role(
    actor: Actor,
    project: Project,
    *,
    agent_roles: tuple[str, ...],
    human: str | None = Membership.Role.ADMIN,
    system: bool = False,
) -> None:
    """Authority: which agent roles, which human role (and above), whether the system."""
    if isinstance(actor, Agent):
        require_agent_of(actor, project)
        if actor.role not in agent_roles:
            allowed = ", ".join(agent_roles) or "no agent"
            raise Forbidden(f"{actor.agent_id} ({actor.role}) may not do this; {allowed}")
    elif isinstance(actor, SystemActor):
        if not system:
            raise Forbidden("the system does not perform this action")
    else:
        if human is None:
            raise Forbidden("this action is for agents only")
        if human == PLAN:
            if not may_plan(actor, project):
                raise Forbidden(
                    f"planning needs the admin role, or a member's planner right, in project "
                    f"{project.slug}"
                )
            return
        if not role_allows(human_role(actor, project), human):
            raise Forbidden(f"this action needs the {human} role in project {project.slug}")


# -- locks ------------------------------------------------------------------------------------


def lock_task(task: Task) -> Task:
    """Re-read `task` under a row lock (a no-op lock on SQLite, where IMMEDIATE serializes)."""
    return rows.get_locked(Task, task.pk)


def lock_agent(agent: Agent) -> Agent:
    return rows.get_locked(Agent, agent.pk)


def lock_project(project: Project) -> Project:
    return Project.objects.select_for_update().get(pk=project.pk)


def agent_row(project: Project, agent_id: str) -> Agent | None:
    """The agent `agent_id` of `project`, locked (None for an id with no agent row)."""
    if not agent_id:
        return None
    return (
        Agent.objects.select_for_update(of=("self",))
        .filter(project=project, agent_id=agent_id)
        .first()
    )


def config_for_update(project: Project) -> ProjectConfig:
    config = config_of(project)
    if config.pk is None:
        config.save()  # a project made before configs existed: seed 002's defaults
    return config


# -- the event log ------------------------------------------------------------------------------

# Actions whose event changes what the board header shows (sprint, goal, pause, config): only
# those make open boards refetch the header and its controls (STYLE.md "an event should say
# what changed").
HEADER_ACTIONS: frozenset[str] = frozenset(
    a for a in p.Action if a.value.startswith(("sprint_", "goal_", "project_", "config_"))
)


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
    _note_board_changes(project, actor, action, task, to_status, outcome)
    code = (data or {}).get("code") if outcome != Event.Outcome.APPLIED else None
    # Counted when it commits: an event rolled back never happened (/metrics).
    transaction.on_commit(
        lambda: metrics.event_recorded(
            str(action), str(outcome), code, str(from_status or ""), str(to_status or "")
        )
    )
    event = Event(
        project=project,
        task=task,
        timestamp=now,
        actor_kind=kind,
        actor_id=actor_id,
        action=str(action),
        from_status=from_status,
        to_status=to_status,
        outcome=outcome,
        # "One-line detail is mandatory. Human must be able to skim." (seed 002 log.yaml)
        detail=" ".join(detail.split())[:500] or str(action),
        data=data or {},
        # The task's board fields as this event leaves them: time travel replays the board
        # from these (boards.board.selectors.replay), exactly, whatever the operation was.
        board=task_snapshot(task) if task is not None else None,
    )
    rows.insert(event)  # every write's one event: the lean INSERT (boards.coordination.rows)
    if (
        task is not None
        and to_status
        and from_status != to_status
        and outcome == Event.Outcome.APPLIED
    ):
        # The move ends the task's alerts bound to the state it left (issue 25); the card and
        # the header it redraws (above) show that with this event.
        Alert.objects.filter(
            task=task, resolved_at__isnull=True, type__in=task_alerts_ended_by(to_status)
        ).update(resolved_at=now)
    outbox.changed(project.pk, outbox.EVENT, event.pk)  # the live activity feed
    return event


def _note_board_changes(
    project: Project, actor: Actor, action: str, task: Task | None, to_status: str, outcome: str
) -> None:
    """What open boards must redraw once this commits (boards.live)."""
    if task is not None:
        outbox.changed(project.pk, outbox.TASK, task.pk)  # its timeline shows refusals too
    if isinstance(actor, Agent):
        outbox.changed(project.pk, outbox.AGENT, actor.pk)
    if outcome != Event.Outcome.APPLIED:
        return  # a refusal changed nothing the header shows
    if action in HEADER_ACTIONS:
        # The header's sprint status, deadline, pause and controls changed.
        outbox.changed(project.pk, outbox.SPRINT, project.pk, controls=True)
    elif to_status and task is not None:
        # A task moved: the header's live sprint metrics move with it, its controls do not.
        outbox.changed(project.pk, outbox.SPRINT, project.pk)


# -- refusals -----------------------------------------------------------------------------------


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


def refuse(exc: ProtocolError, task: Task, *, actor: Actor, action: str, now: datetime, to=""):
    """`refusal` for an operation on `task` (the common case)."""
    return refusal(
        exc, project=task.project, actor=actor, action=action, now=now, task=task, to_status=to
    )


F = TypeVar("F", bound=Callable[..., Any])


def _implicit_audit(func: Callable[..., Any], kwargs: dict[str, Any]) -> dict[str, Any] | None:
    """What a refusal raised without `refusal()` is logged with: the service's own arguments.

    Only permission refusals get it (a 403 is a protocol refusal like any other and must show
    in the log); input validation errors are the caller's typing mistakes, not attempts.
    """
    actor = kwargs.get("actor") or kwargs.get("agent")
    now = kwargs.get("now")
    task = kwargs.get("task") if isinstance(kwargs.get("task"), Task) else None
    project = kwargs.get("project")
    if project is None:
        for name in ("task", "sprint", "goal", "discovery", "agent", "key", "alert", "breaker"):
            row = kwargs.get(name)
            if row is not None and hasattr(row, "project"):
                project = row.project
                break
    if actor is None or now is None or not isinstance(project, Project):
        return None
    return {
        "project": project,
        "actor": actor,
        "action": func.__name__,
        "now": now,
        "task": task,
        "from_status": task.status if task is not None else "",
        "to_status": "",
    }


def records_refusals(func: F) -> F:
    """Write the rejected-attempt Event for a refused operation, outside its rolled-back work."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ProtocolError as exc:
            audit = getattr(exc, "audit", None)
            if audit is None and isinstance(exc, Forbidden):
                audit = _implicit_audit(func, kwargs)
            if audit is not None and not getattr(exc, "audit_written", False):
                exc.audit_written = True  # type: ignore[attr-defined]
                with transaction.atomic():
                    record_event(
                        project=audit["project"],
                        actor=audit["actor"],
                        action=refused_action(audit["action"]),
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


def refused_action(action: str) -> str:
    # Seed 002's log names a lost claim race `claim_failed`; other refusals follow that pattern.
    return f"{action}_failed" if not action.endswith("_failed") else action


def _jsonable(exc: ProtocolError) -> dict[str, Any]:
    return {"details": {k: v for k, v in exc.details.items() if k != "exit"}}


# -- transitions --------------------------------------------------------------------------------


def transition(
    row: Any,
    method: str,
    *,
    to: str,
    allowed: Callable[[str], list[str]],
    actor: Actor,
    project: Project,
    now: datetime,
    action: str | None = None,
    name: str = "",
) -> None:
    """Run the django-fsm transition `method` of `row`; a refused edge or guard is
    `invalid_transition` with the allowed targets, the row unchanged."""
    try:
        getattr(row, method)()
    except TransitionNotAllowed as exc:
        task = row if isinstance(row, Task) else None
        raise refusal(
            InvalidTransition(
                from_status=row.status,
                to_status=to,
                allowed=allowed(row.status),
                message=f"{name or row}: {exc}" if task else f"{name} is {row.status}",
            ),
            project=project,
            actor=actor,
            action=action or method,
            now=now,
            task=task,
            from_status=row.status,
            to_status=to,
        ) from exc


def task_transition_run(
    task: Task, method: str, *, actor: Actor, project: Project, now: datetime, to: str
) -> None:
    """`transition` for a task edge of seed 000."""
    transition(
        task,
        method,
        to=to,
        allowed=p.task_targets,
        actor=actor,
        project=project,
        now=now,
        name=task.key,
    )


def save_task(task: Task, now: datetime) -> None:
    task.updated = now
    rows.save_fields(task)


def move_task(
    task: Task,
    method: str,
    *,
    to: str,
    actor: Actor,
    now: datetime,
    action: str,
    detail: str,
    data: dict[str, Any] | None = None,
) -> Event:
    """Take seed 000's edge `method` on the locked `task` (a refused guard is
    `invalid_transition`), save the row and write its one event."""
    from_status = task.status
    task_transition_run(task, method, actor=actor, project=task.project, now=now, to=to)
    save_task(task, now)
    return record_event(
        project=task.project,
        actor=actor,
        action=action,
        task=task,
        now=now,
        from_status=from_status,
        to_status=to,
        detail=detail,
        data=data,
    )


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
    if "\x00" in value:
        raise ProtocolValidationError(field, "null characters are not allowed")
    return value


def clean_string_list(
    value: Any, field: str, *, min_items: int = 0, max_items: int = 100, max_length: int = 1000
) -> list[str]:
    if value is None:
        value = []
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise ProtocolValidationError(field, "must be a list of strings")
    items = [clean_text(v, field, max_length=max_length) for v in value if v.strip()]
    if not min_items <= len(items) <= max_items:
        raise ProtocolValidationError(field, f"needs between {min_items} and {max_items} items")
    return items


def require_task_status(
    task: Task, expected: Iterable[str], *, to: str, action: str, actor: Actor, now: datetime
) -> None:
    expected = tuple(expected)
    if task.status not in expected:
        raise refuse(
            InvalidTransition(
                from_status=task.status,
                to_status=to,
                allowed=p.task_targets(task.status),
                message=(f"{task.key} is {task.status}; {action} needs {' or '.join(expected)}"),
            ),
            task,
            actor=actor,
            action=action,
            now=now,
            to=to,
        )


def require_not_lost(task: Task, agent: Actor, *, action: str, now: datetime) -> None:
    """An agent the server took `task` from (a takeover, a human's release, cancel or suspend, an
    override or limit block, a disable, a cancelled goal) gets `lease_lost`, exit 42, for every
    operation on it, whatever state the task is in now (SPEC §13). `agent` must be fresh."""
    if isinstance(agent, Agent) and agent.lost_task_id == task.pk:
        raise refuse(
            LeaseLost(
                f"{agent.agent_id} lost {task.key} ({agent.lost_reason}); exit 42",
                {"task": task.key, "reason": agent.lost_reason},
            ),
            task,
            actor=agent,
            action=action,
            now=now,
        )


def require_lease_holder(
    task: Task, agent: Agent, *, action: str, now: datetime, config: ProjectConfig
) -> None:
    """The acting coder must hold the CLAIMED task under a live lease, else lease_lost."""
    if task.assigned_to != agent.agent_id or not lease_alive(task.lease_expires, now, config):
        raise refuse(
            LeaseLost(
                f"{agent.agent_id} does not hold the lease on {task.key}; exit 42",
                {"task": task.key, "assigned_to": task.assigned_to or None},
            ),
            task,
            actor=agent,
            action=action,
            now=now,
        )


def lock_own_claim(
    agent: Agent, task: Task, *, action: str, to: str, now: datetime, config: ProjectConfig
) -> tuple[Agent, Task]:
    """A coder's operation on the task it works on (submit, block, handoff, pickup): both rows
    locked (the agent first, the lock order), and `task` must still be its live claim — not
    taken from it (`lease_lost`), CLAIMED (else `invalid_transition` towards `to`), under its own
    live lease (`lease_lost`). That order is the answers' precedence."""
    agent = lock_agent(agent)
    task = lock_task(task)
    require_not_lost(task, agent, action=action, now=now)
    require_task_status(task, [p.TaskStatus.CLAIMED], to=to, action=action, actor=agent, now=now)
    require_lease_holder(task, agent, action=action, now=now, config=config)
    return agent, task


def refuse_if_stopped(
    project: Project, *, actor: Actor, action: str, now: datetime, task: Task | None = None
) -> None:
    """SPEC §5.4, §13: paused project, sprint at CHECKPOINT, aborted sprint or goal → claims
    refused, exit 42 (`boards.coordination.selectors.work.stop_reason`, the one rule)."""
    stop = stop_reason(project)
    if stop is not None:
        raise refusal(
            StopWork(stop.code, stop.message),
            project=project,
            actor=actor,
            action=action,
            now=now,
            task=task,
        )


def refuse_if_unavailable(agent, *, action: str, now: datetime, task: Task | None = None) -> None:
    """Seed 003 availability: an agent in error or overloaded gets no new task or review
    (`boards.coordination.selectors.availability.agent_availability`, the one rule `/work` reads
    too)."""
    available = agent_availability(agent, now)
    if available.takes_work:
        return
    config = config_of(agent.project)
    raise refusal(
        AgentUnavailable(
            available.reason,
            {
                "agent": agent.agent_id,
                "availability": available.state,
                "retry_after": available.retry_after(now, config.coder_poll_interval),
            },
        ),
        project=agent.project,
        actor=agent,
        action=action,
        now=now,
        task=task,
    )


def conflict(
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
    """A `Conflict` refusal, logged like every other."""
    return refusal(
        Conflict(message, {**({"task": task.key} if task else {}), **(details or {})}),
        project=project,
        actor=actor,
        action=action,
        now=now,
        task=task,
        from_status=from_status,
    )


def resolve_keys(project: Project, keys: Sequence[str], field: str) -> list[Task]:
    """The tasks named by `keys`; an unknown key is a 400 naming `field`."""
    keys = clean_string_list(list(keys), field, max_items=1000, max_length=64)
    found, missing = tasks_by_keys(project=project, keys=keys)
    if missing:
        raise ProtocolValidationError(field, f"unknown task(s): {', '.join(missing)}")
    return found

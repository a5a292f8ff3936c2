"""The event log's writes: the one Event of a change, and the rejected-attempt Event of a refusal.

- `record_event` writes the one Event of the change and notes what open boards must redraw
  (boards.live publishes it once the transaction commits);
- an `Attempt` (project, actor, action, now) is one operation tried, named by the service from
  its own arguments: `attempt.record(...)` writes its event, `attempt.refuse(exc, ...)` names
  the attempt on the refusal it raises (`authority.require_role(attempt, ...)` for a role);
- `records_refusals` writes the rejected-attempt Event of a refused operation after the
  service's own transaction rolled back, so a refusal is logged while the row stays as it was
  (SPEC §4.1).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypedDict, TypeVar, Unpack

from django.db import transaction

from agents.models import Agent
from boards import protocol as p
from boards.coordination import outbox, rows
from boards.coordination.models.projects import Project
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.alerts import task_alerts_ended_by
from boards.coordination.selectors.snapshots import task_snapshot
from boards.coordination.services.actors import Actor, actor_ref
from boards.errors import Conflict, ProtocolError
from liza_site import metrics

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
    agent_pk = actor.pk if isinstance(actor, Agent) else None
    _note_board_changes(project.pk, agent_pk, action, task and task.pk, to_status, outcome)
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
    project_id: int,
    agent_pk: int | None,
    action: str,
    task_id: int | None,
    to_status: str,
    outcome: str,
) -> None:
    """What open boards must redraw once this commits (boards.live): the event's task, its
    acting agent (`agent_pk`, None for another actor) and the header it changes."""
    if task_id is not None:
        outbox.changed(project_id, outbox.TASK, task_id)  # its timeline shows refusals too
    if agent_pk is not None:
        outbox.changed(project_id, outbox.AGENT, agent_pk)
    if outcome != Event.Outcome.APPLIED:
        return  # a refusal changed nothing the header shows
    if action in HEADER_ACTIONS:
        # The header's sprint status, deadline, pause and controls changed.
        outbox.changed(project_id, outbox.SPRINT, project_id, controls=True)
    elif to_status and task_id is not None:
        # A task moved: the header's live sprint metrics move with it, its controls do not.
        outbox.changed(project_id, outbox.SPRINT, project_id)


def note_written_events(project_id: int, agent_pk: int, events: list[dict]) -> None:
    """What `record_event` notes for open boards and counts once it commits, for the applied
    events a SQL function wrote instead (the claim's and the review claim's calls answer them:
    id, task, actor kind, action, from, to); `agent_pk`: the agent that acted."""
    for event in events:
        acting = agent_pk if event["actor"] == Event.ActorKind.AGENT else None
        applied = Event.Outcome.APPLIED
        action, task_id = event["action"], event["task"]
        _note_board_changes(project_id, acting, action, task_id, event["to"], applied)
        outbox.changed(project_id, outbox.EVENT, event["id"])  # the live activity feed
        transaction.on_commit(
            functools.partial(
                metrics.event_recorded,
                action,
                str(applied),
                None,
                str(event["from"] or ""),
                str(event["to"] or ""),
            )
        )


class EventFields(TypedDict, total=False):
    """What an event may say besides its attempt (project, actor, action, now) and its detail:
    `record_event`'s other parameters, which `Attempt.record` passes on (a test holds the two
    equal)."""

    task: Task | None
    from_status: str
    to_status: str
    data: dict[str, Any] | None
    outcome: str


E = TypeVar("E", bound=ProtocolError)


@dataclass(frozen=True)
class Attempt:
    """One operation tried: on which project, by whom, which action, when.

    A service names its attempt once and refuses through it (`attempt.refuse(...)`): the
    refusal then carries what its rejected-attempt event must say, explicitly, and
    `records_refusals` writes that event after the service's work rolled back.
    """

    project: Project
    actor: Actor
    action: str
    now: datetime

    @classmethod
    def on(cls, task: Task, *, actor: Actor, action: str, now: datetime) -> Attempt:
        """The attempt of an operation on `task` (the common case)."""
        return cls(project=task.project, actor=actor, action=action, now=now)

    def refuse(
        self,
        exc: E,
        *,
        task: Task | None = None,
        to_status: str = "",
        from_status: str | None = None,
    ) -> E:
        """`exc`, naming this attempt for its rejected-attempt event. `from_status` defaults
        to the task's status; goal and sprint refusals pass their own."""
        if from_status is None:
            from_status = task.status if task is not None else ""
        exc.refused = Refusal(self, task, from_status, to_status)  # type: ignore[attr-defined]
        return exc

    def conflict(
        self,
        message: str,
        *,
        task: Task | None = None,
        details: dict[str, Any] | None = None,
        from_status: str | None = None,
    ) -> Conflict:
        """A `Conflict` refusal (naming the task when there is one), logged like every other."""
        exc = Conflict(message, {**({"task": task.key} if task else {}), **(details or {})})
        return self.refuse(exc, task=task, from_status=from_status)

    def record(
        self, *, detail: str, action: str | None = None, **event: Unpack[EventFields]
    ) -> Event:
        """This attempt's event (`record_event`), named by `action` when what happened has its
        own name (`goal_create` records `goal_created`), else by the attempt's."""
        return record_event(
            project=self.project,
            actor=self.actor,
            action=action or self.action,
            detail=detail,
            now=self.now,
            **event,
        )


@dataclass(frozen=True)
class Refusal:
    """What a refused attempt's event says besides the attempt: the task and its edge."""

    attempt: Attempt
    task: Task | None
    from_status: str
    to_status: str

    def record(self, exc: ProtocolError) -> Event:
        return replace(self.attempt, action=refused_action(self.attempt.action)).record(
            detail=f"refused: {exc.message}",
            task=self.task,
            from_status=self.from_status,
            to_status=self.to_status,
            data={"code": exc.code, "attempted": self.attempt.action, **_jsonable(exc)},
            outcome=Event.Outcome.REJECTED,
        )


F = TypeVar("F", bound=Callable[..., Any])


def records_refusals(func: F) -> F:
    """Write the rejected-attempt Event for a refused operation, outside its rolled-back work."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except ProtocolError as exc:
            # Only a refusal that names its attempt is logged (a role refusal names it too:
            # `authority.require_role`); input validation errors are the caller's typing
            # mistakes, not attempts.
            refused = getattr(exc, "refused", None)
            if refused is not None and not getattr(exc, "audit_written", False):
                exc.audit_written = True  # type: ignore[attr-defined]
                with transaction.atomic():
                    refused.record(exc)
            raise

    return wrapper  # type: ignore[return-value]


def refused_action(action: str) -> str:
    # Seed 002's log names a lost claim race `claim_failed`; other refusals follow that pattern.
    return f"{action}_failed" if not action.endswith("_failed") else action


def _jsonable(exc: ProtocolError) -> dict[str, Any]:
    return {"details": {k: v for k, v in exc.details.items() if k != "exit"}}

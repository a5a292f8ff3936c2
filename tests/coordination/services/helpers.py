"""Assertions shared by the protocol tests: snapshots of rows, refusals, and the invariants."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import models

from agents.models import Agent
from agents.services import agent_heartbeat
from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.records import Anomaly, Event
from boards.coordination.models.tasks import Discovery, HumanNote, Review, Task
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.coordination.services import records, sprints
from boards.coordination.services import tasks as task_services
from boards.coordination.services.goals import goal_create
from boards.errors import LeaseLost, ProtocolError
from tests.lifecycle import World


def goal_world() -> World:
    """The suite's World with a goal IN_PROGRESS: seed 002 requires `goal` in a valid state."""
    world = World()
    goal_create(
        project=world.project,
        actor=world.planner,
        description="Retry logic for every API call",
        now=world.now,
    )
    return world


def row_snapshot(obj: models.Model) -> dict[str, Any]:
    """Every concrete field of `obj` and its M2M keys, read fresh from the database."""
    fresh = type(obj)._default_manager.get(pk=obj.pk)
    data: dict[str, Any] = {
        field.attname: getattr(fresh, field.attname) for field in fresh._meta.concrete_fields
    }
    for m2m in fresh._meta.many_to_many:
        related = getattr(fresh, m2m.name).all()
        if m2m.related_model is Task:
            data[m2m.name] = sorted(related.values_list("key", flat=True))
        else:
            data[m2m.name] = sorted(related.values_list("pk", flat=True))
    return data


def rows_snapshot(queryset: models.QuerySet) -> list[dict[str, Any]]:
    """`row_snapshot` of every row of `queryset` (a model without many-to-many fields), in one
    query rather than one a row: the protocol tests take two of these around every refusal."""
    model = queryset.model
    assert not model._meta.many_to_many, f"{model.__name__} has many-to-many fields"
    return list(queryset.values(*(field.attname for field in model._meta.concrete_fields)))


def project_snapshot(project: Project, task: Task | None = None) -> dict[str, Any]:
    """The task row plus everything a refused task operation could have touched besides it."""
    snapshot: dict[str, Any] = {
        "agents": {
            row["agent_id"]: row for row in rows_snapshot(Agent.objects.filter(project=project))
        },
        "reviews": rows_snapshot(Review.objects.filter(project=project).order_by("pk")),
        "anomalies": Anomaly.objects.filter(project=project).count(),
        "notes": HumanNote.objects.filter(project=project).count(),
        "tasks": Task.objects.filter(project=project).count(),
        "applied_events": Event.objects.filter(
            project=project, outcome=Event.Outcome.APPLIED
        ).count(),
    }
    if task is not None:
        snapshot["task"] = row_snapshot(task)
    return snapshot


def rejected_event_ids(project: Project) -> set[int]:
    return set(
        Event.objects.filter(project=project, outcome=Event.Outcome.REJECTED).values_list(
            "pk", flat=True
        )
    )


def one_new_rejected_event(project: Project, before: set[int]) -> Event:
    """Exactly one rejected-attempt Event was written since `before`; return it."""
    new = rejected_event_ids(project) - before
    assert len(new) == 1, f"expected one rejected-attempt event, got {len(new)}"
    return Event.objects.get(pk=new.pop())


def assert_refused_unchanged(
    call,
    *,
    project: Project,
    obj: models.Model | None,
    exc_type: type[Exception],
    logged: bool = True,
    **expect,
) -> tuple[Exception, Event | None]:
    """Run `call`: it must raise `exc_type` and change nothing. With `logged`, exactly one
    rejected-attempt event is written (SPEC §4.1), else none. `expect` are attribute checks on
    the exception (code=..., details=...)."""
    before_rows = project_snapshot(project, obj if isinstance(obj, Task) else None)
    before_obj = row_snapshot(obj) if obj is not None else None
    before_events = rejected_event_ids(project)
    try:
        call()
    except exc_type as exc:
        caught = exc
    else:  # pragma: no cover - the assertion is the point
        raise AssertionError(f"{exc_type.__name__} was not raised")
    for name, value in expect.items():
        assert getattr(caught, name) == value, (name, getattr(caught, name), value)
    assert project_snapshot(project, obj if isinstance(obj, Task) else None) == before_rows
    if obj is not None:
        assert row_snapshot(obj) == before_obj
    if not logged:
        assert rejected_event_ids(project) == before_events
        return caught, None
    event = one_new_rejected_event(project, before_events)
    assert isinstance(caught, ProtocolError)
    assert event.data["code"] == caught.code
    return caught, event


def applied_events(project: Project, **filters) -> list[Event]:
    return list(
        Event.objects.filter(project=project, outcome=Event.Outcome.APPLIED, **filters).order_by(
            "timestamp", "pk"
        )
    )


def assert_valid(project: Project, *, now: datetime) -> None:
    """Every invariant of seed 002 "Validation Rules" holds for `project` at `now` (SPEC §5.1)."""
    from boards.interop.exporting import project_violations

    # A project with no goal or sprint yet is not exportable yet, not invalid (SPEC §13).
    violations, _ = project_violations(project, now=now)
    assert not violations, "\n".join(str(v) for v in violations)


# -- shared by the human-oversight tests (split from test_oversight.py by module) --------------


def _actions(world, key: str, since: int = 0) -> list[tuple[str, str, str, str]]:
    """(action, actor kind, from, to) of the task's applied events after event id `since`."""
    return [
        (e.action, e.actor_kind, e.from_status, e.to_status)
        for e in applied_events(world.project, task=world.task(key))
        if e.pk > since
    ]


def _last_event_id(world) -> int:
    return (
        Event.objects.filter(project=world.project).order_by("-pk").values_list("pk", flat=True)[0]
    )


def _claim_next(world, coder: str) -> Task | None:
    return task_services.task_claim_next(
        project=world.project, agent=world.agent(coder), now=world.tick(), base_commit="base0002"
    )


def _heartbeat_refusal(world, agent_id: str) -> LeaseLost:
    with pytest.raises(LeaseLost) as caught:
        agent_heartbeat(agent=world.agent(agent_id), now=world.tick())
    assert caught.value.details["exit"] == 42
    return caught.value


def _awaiting(world, key: str, **fields) -> Task:
    """A task whose reviewers approved and which now waits for a human."""
    fields.setdefault("needs_human_approval", True)
    world.under_review(key, **fields)
    task = world.verdict(key, "APPROVED")
    assert task.status == "READY_FOR_REVIEW"
    assert awaiting_human_approval(task)
    return task


def _immediate(world) -> Discovery:
    return records.discovery_create(
        project=world.project,
        actor=world.coder,
        description="OrderAPI has no idempotency keys",
        severity="high",
        urgency="immediate",
        now=world.tick(),
    )


def _sprint(world):
    world.unclaimed("t1")
    return sprints.sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project),
        planned=["t1"],
        deadline=world.now + timedelta(days=1),
        now=world.tick(),
    )

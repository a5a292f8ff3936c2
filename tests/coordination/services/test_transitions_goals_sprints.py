"""Every (from, to) pair of seed 000's goal and sprint machines, through their services.

Each target state has one service that leads into it; a pair succeeds exactly when it is an
edge of protocol.GOAL_EDGES / SPRINT_EDGES, and otherwise is refused with invalid_transition,
the row unchanged and one rejected-attempt event (SPEC §5.3, §5.4, §6).
"""

from __future__ import annotations

import pytest

from boards import protocol as p
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import Event
from boards.coordination.services import goals as goal_services
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services.actors import SYSTEM
from boards.errors import InvalidTransition
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    rejected_event_ids,
)

pytestmark = pytest.mark.django_db


def _ids(pairs):
    return [f"{frm}->{to}" for frm, to in pairs]


def _targets(edges, frm):
    return [to for (f, to) in edges if f == frm]


# ---------------------------------------------------------------------------------------------
# goal: IN_PROGRESS → COMPLETED | ABORTED (terminal); no way back to IN_PROGRESS
# ---------------------------------------------------------------------------------------------

GOAL_PAIRS = [(frm, to) for frm in p.GOAL_STATES for to in p.GOAL_STATES]
# Who leads a goal into each state (goal_complete: the planner; goal_abort: a human).
GOAL_INTO = {
    "COMPLETED": (goal_services.goal_complete, lambda world: world.planner, "goal_completed"),
    "ABORTED": (goal_services.goal_abort, lambda world: world.admin, "goal_aborted"),
}


def _goal(world) -> Goal:
    return Goal.objects.get(project=world.project, status="IN_PROGRESS")


def _drive_goal(world, status: str) -> Goal:
    goal = _goal(world)
    if status != "IN_PROGRESS":
        service, actor, _ = GOAL_INTO[status]
        goal = service(goal=goal, actor=actor(world), reason="setup", now=world.tick())
    assert goal.status == status
    return goal


def test_goal_machine_has_no_edge_back_to_in_progress():
    """Seed 000: COMPLETED and ABORTED are terminal and goals have no CHECKPOINT."""
    field = Goal._meta.get_field("status")
    transitions = {(t.source, t.target) for t in field.get_all_transitions(Goal)}
    assert transitions == set(p.GOAL_EDGES)
    assert not [t for t in transitions if t[1] == "IN_PROGRESS"]


GOAL_SERVICE_PAIRS = [pair for pair in GOAL_PAIRS if pair[1] != "IN_PROGRESS"]


@pytest.mark.parametrize(("frm", "to"), GOAL_SERVICE_PAIRS, ids=_ids(GOAL_SERVICE_PAIRS))
def test_goal_pair(world, frm, to):
    goal = _drive_goal(world, frm)
    service, actor_of, action = GOAL_INTO[to]
    actor = actor_of(world)
    now = world.tick()
    call = lambda: service(goal=goal, actor=actor, reason="Decided in review", now=now)  # noqa: E731

    if (frm, to) in p.GOAL_EDGES:
        refused = rejected_event_ids(world.project)
        goal = call()
        goal = Goal.objects.get(pk=goal.pk)
        assert goal.status == to
        assert goal.alignment_history[-1] == {
            "timestamp": p.format_timestamp(now),
            "event": action,
            "summary": "Decided in review",
        }
        (event,) = applied_events(world.project, action=action)
        assert (event.from_status, event.to_status, event.timestamp) == (frm, to, now)
        assert rejected_event_ids(world.project) == refused
        assert_valid(world.project, now=now)
        return

    allowed = _targets(p.GOAL_EDGES, frm)
    assert allowed == []  # only IN_PROGRESS has exits
    _, event = assert_refused_unchanged(
        call,
        project=world.project,
        obj=goal,
        exc_type=InvalidTransition,
        code="invalid_transition",
        details={"from": frm, "to": to, "allowed": allowed},
    )
    assert (event.from_status, event.to_status) == (frm, to)
    assert event.action == f"{action}_failed"


def test_only_a_human_aborts_a_goal(world):
    from django.core.exceptions import PermissionDenied

    goal = _goal(world)
    assert_refused_unchanged(
        lambda: goal_services.goal_abort(
            goal=goal, actor=world.planner, reason="bored", now=world.tick()
        ),
        project=world.project,
        obj=goal,
        exc_type=PermissionDenied,
        logged=True,  # role refusals are audited like every refusal
    )


# ---------------------------------------------------------------------------------------------
# sprint: IN_PROGRESS → CHECKPOINT | COMPLETED | ABORTED; CHECKPOINT → IN_PROGRESS | ABORTED
# ---------------------------------------------------------------------------------------------

SPRINT_PAIRS = [(frm, to) for frm in p.SPRINT_STATES for to in p.SPRINT_STATES]


def _into_checkpoint(world, sprint, now):
    return sprint_services.sprint_checkpoint(
        sprint=sprint, actor=world.admin, reason="Deadline review", now=now
    )


def _into_in_progress(world, sprint, now):
    return sprint_services.sprint_resume(
        sprint=sprint, actor=world.admin, decision="Carry on", now=now
    )


def _into_completed(world, sprint, now):
    return sprint_services.sprint_complete(sprint=sprint, actor=world.planner, now=now)


def _into_aborted(world, sprint, now):
    return sprint_services.sprint_abort(
        sprint=sprint, actor=world.admin, reason="Wrong goal", now=now
    )


SPRINT_INTO = {
    "CHECKPOINT": (_into_checkpoint, "sprint_checkpoint"),
    "IN_PROGRESS": (_into_in_progress, "sprint_resumed"),
    "COMPLETED": (_into_completed, "sprint_completed"),
    "ABORTED": (_into_aborted, "sprint_aborted"),
}
# How the fixture reaches each source state (every path uses only SPRINT_EDGES).
SPRINT_PATH = {
    "IN_PROGRESS": [],
    "CHECKPOINT": ["CHECKPOINT"],
    "COMPLETED": ["COMPLETED"],
    "ABORTED": ["CHECKPOINT", "ABORTED"],
}


def _check_sprint(to, sprint, now):
    if to == "CHECKPOINT":
        assert sprint.checkpoint_at == now
        assert sprint.ended is None
    elif to == "IN_PROGRESS":
        assert sprint.checkpoint_at is None
        assert sprint.retrospective["checkpoint_decisions"][-1]["note"] == "Carry on"
    else:
        assert sprint.ended == now
        assert sprint.metrics is not None and sprint.metrics["tasks_done"] == 0
    if to == "ABORTED":
        assert sprint.retrospective["checkpoint_decisions"][-1]["decision"] == "abort"


def test_sprint_services_cover_the_machine():
    field = Sprint._meta.get_field("status")
    transitions = set()
    for t in field.get_all_transitions(Sprint):
        transitions.add((t.source, t.target))
    assert transitions == set(p.SPRINT_EDGES)
    assert set(SPRINT_INTO) == set(p.SPRINT_STATES)


def _sprint(world, **fields) -> Sprint:
    """The planner's sprint for the goal IN_PROGRESS (`fields`: sprint_create's, e.g. planned)."""
    return sprint_services.sprint_create(
        project=world.project, actor=world.planner, goal=_goal(world), now=world.tick(), **fields
    )


def _drive_sprint(world, status: str) -> Sprint:
    sprint = _sprint(world)
    for step in SPRINT_PATH[status]:
        sprint = SPRINT_INTO[step][0](world, sprint, world.tick())
    assert sprint.status == status
    return sprint


@pytest.mark.parametrize(("frm", "to"), SPRINT_PAIRS, ids=_ids(SPRINT_PAIRS))
def test_sprint_pair(world, frm, to):
    sprint = _drive_sprint(world, frm)
    service, action = SPRINT_INTO[to]
    now = world.tick()

    if (frm, to) in p.SPRINT_EDGES:
        refused = rejected_event_ids(world.project)
        service(world, sprint, now)
        sprint = Sprint.objects.get(pk=sprint.pk)
        assert sprint.status == to
        _check_sprint(to, sprint, now)
        events = applied_events(world.project, action=action, timestamp=now)
        assert [(e.from_status, e.to_status) for e in events] == [(frm, to)]
        assert rejected_event_ids(world.project) == refused
        assert_valid(world.project, now=now)
        return

    _, event = assert_refused_unchanged(
        lambda: service(world, sprint, now),
        project=world.project,
        obj=sprint,
        exc_type=InvalidTransition,
        code="invalid_transition",
        details={"from": frm, "to": to, "allowed": _targets(p.SPRINT_EDGES, frm)},
    )
    assert (event.from_status, event.to_status) == (frm, to)
    assert event.action == (action if action.endswith("_failed") else f"{action}_failed")


def test_sprint_does_not_complete_while_planned_work_is_open(world):
    world.unclaimed("task-1")
    sprint = _sprint(world, planned=["task-1"])
    exc, event = assert_refused_unchanged(
        lambda: sprint_services.sprint_complete(sprint=sprint, actor=world.planner, now=world.now),
        project=world.project,
        obj=sprint,
        exc_type=InvalidTransition,
    )
    assert "task-1" in exc.message
    assert (event.from_status, event.to_status) == ("IN_PROGRESS", "COMPLETED")


def test_sprint_completes_by_itself_when_the_last_planned_task_is_terminal(world):
    """Seed 000 trigger "All planned tasks terminal → COMPLETED" (automatic, by the system)."""
    world.approved("task-1")
    sprint = _sprint(world, planned=["task-1"])
    from boards.coordination.services.tasks import task_report_merge

    now = world.tick()
    task_report_merge(task=world.task("task-1"), agent=world.reviewer, merge_commit="m1", now=now)
    sprint = Sprint.objects.get(pk=sprint.pk)
    assert (sprint.status, sprint.ended) == ("COMPLETED", now)
    assert sprint.metrics["tasks_done"] == 1
    (event,) = applied_events(world.project, action="sprint_completed")
    assert (event.actor_kind, event.actor_id) == (Event.ActorKind.SYSTEM, SYSTEM.name)
    assert_valid(world.project, now=now)

"""A planner's edits (issue 25 "plan from the board"): task_edit, goal_edit and closing a sprint
(boards.coordination.services.tasks.planning, boards.coordination.services.goals,
boards.coordination.services.sprints)."""

from __future__ import annotations

import pytest

from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import Event
from boards.coordination.services import goals, sprints, tasks
from boards.errors import Conflict, Forbidden, InvalidTransition, ProtocolValidationError
from tests.factories import member
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    w = World()
    goals.goal_create(project=w.project, actor=w.planner, description="Ship it", now=w.tick())
    return w


def _edit(world, key, actor=None, **changes):
    return tasks.task_edit(
        task=world.task(key), actor=actor or world.admin, now=world.tick(), **changes
    )


# (how far the task got, whether its contract — description, done_when … — may still change)
STATES = [
    ("draft", True),
    ("unclaimed", True),
    ("claimed", False),
    ("ready_for_review", False),
    ("rejected", False),
    ("approved", False),
]


@pytest.mark.parametrize(("state", "contract_editable"), STATES)
def test_the_contract_changes_only_before_a_claim(world, state, contract_editable):
    getattr(world, state)("T-1")
    before = world.task("T-1")
    if contract_editable:
        task = _edit(world, "T-1", description="Clearer", done_when="all green")
        assert (task.description, task.done_when) == ("Clearer", "all green")
        event = Event.objects.filter(project=world.project, action="edited").get()
        assert (event.actor_kind, event.actor_id) == ("human", world.admin.get_username())
        assert event.data["changes"]["description"] == {"old": before.description, "new": "Clearer"}
    else:
        with pytest.raises(Conflict, match="rescope"):
            _edit(world, "T-1", description="Clearer", priority=1)
        after = world.task("T-1")
        # Refused whole: the priority given with it did not change either.
        assert (after.description, after.priority) == (before.description, before.priority)
        assert Event.objects.filter(project=world.project, action="edit_failed").exists()


@pytest.mark.parametrize(("state", "_"), STATES)
def test_priority_and_dependencies_change_in_any_open_state(world, state, _):
    world.unclaimed("dep")
    getattr(world, state)("T-1")
    # The values the form sends back unchanged do not count as edits of the contract.
    current = world.task("T-1")
    deps = [] if state == "claimed" else ["dep"]  # a CLAIMED task depends only on MERGED work
    task = _edit(world, "T-1", description=current.description, priority=1, depends_on=deps)
    assert task.priority == 1
    assert [d.key for d in task.depends_on.all()] == deps


def test_an_edit_with_a_dependency_cycle_writes_nothing(world):
    world.draft("a")
    world.draft("b", depends_on=["a"])
    with pytest.raises(ProtocolValidationError, match="cycle"):
        _edit(world, "a", description="Renamed", depends_on=["b"])
    a = world.task("a")
    assert a.description == "Implement a" and list(a.depends_on.all()) == []


def test_a_finalized_task_keeps_done_when_and_spec_ref(world):
    world.unclaimed("T-1")
    with pytest.raises(ProtocolValidationError, match="done_when"):
        _edit(world, "T-1", done_when="")
    assert world.task("T-1").done_when == "T-1 works"


def test_a_draft_may_lose_its_done_when(world):
    world.draft("T-1")
    assert _edit(world, "T-1", done_when="").done_when == ""


def test_nothing_changed_writes_nothing(world):
    world.draft("T-1")
    count = Event.objects.count()
    _edit(world, "T-1", description="Implement T-1", priority=3, depends_on=[])
    assert Event.objects.count() == count


def test_a_finished_task_is_not_edited(world):
    world.merged("T-1")
    with pytest.raises(Conflict, match="MERGED"):
        _edit(world, "T-1", priority=1)


def test_the_gate_is_not_lifted_while_a_human_is_asked(world):
    world.approved("T-1", needs_human_approval=True)
    with pytest.raises(Conflict, match="awaiting human approval"):
        _edit(world, "T-1", needs_human_approval=False)
    assert world.task("T-1").needs_human_approval is True


@pytest.mark.parametrize(
    ("role", "allowed"), [("viewer", False), ("member", False), ("admin", True)]
)
def test_who_edits(world, role, allowed):
    world.draft("T-1")
    user = world.admin if role == "admin" else member(world.project, role)
    if allowed:
        assert _edit(world, "T-1", actor=user, priority=2).priority == 2
    else:
        with pytest.raises(Forbidden):
            _edit(world, "T-1", actor=user, priority=2)
        assert world.task("T-1").priority == 3


def test_a_planner_agent_edits_too(world):
    world.draft("T-1")
    assert _edit(world, "T-1", actor=world.planner, priority=1).priority == 1
    with pytest.raises(Forbidden):
        _edit(world, "T-1", actor=world.coder, priority=2)


def test_editing_the_goal_records_its_alignment(world):
    goal = Goal.objects.get(project=world.project)
    edited = goals.goal_edit(
        goal=goal, actor=world.admin, now=world.tick(), description="Ship it safely"
    )
    assert edited.description == "Ship it safely"
    assert edited.alignment_history[-1]["event"] == "goal_edited"
    assert edited.alignment_history[-1]["summary"] == "Ship it safely"
    event = Event.objects.get(project=world.project, action="goal_edited")
    assert event.actor_id == world.admin.get_username()


def test_an_ended_goal_is_not_edited(world):
    goal = Goal.objects.get(project=world.project)
    goals.goal_abort(goal=goal, actor=world.admin, reason="dropped", now=world.tick())
    with pytest.raises(Conflict, match="ABORTED"):
        goals.goal_edit(goal=goal, actor=world.admin, now=world.tick(), description="Again")
    assert Goal.objects.get(pk=goal.pk).description == "Ship it"


def test_a_sprint_closes_once_its_planned_work_ended(world):
    world.unclaimed("T-1")
    sprint = sprints.sprint_create(
        project=world.project, actor=world.admin, now=world.tick(), planned=["T-1"]
    )
    with pytest.raises(InvalidTransition, match="T-1"):
        sprints.sprint_complete(sprint=sprint, actor=world.admin, now=world.tick())
    assert Sprint.objects.get(pk=sprint.pk).status == "IN_PROGRESS"


def test_a_sprint_without_planned_work_is_closed_by_a_human(world):
    sprint = sprints.sprint_create(project=world.project, actor=world.admin, now=world.tick())
    closed = sprints.sprint_complete(sprint=sprint, actor=world.admin, now=world.tick())
    assert closed.status == "COMPLETED"
    event = Event.objects.get(project=world.project, action="sprint_completed")
    assert (event.actor_kind, event.actor_id) == ("human", world.admin.get_username())

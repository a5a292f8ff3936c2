"""Protocol answers that were wrong in the first release, each through the API (SPEC §13).

- a task cannot depend on itself, at creation as on the dependencies endpoint (400 naming the
  field);
- 404 means "does not exist": a goal or sprint in the wrong state is a 409 `invalid_transition`
  with its state and the allowed transitions, a project that never had one a 404;
- a handoff frees the agent id at once for its next session, and the task is kept for it;
- every path that takes work away answers the former holder's next operations `lease_lost`
  (exit 42), whatever the task's state now;
- a goal completes only with all its work done; an aborted goal aborts its sprint and cancels
  its tasks; tasks of a terminal goal are nobody's to claim or review.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.services import agent_set_enabled
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services import stops, tasks
from boards.coordination.services.goals import goal_abort, goal_complete, goal_create
from boards.coordination.services.sprints import sprint_abort, sprint_create
from tests.api.helpers import (
    agent_client,
    api_base,
    assert_envelope,
    http_start,
    session_client,
)
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def world():
    return World(now=http_start())


def _post(client, world, path, body=None):
    return client.post(f"{api_base(world.project.slug)}/{path}", body or {}, format="json")


# -- self-dependencies -------------------------------------------------------------------------


def test_a_task_cannot_be_created_depending_on_itself(world):
    planner = agent_client(world.planner)
    created = _post(
        planner,
        world,
        "tasks",
        {"key": "T-1", "description": "Loop", "depends_on": ["T-1"]},
    )
    error = assert_envelope(created, 400, "validation_error")
    assert "depends_on" in error["details"]["fields"]
    assert not Task.objects.filter(project=world.project, key="T-1").exists()

    world.draft("A")
    world.draft("B", depends_on=["A"])
    looped = _post(planner, world, "tasks", {"key": "C", "description": "x", "depends_on": ["C"]})
    assert_envelope(looped, 400, "validation_error")
    response = planner.put(
        f"{api_base(world.project.slug)}/tasks/A/dependencies",
        {"depends_on": ["B"]},
        format="json",
    )
    assert "depends_on" in assert_envelope(response, 400, "validation_error")["details"]["fields"]


# -- 404 only for what does not exist -----------------------------------------------------------


def test_a_terminal_goal_is_a_409_and_no_goal_a_404(world):
    admin = session_client(world.admin)
    assert_envelope(_post(admin, world, "goal/abort", {"reason": "x"}), 404, "not_found")
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    goal_complete(goal=goal, actor=world.planner, reason="Done", now=world.tick())
    for path in ("goal/complete", "goal/abort"):
        error = assert_envelope(
            _post(admin, world, path, {"reason": "again"}), 409, "invalid_transition"
        )
        assert (error["details"]["from"], error["details"]["allowed"]) == ("COMPLETED", [])


def test_a_terminal_sprint_is_a_409_and_no_sprint_a_404(world):
    admin = session_client(world.admin)
    for path, body in (
        ("sprint/continue", {"decision": "go"}),
        ("sprint/checkpoint", {"reason": "x"}),
    ):
        assert_envelope(_post(admin, world, path, body), 404, "not_found")
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    sprint = sprint_create(project=world.project, actor=world.planner, goal=goal, now=world.tick())
    sprint_abort(sprint=sprint, actor=world.admin, reason="Stop", now=world.tick())
    for path, body in (
        ("sprint/continue", {"decision": "go"}),
        ("sprint/checkpoint", {"reason": "x"}),
    ):
        error = assert_envelope(_post(admin, world, path, body), 409, "invalid_transition")
        assert (error["details"]["from"], error["details"]["allowed"]) == ("ABORTED", [])


# -- handoff -----------------------------------------------------------------------------------


def test_a_handoff_frees_the_id_at_once_and_keeps_the_task_for_it(world):
    world.claimed("T-1")
    coder = agent_client(world.coder)
    handed = _post(coder, world, "tasks/T-1/handoff", {"summary": "Half", "next_action": "Tests"})
    assert handed.status_code == 201, handed.json()

    again = _post(coder, world, "agents/register")  # the restarted session of the same id
    assert again.status_code == 200, again.json()
    task = world.task("T-1")
    assert (task.status, task.assigned_to, task.handoff_pending) == ("CLAIMED", "coder-1", True)

    # Even once its lease lapsed past the grace, no other coder takes it over meanwhile.
    config = config_of(world.project)
    later = task.lease_expires + timedelta(seconds=config.lease_grace + config.retry_backoff[0] + 1)
    assert (
        tasks.task_claim_next(project=world.project, agent=world.agent("coder-2"), now=later)
        is None
    )
    assert "coder-1" not in world.task("T-1").failed_by

    picked = _post(coder, world, "tasks/T-1/handoff/pickup")
    assert picked.status_code == 200, picked.json()
    assert world.task("T-1").handoff_pending is False


# -- lost leases -------------------------------------------------------------------------------


def _take_away(world: World, how: str) -> None:
    task, now = world.task("T-1"), world.tick()
    if how == "human release":
        tasks.task_release_claim(task=task, actor=world.admin, reason="Stuck", now=now)
    elif how == "cancel":
        tasks.task_cancel(task=task, actor=world.admin, reason="Out of scope", now=now)
    elif how == "suspend":
        tasks.task_suspend(task=task, actor=world.admin, reason="Legal", now=now)
    elif how == "override block":
        tasks.task_override_block(task=task, actor=world.admin, reason="Wrong way", now=now)
    elif how == "disable, then enable":
        coder = world.agent("coder-1")
        agent_set_enabled(agent=coder, actor=world.admin, enabled=False, now=now)
        agent_set_enabled(agent=world.agent("coder-1"), actor=world.admin, enabled=True, now=now)
    elif how == "expiry and takeover":
        config = config_of(world.project)
        later = task.lease_expires + timedelta(
            seconds=config.lease_grace + config.retry_backoff[0] + 1
        )
        world.now = later
        tasks.task_claim(task=task, agent=world.agent("coder-2"), now=later, base_commit="b2")
    elif how == "goal abort":
        goal_abort(goal=task.goal, actor=world.admin, reason="Cancelled", now=now)
    elif how == "sprint abort":
        sprint = sprint_create(
            project=world.project, actor=world.planner, goal=task.goal, now=now, planned=["T-1"]
        )
        stops.sprint_abort(sprint=sprint, actor=world.admin, reason="Stop", now=world.tick())
        assert world.task("T-1").status == "UNCLAIMED"  # back in the queue, nobody blamed
        assert world.task("T-1").failed_by == []


OPERATIONS = (
    ("tasks/T-1/request-review", {"review_commit": "c1", "tree_clean": True}),
    ("tasks/T-1/block", {"reason": "r", "questions": ["q?"]}),
    ("tasks/T-1/handoff", {"summary": "s", "next_action": "n"}),
)


@pytest.mark.parametrize(
    "how",
    [
        "human release",
        "cancel",
        "suspend",
        "override block",
        "disable, then enable",
        "expiry and takeover",
        "goal abort",
        "sprint abort",
    ],
)
def test_every_lost_lease_answers_every_operation_lease_lost(world, how):
    goal_create(project=world.project, actor=world.planner, description="Ship", now=world.tick())
    world.claimed("T-1")
    _take_away(world, how)
    coder = agent_client(world.agent("coder-1"))
    for path, body in OPERATIONS:
        before = Task.objects.filter(key="T-1", project=world.project).values().get()
        error = assert_envelope(_post(coder, world, path, body), 409, "lease_lost")
        assert error["details"]["exit"] == 42, path
        assert Task.objects.filter(key="T-1", project=world.project).values().get() == before


# -- goals -------------------------------------------------------------------------------------


def test_a_goal_completes_only_when_all_its_work_is_done(world):
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    world.unclaimed("T-1")
    sprint_create(
        project=world.project, actor=world.planner, goal=goal, now=world.tick(), planned=["T-1"]
    )
    planner = agent_client(world.planner)
    error = assert_envelope(
        _post(planner, world, "goal/complete", {"reason": "Done?"}), 409, "conflict"
    )
    assert error["details"]["open_tasks"] == ["T-1"]
    assert error["details"]["open_sprint"] == "sprint-1"
    assert world.project.goals.get().status == "IN_PROGRESS"
    assert Event.objects.filter(action="goal_completed_failed").count() == 1


def test_an_aborted_goal_aborts_its_sprint_and_cancels_its_tasks(world):
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    world.merged("T-3")
    world.claimed("T-1")
    world.unclaimed("T-2")
    sprint_create(
        project=world.project, actor=world.planner, goal=goal, now=world.tick(), planned=["T-1"]
    )
    aborted = _post(session_client(world.admin), world, "goal/abort", {"reason": "Pivot"})
    assert aborted.status_code == 200, aborted.json()

    assert world.project.sprints.get().status == "ABORTED"
    statuses = {t.key: t.status for t in Task.objects.filter(project=world.project)}
    assert statuses == {"T-1": "ABANDONED", "T-2": "ABANDONED", "T-3": "MERGED"}
    assert "Pivot" in world.task("T-1").blocked_reason
    # The holder is told: exit 42.
    beat = _post(agent_client(world.agent("coder-1")), world, "agents/heartbeat")
    assert assert_envelope(beat, 409, "lease_lost")["details"]["exit"] == 42


def test_tasks_of_a_terminal_goal_are_never_claimable_or_reviewable(world):
    goal = goal_create(
        project=world.project, actor=world.planner, description="Ship", now=world.tick()
    )
    world.unclaimed("T-1")
    world.ready_for_review("T-2")
    # An imported board can hold live tasks of a finished goal: they stay put.
    Task.objects.filter(project=world.project).update(goal=goal)
    from boards.coordination.models.projects import Goal

    Goal.objects.filter(pk=goal.pk).update(status="COMPLETED")
    world.unclaimed("T-free")  # no goal: unaffected
    Task.objects.filter(key="T-free", project=world.project).update(goal=None)

    coder = agent_client(world.agent("coder-3"))
    assert_envelope(_post(coder, world, "tasks/T-1/claim", {"base_commit": "b1"}), 409, "conflict")
    claimed = _post(coder, world, "tasks/claim-next", {"base_commit": "b1"})
    assert claimed.json()["task"]["key"] == "T-free"
    reviewer = agent_client(world.agent("code-reviewer-2"))
    assert_envelope(_post(reviewer, world, "tasks/T-2/review/claim"), 409, "conflict")

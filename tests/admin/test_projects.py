"""Sprint and goal transitions as admin actions (SPEC §7: checkpoint / continue / abort)."""

from __future__ import annotations

from boards import protocol as p
from boards.coordination.models.projects import Goal, Sprint
from boards.coordination.models.records import CircuitBreaker, Event
from boards.coordination.models.tasks import Task
from boards.coordination.services.sprints import sprint_abort
from boards.coordination.services.tasks import task_cancel
from tests.admin.helpers import page_messages, run_action
from tests.watch.breaker_fixtures import trip


def _log(project, action):
    return Event.objects.filter(project=project, action=action)


def test_checkpoint_then_resume_with_a_decision(admin_client, admin_user, board):
    sprint, project = board.sprint, board.world.project

    run_action(
        admin_client, Sprint, "checkpoint_sprints", [sprint], apply="1", reason="Review scope"
    )
    sprint.refresh_from_db()
    assert sprint.status == "CHECKPOINT"
    assert sprint.checkpoint_at is not None

    response = run_action(
        admin_client, Sprint, "resume_sprints", [sprint], apply="1", decision="Continue as planned"
    )

    sprint.refresh_from_db()
    assert sprint.status == "IN_PROGRESS"
    assert sprint.retrospective["checkpoint_decisions"][-1]["note"] == "Continue as planned"
    event = _log(project, "sprint_resumed").get()
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert f"{sprint}: CHECKPOINT → IN_PROGRESS" in page_messages(response)
    assert _log(project, "sprint_checkpoint").get().detail == "Review scope"


def test_resume_of_a_running_sprint_is_refused_with_a_message(admin_client, board):
    sprint = board.sprint

    response = run_action(
        admin_client, Sprint, "resume_sprints", [sprint], apply="1", decision="Go"
    )

    sprint.refresh_from_db()
    assert sprint.status == "IN_PROGRESS"
    assert [m.level_tag for m in response.context["messages"]] == ["error"]


def test_resume_asks_for_a_decision_not_a_reason(admin_client, board):
    response = run_action(admin_client, Sprint, "resume_sprints", [board.sprint], index="0")

    assert list(response.context["form"].fields) == ["decision"]


def test_abort_sprint_records_the_reason(admin_client, board):
    sprint = board.sprint

    run_action(admin_client, Sprint, "abort_sprints", [sprint], apply="1", reason="Wrong goal")

    sprint.refresh_from_db()
    assert sprint.status == "ABORTED"
    assert sprint.ended is not None
    assert _log(board.world.project, "sprint_aborted").get().detail == "Wrong goal"


def test_goal_complete_then_abort_is_refused(admin_client, board):
    goal = board.goal
    # A goal completes once all its work is done and no sprint of it is open (SPEC §13).
    for task in Task.objects.filter(goal=goal).exclude(status__in=p.TERMINAL_TASK_STATES):
        task_cancel(
            task=task, actor=board.world.admin, reason="Wrapping up", now=board.world.tick()
        )
    for sprint in Sprint.objects.filter(goal=goal, status__in=p.OPEN_SPRINT_STATES):
        sprint_abort(sprint=sprint, actor=board.world.admin, reason="Wrap", now=board.world.tick())

    run_action(admin_client, Goal, "complete_goals", [goal], apply="1", reason="All merged")
    response = run_action(admin_client, Goal, "abort_goals", [goal], apply="1", reason="Too late")

    goal.refresh_from_db()
    assert goal.status == "COMPLETED"
    assert goal.alignment_history[-1]["summary"] == "All merged"
    assert [m.level_tag for m in response.context["messages"]] == ["error"]
    assert _log(board.world.project, "goal_completed").get().actor_kind == "human"


def test_a_goal_with_open_work_is_not_completed(admin_client, board):
    response = run_action(admin_client, Goal, "complete_goals", [board.goal], apply="1", reason="?")

    board.goal.refresh_from_db()
    assert board.goal.status == "IN_PROGRESS"
    (message,) = [str(m) for m in response.context["messages"]]
    assert "still has work" in message


def test_goal_abort(admin_client, board):
    goal = board.goal

    run_action(admin_client, Goal, "abort_goals", [goal], apply="1", reason="Priorities changed")

    goal.refresh_from_db()
    assert goal.status == "ABORTED"


def test_a_circuit_breaker_trip_is_resolved_with_a_reason(admin_client, admin_user, board):
    trip(board.world)
    breaker = CircuitBreaker.objects.get(project=board.world.project)

    asked = run_action(admin_client, CircuitBreaker, "resolve_breakers", [breaker], index="0")
    assert list(asked.context["form"].fields) == ["reason"]
    response = run_action(
        admin_client, CircuitBreaker, "resolve_breakers", [breaker], apply="1", reason="Fixed"
    )

    breaker.refresh_from_db()
    assert (breaker.status, breaker.current_trigger) == ("OK", None)
    event = _log(board.world.project, "circuit_breaker_resolved").get()
    assert (event.actor_kind, event.actor_id) == ("human", admin_user.username)
    assert any(m.endswith("TRIGGERED → OK") for m in page_messages(response))

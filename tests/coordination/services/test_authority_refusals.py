"""A role refusal names its attempt (`authority.require_role(attempt, ...)`): the service's
project, actor, action and `now`, as the service was given them, whoever called it — the
operation runner (API, board, admin) or a direct caller (the watcher, a command, a test). Its
rejected-attempt event is then the same either way (SPEC §4.1: every refusal is logged)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.services import agent_heartbeat, agent_set_enabled, run_finish, run_start
from boards.coordination.models.projects import Membership
from boards.coordination.models.records import Event
from boards.coordination.services import tasks
from boards.coordination.services.actors import SYSTEM
from boards.coordination.services.projects import membership_remove
from boards.errors import Forbidden
from boards.operations import operation
from boards.protocol import TaskStatus
from tests.factories import member

pytestmark = pytest.mark.django_db


def _last_refusal(project) -> dict[str, Any]:
    event = Event.objects.filter(project=project, outcome=Event.Outcome.REJECTED).latest("id")
    return {
        "action": event.action,
        "task": event.task_id,
        "from_status": event.from_status,
        "to_status": event.to_status,
        "timestamp": event.timestamp,
        "actor": (event.actor_kind, event.actor_id),
        "detail": event.detail,
        "data": event.data,
    }


def test_the_runner_and_a_direct_call_log_the_same_role_refusal(world):
    task = world.claimed("T-1")
    viewer = member(world.project, "viewer")
    now = world.tick()
    with pytest.raises(Forbidden):
        tasks.task_cancel(task=task, actor=viewer, reason="not mine", now=now)
    direct = _last_refusal(world.project)
    with pytest.raises(Forbidden):
        operation("task_cancel").run(target=task, actor=viewer, now=now, data={"reason": "x"})
    assert (
        _last_refusal(world.project)
        == direct
        == {
            "action": "task_cancel_failed",
            "task": task.pk,
            "from_status": TaskStatus.CLAIMED,
            "to_status": "",
            "timestamp": now,
            "actor": (Event.ActorKind.HUMAN, viewer.username),
            "detail": f"refused: this action needs the admin role in project {world.project.slug}",
            "data": {"code": "permission_denied", "attempted": "task_cancel", "details": {}},
        }
    )


def test_an_operation_declared_under_another_name_is_logged_as_its_service(world):
    # agent_disable and agent_enable are one service: its name is the attempt's action.
    member_user = member(world.project, "member")
    with pytest.raises(Forbidden):
        operation("agent_disable").run(
            target=world.agent("coder-2"), actor=member_user, now=world.tick(), data={}
        )
    refusal = _last_refusal(world.project)
    assert (refusal["action"], refusal["data"]["attempted"], refusal["task"]) == (
        "agent_set_enabled_failed",
        "agent_set_enabled",
        None,
    )


def test_another_agents_run_is_refused_as_that_agents_attempt(world):
    run = run_start(project=world.project, agent=world.coder, now=world.tick())
    now = world.tick()
    with pytest.raises(Forbidden):
        run_finish(run=run, agent=world.agent("coder-2"), now=now, exit_code=0)
    assert _last_refusal(world.project) == {
        "action": "run_finish_failed",
        "task": None,
        "from_status": "",
        "to_status": "",
        "timestamp": now,
        "actor": (Event.ActorKind.AGENT, "coder-2"),
        "detail": f"refused: run {run.pk} is coder-1's, not coder-2's",
        "data": {"code": "permission_denied", "attempted": "run_finish", "details": {}},
    }


def test_a_disabled_agents_heartbeat_is_a_logged_refusal(world):
    agent_set_enabled(agent=world.agent("coder-2"), actor=world.admin, enabled=False, now=world.now)
    with pytest.raises(Forbidden):
        agent_heartbeat(agent=world.agent("coder-2"), now=world.tick())
    refusal = _last_refusal(world.project)
    assert (refusal["action"], refusal["actor"], refusal["detail"]) == (
        "agent_heartbeat_failed",
        (Event.ActorKind.AGENT, "coder-2"),
        "refused: agent coder-2 is disabled",
    )


def test_a_refused_membership_removal_is_logged_too(world):
    # Its project comes from the membership: the old guess from argument names missed it.
    member_user = member(world.project, "member")
    target = member(world.project, "viewer")
    membership = Membership.objects.get(project=world.project, user=target)
    with pytest.raises(Forbidden):
        membership_remove(membership=membership, actor=member_user, now=world.tick())
    assert Membership.objects.filter(pk=membership.pk).exists()
    assert _last_refusal(world.project)["action"] == "membership_remove_failed"
    membership_remove(membership=membership, actor=SYSTEM, now=world.tick())
    assert not Membership.objects.filter(pk=membership.pk).exists()

"""An agent's session ends (agents.services.heartbeats.agent_leave): its lease is given up at
once, so the same id registers again without waiting for it to lapse; refused while it still
holds a live task or review claim. A heartbeat after the leave finds no session
(`not_registered`, exit 8) until the id registers again."""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.services import (
    agent_create,
    agent_handoff,
    agent_heartbeat,
    agent_leave,
    agent_register,
)
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, tasks
from boards.errors import Conflict, NotRegistered
from boards.protocol import format_timestamp
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    goal_world,
)
from tests.coordination.services.tasks.test_limits import _lease_gone

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    """The services' world (tests/coordination/services/conftest.py): seed 002 requires a goal
    IN_PROGRESS."""
    return goal_world()


def leave(world, agent_id: str):
    return agent_leave(project=world.project, agent=world.agent(agent_id), now=world.tick())


def hand_off(world, agent_id: str, key: str):
    return agent_handoff(
        agent=world.agent(agent_id),
        task=world.task(key),
        now=world.tick(),
        summary="stopped",
        next_action="resume",
    )


def register_again(world, agent_id: str, role: str):
    return agent_register(project=world.project, agent_id=agent_id, role=role, now=world.tick())


def test_an_idle_agent_leaves_and_its_id_registers_again_at_once(world):
    """Without leaving, the registration is a collision until the lease lapses (minutes)."""
    assert world.agent("coder-1").has_live_lease(world.now)

    agent = leave(world, "coder-1")

    assert (agent.status, agent.lease_expires, agent.left_at) == ("STARTING", world.now, world.now)
    assert not agent.has_live_lease(world.now)
    (event,) = applied_events(world.project, action="deregistered")
    assert (event.actor_id, event.from_status, event.to_status) == (
        "coder-1",
        "STARTING",
        "STARTING",
    )
    assert event.detail == "coder-1 left: its id is free to register again"
    assert_valid(world.project, now=world.now)  # its export (seed 002) included

    again = register_again(world, "coder-1", "coder")
    assert (again.status, again.lease_expires > world.now) == ("STARTING", True)


def test_a_coder_holding_a_live_claim_is_refused_until_it_hands_off(world):
    world.claimed("task-1", "coder-1")
    caught, event = assert_refused_unchanged(
        lambda: leave(world, "coder-1"),
        project=world.project,
        obj=world.agent("coder-1"),
        exc_type=Conflict,
        code="conflict",
        status_code=409,
    )
    assert caught.message == "coder-1 holds task-1 under a live lease: hand it off first"
    assert (event.action, event.actor_id) == ("agent_leave_failed", "coder-1")

    hand_off(world, "coder-1", "task-1")
    agent = leave(world, "coder-1")

    assert agent.status == "HANDOFF" and not agent.has_live_lease(world.now)
    assert (world.task("task-1").status, world.task("task-1").handoff_pending) == ("CLAIMED", True)
    assert register_again(world, "coder-1", "coder").status == "STARTING"
    assert_valid(world.project, now=world.now)


def test_a_reviewer_holding_a_live_review_is_refused_until_it_gives_it_back(world):
    world.under_review("task-1")
    caught, _ = assert_refused_unchanged(
        lambda: leave(world, "code-reviewer-1"),
        project=world.project,
        obj=world.agent("code-reviewer-1"),
        exc_type=Conflict,
        code="conflict",
    )
    assert caught.message == (
        "code-reviewer-1 holds the review of task-1 under a live lease: give it back first "
        "(review release)"
    )

    reviews.review_release(
        task=world.task("task-1"), agent=world.reviewer, now=world.tick(), stopping=True
    )
    agent = leave(world, "code-reviewer-1")

    assert agent.status == "IDLE" and not agent.has_live_lease(world.now)
    assert register_again(world, "code-reviewer-1", "code_reviewer").status == "STARTING"


def test_with_its_claims_dead_a_working_coder_and_a_reviewing_reviewer_leave_to_handoff(world):
    """Seed 000: HANDOFF is the state before the process terminates; WORKING and REVIEWING
    reach it by their own edge. A claim whose lease and grace lapsed strands nothing: the
    watcher or another claimer takes it."""
    world.claimed("task-1", "coder-1")
    world.under_review("task-2", coder="coder-2")
    assert (world.coder.status, world.reviewer.status) == ("WORKING", "REVIEWING")
    world.tick(_lease_gone(world))

    coder, reviewer = leave(world, "coder-1"), leave(world, "code-reviewer-1")

    assert (coder.status, reviewer.status) == ("HANDOFF", "HANDOFF")
    moves = [
        (e.actor_id, e.from_status, e.to_status)
        for e in applied_events(world.project, action="deregistered")
    ]
    assert moves == [
        ("coder-1", "WORKING", "HANDOFF"),
        ("code-reviewer-1", "REVIEWING", "HANDOFF"),
    ]


def test_a_lease_already_lapsed_is_not_moved_forward(world):
    lapsed = world.agent("planner-1").lease_expires
    world.tick(_lease_gone(world))

    assert leave(world, "planner-1").lease_expires == lapsed


def test_a_heartbeat_after_the_leave_is_not_registered_and_writes_nothing(world):
    """Its supervisor's heartbeat thread racing its own `liza leave`, a stale process, a retried
    request: none brings the lease back (the board would show a live agent that left, and the
    id would be a collision until that lease lapsed)."""
    world.claimed("task-1", "coder-1")
    hand_off(world, "coder-1", "task-1")
    left = leave(world, "coder-1")
    beat_at, task_lease = left.heartbeat, world.task("task-1").lease_expires
    late = world.agent("coder-1")

    caught, event = assert_refused_unchanged(
        lambda: agent_heartbeat(agent=late, now=world.tick(), context_percent=50),
        project=world.project,
        obj=late,
        exc_type=NotRegistered,
        code="not_registered",
        status_code=409,
    )

    assert caught.details == {
        "agent_id": "coder-1",
        "left_at": format_timestamp(left.left_at),
        "exit": 8,
    }
    assert caught.message == (
        f"coder-1 is not registered: it left at {format_timestamp(left.left_at)}; "
        "register again to start a new session"
    )
    assert (event.action, event.actor_id, event.task_id) == ("heartbeat_failed", "coder-1", None)
    after = world.agent("coder-1")
    assert (after.lease_expires, after.heartbeat, after.status) == (
        left.lease_expires,
        beat_at,
        "HANDOFF",
    )
    assert not after.has_live_lease(world.now)
    assert world.task("task-1").lease_expires == task_lease  # the handed-off task's: not extended
    # Its id is free: registering starts a new session, and its heartbeats count again.
    again = register_again(world, "coder-1", "coder")
    assert again.left_at is None
    now = world.tick()
    beat = agent_heartbeat(agent=world.agent("coder-1"), now=now)
    lease = now + timedelta(seconds=world.project.config.lease_duration)
    assert (beat.agent.status, beat.agent.lease_expires) == ("IDLE", lease)


def test_leaving_twice_keeps_the_first_departure(world):
    first = leave(world, "planner-1").left_at
    assert leave(world, "planner-1").left_at == first != world.now


def test_an_agent_an_admin_created_heartbeats_before_it_ever_registers(world):
    """No registration, no departure: its heartbeat is legitimate (STARTING → IDLE)."""
    created = agent_create(project=world.project, actor=world.admin, role="coder", now=world.tick())
    assert (created.registered_at, created.left_at) == (None, None)

    beat = agent_heartbeat(agent=created, now=world.tick())

    assert (beat.agent.status, beat.agent.has_live_lease(world.now)) == ("IDLE", True)


def test_a_coder_that_left_claims_nothing_until_it_registers_again(world):
    """A departed coder's claim would bring its lease back while its heartbeats are refused:
    like a coder that handed off (`claimer_refusal`), it registers again first — claim-next,
    the named claim and `/work` (no work for it) alike."""
    world.unclaimed("task-1")
    left = leave(world, "coder-1")
    expected = "coder-1 left; register again to start a new session"

    for claim in (
        lambda: tasks.task_claim_next(
            project=world.project, agent=world.agent("coder-1"), now=world.tick(),
            base_commit="base0001",
        ),
        lambda: tasks.task_claim(
            task=world.task("task-1"), agent=world.agent("coder-1"), now=world.tick(),
            base_commit="base0001",
        ),
    ):  # fmt: skip
        caught, _ = assert_refused_unchanged(
            claim,
            project=world.project,
            obj=world.agent("coder-1"),
            exc_type=Conflict,
            code="conflict",
            status_code=409,
        )
        assert caught.message == expected
    assert world.agent("coder-1").lease_expires == left.lease_expires
    assert world.task("task-1").status == "UNCLAIMED"
    answer = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-1"), now=world.tick()
    )
    assert answer["work"] is False

    register_again(world, "coder-1", "coder")
    assert (
        work_for_role(
            project=world.project, role="coder", agent=world.agent("coder-1"), now=world.tick()
        )["work"]
        is True
    )
    claimed = tasks.task_claim_next(
        project=world.project, agent=world.agent("coder-1"), now=world.tick(),
        base_commit="base0001",
    )  # fmt: skip
    assert claimed.key == "task-1"

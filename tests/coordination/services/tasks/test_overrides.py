"""A human's overrides of a task (services.tasks.overrides; SPEC §7, seed 004): suspend / resume,
cancel (override block + abandon), releasing a stuck claim.

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from agents.services import agent_register
from boards.coordination.models.projects import Goal
from boards.coordination.models.tasks import HumanNote, Review, Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, sprints, tasks
from boards.errors import (
    Conflict,
    InvalidTransition,
)
from tests.coordination.services.helpers import (
    _actions,
    _awaiting,
    _claim_next,
    _heartbeat_refusal,
    _last_event_id,
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# suspend / resume (seed 004 SUSPENDED, an overlay)
# ---------------------------------------------------------------------------------------------


def test_a_suspended_task_cannot_be_claimed(world):
    world.unclaimed("t1", priority=1)

    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Legal review", now=world.tick()
    )

    assert (task.status, task.suspended_reason, task.suspended_by) == (
        "UNCLAIMED",
        "Legal review",
        world.admin.username,
    )
    assert task.suspended_at == world.now
    (event,) = applied_events(world.project, task=task, action="suspended")
    assert (event.actor_kind, event.detail) == ("human", "Legal review")
    assert_valid(world.project, now=world.now)
    assert _claim_next(world, "coder-1") is None
    exc, _ = assert_refused_unchanged(
        lambda: world.claim("t1"),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )
    assert exc.details["suspended"] is True
    work = work_for_role(
        project=world.project, role="coder", agent=world.agent("coder-1"), now=world.now
    )
    assert work["work"] is False

    task = tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    assert (task.status, task.suspended_at, task.suspended_reason) == ("UNCLAIMED", None, "")
    assert [e.action for e in applied_events(world.project, task=task)][-1] == "resumed"
    assert _claim_next(world, "coder-1").key == "t1"
    assert_valid(world.project, now=world.now)


def test_suspending_a_claimed_task_returns_it_to_the_queue_and_stops_its_coder(world):
    world.claimed("t1")
    world.unclaimed("t2")
    since = _last_event_id(world)

    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Spec under review", now=world.tick()
    )

    # Two legitimate edges, each with its event, then the overlay.
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
        ("suspended", "human", "", ""),
    ]
    assert (task.status, task.assigned_to, task.worktree) == ("UNCLAIMED", "", "")
    assert task.failed_by == []  # a human's decision is not the coder's failure
    assert task.is_suspended
    assert_valid(world.project, now=world.now)
    lost = _heartbeat_refusal(world, "coder-1")
    assert lost.details["reason"] == "suspended: Spec under review"
    # The coder is free: after its restart it takes other work, never the suspended task.
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=world.tick(400))
    assert _claim_next(world, "coder-1").key == "t2"
    assert_valid(world.project, now=world.now)


def test_suspending_a_task_under_review_stops_its_reviewer(world):
    world.under_review("t1")
    task = tasks.task_suspend(
        task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick()
    )

    assert task.status == "READY_FOR_REVIEW"
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    assert world.reviewer.status == "IDLE"
    _heartbeat_refusal(world, "code-reviewer-1")
    assert_valid(world.project, now=world.now)
    exc, _ = assert_refused_unchanged(
        lambda: world.claim_review("t1", "code-reviewer-2"),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    assert exc.details["suspended"] is True
    assert (
        work_for_role(
            project=world.project,
            role="code_reviewer",
            agent=world.agent("code-reviewer-2"),
            now=world.now,
        )["work"]
        is False
    )

    tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    world.claim_review("t1", "code-reviewer-2")
    assert world.verdict("t1", "APPROVED", reviewer="code-reviewer-2").status == "APPROVED"
    assert_valid(world.project, now=world.now)


def test_a_suspended_task_awaiting_approval_waits_for_its_resume(world):
    _awaiting(world, "t1")
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    exc, _ = assert_refused_unchanged(
        lambda: reviews.task_human_approve(
            task=world.task("t1"), actor=world.admin, now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    assert exc.details["suspended"] is True
    tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())
    task = reviews.task_human_approve(task=world.task("t1"), actor=world.admin, now=world.tick())
    assert task.status == "APPROVED"


def test_resuming_a_task_imported_suspended_while_claimed_returns_it_to_the_queue(world):
    world.claimed("t1")
    # A state.yaml may carry a CLAIMED task with the overlay (the services never leave one).
    Task.objects.filter(pk=world.task("t1").pk).update(
        suspended_at=world.now, suspended_by="someone", suspended_reason="Imported"
    )
    since = _last_event_id(world)

    task = tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick())

    assert (task.status, task.assigned_to, task.is_suspended) == ("UNCLAIMED", "", False)
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
        ("resumed", "human", "", ""),
    ]
    _heartbeat_refusal(world, "coder-1")
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("status", ["MERGED", "ABANDONED", "SUPERSEDED"])
def test_a_terminal_task_cannot_be_suspended(world, status):
    world.drive_to(status, "t1")
    assert_refused_unchanged(
        lambda: tasks.task_suspend(
            task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )


def test_suspending_twice_and_resuming_a_running_task_conflict(world):
    world.unclaimed("t1")
    assert_refused_unchanged(
        lambda: tasks.task_resume(task=world.task("t1"), actor=world.admin, now=world.tick()),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    assert_refused_unchanged(
        lambda: tasks.task_suspend(
            task=world.task("t1"), actor=world.admin, reason="Again", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )


# ---------------------------------------------------------------------------------------------
# cancel = override block + abandon
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "status", ["DRAFT", "UNCLAIMED", "CLAIMED", "READY_FOR_REVIEW", "REJECTED", "APPROVED"]
)
def test_cancel_is_override_block_then_abandon(world, status):
    world.drive_to(status, "t1")
    since = _last_event_id(world)

    task = tasks.task_cancel(
        task=world.task("t1"), actor=world.admin, reason="Out of scope", now=world.tick()
    )

    assert task.status == "ABANDONED"
    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", status, "BLOCKED"),
        ("abandoned", "human", "BLOCKED", "ABANDONED"),
    ]
    assert all("Out of scope" in e.detail for e in applied_events(world.project, task=task)[-2:])
    assert_valid(world.project, now=world.now)


def test_cancelling_a_claimed_task_stops_its_coder(world):
    world.claimed("t1")
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    lost = _heartbeat_refusal(world, "coder-1")
    assert lost.details["reason"] == f"cancelled by {world.admin.username}: No"


def test_cancelling_a_blocked_task_abandons_it(world):
    world.blocked("t1")
    since = _last_event_id(world)
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    assert _actions(world, "t1", since) == [("abandoned", "human", "BLOCKED", "ABANDONED")]


def test_cancelling_a_suspended_task_lifts_the_overlay(world):
    world.unclaimed("t1")
    tasks.task_suspend(task=world.task("t1"), actor=world.admin, reason="Hold", now=world.tick())
    task = tasks.task_cancel(
        task=world.task("t1"), actor=world.admin, reason="No", now=world.tick()
    )
    assert (task.status, task.is_suspended) == ("ABANDONED", False)
    assert_valid(world.project, now=world.now)


def test_cancelling_the_last_planned_task_completes_the_sprint(world):
    world.merged("t0")
    world.unclaimed("t1")
    sprints.sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project),
        planned=["t0", "t1"],
        now=world.tick(),
    )
    tasks.task_cancel(task=world.task("t1"), actor=world.admin, reason="No", now=world.tick())
    assert world.project.sprints.get().status == "COMPLETED"


@pytest.mark.parametrize("status", ["MERGED", "ABANDONED", "SUPERSEDED"])
def test_a_terminal_task_cannot_be_cancelled(world, status):
    world.drive_to(status, "t1")
    assert_refused_unchanged(
        lambda: tasks.task_cancel(
            task=world.task("t1"), actor=world.admin, reason="No", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=InvalidTransition,
        code="invalid_transition",
    )


# ---------------------------------------------------------------------------------------------
# releasing a stuck claim
# ---------------------------------------------------------------------------------------------


def test_a_released_claim_is_taken_over_at_once(world):
    world.claimed("t1")
    since = _last_event_id(world)

    task = tasks.task_release_claim(
        task=world.task("t1"), actor=world.admin, reason="coder-1 is looping", now=world.tick()
    )

    assert _actions(world, "t1", since) == [
        ("override_blocked", "human", "CLAIMED", "BLOCKED"),
        ("released", "human", "BLOCKED", "UNCLAIMED"),
    ]
    assert (task.status, task.assigned_to, task.worktree, task.lease_expires) == (
        "UNCLAIMED",
        "",
        "",
        None,
    )
    assert HumanNote.objects.get(task=task).message.endswith("coder-1 is looping")
    assert world.coder.status == "IDLE" and world.coder.current_task is None
    assert_valid(world.project, now=world.now)
    # No lease to wait out: another coder claims it now.
    taken = _claim_next(world, "coder-2")
    assert (taken.key, taken.assigned_to, taken.iteration) == ("t1", "coder-2", 1)
    lost = _heartbeat_refusal(world, "coder-1")
    assert "coder-1 is looping" in lost.details["reason"]
    assert_valid(world.project, now=world.now)


def test_releasing_a_review_claim_makes_the_review_claimable(world):
    world.under_review("t1")
    since = _last_event_id(world)

    task = tasks.task_release_claim(
        task=world.task("t1"), actor=world.admin, reason="Reviewer stuck", now=world.tick()
    )

    assert task.status == "READY_FOR_REVIEW"
    assert _actions(world, "t1", since) == [("review_claim_released", "human", "", "")]
    assert world.reviewer.status == "IDLE"
    _heartbeat_refusal(world, "code-reviewer-1")
    assert_valid(world.project, now=world.now)
    world.claim_review("t1", "code-reviewer-2")
    assert world.verdict("t1", "APPROVED", reviewer="code-reviewer-2").status == "APPROVED"
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("status", ["DRAFT", "UNCLAIMED", "READY_FOR_REVIEW", "BLOCKED", "MERGED"])
def test_releasing_when_nothing_is_claimed_conflicts(world, status):
    world.drive_to(status, "t1")  # READY_FOR_REVIEW without a review claim
    exc, _ = assert_refused_unchanged(
        lambda: tasks.task_release_claim(
            task=world.task("t1"), actor=world.admin, reason="Stuck", now=world.tick()
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
        code="conflict",
    )
    assert "nothing is claimed" in exc.message

"""Seed 000 "Transition Requirements", seed 002 "Iteration Field Lifecycle" and "Review Cycles
Split", row by row (SPEC §5.1: the server enforces them, agents cannot set these fields)."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.services import tasks as task_services
from boards.coordination.services.tasks.planning import NEW_TASK_FIELDS, new_task
from boards.errors import Conflict, InvalidTransition, ProtocolValidationError
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    row_snapshot,
)

pytestmark = pytest.mark.django_db


def _lease(world):
    return world.now + timedelta(seconds=world.project.config.lease_duration)


def _expire_agent_lease(world, agent_id: str) -> None:
    """Move the clock past `agent_id`'s own lease (and its grace)."""
    agent = world.agent(agent_id)
    gap = (agent.lease_expires - world.now).total_seconds()
    world.tick(
        max(gap, 0) + world.project.config.lease_grace + world.project.config.retry_backoff[0] + 1
    )


# ---------------------------------------------------------------------------------------------
# seed 000 "Transition Requirements"
# ---------------------------------------------------------------------------------------------


def test_rejected_to_claimed_same_coder(world):
    """Must set lease_expires (new); must preserve worktree, review_cycles_current/total."""
    before = row_snapshot(world.drive_to("REJECTED", "task-1"))
    assert before["lease_expires"] is None
    assert (before["review_cycles_current"], before["review_cycles_total"]) == (1, 1)

    task = world.claim("task-1", "coder-1")

    task = world.task("task-1")
    assert task.status == "CLAIMED"
    assert task.assigned_to == "coder-1"
    assert task.lease_expires == _lease(world)
    assert task.worktree == before["worktree"] != ""
    assert task.review_cycles_current == before["review_cycles_current"]
    assert task.review_cycles_total == before["review_cycles_total"]
    assert task.iteration == before["iteration"] + 1 == 2
    assert task.failed_by == []
    coder = world.agent("coder-1")
    assert (coder.status, coder.current_task_id) == ("WORKING", task.pk)
    assert_valid(world.project, now=world.now)


def test_rejected_to_claimed_different_coder_waits_for_the_coders_lease(world):
    """Another coder may take a REJECTED task only once its coder's agent lease expired;
    then: assigned_to new, review_cycles_current 0, total kept, iteration 1, fresh worktree,
    old coder in failed_by."""
    world.drive_to("REJECTED", "task-1")
    task = world.task("task-1")
    before = row_snapshot(task)
    assert world.agent("coder-1").has_live_lease(world.now)

    now = world.tick()
    _, event = assert_refused_unchanged(
        lambda: task_services.task_claim(
            task=task, agent=world.agent("coder-2"), now=now, base_commit="base0002"
        ),
        project=world.project,
        obj=task,
        exc_type=Conflict,
        code="conflict",
        status_code=409,
    )
    assert (event.from_status, event.to_status, event.actor_id) == (
        "REJECTED",
        "CLAIMED",
        "coder-2",
    )

    _expire_agent_lease(world, "coder-1")
    now = world.tick()
    task_services.task_claim(
        task=world.task("task-1"),
        agent=world.agent("coder-2"),
        now=now,
        worktree=".worktrees/task-1-coder-2",
        base_commit="base0002",
    )

    task = world.task("task-1")
    assert task.status == "CLAIMED"
    assert task.assigned_to == "coder-2"
    assert task.lease_expires == _lease(world)
    assert task.review_cycles_current == 0
    assert task.review_cycles_total == before["review_cycles_total"] == 1
    assert task.iteration == 1
    assert task.worktree == ".worktrees/task-1-coder-2" != before["worktree"]
    assert task.failed_by == ["coder-1"]
    old = world.agent("coder-1")
    assert (old.status, old.current_task_id) == ("IDLE", None)
    (claimed,) = applied_events(world.project, task=task, action="claimed", timestamp=now)
    assert claimed.data["previous"] == "coder-1"
    assert_valid(world.project, now=now)


@pytest.mark.parametrize("coder", ["coder-1", "coder-2"])
def test_integration_failed_to_claimed(world, coder):
    """Any coder may claim; integration_fix true; worktree kept; base_commit not required."""
    before = row_snapshot(world.drive_to("INTEGRATION_FAILED", "task-1"))
    now = world.tick()

    task_services.task_claim(task=world.task("task-1"), agent=world.agent(coder), now=now)

    task = world.task("task-1")
    assert task.status == "CLAIMED"
    assert task.integration_fix is True
    assert task.assigned_to == coder
    assert task.worktree == before["worktree"] != ""
    assert task.base_commit == before["base_commit"]
    assert task.lease_expires == _lease(world)
    if coder == before["assigned_to"]:
        assert task.iteration == before["iteration"] + 1
    else:
        assert (task.iteration, task.review_cycles_current) == (1, 0)
    # The approved work did not fail in the coder's hands: nobody joins failed_by.
    assert task.failed_by == []
    (event,) = applied_events(world.project, task=task, timestamp=now)
    assert (event.action, event.from_status, event.to_status) == (
        "claimed",
        "INTEGRATION_FAILED",
        "CLAIMED",
    )
    assert_valid(world.project, now=now)


def test_claim_from_unclaimed_requires_base_commit(world):
    """The integration-fix exemption is an exemption: a plain claim needs base_commit."""
    task = world.drive_to("UNCLAIMED", "task-1")
    assert_refused_unchanged(
        lambda: task_services.task_claim(task=task, agent=world.coder, now=world.tick()),
        project=world.project,
        obj=task,
        exc_type=ProtocolValidationError,
        field="base_commit",
        status_code=400,
    )


def test_blocked_to_unclaimed(world):
    """Must preserve failed_by; worktree deleted; nobody assigned."""
    before = row_snapshot(world.drive_to("BLOCKED", "task-1"))
    assert before["failed_by"] == ["coder-1"] and before["worktree"]
    now = world.tick()

    task_services.task_release(
        task=world.task("task-1"), actor=world.planner, reason="Answered: 4xx only", now=now
    )

    task = world.task("task-1")
    assert task.status == "UNCLAIMED"
    assert task.failed_by == ["coder-1"]
    assert (task.worktree, task.assigned_to, task.lease_expires) == ("", "", None)
    assert task.attempted == before["attempted"]
    assert_valid(world.project, now=now)


def test_unclaimed_to_claimed_reassignment(world):
    """Must set lease_expires, assigned_to, review_cycles_current 0; must preserve failed_by,
    review_cycles_total; fresh worktree."""
    world.rejected("task-1")
    world.claim("task-1", "coder-1")  # same coder, iteration 2, cycles 1/1
    world.block("task-1")
    task_services.task_release(
        task=world.task("task-1"), actor=world.planner, reason="Try again", now=world.tick()
    )
    before = row_snapshot(world.task("task-1"))
    assert (before["review_cycles_current"], before["review_cycles_total"]) == (1, 1)
    assert (before["failed_by"], before["iteration"]) == (["coder-1"], 2)
    now = world.tick()

    task_services.task_claim(
        task=world.task("task-1"),
        agent=world.agent("coder-2"),
        now=now,
        worktree=".worktrees/task-1-fresh",
        base_commit="base0009",
    )

    task = world.task("task-1")
    assert task.status == "CLAIMED"
    assert task.assigned_to == "coder-2"
    assert task.lease_expires == _lease(world)
    assert task.review_cycles_current == 0
    assert task.review_cycles_total == 1
    assert task.failed_by == ["coder-1"]
    assert task.iteration == 1
    assert (task.worktree, task.base_commit) == (".worktrees/task-1-fresh", "base0009")
    assert_valid(world.project, now=now)


def test_any_to_merged_clears_the_worktree(world):
    before = row_snapshot(world.drive_to("APPROVED", "task-1"))
    assert before["worktree"]
    now = world.tick()

    task_services.task_report_merge(
        task=world.task("task-1"), agent=world.reviewer, merge_commit="merge042", now=now
    )

    task = world.task("task-1")
    assert (task.status, task.worktree, task.merge_commit) == ("MERGED", "", "merge042")
    assert task.lease_expires is None
    assert_valid(world.project, now=now)


# ---------------------------------------------------------------------------------------------
# seed 002 "Iteration Field Lifecycle"
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", ["DRAFT", "UNCLAIMED"])
def test_iteration_not_set_on_create(world, status):
    assert world.drive_to(status, "task-1").iteration is None


def test_iteration_1_on_first_claim(world):
    assert world.drive_to("CLAIMED", "task-1").iteration == 1


def test_iteration_unchanged_by_work_within_one_claim(world):
    from agents.services import agent_heartbeat

    world.claimed("task-1")
    agent_heartbeat(agent=world.coder, now=world.tick(), context_percent=40)
    task = world.submit("task-1")
    assert task.iteration == 1
    # A second submit in the same claim is refused and leaves the count alone.
    assert_refused_unchanged(
        lambda: task_services.task_submit_for_review(
            task=task, agent=world.coder, review_commit="c0ffee02", now=world.tick()
        ),
        project=world.project,
        obj=task,
        exc_type=InvalidTransition,
        details={
            "from": "READY_FOR_REVIEW",
            "to": "READY_FOR_REVIEW",
            "allowed": ["APPROVED", "REJECTED"],
        },
    )
    assert world.task("task-1").iteration == 1
    # A verdict does not count an iteration either: re-claiming does.
    world.claim_review("task-1")
    assert world.verdict("task-1", "REJECTED").iteration == 1


def test_iteration_plus_one_on_same_coder_reclaim_after_rejection(world):
    world.rejected("task-1")
    assert world.claim("task-1", "coder-1").iteration == 2
    world.submit("task-1", commit="c0ffee02")
    world.claim_review("task-1")
    world.verdict("task-1", "REJECTED")
    assert world.claim("task-1", "coder-1").iteration == 3


def test_iteration_reset_to_1_on_reassignment(world):
    world.rejected("task-1")
    world.claim("task-1", "coder-1")
    assert world.task("task-1").iteration == 2
    # The coder's lease dies, another coder takes the CLAIMED task over.
    world.tick(
        world.project.config.lease_duration
        + world.project.config.lease_grace
        + world.project.config.retry_backoff[0]
        + 1
    )
    task = world.claim("task-1", "coder-2")
    assert (task.assigned_to, task.iteration) == ("coder-2", 1)
    assert_valid(world.project, now=world.now)


@pytest.mark.parametrize("terminal", ["MERGED", "ABANDONED", "SUPERSEDED"])
def test_iteration_preserved_at_terminal(world, terminal):
    world.rejected("task-1")
    world.claim("task-1", "coder-1")  # iteration 2
    if terminal == "MERGED":
        world.submit("task-1", commit="c0ffee02")
        world.claim_review("task-1")
        world.verdict("task-1", "APPROVED")
        task_services.task_report_merge(
            task=world.task("task-1"), agent=world.reviewer, merge_commit="m2", now=world.tick()
        )
    else:
        world.block("task-1")
        if terminal == "ABANDONED":
            task_services.task_abandon(
                task=world.task("task-1"), actor=world.planner, reason="dropped", now=world.tick()
            )
        else:
            task_services.task_rescope(
                task=world.task("task-1"),
                actor=world.planner,
                reason="split",
                new_tasks=[{"key": "task-1a", "description": "half", "done_when": "half"}],
                now=world.tick(),
            )
    task = world.task("task-1")
    assert (task.status, task.iteration) == (terminal, 2)
    assert_valid(world.project, now=world.now)


# ---------------------------------------------------------------------------------------------
# seed 002 "Review Cycles Split"
# ---------------------------------------------------------------------------------------------


def test_review_cycles_count_rejected_rounds_only(world):
    world.rejected("task-1")
    assert _cycles(world) == (1, 1)
    world.claim("task-1", "coder-1")
    assert _cycles(world) == (1, 1)  # re-claiming is not a review round
    world.submit("task-1", commit="c0ffee02")
    world.claim_review("task-1")
    world.verdict("task-1", "REJECTED")
    assert _cycles(world) == (2, 2)
    world.claim("task-1", "coder-1")
    world.submit("task-1", commit="c0ffee03")
    world.claim_review("task-1")
    world.verdict("task-1", "APPROVED")
    assert _cycles(world) == (2, 2)  # an approved round counts nothing
    rejections = applied_events(world.project, action="rejected")
    assert [e.data["review_cycles_current"] for e in rejections] == [1, 2]
    assert_valid(world.project, now=world.now)


def test_one_rejection_counts_one_cycle_whatever_the_reviewers(world):
    world.ready_for_review("task-1", criticality="complex")
    world.claim_review("task-1", "code-reviewer-1")
    world.claim_review("task-1", "code-reviewer-2")
    world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1")
    world.verdict("task-1", "REJECTED", reviewer="code-reviewer-2")
    assert world.task("task-1").status == "REJECTED"
    assert _cycles(world) == (1, 1)


def test_review_cycles_are_server_side(world):
    """No agent operation takes the counters: they move only with verdicts."""
    world.claimed("task-1")
    with pytest.raises(TypeError):
        task_services.task_submit_for_review(
            task=world.task("task-1"),
            agent=world.coder,
            review_commit="c0ffee01",
            now=world.tick(),
            review_cycles_current=0,
        )
    with pytest.raises(TypeError):
        task_services.task_claim(
            task=world.task("task-1"),
            agent=world.coder,
            now=world.tick(),
            base_commit="b",
            iteration=1,
        )
    assert _cycles(world) == (0, 0)
    assert not Event.objects.filter(project=world.project, outcome="rejected").exists()


def _cycles(world):
    task = world.task("task-1")
    return task.review_cycles_current, task.review_cycles_total


# ---------------------------------------------------------------------------------------------
# The fields a planner may give a new task (task_create, a rescope's replacements, a discovery
# converted into a task): one list, `NEW_TASK_FIELDS`
# ---------------------------------------------------------------------------------------------


def test_the_fields_a_planner_may_give_are_new_tasks_parameters_but_those_the_server_sets():
    parameters = set(inspect.signature(new_task).parameters)
    assert parameters - {"project", "now", "supersedes"} == NEW_TASK_FIELDS


@pytest.mark.parametrize("field", ["status", "assigned_to", "supersedes", "depends"])
def test_a_rescope_replacement_naming_a_field_no_planner_sets_is_refused_whole(world, field):
    world.blocked("task-1")
    with pytest.raises(ProtocolValidationError) as refused:
        task_services.task_rescope(
            task=world.task("task-1"),
            actor=world.planner,
            reason="split",
            new_tasks=[
                {"key": "task-1a", "description": "half", "done_when": "half"},
                {"key": "task-1b", "description": "half", "done_when": "half", field: "x"},
            ],
            now=world.tick(),
        )
    assert refused.value.field == "new_tasks[1]"
    assert f"unknown field(s) {field}" in refused.value.message
    assert world.task("task-1").status == "BLOCKED"
    assert not Task.objects.filter(project=world.project, key__in=["task-1a", "task-1b"]).exists()

"""SPEC §5.1 limits (services.tasks.limits): review deadlock, max iterations, hypothesis
exhaustion.

Every limit is enforced by the server: the system override-blocks the task with a reason and
questions and records the anomaly; an exhausted task goes back to the queue only through a
human's written release.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boards import protocol as p
from boards.coordination.models.projects import ProjectConfig
from boards.coordination.models.records import Anomaly, Event
from boards.coordination.models.tasks import HumanNote, Task
from boards.coordination.services import tasks as task_services
from boards.coordination.services.tasks.limits import _limit_reason
from boards.errors import (
    Conflict,
    Forbidden,
    ProtocolValidationError,
)
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)
from tests.coordination.services.tasks import claim_oracle as oracle

pytestmark = pytest.mark.django_db


def _reject_round(world, key: str, reviewer: str = "code-reviewer-1", reason: str = "") -> Task:
    world.claim_review(key, reviewer)
    return world.verdict(key, "REJECTED", reviewer=reviewer, reason=reason)


def _rework(world, key: str, commit: str) -> Task:
    """Same coder re-claims its REJECTED task and submits again."""
    world.claim(key, world.task(key).assigned_to)
    assert_valid(world.project, now=world.now)
    return world.submit(key, commit=commit)


def _system_block_event(world, task: Task) -> Event:
    (event,) = applied_events(world.project, task=task, action="blocked", actor_kind="system")
    return event


def _lease_gone(world) -> float:
    config = world.project.config
    return config.lease_duration + config.lease_grace + config.retry_backoff[0] + 1


# ---------------------------------------------------------------------------------------------
# review_deadlock, max iterations, hypothesis exhaustion
# ---------------------------------------------------------------------------------------------


def test_review_deadlock_blocks_at_max_review_cycles(world):
    world.ready_for_review("task-1", max_review_cycles=2)
    task = _reject_round(world, "task-1", reason="Wrong status code")
    assert (task.status, task.review_cycles_current) == ("REJECTED", 1)
    assert_valid(world.project, now=world.now)
    _rework(world, "task-1", "c0ffee02")

    _reject_round(world, "task-1", reason="Still the wrong status code")

    task = world.task("task-1")
    assert task.status == "BLOCKED"
    assert task.review_cycles_current == task.review_cycles_total == 2
    assert "Review deadlock" in task.blocked_reason
    assert 1 <= len(task.blocked_questions) <= p.MAX_BLOCKED_QUESTIONS
    assert task.failed_by == ["coder-1"]
    assert task.lease_expires is None
    event = _system_block_event(world, task)
    assert (event.from_status, event.to_status) == ("REJECTED", "BLOCKED")
    assert event.data == {"limit": "review_deadlock"}
    assert event.detail == task.blocked_reason
    (anomaly,) = Anomaly.objects.filter(project=world.project, task=task)
    assert (anomaly.type, anomaly.reporter) == ("review_deadlock", "system")
    assert anomaly.details["review_cycles_current"] == 2
    coder = world.agent("coder-1")
    assert (coder.status, coder.current_task_id) == ("IDLE", None)
    assert_valid(world.project, now=world.now)


def test_max_iterations_blocks_with_a_retry_loop_anomaly(world):
    world.ready_for_review("task-1", max_iterations=2)
    _reject_round(world, "task-1", reason="Serialization fails on nested entity")
    _rework(world, "task-1", "c0ffee02")
    assert world.task("task-1").iteration == 2

    _reject_round(world, "task-1", reason="Serialization fails on nested entity")

    task = world.task("task-1")
    assert task.status == "BLOCKED"
    assert "Max iterations" in task.blocked_reason
    assert task.blocked_questions
    assert task.failed_by == ["coder-1"]
    assert _system_block_event(world, task).data == {"limit": "max_iterations"}
    (anomaly,) = Anomaly.objects.filter(project=world.project, task=task)
    assert anomaly.type == "retry_loop"
    assert anomaly.details == {
        "count": 2,
        "error_pattern": "Serialization fails on nested entity",
    }
    assert_valid(world.project, now=world.now)


def test_under_the_limits_a_rejection_is_just_a_rejection(world):
    world.ready_for_review("task-1", max_review_cycles=3, max_iterations=3)
    _reject_round(world, "task-1")
    _rework(world, "task-1", "c0ffee02")
    task = _reject_round(world, "task-1")
    assert task.status == "REJECTED"
    assert not Anomaly.objects.filter(project=world.project).exists()
    assert task.failed_by == []


def _exhaust_by_two_blocks(world) -> Task:
    """coder-1 blocks, the planner releases, coder-2 claims and blocks too."""
    world.blocked("task-1", "coder-1")
    task_services.task_release(
        task=world.task("task-1"), actor=world.planner, reason="Try it once more", now=world.tick()
    )
    assert_valid(world.project, now=world.now)
    world.claim("task-1", "coder-2")
    return world.block("task-1", reason="Same wall")


def test_hypothesis_exhaustion_when_two_coders_failed(world):
    task = _exhaust_by_two_blocks(world)

    assert task.status == "BLOCKED"
    assert task.failed_by == ["coder-1", "coder-2"]
    assert task.blocked_reason.startswith("Hypothesis exhaustion")
    (anomaly,) = Anomaly.objects.filter(project=world.project, task=task)
    assert anomaly.type == "hypothesis_exhaustion"
    assert anomaly.details["failed_by"] == ["coder-1", "coder-2"]
    assert_valid(world.project, now=world.now)


def test_hypothesis_exhaustion_on_takeover_blocks_instead_of_claiming(world):
    """failed_by gets the old coder on takeover; a second name exhausts the task (SPEC §5.1)."""
    world.blocked("task-1", "coder-1")
    task_services.task_release(
        task=world.task("task-1"), actor=world.planner, reason="Again", now=world.tick()
    )
    world.claim("task-1", "coder-2")
    world.tick(_lease_gone(world))  # coder-2 vanished

    with pytest.raises(Conflict) as caught:
        world.claim("task-1", "coder-3")

    assert caught.value.details["status"] == "BLOCKED"
    task = world.task("task-1")
    assert task.status == "BLOCKED"
    assert task.failed_by == ["coder-1", "coder-2"]
    assert task.assigned_to != "coder-3"
    event = _system_block_event(world, task)
    assert (event.from_status, event.data) == ("CLAIMED", {"limit": "hypothesis_exhaustion"})
    assert Anomaly.objects.filter(task=task, type="hypothesis_exhaustion").count() == 1
    assert world.agent("coder-3").current_task_id is None
    assert_valid(world.project, now=world.now)


def test_exhausted_task_is_not_released_by_the_planner(world):
    task = _exhaust_by_two_blocks(world)
    _, event = assert_refused_unchanged(
        lambda: task_services.task_release(
            task=task, actor=world.planner, reason="Just retry", now=world.tick()
        ),
        project=world.project,
        obj=task,
        exc_type=Forbidden,
        code="permission_denied",
        status_code=403,
    )
    assert (event.from_status, event.to_status) == ("BLOCKED", "UNCLAIMED")


def test_exhausted_task_is_released_by_a_human_with_a_written_reason(world):
    task = _exhaust_by_two_blocks(world)
    assert_refused_unchanged(
        lambda: task_services.task_release(
            task=task, actor=world.admin, reason="   ", now=world.tick()
        ),
        project=world.project,
        obj=task,
        exc_type=ProtocolValidationError,
        field="reason",
        logged=False,
    )
    now = world.tick()

    task_services.task_release(
        task=task, actor=world.admin, reason="Use the v2 endpoint, see ADR-7", now=now
    )

    task = world.task("task-1")
    assert task.status == "UNCLAIMED"
    assert task.failed_by == ["coder-1", "coder-2"]
    (note,) = HumanNote.objects.filter(project=world.project, task=task)
    assert (note.message, note.author, note.timestamp) == (
        "Use the v2 endpoint, see ADR-7",
        world.admin,
        now,
    )
    (event,) = applied_events(world.project, task=task, action="released", actor_kind="human")
    assert (event.actor_id, event.detail) == (world.admin.username, note.message)
    assert_valid(world.project, now=now)


@pytest.mark.parametrize("limit", ["review_deadlock", "max_iterations"])
def test_limit_blocked_task_is_not_released_by_the_planner(world, limit):
    fields = {"max_review_cycles": 1} if limit == "review_deadlock" else {"max_iterations": 1}
    world.ready_for_review("task-1", **fields)
    task = _reject_round(world, "task-1")
    assert task.status == "BLOCKED"
    assert_refused_unchanged(
        lambda: task_services.task_release(
            task=task, actor=world.planner, reason="retry", now=world.tick()
        ),
        project=world.project,
        obj=task,
        exc_type=Forbidden,
        code="permission_denied",
    )


# ---------------------------------------------------------------------------------------------


CODER_IDS = st.sampled_from(("coder-1", "coder-2", "coder-3", "c\u00e9 \u00a0x"))


@settings(max_examples=60, deadline=None)
@given(
    limit=st.sampled_from(
        ("review_deadlock", "max_iterations", "retry_exhausted", "hypothesis_exhaustion")
    ),
    crashes=st.integers(0, 5),
    assigned_to=st.one_of(st.just(""), CODER_IDS),
    failed_by=st.lists(CODER_IDS, max_size=4),
    backoff=st.lists(st.integers(1, 3600), max_size=4),
    cycles=st.integers(0, 9),
    iteration=st.integers(1, 9),
    task_limits=st.sampled_from((None, 2, 7)),
)
def test_a_limit_blocks_reason_is_worded_as_python_worded_it(
    limit, crashes, assigned_to, failed_by, backoff, cycles, iteration, task_limits
):
    """`liza_limit_reason_v1` (the words of every limit block: the claim's in SQL, the
    watcher's and the reviews' through `limits._limit_reason`) equals the Python it replaced."""
    config = ProjectConfig(retry_backoff=backoff, max_review_cycles=3, max_coder_iterations=5)
    task = Task(
        crashes=crashes,
        assigned_to=assigned_to,
        failed_by=failed_by,
        review_cycles_current=cycles,
        iteration=iteration,
        max_iterations=task_limits,
        max_review_cycles=task_limits,
    )
    assert _limit_reason(task, config, limit) == oracle.limit_reason(task, config, limit)

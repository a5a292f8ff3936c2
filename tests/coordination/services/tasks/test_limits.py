"""SPEC §5.1 limits, the claim queue, stop-work, reviews by criticality, leases and identity.

Every limit is enforced by the server: the system override-blocks the task with a reason and
questions and records the anomaly; an exhausted task goes back to the queue only through a
human's written release.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied

from agents.services import agent_heartbeat, agent_register
from boards import protocol as p
from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.records import Anomaly, Event
from boards.coordination.models.tasks import HumanNote, Review, Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews as review_services
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services import tasks as task_services
from boards.errors import (
    Conflict,
    Forbidden,
    LeaseLost,
    ProtocolError,
    ProtocolValidationError,
    StopWork,
)
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
    row_snapshot,
)
from tests.factories import register

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
# claim next (SPEC §6)
# ---------------------------------------------------------------------------------------------


def _claim_next(world, agent_id: str, *, validate: bool = True) -> Task | None:
    agent = world.agent(agent_id)
    task = task_services.task_claim_next(
        project=world.project, agent=agent, now=world.tick(), base_commit="base0100"
    )
    if validate:
        assert_valid(world.project, now=world.now)
    return task


def test_claim_next_order(world):
    for i in range(4, 9):
        register(world.project, f"coder-{i}", now=world.now)
    world.integration_failed("t-if", priority=5)
    world.rejected("t-rej", priority=5)  # coder-1's own
    world.claimed("t-stale", "coder-2", priority=1)
    world.unclaimed("t-a", priority=2)
    world.unclaimed("t-b", priority=1)
    world.unclaimed("t-c", priority=2)  # same priority as t-a, created later
    world.unclaimed("t-dep", priority=1, depends_on=["t-a"])
    world.tick(_lease_gone(world))  # t-stale's lease expired more than lease_grace ago

    # coder-2 died holding t-stale: the state is invalid (a dead lease) until someone takes it.
    claims = [
        (coder, getattr(_claim_next(world, coder, validate=False), "key", None))
        for coder in ["coder-1", "coder-3", "coder-4", "coder-5", "coder-6", "coder-7"]
    ]
    claims.append(("coder-8", _claim_next(world, "coder-8")))

    assert claims == [
        ("coder-1", "t-rej"),  # own REJECTED first
        ("coder-3", "t-if"),  # then INTEGRATION_FAILED, whatever its priority
        ("coder-4", "t-b"),  # then UNCLAIMED by priority (t-dep waits on t-a)
        ("coder-5", "t-a"),  # ... then by created
        ("coder-6", "t-c"),
        ("coder-7", "t-stale"),  # then CLAIMED with the lease dead beyond lease_grace
        ("coder-8", None),  # t-dep still waits: t-a is not MERGED
    ]
    assert world.task("t-rej").iteration == 2
    assert world.task("t-if").integration_fix is True
    assert world.task("t-stale").failed_by == ["coder-2"]


def test_a_dead_claim_is_an_invalid_state_until_reclaimed(world):
    """The invariant check used after every operation does see violations (not a no-op)."""
    world.claimed("t-stale", "coder-1")
    assert_valid(world.project, now=world.now)
    world.tick(_lease_gone(world))
    with pytest.raises(AssertionError, match="CLAIMED task must have valid lease_expires"):
        assert_valid(world.project, now=world.now)
    assert _claim_next(world, "coder-2").key == "t-stale"  # validates again afterwards


def test_claim_next_own_rejected_before_anything_else(world):
    world.rejected("t-rej", priority=5)
    world.unclaimed("t-top", priority=1)
    # A coder holding a REJECTED task is not given another one: it goes back to its own.
    assert _claim_next(world, "coder-1").key == "t-rej"
    assert world.task("t-top").status == "UNCLAIMED"


def test_claim_next_skips_tasks_waiting_on_dependencies(world):
    world.unclaimed("t-base", priority=5)
    world.unclaimed("t-dep", priority=1, depends_on=["t-base"])
    assert _claim_next(world, "coder-1").key == "t-base"
    assert _claim_next(world, "coder-2") is None
    assert world.task("t-dep").status == "UNCLAIMED"


def test_claim_next_waits_out_the_lease_grace(world):
    world.claimed("t-stale", "coder-1")
    lease = world.task("t-stale").lease_expires
    world.tick((lease - world.now).total_seconds() + world.project.config.lease_grace - 5)
    assert world.task("t-stale").lease_expires < world.now  # expired, but within grace
    assert _claim_next(world, "coder-2") is None
    world.tick(10)
    assert _claim_next(world, "coder-2").key == "t-stale"


# ---------------------------------------------------------------------------------------------
# paused project, sprint at CHECKPOINT: claims refused, exit 42
# ---------------------------------------------------------------------------------------------


def _pause(world):
    # No service pauses a project yet; the PAUSE flag itself is a plain field, not a status.
    Project.objects.filter(pk=world.project.pk).update(paused_at=world.now, paused_reason="lunch")
    world.project.refresh_from_db()


def _checkpoint(world):
    sprint = sprint_services.sprint_create(
        project=world.project,
        actor=world.planner,
        goal=Goal.objects.get(project=world.project, status="IN_PROGRESS"),
        now=world.tick(),
    )
    sprint_services.sprint_checkpoint(
        sprint=sprint, actor=world.admin, reason="Deadline", now=world.tick()
    )


STOPS = {"paused": _pause, "checkpoint": _checkpoint}


@pytest.mark.parametrize("op", ["claim", "claim_next", "claim_review"])
@pytest.mark.parametrize("stop", sorted(STOPS))
def test_stop_work_refuses_claims(world, stop, op):
    world.unclaimed("task-u")
    world.ready_for_review("task-r")
    STOPS[stop](world)
    now = world.tick()
    task = world.task("task-r" if op == "claim_review" else "task-u")
    call = {
        "claim": lambda: task_services.task_claim(
            task=task, agent=world.agent("coder-2"), now=now, base_commit="b"
        ),
        "claim_next": lambda: task_services.task_claim_next(
            project=world.project, agent=world.agent("coder-2"), now=now, base_commit="b"
        ),
        "claim_review": lambda: review_services.review_claim(
            task=task, agent=world.reviewer, now=now
        ),
    }[op]
    _, event = assert_refused_unchanged(
        call,
        project=world.project,
        obj=task,
        exc_type=StopWork,
        code=stop,
        status_code=409,
        details={"exit": 42},
    )
    assert event.data["code"] == stop


# ---------------------------------------------------------------------------------------------
# reviews by criticality (SPEC §12, seed 001)
# ---------------------------------------------------------------------------------------------


def test_standard_task_one_approval_approves(world):
    world.ready_for_review("task-1")
    world.claim_review("task-1")
    task = world.verdict("task-1", "APPROVED")
    assert (task.status, task.approved_by) == ("APPROVED", ["code-reviewer-1"])
    assert_valid(world.project, now=world.now)


def test_complex_task_needs_two_distinct_reviewers(world):
    world.ready_for_review("task-1", criticality="complex")
    world.claim_review("task-1", "code-reviewer-1")
    task = world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1")
    assert (task.status, task.approved_by) == ("READY_FOR_REVIEW", [])
    assert_valid(world.project, now=world.now)
    # The same reviewer cannot count twice.
    assert_refused_unchanged(
        lambda: review_services.review_claim(
            task=world.task("task-1"), agent=world.reviewer, now=world.tick()
        ),
        project=world.project,
        obj=world.task("task-1"),
        exc_type=Conflict,
    )
    world.claim_review("task-1", "code-reviewer-2")
    task = world.verdict("task-1", "APPROVED", reviewer="code-reviewer-2")
    assert (task.status, task.approved_by) == ("APPROVED", ["code-reviewer-1", "code-reviewer-2"])
    assert_valid(world.project, now=world.now)


def test_security_sensitive_needs_a_security_reviewer(world):
    assert world.security_reviewer.agent_id == "code-reviewer-3"
    # Without the human approval gate (on by default here;
    # tests/coordination/services/test_reviews_human_gate.py) the reviewers' approvals alone
    # approve.
    world.ready_for_review("task-1", criticality="security-sensitive", needs_human_approval=False)
    world.claim_review("task-1", "code-reviewer-1")
    # The last slot is kept for a security-flagged reviewer.
    assert_refused_unchanged(
        lambda: review_services.review_claim(
            task=world.task("task-1"), agent=world.agent("code-reviewer-2"), now=world.tick()
        ),
        project=world.project,
        obj=world.task("task-1"),
        exc_type=Conflict,
        code="conflict",
    )
    world.claim_review("task-1", "code-reviewer-3")
    assert world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1").status == (
        "READY_FOR_REVIEW"
    )
    task = world.verdict("task-1", "APPROVED", reviewer="code-reviewer-3")
    assert (task.status, sorted(task.approved_by)) == (
        "APPROVED",
        ["code-reviewer-1", "code-reviewer-3"],
    )
    assert_valid(world.project, now=world.now)


def test_a_coder_cannot_review(world):
    world.ready_for_review("task-1")
    task = world.task("task-1")
    assert_refused_unchanged(
        lambda: review_services.review_claim(task=task, agent=world.coder, now=world.tick()),
        project=world.project,
        obj=task,
        exc_type=PermissionDenied,
        logged=True,  # role refusals are audited like every refusal
    )


def test_a_reviewer_cannot_review_a_task_it_coded(world):
    """An imported blackboard may name a reviewer id as the task's coder (seed 001: nobody
    reviews their own work)."""
    world.ready_for_review("task-1")
    task = world.task("task-1")
    Task.objects.filter(pk=task.pk).update(failed_by=["code-reviewer-1"])
    _, event = assert_refused_unchanged(
        lambda: review_services.review_claim(task=task, agent=world.reviewer, now=world.tick()),
        project=world.project,
        obj=task,
        exc_type=Forbidden,
        code="permission_denied",
    )
    assert event.actor_id == "code-reviewer-1"


def test_one_rejection_rejects_the_round_and_approvals_do_not_carry_over(world):
    world.ready_for_review("task-1", criticality="complex")
    world.claim_review("task-1", "code-reviewer-1")
    world.claim_review("task-1", "code-reviewer-2")
    world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1")
    task = world.verdict("task-1", "REJECTED", reviewer="code-reviewer-2", reason="No tests")
    assert (task.status, task.rejection_reason, task.approved_by) == ("REJECTED", "No tests", [])
    assert not Review.objects.filter(task=task, closed_at__isnull=True).exists()
    _rework(world, "task-1", "c0ffee02")
    world.claim_review("task-1", "code-reviewer-1")
    task = world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1")
    assert task.status == "READY_FOR_REVIEW"  # last round's approval by reviewer-1 is gone
    assert_valid(world.project, now=world.now)


def test_verdict_naming_the_wrong_commit_conflicts(world):
    world.ready_for_review("task-1")
    world.claim_review("task-1")
    task = world.task("task-1")
    review = Review.objects.get(task=task, closed_at__isnull=True)
    exc, event = assert_refused_unchanged(
        lambda: review_services.review_verdict(
            task=task,
            agent=world.reviewer,
            verdict="APPROVED",
            review_commit="deadbeef",
            now=world.tick(),
        ),
        project=world.project,
        obj=review,
        exc_type=Conflict,
        code="conflict",
        status_code=409,
    )
    assert exc.details == {"expected": task.review_commit, "got": "deadbeef"}
    assert event.task_id == task.pk


def test_rejected_verdict_needs_a_reason(world):
    world.ready_for_review("task-1")
    world.claim_review("task-1")
    task = world.task("task-1")
    exc, _ = assert_refused_unchanged(
        lambda: review_services.review_verdict(
            task=task,
            agent=world.reviewer,
            verdict="REJECTED",
            review_commit=task.review_commit,
            now=world.tick(),
            reason="",
        ),
        project=world.project,
        obj=task,
        exc_type=ProtocolValidationError,
        status_code=400,
        field="reason",
        logged=False,
    )
    assert exc.details == {"fields": {"reason": ["is required"]}}


def test_verdict_after_the_review_lease_was_reclaimed_is_lease_lost(world):
    world.ready_for_review("task-1")
    world.claim_review("task-1", "code-reviewer-1")
    # reviewer-1's review lease is dead: lapsed, and past the grace a heartbeat may still use.
    config = world.project.config
    world.tick(config.lease_duration + config.lease_grace + config.retry_backoff[0] + 1)
    world.claim_review("task-1", "code-reviewer-2")
    task = world.task("task-1")
    exc, _ = assert_refused_unchanged(
        lambda: review_services.review_verdict(
            task=task,
            agent=world.agent("code-reviewer-1"),
            verdict="APPROVED",
            review_commit=task.review_commit,
            now=world.tick(),
        ),
        project=world.project,
        obj=task,
        exc_type=LeaseLost,
        code="lease_lost",
    )
    assert exc.details["exit"] == 42
    # reviewer-2 still holds the review and can give its verdict.
    assert world.verdict("task-1", "APPROVED", reviewer="code-reviewer-2").status == "APPROVED"


def test_a_review_lease_lapsed_within_grace_keeps_its_slot(world):
    """One liveness rule for every lease (`lease_alive`): a review lease that lapsed less than
    lease_grace ago still holds its slot. Nobody reclaims it, `/work` offers it to nobody, and
    its reviewer's heartbeat extends it."""
    config = world.project.config
    world.ready_for_review("task-1")
    world.claim_review("task-1", "code-reviewer-1")
    world.tick(config.lease_duration + config.lease_grace // 2)
    task = world.task("task-1")
    assert_refused_unchanged(
        lambda: review_services.review_claim(
            task=task, agent=world.agent("code-reviewer-2"), now=world.now
        ),
        project=world.project,
        obj=task,
        exc_type=Conflict,
        code="conflict",
    )
    work = work_for_role(
        project=world.project,
        role="code_reviewer",
        agent=world.agent("code-reviewer-2"),
        now=world.now,
    )
    assert work["work"] is False
    beat = agent_heartbeat(agent=world.agent("code-reviewer-1"), now=world.now)
    (review,) = beat.reviews
    assert review.lease_expires == world.now + timedelta(seconds=config.lease_duration)
    assert world.verdict("task-1", "APPROVED", reviewer="code-reviewer-1").status == "APPROVED"


# ---------------------------------------------------------------------------------------------
# coder leases and identity
# ---------------------------------------------------------------------------------------------


def test_heartbeat_after_takeover_is_lease_lost(world):
    world.claimed("task-1", "coder-1")
    world.tick(_lease_gone(world))
    world.claim("task-1", "coder-2")
    coder = world.agent("coder-1")

    exc, event = assert_refused_unchanged(
        lambda: agent_heartbeat(agent=coder, now=world.tick()),
        project=world.project,
        obj=coder,
        exc_type=LeaseLost,
        code="lease_lost",
        status_code=409,
    )
    assert exc.details["exit"] == 42
    assert event.actor_id == "coder-1"
    # The new holder's heartbeat extends its lease.
    now = world.tick()
    agent_heartbeat(agent=world.agent("coder-2"), now=now)
    assert world.task("task-1").lease_expires == now + timedelta(
        seconds=world.project.config.lease_duration
    )


def test_heartbeat_after_lease_expiry_is_lease_lost(world):
    world.claimed("task-1", "coder-1")
    world.tick(_lease_gone(world))
    coder = world.agent("coder-1")
    assert_refused_unchanged(
        lambda: agent_heartbeat(agent=coder, now=world.tick()),
        project=world.project,
        obj=coder,
        exc_type=LeaseLost,
        details={"task": "task-1", "exit": 42},
    )


def test_heartbeat_extends_the_task_lease(world):
    world.claimed("task-1", "coder-1")
    now = world.tick(200)
    result = agent_heartbeat(agent=world.coder, now=now)
    lease = now + timedelta(seconds=world.project.config.lease_duration)
    assert result.stop is None
    assert world.task("task-1").lease_expires == lease
    assert world.coder.lease_expires == lease
    assert_valid(world.project, now=now)


def test_register_collision_while_the_lease_is_live(world):
    coder = world.agent("coder-1")
    assert coder.has_live_lease(world.now)
    _, event = assert_refused_unchanged(
        lambda: agent_register(
            project=world.project, agent_id="coder-1", role="coder", now=world.tick()
        ),
        project=world.project,
        obj=coder,
        exc_type=ProtocolError,
        code="collision",
        status_code=409,
    )
    assert event.actor_id == "coder-1"


def test_register_after_lease_expiry_restarts_the_row(world):
    world.claimed("task-1", "coder-1")
    world.submit("task-1")
    before = row_snapshot(world.agent("coder-1"))
    assert before["status"] == "WAITING"
    world.tick(_lease_gone(world))
    now = world.tick()

    agent = agent_register(project=world.project, agent_id="coder-1", role="coder", now=now)

    after = row_snapshot(agent)
    assert after["id"] == before["id"]
    assert after["status"] == "STARTING"
    assert after["lease_expires"] == now + timedelta(seconds=world.project.config.lease_duration)
    assert (after["heartbeat"], after["registered_at"]) == (now, now)
    (event,) = applied_events(world.project, action="restarted")
    assert (event.actor_id, event.to_status) == ("coder-1", "STARTING")

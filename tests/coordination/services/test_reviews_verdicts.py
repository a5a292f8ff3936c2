"""Reviews by criticality and their verdicts (services.reviews, SPEC §12, seed 001): approvals
needed, who may review, the round, the commit, the review lease.

Split from the milestone file test_limits.py (issue #22 item 3).
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied

from agents.services import agent_heartbeat
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews as review_services
from boards.errors import (
    Conflict,
    Forbidden,
    LeaseLost,
    ProtocolValidationError,
)
from tests.coordination.services.helpers import (
    assert_refused_unchanged,
    assert_valid,
)
from tests.coordination.services.tasks.test_limits import (
    _rework,
)

pytestmark = pytest.mark.django_db


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

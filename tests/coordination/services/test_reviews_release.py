"""A reviewer gives its review claim back (services.reviews.review_release): the slot opens at
once for another reviewer, instead of when the lease and its grace lapse."""

from __future__ import annotations

import pytest

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.services import reviews
from boards.errors import Forbidden, InvalidTransition, LeaseLost
from boards.protocol import AgentStatus, TaskStatus


def release(world, key: str = "t1", reviewer: str = "code-reviewer-1", reason: str = ""):
    return reviews.review_release(
        task=world.task(key), agent=world.agent(reviewer), now=world.tick(), reason=reason
    )


def test_a_released_review_is_claimed_by_another_reviewer_at_once(world):
    world.ready_for_review("t1")
    world.claim_review("t1")
    with pytest.raises(Exception) as taken:  # the slot is held while the claim lives
        world.claim_review("t1", "code-reviewer-2")
    assert getattr(taken.value, "code", "") == "conflict"

    released = release(world, reason="The change is in a language I cannot judge")

    assert released.closed_at is not None and released.lease_expires is None
    assert world.task("t1").status == TaskStatus.READY_FOR_REVIEW
    assert world.agent("code-reviewer-1").status == AgentStatus.IDLE
    event = Event.objects.get(project=world.project, action="review_released")
    assert (event.actor_id, event.task.key) == ("code-reviewer-1", "t1")
    assert event.detail == "The change is in a language I cannot judge"
    # The same instant: no lease or grace to wait out.
    claimed = world.claim_review("t1", "code-reviewer-2")
    assert claimed.reviewer == "code-reviewer-2"
    assert Review.objects.filter(task=world.task("t1"), closed_at__isnull=True).count() == 1


def test_a_verdict_given_in_the_round_stays_when_another_reviewer_releases(world):
    world.ready_for_review("t1", criticality="complex")  # two approvals (seed 001)
    world.claim_review("t1")
    world.verdict("t1", "APPROVED")
    world.claim_review("t1", "code-reviewer-2")

    release(world, reviewer="code-reviewer-2")

    assert world.task("t1").status == TaskStatus.READY_FOR_REVIEW
    world.claim_review("t1", "code-reviewer-3")
    world.verdict("t1", "APPROVED", reviewer="code-reviewer-3")
    task = world.task("t1")
    assert task.status == TaskStatus.APPROVED
    assert sorted(task.approved_by) == ["code-reviewer-1", "code-reviewer-3"]


def test_a_reviewer_without_a_live_claim_on_the_task_is_told_to_exit(world):
    world.ready_for_review("t1")
    world.claim_review("t1", "code-reviewer-2")

    with pytest.raises(LeaseLost):
        release(world)

    open_review = Review.objects.get(task=world.task("t1"), closed_at__isnull=True)
    assert open_review.reviewer == "code-reviewer-2"
    assert Event.objects.filter(project=world.project, action="review_release_failed").exists()


def test_only_a_reviewer_releases_and_only_under_review(world):
    world.ready_for_review("t1")
    world.claim_review("t1")
    with pytest.raises(Forbidden):
        release(world, reviewer="coder-2")
    world.verdict("t1", "APPROVED")
    with pytest.raises(InvalidTransition):
        release(world)
    assert world.task("t1").status == TaskStatus.APPROVED

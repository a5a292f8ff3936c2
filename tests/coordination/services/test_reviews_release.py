"""A reviewer gives its review claim back (services.reviews.review_release): the slot opens at
once for another reviewer, instead of when the lease and its grace lapse; the same reviewer's
claim-next and `/work` pass the task over until the coder resubmits it, while a claim by name
still takes it (the slot's `released`, selectors.reviews) — unless it gave it back because its
session was stopping (`stopping`: its supervisor stopped or restarted), not by judgement."""

from __future__ import annotations

import pytest

from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.work import work_for_role
from boards.coordination.services import reviews, tasks
from boards.errors import Forbidden, InvalidTransition, LeaseLost
from boards.protocol import AgentStatus, TaskStatus


def release(
    world,
    key: str = "t1",
    reviewer: str = "code-reviewer-1",
    reason: str = "",
    *,
    stopping: bool = False,
):
    return reviews.review_release(
        task=world.task(key),
        agent=world.agent(reviewer),
        now=world.tick(),
        reason=reason,
        stopping=stopping,
    )


def next_review(world, reviewer: str = "code-reviewer-1") -> Review | None:
    return reviews.review_claim_next(
        project=world.project, agent=world.agent(reviewer), now=world.tick()
    )


def work(world, reviewer: str = "code-reviewer-1"):
    agent = world.agent(reviewer)
    return work_for_role(project=world.project, role=agent.role, agent=agent, now=world.now)


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


def test_claim_next_does_not_hand_a_review_back_to_the_reviewer_that_gave_it_back(world):
    world.ready_for_review("t1")
    assert next_review(world).task.key == "t1"
    release(world, reason="Out of context")

    # Alone, it would get the same review straight back and give it back again: a loop.
    assert next_review(world) is None
    assert Event.objects.get(project=world.project, action="review_released").data == {
        "reason": "Out of context"
    }
    answer = work(world)
    assert (answer["work"], answer["exit"]) == (False, None)  # it waits: t1 is still open
    assert answer["retry_after"]
    assert Review.objects.filter(task=world.task("t1"), closed_at__isnull=True).count() == 0
    # Another reviewer is offered it, by /work and by claim-next alike.
    assert work(world, "code-reviewer-2")["work"] is True
    assert next_review(world, "code-reviewer-2").task.key == "t1"


def test_the_reviewer_that_gave_a_review_back_is_offered_the_next_task(world):
    world.ready_for_review("t1", priority=1)
    world.ready_for_review("t2", coder="coder-2", priority=2)
    assert next_review(world).task.key == "t1"
    release(world)

    assert work(world)["work"] is True
    assert next_review(world).task.key == "t2"


def test_after_the_coder_resubmits_the_reviewer_may_review_it_again(world):
    world.ready_for_review("t1")
    world.claim_review("t1")
    release(world)
    world.claim_review("t1", "code-reviewer-2")
    world.verdict("t1", "REJECTED", reviewer="code-reviewer-2", reason="Blockers: 1")
    assert next_review(world) is None  # REJECTED: nothing to review

    world.claim("t1")  # the coder's rework, then a new submission: a new round
    world.submit("t1", commit="c0ffee02")

    assert work(world)["work"] is True
    again = next_review(world)
    assert (again.task.key, again.review_commit) == ("t1", "c0ffee02")


def test_a_claim_by_name_takes_a_review_given_back(world):
    world.ready_for_review("t1")
    world.claim_review("t1")
    release(world)

    claimed = world.claim_review("t1")  # on purpose: a human's decision, or its own

    assert claimed.reviewer == "code-reviewer-1" and claimed.closed_at is None
    assert world.agent("code-reviewer-1").status == AgentStatus.REVIEWING
    # Given back a second time, it is passed over again.
    release(world)
    assert next_review(world) is None


def test_only_the_reviewers_own_release_passes_the_task_over(world):
    """A human taking a review claim back (`review_claim_released`) says nothing about whether
    its reviewer could finish it: that reviewer is offered the task again."""
    world.ready_for_review("t1")
    world.claim_review("t1")
    tasks.task_release_claim(
        task=world.task("t1"), actor=world.admin, reason="Reassigning", now=world.tick()
    )

    assert next_review(world).task.key == "t1"


def test_a_review_given_back_because_the_session_stops_is_offered_to_it_again_at_once(world):
    """Its supervisor stopped (an operator's restart, a reboot): not the reviewer judging it
    cannot finish the review. Restarted, a lone reviewer takes it up again, by `/work` and
    claim-next alike, instead of waiting for a human to claim it by name."""
    world.ready_for_review("t1")
    assert next_review(world).task.key == "t1"
    release(world, reason="the supervisor was stopped", stopping=True)

    event = Event.objects.get(project=world.project, action="review_released")
    assert event.data == {"reason": "the supervisor was stopped", "stopping": True}
    assert world.agent("code-reviewer-1").status == AgentStatus.IDLE
    assert work(world)["work"] is True
    again = next_review(world)
    assert (again.task.key, again.reviewer, again.closed_at) == ("t1", "code-reviewer-1", None)


def test_a_stop_after_a_claim_by_name_does_not_bring_the_judged_release_back(world):
    """The reviewer's last give-back of the round decides: it took the review up again on
    purpose (by name) after giving it back, so a stop then is only a stop."""
    world.ready_for_review("t1")
    world.claim_review("t1")
    release(world, reason="Out of context")
    world.claim_review("t1")
    release(world, stopping=True)

    assert next_review(world).task.key == "t1"


def test_a_judged_release_after_a_stopping_one_passes_the_task_over(world):
    world.ready_for_review("t1")
    assert next_review(world).task.key == "t1"
    release(world, stopping=True)
    assert next_review(world).task.key == "t1"  # restarted, it goes on with it
    release(world, reason="A conflict of interest: I wrote part of it")

    assert next_review(world) is None
    assert next_review(world, "code-reviewer-2").task.key == "t1"

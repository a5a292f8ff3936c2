"""Who may claim a review (boards.coordination.services.review_claims): a reviewer that left
(`agent_leave`) claims none until it registers again, refused as a departed coder's claim is
(`authority.refuse_if_departed`, the words of `availability.departed_refusal`); a process of a
superseded session (its generation older than the agent's) claims none either. The claim's
writes against their reference model: test_review_claims_sql.py."""

from __future__ import annotations

import pytest

from agents.services import agent_leave, agent_register
from boards.coordination.services.review_claims import review_claim, review_claim_next
from boards.errors import Conflict, NotRegistered
from tests.coordination.services.helpers import assert_refused_unchanged

pytestmark = pytest.mark.django_db

REVIEWER = "code-reviewer-1"
LEFT = f"{REVIEWER} left; register again to start a new session"


def test_a_reviewer_that_left_claims_no_review_until_it_registers_again(world):
    """Its heartbeats are refused (`not_registered`): a review claim would hand it a lease
    nobody keeps. Claim-next (whose call claims before its checks: rolled back) and the named
    claim alike, with the coder's words, code and status (`/work`: test_work.py)."""
    world.ready_for_review("task-1")
    left = agent_leave(project=world.project, agent=world.agent(REVIEWER), now=world.tick())

    for claim in (
        lambda: review_claim_next(
            project=world.project, agent=world.agent(REVIEWER), now=world.tick()
        ),
        lambda: review_claim(
            task=world.task("task-1"), agent=world.agent(REVIEWER), now=world.tick()
        ),
    ):
        caught, event = assert_refused_unchanged(
            claim,
            project=world.project,
            obj=world.agent(REVIEWER),
            exc_type=Conflict,
            code="conflict",
            status_code=409,
        )
        assert caught.message == LEFT
        assert (event.action, event.actor_id) == ("claim_review_failed", REVIEWER)
    after = world.agent(REVIEWER)
    assert (after.status, after.lease_expires) == (left.status, left.lease_expires)
    assert not world.task("task-1").reviews.exists()

    agent_register(project=world.project, agent_id=REVIEWER, role="code_reviewer", now=world.tick())
    review = review_claim_next(project=world.project, agent=world.agent(REVIEWER), now=world.tick())
    assert (review.task.key, review.reviewer) == ("task-1", REVIEWER)


def test_a_superseded_sessions_process_claims_no_review(world):
    """Session 1 of the reviewer hung past its lease and the id registered again: session 1's
    claims (named and next, the latter rolled back after its call) are refused
    `not_registered` on the locked agent row, exit 8, and change nothing; before, they
    claimed reviews as session 2's identity."""
    world.ready_for_review("task-1")
    world.tick(3600)
    agent_register(project=world.project, agent_id=REVIEWER, role="code_reviewer", now=world.tick())

    for claim in (
        lambda: review_claim_next(
            project=world.project, agent=world.agent(REVIEWER), now=world.tick(), generation=1
        ),
        lambda: review_claim(
            task=world.task("task-1"), agent=world.agent(REVIEWER), now=world.tick(), generation=1
        ),
    ):
        caught, event = assert_refused_unchanged(
            claim,
            project=world.project,
            obj=world.agent(REVIEWER),
            exc_type=NotRegistered,
            code="not_registered",
            status_code=409,
        )
        assert caught.message.startswith(f"session 1 of {REVIEWER} was superseded by session 2")
        assert caught.details["exit"] == 8
        assert (event.action, event.actor_id) == ("claim_review_failed", REVIEWER)
    # Its live session claims with its own generation.
    review = review_claim_next(
        project=world.project, agent=world.agent(REVIEWER), now=world.tick(), generation=2
    )
    assert review.task.key == "task-1"

"""Who may claim a review (boards.coordination.services.review_claims): a reviewer that left
(`agent_leave`) claims none until it registers again, refused as a departed coder's claim is
(`authority.refuse_if_departed`, the words of `availability.departed_refusal`). The claim's
writes against their reference model: test_review_claims_sql.py."""

from __future__ import annotations

import pytest

from agents.services import agent_leave, agent_register
from boards.coordination.services.review_claims import review_claim, review_claim_next
from boards.errors import Conflict
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

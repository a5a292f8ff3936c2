"""Review claims and verdicts under real concurrency (seed 000 "Review Lease Lifecycle").

Threads with their own PostgreSQL connections, released together by a barrier. The task row
lock serialises every review operation on a task; these tests check that the loser of each
race gets the documented refusal and that the rows end consistent.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from datetime import timedelta

import pytest

from agents.services import agent_heartbeat
from boards.errors import ProtocolError
from boards.models import Event, Review
from boards.services import reviews
from boards.services.common import config_of
from tests.concurrency.conftest import run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)


def _claim_review(world: World, reviewer: str, key: str, now):
    return lambda: reviews.review_claim(task=world.task(key), agent=world.agent(reviewer), now=now)


def test_two_reviewers_racing_for_one_review_exactly_one_wins():
    world = World()
    winners = Counter()
    for i in range(20):
        key = f"review-{i}"
        world.ready_for_review(key)
        before = {r: world.agent(r).status for r in ("code-reviewer-1", "code-reviewer-2")}
        now = world.tick()
        outcomes = run_together(
            _claim_review(world, "code-reviewer-1", key, now),
            _claim_review(world, "code-reviewer-2", key, now),
        )
        won = [o for o in outcomes if o.ok]
        lost = [o for o in outcomes if not o.ok]
        assert len(won) == 1 and len(lost) == 1, [o.error for o in outcomes]
        error = lost[0].error
        assert isinstance(error, ProtocolError), repr(error)
        assert (error.status_code, error.code) == (409, "conflict")
        winner = won[0].value.reviewer
        loser = "code-reviewer-2" if winner == "code-reviewer-1" else "code-reviewer-1"
        winners[winner] += 1
        task = world.task(key)
        assert [r.reviewer for r in Review.objects.filter(task=task)] == [winner]
        assert world.agent(winner).status == "REVIEWING"
        assert world.agent(loser).status == before[loser]  # untouched by its refused claim
        refused = Event.objects.filter(task=task, action="claim_review_failed", outcome="rejected")
        assert [e.actor_id for e in refused] == [loser]
        world.verdict(key, "APPROVED", reviewer=winner)
    assert sum(winners.values()) == 20


def test_verdict_racing_the_reclaim_of_its_lapsed_review_lease():
    """Reviewer A's review lease has lapsed but A is still within lease_grace, so A's verdict is
    still accepted (seed 002 "Watcher grace") while reviewer B may already reclaim the slot
    (seed 000: a lapsed review lease makes the slot claimable). Exactly one of them succeeds:

    * A first: the verdict is applied, the task leaves READY_FOR_REVIEW, B's claim is refused
      with invalid_transition;
    * B first: A's review is closed unanswered, B reviews, A's verdict is lease_lost (exit 42).
    """
    world = World()
    grace = config_of(world.project).lease_grace
    rng = random.Random(42)
    seen = Counter()
    for i in range(40):
        key = f"lapse-{i}"
        world.under_review(key)  # code-reviewer-1 holds the review
        task = world.task(key)
        lease = Review.objects.get(task=task, closed_at__isnull=True).lease_expires
        now = lease + timedelta(seconds=grace // 2)
        world.now = now
        # A little jitter on either side so both orders happen, whichever thread starts faster.
        delays = [rng.random() * 0.004, rng.random() * 0.004]

        def verdict(key=key, commit=task.review_commit, now=now, delay=delays[0]):
            time.sleep(delay)
            return reviews.review_verdict(
                task=world.task(key), agent=world.agent("code-reviewer-1"), verdict="APPROVED",
                review_commit=commit, reason="Looks right", now=now,
            )  # fmt: skip

        def claim(key=key, now=now, delay=delays[1]):
            time.sleep(delay)
            return reviews.review_claim(
                task=world.task(key), agent=world.agent("code-reviewer-2"), now=now
            )

        a, b = run_together(verdict, claim)
        assert a.ok != b.ok, f"round {i}: verdict {a.error!r}, claim {b.error!r}"
        task = world.task(key)
        reviewer_a, reviewer_b = world.agent("code-reviewer-1"), world.agent("code-reviewer-2")
        rows = {r.reviewer: r for r in Review.objects.filter(task=task)}
        if a.ok:
            seen["verdict first"] += 1
            assert isinstance(b.error, ProtocolError), repr(b.error)
            assert (b.error.status_code, b.error.code) == (409, "invalid_transition")
            assert task.status == "APPROVED" and task.approved_by == ["code-reviewer-1"]
            assert set(rows) == {"code-reviewer-1"}
            assert rows["code-reviewer-1"].verdict == "APPROVED"
            assert reviewer_a.status == "IDLE"
            assert reviewer_b.status in ("STARTING", "IDLE")  # untouched by its refused claim
        else:
            seen["reclaim first"] += 1
            assert isinstance(a.error, ProtocolError), repr(a.error)
            assert (a.error.status_code, a.error.code) == (409, "lease_lost")
            assert a.error.details["exit"] == 42
            assert task.status == "READY_FOR_REVIEW"
            assert set(rows) == {"code-reviewer-1", "code-reviewer-2"}
            old, new = rows["code-reviewer-1"], rows["code-reviewer-2"]
            assert old.closed_at is not None and old.verdict == ""
            assert new.closed_at is None and new.lease_expires > now
            assert (reviewer_a.status, reviewer_b.status) == ("IDLE", "REVIEWING")
            assert reviewer_a.current_task_id is None
            assert Event.objects.filter(task=task, action="review_reclaimed").count() == 1
            world.verdict(key, "APPROVED", reviewer="code-reviewer-2")
        world.tick(3600)
    # Both orders were exercised; a run where one side always won would test only half.
    assert set(seen) == {"verdict first", "reclaim first"}, seen


@pytest.mark.xfail(
    reason="deadlock: agent_heartbeat locks the reviewer's agent row and then its review rows "
    "(and, through select_related without of=, their task rows); review_claim locks the task "
    "and the review rows and then the lapsed reviewer's agent row. PostgreSQL breaks the cycle "
    "after deadlock_timeout and one side gets a database error (HTTP 500). Fix in "
    "review_claim (lock the lapsed reviewer's row NOWAIT, as task claims do) or in the "
    "heartbeat's lock order; then drop this marker.",
    strict=False,
)
def test_reviewer_heartbeat_racing_the_reclaim_of_its_lapsed_review():
    """Reviewer A (lease lapsed, still within grace) heartbeats while B reclaims A's slot.

    Either order is fine — the heartbeat keeps A's review (extends its lease) and B is refused,
    or B takes the slot and A's lease is no longer extended — but exactly one open review
    remains and neither side sees a database error.
    """
    world = World()
    grace = config_of(world.project).lease_grace
    seen = Counter()
    for i in range(20):
        key = f"beat-{i}"
        world.under_review(key)
        task = world.task(key)
        lease = Review.objects.get(task=task, closed_at__isnull=True).lease_expires
        now = lease + timedelta(seconds=grace // 2)
        world.now = now
        beat, claim = run_together(
            lambda now=now: agent_heartbeat(agent=world.agent("code-reviewer-1"), now=now),
            _claim_review(world, "code-reviewer-2", key, now),
        )
        assert beat.ok or isinstance(beat.error, ProtocolError), f"round {i}: {beat.error!r}"
        assert claim.ok or isinstance(claim.error, ProtocolError), f"round {i}: {claim.error!r}"
        open_reviews = Review.objects.filter(task=task, closed_at__isnull=True, verdict="")
        assert open_reviews.count() == 1
        holder = open_reviews.get().reviewer
        seen[holder] += 1
        world.verdict(key, "APPROVED", reviewer=holder)
        world.tick(3600)
    assert sum(seen.values()) == 20

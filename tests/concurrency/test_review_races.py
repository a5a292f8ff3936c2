"""Review claims and verdicts under real concurrency (seed 000 "Review Lease Lifecycle").

Threads with their own PostgreSQL connections, released together by a barrier. The task row
lock serialises every review operation on a task; these tests check that the loser of each
race gets the documented refusal and that the rows end consistent.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from datetime import timedelta

import pytest
from django.db import transaction

from agents.models import Agent
from agents.services import agent_heartbeat
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Review
from boards.coordination.selectors.access import config_of
from boards.coordination.services import reviews
from boards.errors import ProtocolError
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


# When the racers act, relative to reviewer A's lapsed review lease: within lease_grace A still
# holds the slot (its verdict counts, its heartbeat extends the lease, nobody may reclaim it);
# beyond the grace the slot may be reclaimed and A has lost it (`lease_alive`, one rule).
WITHIN_GRACE, BEYOND_GRACE = "within grace", "beyond grace"


def _lapsed(world: World, key: str, when: str):
    """`now` for the race on `key`: A's review lease lapsed, within or beyond lease_grace."""
    grace = config_of(world.project).lease_grace
    lease = Review.objects.get(task=world.task(key), closed_at__isnull=True).lease_expires
    return lease + timedelta(seconds=grace // 2 if when == WITHIN_GRACE else grace + 1)


@pytest.mark.parametrize("when", [WITHIN_GRACE, BEYOND_GRACE])
def test_verdict_racing_the_reclaim_of_its_lapsed_review_lease(when):
    """Reviewer A's review lease has lapsed; A gives its verdict while reviewer B claims the
    review, in either order (jitter on both sides). Exactly one of them succeeds, and which one
    depends only on the lease, never on who ran first:

    * within lease_grace, A's verdict is applied (seed 002 "Watcher grace") and B is refused:
      conflict when B came first (the slot is A's), invalid_transition after the verdict;
    * beyond it, B reclaims the slot (seed 000: a lapsed review lease makes it claimable) and
      A's verdict is lease_lost (exit 42), whether it came first or not.
    """
    world = World()
    rng = random.Random(42)
    for i in range(30):
        key = f"lapse-{i}"
        world.under_review(key)  # code-reviewer-1 holds the review
        task = world.task(key)
        now = world.now = _lapsed(world, key, when)
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
        if when == WITHIN_GRACE:
            assert a.ok, f"round {i}: {a.error!r}"
            assert isinstance(b.error, ProtocolError), repr(b.error)
            assert (b.error.status_code, b.error.code) in (
                (409, "conflict"),
                (409, "invalid_transition"),
            )
            assert task.status == "APPROVED" and task.approved_by == ["code-reviewer-1"]
            assert set(rows) == {"code-reviewer-1"}
            assert rows["code-reviewer-1"].verdict == "APPROVED"
            assert reviewer_a.status == "IDLE"
            assert reviewer_b.status in ("STARTING", "IDLE")  # untouched by its refused claim
            assert not Event.objects.filter(task=task, action="review_reclaimed").exists()
        else:
            assert b.ok, f"round {i}: {b.error!r}"
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


@pytest.mark.parametrize("when", [WITHIN_GRACE, BEYOND_GRACE])
def test_reviewer_heartbeat_racing_the_reclaim_of_its_lapsed_review(when):
    """Reviewer A (review lease lapsed) heartbeats while B claims A's review.

    The heartbeat locks A's agent row, then the task, then the review; the claim locks B's and
    A's agent rows (A's review may be reclaimed, which sets A back to IDLE), then the task, then
    the review: one lock order (boards/coordination/services/locking.py), so neither side waits for
    the other in a cycle and neither sees a database error. Within lease_grace A keeps the review
    (its heartbeat may extend it; B is refused); beyond it B takes the slot, whichever ran
    first, and the heartbeat does not bring A's lease back.
    """
    world = World()
    for i in range(20):
        key = f"beat-{i}"
        world.under_review(key)
        task = world.task(key)
        now = world.now = _lapsed(world, key, when)
        beat, claim = run_together(
            lambda now=now: agent_heartbeat(agent=world.agent("code-reviewer-1"), now=now),
            _claim_review(world, "code-reviewer-2", key, now),
        )
        assert beat.ok, f"round {i}: {beat.error!r}"
        open_reviews = Review.objects.filter(task=task, closed_at__isnull=True, verdict="")
        holder = open_reviews.get().reviewer  # exactly one open review
        if when == WITHIN_GRACE:
            assert isinstance(claim.error, ProtocolError), f"round {i}: {claim.error!r}"
            assert (claim.error.status_code, claim.error.code) == (409, "conflict")
            assert holder == "code-reviewer-1"
        else:
            assert claim.ok, f"round {i}: {claim.error!r}"
            assert holder == "code-reviewer-2"
            assert world.agent("code-reviewer-1").status == "IDLE"
        world.verdict(key, "APPROVED", reviewer=holder)
        world.tick(3600)


@pytest.mark.parametrize("verdict", ["APPROVED", "REJECTED"])
def test_coder_heartbeat_racing_the_verdict_on_its_task(verdict):
    """The coder waiting for its review heartbeats (its agent row, then its task) while the
    reviewer's verdict releases it (the verdict locks the coder's row too): both lock agent rows
    before the task, so both succeed, in either order, and the coder ends as the verdict says.
    """
    world = World()
    for i in range(20):
        key = f"wait-{i}"
        world.under_review(key)  # coder-1 WAITING, code-reviewer-1 REVIEWING
        task = world.task(key)
        now = world.tick()
        beat, given = run_together(
            lambda now=now: agent_heartbeat(agent=world.agent("coder-1"), now=now),
            lambda task=task, now=now: reviews.review_verdict(
                task=task, agent=world.agent("code-reviewer-1"), verdict=verdict,
                review_commit=task.review_commit, reason="Checked", now=now,
            ),
        )  # fmt: skip
        assert beat.ok, f"round {i}: {beat.error!r}"
        assert given.ok, f"round {i}: {given.error!r}"
        task = world.task(key)
        assert task.status == verdict
        if verdict == "REJECTED":
            # Back to its coder (seed 000), who reworks and resubmits it before the next round.
            world.claim(key, "coder-1")
            world.submit(key)
            world.claim_review(key)
            world.verdict(key, "APPROVED")
        coder = world.agent("coder-1")
        assert (coder.status, coder.current_task_id, coder.lost_task_id) == ("IDLE", None, None)
        world.tick(3600)


@pytest.mark.parametrize("operation", ["submit", "block", "handoff"])
def test_coder_heartbeat_racing_its_own_operation_on_its_task(operation):
    """A supervisor heartbeats in the background while its coder submits, blocks or hands off
    its task: both lock the coder's agent row before the task, so both succeed in either order.
    """
    from agents.services import agent_handoff
    from boards.coordination.services import tasks
    from tests.factories import register

    world = World()
    for i in range(20):
        key = f"own-{i}"
        coder = f"coder-{1 + i % 3}"  # a coder that blocked or handed off is not reused at once
        world.claimed(key, coder)
        task, now = world.task(key), world.tick()
        act = {
            "submit": lambda task=task, now=now, coder=coder: tasks.task_submit_for_review(
                task=task, agent=world.agent(coder), review_commit="c0ffee01", now=now
            ),
            "block": lambda task=task, now=now, coder=coder: tasks.task_block(
                task=task, agent=world.agent(coder), reason="Spec is silent",
                questions=["What now?"], now=now,
            ),
            "handoff": lambda task=task, now=now, coder=coder: agent_handoff(
                agent=world.agent(coder), task=task, now=now, summary="Context full",
                next_action="Carry on",
            ),
        }[operation]  # fmt: skip
        beat, done = run_together(
            lambda now=now, coder=coder: agent_heartbeat(agent=world.agent(coder), now=now), act
        )
        assert beat.ok, f"round {i}: {beat.error!r}"
        assert done.ok, f"round {i}: {done.error!r}"
        expected = {"submit": "READY_FOR_REVIEW", "block": "BLOCKED", "handoff": "CLAIMED"}
        assert world.task(key).status == expected[operation]
        if operation == "submit":
            world.claim_review(key)
            world.verdict(key, "APPROVED")
        elif operation == "handoff":
            # Give the task up, and start the id afresh once its lease is dead.
            world.block(key)
            world.tick(3600)
            register(world.project, coder, now=world.now)
        world.tick(3600)


def _claim_review_next(world: World, reviewer: str, now):
    return lambda: reviews.review_claim_next(
        project=world.project, agent=world.agent(reviewer), now=now
    )


def test_reviewers_racing_claim_next_for_one_review_one_gets_it_the_other_none():
    """Review claim-next picks under `FOR UPDATE SKIP LOCKED` (`liza_review_claim_v1`): of two
    reviewers asking at once for the one review waiting, one gets it, the other none — never
    both, and no error."""
    world = World()
    for i in range(20):
        key = f"next-{i}"
        world.ready_for_review(key)
        now = world.tick()
        outcomes = run_together(
            _claim_review_next(world, "code-reviewer-1", now),
            _claim_review_next(world, "code-reviewer-2", now),
        )
        assert all(o.ok for o in outcomes), [o.error for o in outcomes]
        got = [o.value for o in outcomes if o.value is not None]
        assert len(got) == 1, f"round {i}: {got}"
        assert [r.reviewer for r in Review.objects.filter(task=world.task(key))] == [
            got[0].reviewer
        ]
        world.verdict(key, "APPROVED", reviewer=got[0].reviewer)


def test_a_busy_holder_makes_claim_next_pass_the_task_over():
    """The reviewer of a dead claim is locked `NOWAIT` after the task (against the lock order):
    while its row is busy (a heartbeat right now), claim-next passes the task over — no wait, no
    write — and takes it once the row is free."""
    world = World()
    world.under_review("held-up")
    task = world.task("held-up")
    now = world.now = _lapsed(world, "held-up", BEYOND_GRACE)
    locked, release = threading.Event(), threading.Event()

    def hold_the_holder():
        with transaction.atomic():
            list(Agent.objects.select_for_update().filter(agent_id="code-reviewer-1"))
            locked.set()
            release.wait(30)

    def claim_next_while_busy():
        assert locked.wait(30)
        try:
            return reviews.review_claim_next(
                project=world.project, agent=world.agent("code-reviewer-2"), now=now
            )
        finally:
            release.set()

    holder, claim = run_together(hold_the_holder, claim_next_while_busy)
    assert holder.ok and claim.ok, (holder.error, claim.error)
    assert claim.value is None
    assert Review.objects.get(task=task, closed_at__isnull=True).reviewer == "code-reviewer-1"
    assert not Event.objects.filter(task=task, action="review_reclaimed").exists()
    review = reviews.review_claim_next(
        project=world.project, agent=world.agent("code-reviewer-2"), now=now
    )
    assert review.task.key == "held-up" and review.reviewer == "code-reviewer-2"
    assert world.agent("code-reviewer-1").status == "IDLE"

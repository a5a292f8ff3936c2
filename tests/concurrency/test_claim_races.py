"""Claims under real concurrency: threads with their own PostgreSQL connections (SPEC §6, §11).

"row-locked with SKIP LOCKED so N concurrent claimers never get the same task"; a coder holds
one task at a time (seed 000 agent machine); a coder whose task was taken over learns it as
`lease_lost` and exits 42 (seed 002 "If original agent returns after expiry → must self-abort").
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from agents.models import Agent
from agents.services import agent_heartbeat
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.tasks import task_claim, task_claim_next
from boards.errors import ProtocolError
from tests.concurrency.conftest import Outcome, run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 20


def _claim_next(world: World, coder: str, now):
    # Each thread reads its own rows, as each request of a real server does.
    return lambda: task_claim_next(
        project=world.project, agent=world.agent(coder), now=now, base_commit="base0001"
    )


def _codes(outcomes: list[Outcome]) -> list[str]:
    return sorted(
        "ok" if o.ok else getattr(o.error, "code", type(o.error).__name__) for o in outcomes
    )


def test_two_coders_racing_for_one_task_one_gets_it_the_other_gets_none():
    world = World()
    for i in range(ROUNDS):
        key = f"solo-{i}"
        world.unclaimed(key)
        now = world.tick()
        outcomes = run_together(
            _claim_next(world, "coder-1", now), _claim_next(world, "coder-2", now)
        )
        assert all(o.ok for o in outcomes), [o.error for o in outcomes]
        got = [o.value for o in outcomes if o.value is not None]
        assert [t.key for t in got] == [key], f"round {i}: {got}"
        winner = got[0].assigned_to
        task = world.task(key)
        assert (task.status, task.assigned_to) == ("CLAIMED", winner)
        assert world.agent(winner).current_task_id == task.pk
        loser = "coder-2" if winner == "coder-1" else "coder-1"
        assert world.agent(loser).current_task_id is None
        assert Event.objects.filter(task=task, action="claimed").count() == 1
        # Hand the task in so both coders are free for the next round.
        world.submit(key)
        world.claim_review(key)
        world.verdict(key, "APPROVED")


def test_one_coder_claiming_twice_at_once_gets_one_task():
    """A supervisor retrying a slow claim must not leave its coder holding two tasks: the retry
    gets the same task back (claim-next hands a coder its own live claim), never a second."""
    world = World()
    for i in range(ROUNDS):
        keys = [f"twice-{i}-a", f"twice-{i}-b"]
        for key in keys:
            world.unclaimed(key)
        now = world.tick()
        outcomes = run_together(
            _claim_next(world, "coder-1", now), _claim_next(world, "coder-1", now)
        )
        held = Task.objects.filter(project=world.project, assigned_to="coder-1", status="CLAIMED")
        assert held.count() == 1, f"round {i}: coder-1 holds {[t.key for t in held]}"
        assert _codes(outcomes) == ["ok", "ok"], [o.error for o in outcomes]
        assert outcomes[0].value.pk == outcomes[1].value.pk
        claimed = outcomes[0].value
        assert world.agent("coder-1").current_task_id == claimed.pk
        untouched = world.task(next(k for k in keys if k != claimed.key))
        assert (untouched.status, untouched.assigned_to) == ("UNCLAIMED", "")
        world.submit(claimed.key)
        world.claim_review(claimed.key)
        world.verdict(claimed.key, "APPROVED")
        tasks_left = Task.objects.filter(project=world.project, status="UNCLAIMED")
        for task in tasks_left:  # keep the queue to this round's pair
            world.claim(task.key, "coder-3")
            world.submit(task.key)
            world.claim_review(task.key)
            world.verdict(task.key, "APPROVED")


def test_one_coder_claiming_two_named_tasks_at_once_gets_one():
    world = World()
    for i in range(ROUNDS):
        keys = [f"named-{i}-a", f"named-{i}-b"]
        for key in keys:
            world.unclaimed(key)
        now = world.tick()
        outcomes = run_together(
            *[
                (lambda k=k, now=now: task_claim(
                    task=world.task(k), agent=world.agent("coder-1"), now=now,
                    base_commit="base0001",
                ))
                for k in keys
            ]
        )  # fmt: skip
        assert _codes(outcomes) == ["conflict", "ok"], [o.error for o in outcomes]
        held = Task.objects.filter(project=world.project, assigned_to="coder-1", status="CLAIMED")
        assert held.count() == 1
        claimed = held.get()
        world.submit(claimed.key)
        world.claim_review(claimed.key)
        world.verdict(claimed.key, "APPROVED")
        other = next(k for k in keys if k != claimed.key)
        world.claim(other, "coder-2")
        world.submit(other)
        world.claim_review(other)
        world.verdict(other, "APPROVED")


def _lapsed(world: World, key: str, coder: str = "coder-1"):
    """`key` CLAIMED by `coder`, and a `now` past its lease and lease_grace."""
    world.claimed(key, coder)
    config = config_of(world.project)
    task = world.task(key)
    return task, task.lease_expires + timedelta(
        seconds=config.lease_grace + config.retry_backoff[0] + 1
    )


def test_heartbeat_after_takeover_is_lease_lost():
    world = World()
    _, later = _lapsed(world, "lapsed")
    world.now = later
    taken = task_claim_next(
        project=world.project, agent=world.agent("coder-2"), now=later, base_commit="base0002"
    )
    assert (taken.key, taken.assigned_to) == ("lapsed", "coder-2")
    with pytest.raises(ProtocolError) as raised:
        agent_heartbeat(agent=world.agent("coder-1"), now=world.tick())
    assert (raised.value.code, raised.value.status_code) == ("lease_lost", 409)
    assert raised.value.details["exit"] == 42
    assert world.task("lapsed").assigned_to == "coder-2"


def test_heartbeat_racing_a_takeover_leaves_exactly_one_holder():
    """The lapsed coder's heartbeat and another coder's claim-next, released together.

    Whatever the order, the heartbeat is refused with lease_lost (its lease is past grace), the
    task ends with exactly one holder whose agent row points at it, and nobody sees a deadlock
    or any other database error.
    """
    world = World()
    outcomes_seen = []
    for i in range(ROUNDS):
        key = f"lapsed-{i}"
        _, later = _lapsed(world, key)
        world.now = later
        outcomes = run_together(
            lambda later=later: agent_heartbeat(agent=world.agent("coder-1"), now=later),
            _claim_next(world, "coder-2", later),
        )
        heartbeat, claim = outcomes
        assert isinstance(heartbeat.error, ProtocolError), f"round {i}: {heartbeat.error!r}"
        assert heartbeat.error.code == "lease_lost"
        task = world.task(key)
        holders = Agent.objects.filter(project=world.project, current_task=task)
        if claim.ok and claim.value is not None:
            assert claim.value.key == key
            assert task.assigned_to == "coder-2"
            outcomes_seen.append("taken over")
        else:
            # The claimer found the row busy (SKIP LOCKED) or its holder mid-heartbeat: the
            # stale claim stays with coder-1 until the next claim takes it over.
            assert claim.ok, f"round {i}: {claim.error!r}"
            assert task.assigned_to == "coder-1"
            outcomes_seen.append("not yet")
            taken = task_claim_next(
                project=world.project, agent=world.agent("coder-2"), now=world.tick(),
                base_commit="base0002",
            )  # fmt: skip
            assert taken.key == key
            task = world.task(key)
        assert task.status == "CLAIMED"
        assert [a.agent_id for a in holders] == [task.assigned_to] == ["coder-2"]
        assert world.agent("coder-1").current_task_id is None
        # Both coders free again: coder-2 hands the task in; coder-1 starts afresh.
        world.submit(key)
        world.claim_review(key)
        world.verdict(key, "APPROVED")
        world.tick(2 * 3600)
    assert len(outcomes_seen) == ROUNDS

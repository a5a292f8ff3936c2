"""The lock order under real concurrency (docs/architecture.md "Lock order"): a coder's
heartbeat (`liza_heartbeat_v2`: its agent row, then its task) released together with each path
that takes the same agent and task rows, many rounds each, on threads with their own
PostgreSQL connections. A path that took the task before the agent would meet the heartbeat in
a circle, and PostgreSQL would kill one of the two (SQLSTATE 40P01): no round may end in a
database error, and every round must leave the rows consistent.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import DatabaseError

from agents.models import Agent
from agents.services import agent_heartbeat
from agents.services.handoffs import agent_handoff
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.access import config_of
from boards.coordination.services.tasks import task_claim_next, task_submit_for_review
from boards.coordination.services.tasks.overrides import (
    task_cancel,
    task_override_block,
    task_release_claim,
    task_suspend,
)
from boards.errors import ProtocolError
from boards.protocol import TaskStatus
from boards.watch.services.watch import watch_sweep
from tests.concurrency.conftest import Outcome, run_together
from tests.lifecycle import World

pytestmark = pytest.mark.django_db(transaction=True)

ROUNDS = 20

# The states in which a coder holds its task (holders.py).
HELD = (TaskStatus.CLAIMED, TaskStatus.READY_FOR_REVIEW, TaskStatus.REJECTED)


def _dead(world: World, task: Task) -> datetime:
    """A moment past `task`'s lease, its grace and its first retry backoff."""
    config = config_of(world.project)
    return task.lease_expires + timedelta(seconds=config.lease_grace + config.retry_backoff[0] + 1)


def _submit(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_submit_for_review(
        task=world.task(task.key), agent=world.agent(coder), review_commit="c0ffee01", now=now
    )


def _handoff(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: agent_handoff(
        agent=world.agent(coder),
        task=world.task(task.key),
        now=now,
        summary="context spent",
        next_action="finish the tests",
    )


def _override_block(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_override_block(
        task=world.task(task.key), actor=world.admin, reason="stop there", now=now
    )


def _release_claim(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_release_claim(
        task=world.task(task.key), actor=world.admin, reason="stuck", now=now
    )


def _cancel(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_cancel(
        task=world.task(task.key), actor=world.admin, reason="not needed", now=now
    )


def _suspend(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_suspend(
        task=world.task(task.key), actor=world.admin, reason="wait", now=now
    )


def _sweep(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: watch_sweep(project=world.project, now=now)


def _takeover(world: World, task: Task, coder: str, now: datetime) -> Callable[[], Any]:
    return lambda: task_claim_next(
        project=world.project, agent=world.agent("coder-2"), now=now, base_commit="base0002"
    )


# path → (its call, whether its `now` is past the coder's lease)
PATHS: dict[str, tuple[Callable[..., Callable[[], Any]], bool]] = {
    "submit": (_submit, False),
    "handoff": (_handoff, False),
    "override block": (_override_block, False),
    "release claim": (_release_claim, False),
    "cancel": (_cancel, False),
    "suspend": (_suspend, False),
    "watcher sweep expiring the lease": (_sweep, True),
    "claim-next takeover": (_takeover, True),
}


def _no_database_error(outcome: Outcome, what: str) -> None:
    """Either done or refused by the protocol: never a database error (a deadlock victim)."""
    if outcome.ok:
        return
    assert isinstance(outcome.error, ProtocolError), f"{what}: {outcome.error!r}"
    assert not isinstance(outcome.error, DatabaseError)


def _assert_consistent(world: World, task: Task) -> None:
    """Who holds `task` agrees between its row and the agents' rows."""
    task = world.task(task.key)
    holders = list(Agent.objects.filter(project=world.project, current_task=task))
    assert len(holders) <= 1, [a.agent_id for a in holders]
    if holders:
        (holder,) = holders
        assert task.status in HELD, task.status
        assert task.assigned_to == holder.agent_id
        assert holder.lost_task_id != task.pk
    else:
        # Whoever let go of it was told why, unless it let go itself (submit keeps it).
        assert (
            task.status != TaskStatus.CLAIMED
            or task.assigned_to == ""
            or (
                Agent.objects.get(project=world.project, agent_id=task.assigned_to).lost_task_id
                == task.pk
            )
        )


@pytest.mark.parametrize("path", list(PATHS))
def test_a_heartbeat_racing_a_path_on_its_rows_never_deadlocks(path):
    call, dead = PATHS[path]
    refused = 0
    for i in range(ROUNDS):
        world = World()  # a board of its own: the path meets only this coder and its task
        task = world.claimed("T-1", "coder-1")
        now = _dead(world, task) if dead else world.tick()
        world.now = now
        other = call(world, task, "coder-1", now)
        heartbeat, done = run_together(
            lambda world=world, now=now: agent_heartbeat(agent=world.coder, now=now), other
        )
        _no_database_error(heartbeat, f"round {i}: the heartbeat")
        assert done.ok, f"round {i}: {path}: {done.error!r}"
        if not heartbeat.ok:
            # Refused only because the path took the task from it first (exit 42).
            assert heartbeat.error.code == "lease_lost", f"round {i}: {heartbeat.error!r}"
            refused += 1
        _assert_consistent(world, task)
    if dead:
        assert refused == ROUNDS  # a dead lease is never extended, whoever went first

"""Claim-next's order and its refusals (services.tasks.claims, SPEC §6): the queue, dead claims,
dependencies, the lease grace; a paused project or a sprint at CHECKPOINT refuses claims (exit 42);
a process of a superseded session claims nothing (`not_registered`, exit 8).

Split from the milestone file test_limits.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from agents.services import agent_register
from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.tasks import Task
from boards.coordination.services import reviews as review_services
from boards.coordination.services import sprints as sprint_services
from boards.coordination.services import tasks as task_services
from boards.errors import (
    NotRegistered,
    StopWork,
)
from tests.coordination.services.helpers import (
    assert_refused_unchanged,
    assert_valid,
)
from tests.coordination.services.tasks.test_limits import (
    _lease_gone,
)
from tests.factories import register

pytestmark = pytest.mark.django_db


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


def test_a_superseded_sessions_process_claims_nothing(world):
    """Session 1 of coder-1 hung past its lease and the id registered again (session 2):
    session 1's claim-next (refused after its call, rolled back) and named claim are refused
    `not_registered` on the agent row the claim locked, and change nothing. Before, they
    claimed as session 2's identity."""
    world.unclaimed("task-1")
    world.tick(3600)
    agent_register(project=world.project, agent_id="coder-1", role="coder", now=world.tick())

    for claim in (
        lambda: task_services.task_claim_next(
            project=world.project,
            agent=world.agent("coder-1"),
            now=world.tick(),
            base_commit="base0100",
            generation=1,
        ),
        lambda: task_services.task_claim(
            task=world.task("task-1"),
            agent=world.agent("coder-1"),
            now=world.tick(),
            base_commit="base0100",
            generation=1,
        ),
    ):
        caught, event = assert_refused_unchanged(
            claim,
            project=world.project,
            obj=world.task("task-1"),
            exc_type=NotRegistered,
            code="not_registered",
        )
        assert caught.message.startswith("session 1 of coder-1 was superseded by session 2")
        assert (event.action, event.actor_id) == ("claim_failed", "coder-1")
    claimed = task_services.task_claim_next(
        project=world.project,
        agent=world.agent("coder-1"),
        now=world.tick(),
        base_commit="base0100",
        generation=2,
    )
    assert (claimed.key, claimed.assigned_to) == ("task-1", "coder-1")

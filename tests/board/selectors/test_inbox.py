"""The inbox (boards.board.selectors.inbox; SPEC §7): what waits for a human, in a constant number
of queries.

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from boards.board.selectors.inbox import inbox as read_inbox
from boards.coordination.services import projects, sprints, tasks
from tests.coordination.services.helpers import (
    _awaiting,
    _immediate,
    _sprint,
    applied_events,
    goal_world,
)
from tests.factories import register
from tests.lifecycle import World

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(db):
    """The services' world (tests/coordination/services/conftest.py): seed 002 requires a goal
    IN_PROGRESS."""
    return goal_world()


# ---------------------------------------------------------------------------------------------
# the inbox
# ---------------------------------------------------------------------------------------------


def _busy_board(world, n: int) -> None:
    """n of each kind of item that waits for a human."""
    for i in range(n):
        world.blocked(f"b{i}", coder=("coder-1", "coder-2")[i % 2])
        world.integration_failed(f"if{i}")
        register(world.project, f"coder-{10 + i}", now=world.now)  # it waits on its gated task
        _awaiting(world, f"g{i}", coder=f"coder-{10 + i}")
        world.unclaimed(f"s{i}")
        tasks.task_suspend(
            task=world.task(f"s{i}"), actor=world.admin, reason="Hold", now=world.tick()
        )
        _immediate(world)


def test_the_inbox_lists_what_waits_for_a_human(world):
    world.blocked("b0")
    world.tick(600)
    world.integration_failed("if0")
    _awaiting(world, "g0")
    world.unclaimed("s0")
    tasks.task_suspend(task=world.task("s0"), actor=world.admin, reason="Hold", now=world.tick())
    _immediate(world)
    sprint = _sprint(world)
    sprints.sprint_checkpoint(sprint=sprint, actor=world.admin, reason="Review", now=world.tick())
    projects.project_pause(
        project=world.project, actor=world.admin, reason="Hold", now=world.tick()
    )
    world.unclaimed("quiet")
    now = world.tick(30)

    inbox = read_inbox(project=world.project, now=now)

    (blocked,) = inbox["blocked"]
    entered = applied_events(world.project, task=world.task("b0"), action="blocked")[0].timestamp
    assert (blocked.key, blocked.since, blocked.age_seconds) == (
        "b0",
        entered,
        int((now - entered).total_seconds()),
    )
    assert blocked.age_seconds > 600
    assert blocked.limit_blocked is False
    assert blocked.task.blocked_questions == ["What should happen on error?"]
    assert blocked.task.failed_by == ["coder-1"]
    assert [i.key for i in inbox["integration_failed"]] == ["if0"]
    assert [i.key for i in inbox["awaiting_approval"]] == ["g0"]
    assert [i.key for i in inbox["suspended"]] == ["s0"]
    assert [d.discovery.disc_id for d in inbox["discoveries"]] == ["disc-1"]
    (checkpoint,) = inbox["checkpoints"]
    assert checkpoint.sprint == world.project.sprints.get()
    at_checkpoint = now - checkpoint.sprint.checkpoint_at
    assert checkpoint.age_seconds == int(at_checkpoint.total_seconds()) > 30
    (paused,) = inbox["paused"]
    assert paused.age_seconds == int((now - paused.project.paused_at).total_seconds())
    assert inbox["count"] == 7


def test_the_inbox_reads_in_a_constant_number_of_queries(world):
    _busy_board(world, 1)
    with CaptureQueriesContext(connection) as small:
        read_inbox(project=world.project, now=world.now)
    other = World(now=world.now)
    _busy_board(other, 4)
    with CaptureQueriesContext(connection) as large:
        inbox = read_inbox(project=None, now=other.now)
    assert {k: len(v) for k, v in inbox.items() if k != "count"} == {
        "blocked": 5,
        "integration_failed": 5,
        "awaiting_approval": 5,
        "suspended": 5,
        "discoveries": 5,
        "checkpoints": 0,
        "paused": 0,
        "alerts": 0,
    }
    assert {i.project for i in inbox["blocked"]} == {world.project, other.project}
    assert len(large.captured_queries) == len(small.captured_queries)

"""Time travel: the board rebuilt from events equals the board as it was (issue #13).

A World records every task's board fields just before each tick of its clock, i.e. as the
previous operation left them; replaying the board at each recorded moment must give exactly
those fields, for walks that reach every state of seed 000's task machine, with suspensions,
limits, refusals and edits in between.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from boards import protocol as p
from boards.board.selectors.replay import board_at
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.snapshots import task_snapshot
from boards.coordination.services.goals import goal_create
from boards.coordination.services.tasks import task_resume, task_set_limits, task_suspend
from boards.errors import ProtocolError
from tests.lifecycle import World


class RecordingWorld(World):
    """A World that photographs every task's board fields before each tick."""

    def __init__(self, *args, **kwargs) -> None:
        self.moments: list[tuple] = []
        super().__init__(*args, **kwargs)

    def tick(self, seconds: float = 1):
        if hasattr(self, "project"):
            self.moments.append((self.now, self.photo()))
        return super().tick(seconds)

    def photo(self) -> dict[str, dict]:
        return {t.key: task_snapshot(t) for t in Task.objects.filter(project=self.project)}


def assert_replays(world: RecordingWorld) -> None:
    world.moments.append((world.now, world.photo()))
    assert len(world.moments) > 3
    for moment, photo in world.moments:
        replayed = {t.key: t.fields for t in board_at(project=world.project, at=moment)}
        assert replayed == photo, moment


@pytest.fixture
def world(db):
    world = RecordingWorld()
    goal_create(project=world.project, actor=world.planner, description="Replay", now=world.tick())
    return world


@pytest.mark.django_db
@pytest.mark.parametrize("status", p.TASK_STATES)
def test_the_board_replays_every_state_on_the_way(world, status):
    world.drive_to(status, "task-1")
    world.drive_to(p.TaskStatus.CLAIMED, "task-2", coder="coder-2")
    assert_replays(world)


@pytest.mark.django_db
def test_edits_suspensions_and_refusals_replay_too(world):
    world.claimed("task-1")
    world.unclaimed("task-2")
    task_set_limits(
        task=world.task("task-2"), actor=world.admin, now=world.tick(), max_iterations=5
    )
    task_suspend(task=world.task("task-2"), actor=world.admin, reason="Hold", now=world.tick())
    with pytest.raises(ProtocolError):  # a refused claim: an event, no change
        world.claim("task-2", coder="coder-2")
    task_resume(task=world.task("task-2"), actor=world.admin, now=world.tick())
    world.submit("task-1")
    world.claim_review("task-1")
    world.verdict("task-1", "REJECTED")
    assert_replays(world)


@pytest.mark.django_db
def test_what_changed_since_a_moment_is_marked(world):
    world.unclaimed("task-1")
    then = world.now
    world.tick(10)
    world.claim("task-1")
    world.unclaimed("task-2")
    (replayed,) = board_at(project=world.project, at=then)
    assert replayed.key == "task-1" and replayed.status == p.TaskStatus.UNCLAIMED
    assert "status" in replayed.changed and "assigned_to" in replayed.changed
    assert replayed.exact
    # Before the first task existed the board was empty.
    assert board_at(project=world.project, at=then - timedelta(hours=1)) == []

"""Per-task limits set by a human (services.tasks.limits.task_set_limits; seed 004).

Split from the milestone file test_oversight.py (issue #22 item 3).
"""

from __future__ import annotations

import pytest

from boards.coordination.services import tasks
from boards.errors import (
    Conflict,
    ProtocolValidationError,
)
from tests.coordination.services.helpers import (
    applied_events,
    assert_refused_unchanged,
    assert_valid,
)

pytestmark = pytest.mark.django_db


# ---------------------------------------------------------------------------------------------
# per-task limits
# ---------------------------------------------------------------------------------------------


def test_limits_are_set_with_an_event_listing_the_changes(world):
    world.claimed("t1", max_iterations=4)

    task = tasks.task_set_limits(
        task=world.task("t1"),
        actor=world.admin,
        now=world.tick(),
        priority=1,
        max_iterations=None,
        max_review_cycles=2,
        lease_duration_override=900,
        needs_human_approval=True,
    )

    assert (task.priority, task.max_iterations, task.max_review_cycles) == (1, None, 2)
    assert (task.lease_duration_override, task.needs_human_approval) == (900, True)
    (event,) = applied_events(world.project, task=task, action="limits_set")
    assert event.actor_kind == "human"
    assert "priority 3 → 1" in event.detail
    assert "max_iterations 4 → project default" in event.detail
    assert event.data["changes"]["max_review_cycles"] == {"old": None, "new": 2}
    assert_valid(world.project, now=world.now)
    # Setting what is already set changes nothing and writes nothing.
    tasks.task_set_limits(task=task, actor=world.admin, now=world.tick(), priority=1)
    assert len(applied_events(world.project, task=task, action="limits_set")) == 1


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_iteration": 3}, "max_iteration"),
        ({"priority": 0}, "priority"),
        ({"priority": 6}, "priority"),
        ({"priority": True}, "priority"),
        ({"max_iterations": 0}, "max_iterations"),
        ({"max_review_cycles": "3"}, "max_review_cycles"),
        ({"lease_duration_override": -5}, "lease_duration_override"),
        ({"needs_human_approval": "yes"}, "needs_human_approval"),
        ({}, "limits"),
    ],
)
def test_bad_limits_are_refused_naming_the_field(world, changes, field):
    world.unclaimed("t1")
    exc, _ = assert_refused_unchanged(
        lambda: tasks.task_set_limits(
            task=world.task("t1"), actor=world.admin, now=world.tick(), **changes
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=ProtocolValidationError,
        logged=False,
    )
    assert exc.field == field


def test_a_terminal_tasks_limits_do_not_change(world):
    world.merged("t1")
    assert_refused_unchanged(
        lambda: tasks.task_set_limits(
            task=world.task("t1"), actor=world.admin, now=world.tick(), priority=1
        ),
        project=world.project,
        obj=world.task("t1"),
        exc_type=Conflict,
    )

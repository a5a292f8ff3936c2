"""What the selectors' property tests share: every example's rows undone, the boundary boards
tried on every run (random boards land exactly on a boundary only now and then), and a board's
goal and task rows."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from django.db import transaction
from hypothesis import example

from boards.coordination.models.projects import Goal, Project
from boards.coordination.models.tasks import Task
from tests.factories import T0

# A task's goal on a random board: none, or one in each state the rules tell apart.
GOALS = (None, "IN_PROGRESS", "COMPLETED", "ABORTED")


class _Rollback(Exception):
    """Raised to undo a savepoint's work on purpose."""


@contextmanager
def rolled_back() -> Iterator[None]:
    """Run the block in a savepoint that is always rolled back, so that the examples (and the
    claim attempts inside one) never see each other's rows; an exception from the block, a
    failed assertion included, still propagates."""
    try:
        with transaction.atomic():
            yield
            raise _Rollback
    except _Rollback:
        pass


def with_boundaries(boards: Iterable[dict]) -> Callable[[Any], Any]:
    """A Hypothesis `@example(board=…)` for each of `boards`, put under a `@given(board=…)`."""

    def decorate(test):
        for board in boards:
            test = example(board=board)(test)
        return test

    return decorate


def goal_rows(project: Project) -> dict[str, Goal]:
    """One goal of `project` in each state of GOALS, by state, for a board's tasks to name."""
    return {
        status: Goal.objects.create(
            project=project,
            goal_id=f"goal-{status.lower()}",
            description=status,
            created=T0,
            status=status,
        )
        for status in GOALS
        if status is not None
    }


def task_row(project: Project, goals: dict[str, Goal], i: int, spec: dict, **fields) -> Task:
    """Task `t{i}` of a board, from what every board's task spec holds (status, goal, assignee,
    suspension, priority, age); `fields`, the columns only one rule reads."""
    return Task.objects.create(
        project=project,
        key=f"t{i}",
        description=f"task {i}",
        status=spec["status"],
        goal=goals.get(spec["goal"]),
        assigned_to=spec["assigned_to"],
        suspended_at=T0 if spec["suspended"] else None,
        priority=spec["priority"],
        created=T0 + timedelta(minutes=spec["created"]),
        **fields,
    )

"""What the selectors' property tests share: every example's rows undone, the boundary boards
tried on every run (random boards land exactly on a boundary only now and then), and the goals a
board's tasks belong to."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction
from hypothesis import example

from boards.coordination.models.projects import Goal, Project
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

"""The planner's operations (and project admins'): tasks created, edited, finalized, rescoped,
abandoned, released; goals and sprints opened and closed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from boards.coordination.services import goals, sprints, tasks
from boards.operations import inputs as i
from boards.operations.base import GOAL, PLANS, PROJECT, SPRINT, TASK, Operation, op


def _create_task_arguments(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("depends_on", ())
    return data


def by_planner(
    service: Callable[..., Any], target: str, input: Any = None, **options: Any
) -> Operation:
    """A planning operation: the board offers it to members too (PLANS); the service decides
    who may plan."""
    return op(service, target, input, role=PLANS, **options)


PLANNING: list[Operation] = [
    by_planner(
        tasks.task_create,
        PROJECT,
        i.CreateTaskInput,
        arguments=_create_task_arguments,
        done=lambda t: f"{t.key} created (DRAFT).",
    ),
    by_planner(tasks.task_finalize, TASK, done=lambda t: f"{t.key} finalized."),
    by_planner(tasks.task_edit, TASK, done=lambda t: f"{t.key} saved."),
    by_planner(
        tasks.task_set_dependencies,
        TASK,
        done=lambda t: f"{t.key}: dependencies set.",
    ),
    op(
        tasks.task_rescope,
        TASK,
        i.RescopeInput,
        done=lambda created: (
            f"{created[0].supersedes} rescoped into {', '.join(t.key for t in created)}."
        ),
    ),
    op(tasks.task_abandon, TASK, done=lambda t: f"{t.key} abandoned."),
    op(
        tasks.task_release,
        TASK,
        done=lambda t: f"{t.key} answered and back in the queue (UNCLAIMED).",
        form_aliases={"answer": "reason"},
    ),
    by_planner(goals.goal_create, PROJECT, done=lambda g: f"{g.goal_id} created."),
    by_planner(goals.goal_edit, GOAL, done=lambda g: f"{g.goal_id} saved."),
    op(goals.goal_complete, GOAL, done=lambda g: f"{g.goal_id} completed."),
    by_planner(sprints.sprint_create, PROJECT, done=lambda s: f"{s.sprint_id} started."),
    by_planner(
        sprints.sprint_complete, SPRINT, done=lambda s: f"{s.sprint_id} closed (COMPLETED)."
    ),
]

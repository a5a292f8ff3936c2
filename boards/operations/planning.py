"""The planner's operations (and project admins'): tasks created, edited, finalized, rescoped,
abandoned, released; goals and sprints opened and closed."""

from __future__ import annotations

from typing import Any

from boards.coordination.services import goals, sprints, tasks
from boards.operations import inputs as i
from boards.operations.base import GOAL, PROJECT, SPRINT, TASK, Operation, op


def _create_task_arguments(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("depends_on", ())
    return data


PLANNING: list[Operation] = [
    op(
        tasks.task_create,
        PROJECT,
        i.CreateTaskInput,
        arguments=_create_task_arguments,
        done=lambda t: f"{t.key} created (DRAFT).",
    ),
    op(tasks.task_finalize, TASK, done=lambda t: f"{t.key} finalized."),
    op(tasks.task_edit, TASK, done=lambda t: f"{t.key} saved."),
    op(
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
    op(goals.goal_create, PROJECT, done=lambda g: f"{g.goal_id} created."),
    op(goals.goal_edit, GOAL, done=lambda g: f"{g.goal_id} saved."),
    op(goals.goal_complete, GOAL, done=lambda g: f"{g.goal_id} completed."),
    op(sprints.sprint_create, PROJECT, done=lambda s: f"{s.sprint_id} started."),
    op(sprints.sprint_complete, SPRINT, done=lambda s: f"{s.sprint_id} closed (COMPLETED)."),
]

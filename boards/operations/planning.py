"""The planner's operations (and project admins'): tasks created, edited, finalized, rescoped,
abandoned, released; goals and sprints opened and closed."""

from __future__ import annotations

from typing import Any

from boards.coordination.services import (
    goals,
    sprints,
    tasks,
)
from boards.operations import inputs as i
from boards.operations.base import (
    GOAL,
    PLANS,
    PROJECT,
    SPRINT,
    TASK,
    Operation,
)


def _create_task_arguments(data: dict[str, Any]) -> dict[str, Any]:
    data.setdefault("depends_on", ())
    return data


PLANNING: list[Operation] = [
    Operation(
        "task_create",
        tasks.task_create,
        PROJECT,
        i.CreateTaskInput,
        arguments=_create_task_arguments,
        done=lambda t: f"{t.key} created (DRAFT).",
        role=PLANS,
    ),
    Operation(
        "task_finalize",
        tasks.task_finalize,
        TASK,
        done=lambda t: f"{t.key} finalized.",
        role=PLANS,
    ),
    Operation(
        "task_edit",
        tasks.task_edit,
        TASK,
        i.TaskEditInput,
        done=lambda t: f"{t.key} saved.",
        role=PLANS,
    ),
    Operation(
        "task_set_dependencies",
        tasks.task_set_dependencies,
        TASK,
        i.DependenciesInput,
        done=lambda t: f"{t.key}: dependencies set.",
        role=PLANS,
    ),
    Operation(
        "task_rescope",
        tasks.task_rescope,
        TASK,
        i.RescopeInput,
        done=lambda created: (
            f"{created[0].supersedes} rescoped into {', '.join(t.key for t in created)}."
        ),
    ),
    Operation(
        "task_abandon",
        tasks.task_abandon,
        TASK,
        i.ReasonInput,
        done=lambda t: f"{t.key} abandoned.",
    ),
    Operation(
        "task_release",
        tasks.task_release,
        TASK,
        i.ReasonInput,
        done=lambda t: f"{t.key} answered and back in the queue (UNCLAIMED).",
        form_aliases={"answer": "reason"},
    ),
    Operation(
        "goal_create",
        goals.goal_create,
        PROJECT,
        i.GoalInput,
        done=lambda g: f"{g.goal_id} created.",
        role=PLANS,
    ),
    Operation(
        "goal_edit",
        goals.goal_edit,
        GOAL,
        i.GoalEditInput,
        done=lambda g: f"{g.goal_id} saved.",
        role=PLANS,
    ),
    Operation(
        "goal_complete",
        goals.goal_complete,
        GOAL,
        i.ReasonInput,
        done=lambda g: f"{g.goal_id} completed.",
    ),
    Operation(
        "sprint_create",
        sprints.sprint_create,
        PROJECT,
        i.SprintInput,
        done=lambda s: f"{s.sprint_id} started.",
        role=PLANS,
    ),
    Operation(
        "sprint_complete",
        sprints.sprint_complete,
        SPRINT,
        done=lambda s: f"{s.sprint_id} closed (COMPLETED).",
        role=PLANS,
    ),
]

"""What the board's planning page shows (issue 25 "plan from the board"): the goal, the tasks a
person can depend on or plan into a sprint, the drafts still to finalize, the open sprint."""

from __future__ import annotations

from boards import protocol as p
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.sprints import goal_in_progress, sprint_open
from boards.protocol import TaskStatus


def plan_state(*, project: Project) -> dict[str, object]:
    """The planning page's rows, in the board's order (priority, created, id)."""
    live = (
        Task.objects.filter(project=project)
        .exclude(status__in=p.TERMINAL_TASK_STATES)
        .order_by("priority", "created", "id")
        .prefetch_related("depends_on")
    )
    tasks = list(live)
    return {
        "goal": goal_in_progress(project=project),
        "sprint": sprint_open(project=project),
        "tasks": tasks,
        "drafts": [t for t in tasks if t.status == TaskStatus.DRAFT],
        # A sprint plans work that can be claimed (or finalized first): not what is under way.
        "plannable": [t for t in tasks if t.status in (TaskStatus.DRAFT, TaskStatus.UNCLAIMED)],
        "priorities": range(p.PRIORITY_RANGE[0], p.PRIORITY_RANGE[1] + 1),
        "criticalities": p.CRITICALITIES,
    }

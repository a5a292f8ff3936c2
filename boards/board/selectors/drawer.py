"""The task drawer (SPEC §7): every field of one task, its timeline and what surrounds it."""

from __future__ import annotations

from agents.models import Run
from agents.selectors import with_cost
from boards.board.selectors.cards import card_for, card_tasks
from boards.coordination.models.projects import Project
from boards.coordination.models.tasks import Handoff, Review, Task
from boards.coordination.selectors.access import config_of, in_project
from boards.coordination.selectors.history import task_history, time_in_states


def drawer_state(*, project: Project, key: str, now) -> dict[str, object]:
    """Everything the task drawer shows (SPEC §7): every field, the timeline, time in each
    state, notes, discoveries, anomalies, the handoff and every review round."""
    task = in_project(
        card_tasks(Task.objects.select_related("goal", "project")), project, what="task", key=key
    )
    config = config_of(project)
    return {
        "project": project,
        "task": task,
        "card": card_for(task, config, now),
        "history": task_history(task=task),
        "time_in_states": time_in_states(task=task, now=now),
        "notes": task.human_notes.select_related("author").order_by("timestamp", "id"),
        "discoveries": project.discoveries.filter(during=task.key).order_by("created", "id"),
        "anomalies": task.anomalies.order_by("timestamp", "id"),
        "handoff": Handoff.objects.filter(task=task).first(),
        "depends_on": task.depends_on.order_by("key"),
        # Every round, closed ones too: `task.reviews` is the card's prefetch (open reviews only).
        "reviews": Review.objects.filter(project=project, task=task).order_by("claimed_at", "id"),
        # What each submission changed (issue 25), newest first.
        "changes": list(task.change_summaries.order_by("-created", "-id")[:10]),
        # The supervisors' spawns on it (issue 12 §2), newest first: why a coder keeps failing.
        "runs": with_cost(Run.objects.filter(project=project, task=task))
        .select_related("agent")
        .order_by("-started", "-id")[:20],
        "now": now,
    }

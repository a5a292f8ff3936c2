"""A task's past: its events (task `history` is a view of the log, SPEC §4.1) and time in
each state (seed 003 observability)."""

from __future__ import annotations

from django.db.models import QuerySet

from boards import protocol as p
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task


def task_history(*, task: Task) -> QuerySet[Event]:
    return Event.objects.filter(project_id=task.project_id, task=task).order_by("timestamp", "id")


def time_in_states(*, task: Task, now) -> list[tuple[str, float]]:
    """Seconds spent in each state so far (seed 003 observability), from the event log."""
    spent: dict[str, float] = {}
    current, since = None, task.created
    for event in (
        task_history(task=task).filter(outcome=Event.Outcome.APPLIED).exclude(to_status="")
    ):
        if current is not None and since is not None:
            spent[current] = spent.get(current, 0.0) + (event.timestamp - since).total_seconds()
        current, since = event.to_status, event.timestamp
    if current is None:
        current = task.status
    if since is not None:
        spent[current] = spent.get(current, 0.0) + max(0.0, (now - since).total_seconds())
    return [(s, spent[s]) for s in p.TASK_STATES if s in spent]

"""Time travel (issue #13): the board as it was at a past moment, rebuilt from the event table.

Every event about a task carries in `Event.board` the task's board fields as the event left
them (`task_snapshot`, written by `audit.record_event` in the same row).
The board at moment T is then, for each task, the snapshot of its last event at or before T:
exact for every field an event records (state, assignee, priority, counters, flags), whatever
the operation — an edit is an event like a transition. Lease countdowns and heartbeat ages are
not replayed (they move with the clock, not with events). Tasks whose history predates
snapshots (imported from a state.yaml) replay from their last event's `to_status` only.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import OuterRef, Subquery

from boards.coordination.models.projects import Project
from boards.coordination.models.records import Event
from boards.coordination.models.tasks import Task
from boards.coordination.selectors.snapshots import task_snapshot


@dataclass(frozen=True)
class ReplayedTask:
    key: str
    description: str
    fields: dict[str, Any]  # the snapshot at the moment
    changed: tuple[str, ...]  # fields that differ now ("status", …); ("new",) if created since
    exact: bool  # False: history predates snapshots, only the status is known

    @property
    def status(self) -> str:
        return self.fields["status"]

    @property
    def first_line(self) -> str:
        return self.description.strip().splitlines()[0] if self.description.strip() else ""


def board_at(*, project: Project, at: datetime) -> list[ReplayedTask]:
    """Every task that existed at `at`, as it was then, with what has changed since.

    Two queries whatever the number of tasks: the tasks with the id of their last event at or
    before `at`, then those events.
    """
    last_event = (
        Event.objects.filter(task=OuterRef("pk"), timestamp__lte=at)
        .order_by("-timestamp", "-id")
        .values("id")[:1]
    )
    tasks = list(
        Task.objects.filter(project=project, created__lte=at)
        .annotate(last_event_id=Subquery(last_event))
        .order_by("priority", "created", "id")
    )
    events = Event.objects.in_bulk([t.last_event_id for t in tasks if t.last_event_id])
    replayed = []
    for task in tasks:
        now = task_snapshot(task)
        event = events.get(task.last_event_id)
        then = event.board if event else None
        exact = then is not None
        if then is None:
            # No snapshot: an imported history. Its status is the last event's target, if any.
            status = event.to_status if event and event.to_status else now["status"]
            then = {**now, "status": status}
        changed = tuple(name for name in now if then.get(name) != now[name])
        replayed.append(
            ReplayedTask(
                key=task.key,
                description=task.description,
                fields=then,
                changed=changed,
                exact=exact,
            )
        )
    return replayed


def tasks_created_since(*, project: Project, at: datetime) -> list[str]:
    """Keys of the tasks that did not exist yet at `at` (shown as "new since")."""
    return list(
        Task.objects.filter(project=project, created__gt=at)
        .order_by("created", "id")
        .values_list("key", flat=True)
    )


def replay_bounds(*, project: Project) -> tuple[datetime, datetime] | None:
    """The first and last moments the event table can replay, or None before any event."""
    events = Event.objects.filter(project=project, task__isnull=False)
    first = events.order_by("timestamp", "id").values_list("timestamp", flat=True).first()
    last = events.order_by("-timestamp", "-id").values_list("timestamp", flat=True).first()
    return (first, last) if first is not None else None


REPLAY_STEPS = 2000  # the events a slider steps through (the latest ones)


@dataclass(frozen=True)
class ReplayStep:
    """One event the time-travel slider stops at: its moment (exact), task and action."""

    at: datetime
    key: str
    action: str


def replay_steps(*, project: Project, limit: int = REPLAY_STEPS) -> list[ReplayStep]:
    """The task events to scrub through, oldest first (the latest `limit`): the slider steps by
    event, not by second (issue 25). One query."""
    rows = (
        Event.objects.filter(project=project, task__isnull=False)
        .order_by("-timestamp", "-id")
        .values_list("timestamp", "task__key", "action")[:limit]
    )
    return [ReplayStep(at, key, action) for at, key, action in reversed(list(rows))]

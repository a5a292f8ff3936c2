"""A task's board fields as an event leaves them (`Event.board`), written by `audit.record_event`
in the same row; time travel (`boards.board.selectors.replay`) rebuilds past boards from them.
"""

from __future__ import annotations

from typing import Any

from boards.coordination.models.tasks import Task

# What a replayed card shows; every one of them changes only through a recorded event.
SNAPSHOT_FIELDS: tuple[str, ...] = (
    "status",
    "assigned_to",
    "priority",
    "criticality",
    "iteration",
    "review_cycles_current",
    "review_cycles_total",
    "needs_human_approval",
    "handoff_pending",
    "integration_fix",
)


def task_snapshot(task: Task) -> dict[str, Any]:
    """The task's board fields as they stand (a JSON object), plus whether it is suspended."""
    snapshot = {name: getattr(task, name) for name in SNAPSHOT_FIELDS}
    snapshot["suspended"] = task.suspended_at is not None
    snapshot["goal"] = task.goal_id
    return snapshot

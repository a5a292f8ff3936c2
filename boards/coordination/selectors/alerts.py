"""Which open alerts about a task a move ends: a task's alert is about a state, so leaving the
state ends it with the move's event (`audit.record_event`), not at the next sweep.
"""

from __future__ import annotations

from boards.coordination.models.records import Alert
from boards.protocol import (
    TaskStatus,
)

# A task's alerts whose condition holds only while the task is in one of these states (the
# conditions below): the move that takes the task out of them ends the alert at once, on the
# board with that move's event, not at the next sweep (issue 25). A state timeout counts the
# time since the last change of state, so any move ends it.
TASK_ALERT_STATES: dict[str, tuple[str, ...]] = {
    Alert.Type.LEASE_EXPIRED: (TaskStatus.CLAIMED,),
    Alert.Type.REVIEW_LEASE_EXPIRED: (TaskStatus.READY_FOR_REVIEW,),
    Alert.Type.BLOCKED: (TaskStatus.BLOCKED,),
    Alert.Type.INTEGRATION_FAILED: (TaskStatus.INTEGRATION_FAILED,),
    Alert.Type.APPROACHING_LIMITS: (
        TaskStatus.CLAIMED,
        TaskStatus.READY_FOR_REVIEW,
        TaskStatus.REJECTED,
    ),
    Alert.Type.STALE_DRAFT: (TaskStatus.DRAFT,),
    Alert.Type.ORPHANED_REJECTED: (TaskStatus.REJECTED,),
    Alert.Type.STATE_TIMEOUT: (),
}


def task_alerts_ended_by(to_status: str) -> list[str]:
    """The alert types a task's move into `to_status` ends (`TASK_ALERT_STATES`)."""
    return [t for t, states in TASK_ALERT_STATES.items() if to_status not in states]

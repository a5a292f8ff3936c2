"""An alert condition as the watcher sees it at one instant, and the escalation levels of the
stale checkpoint and pause."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Task


@dataclass(frozen=True)
class AlertCondition:
    """One condition the original watcher alerts on (SPEC §9), as seen at one instant."""

    type: str
    subject: str
    level: str
    message: str
    task: Task | None = None
    agent_id: str = ""
    # What its age counts from (Alert.since): the message holds no age (issue 25).
    since: datetime | None = None

    def logged(self, now: datetime) -> str:
        """The message with its age at `now`, for the watcher's log lines."""
        if self.since is None:
            return self.message
        return f"{self.message} (for {int((now - self.since).total_seconds() // 60)} min)"


# Stale checkpoint and pause (the original's liza-watch.sh thresholds, in seconds).
STALE_CHECKPOINT_LEVELS = (
    (8 * 3600, Alert.Level.CRITICAL, "CHECKPOINT ABANDONED?"),
    (2 * 3600, Alert.Level.CRITICAL, "CHECKPOINT STUCK"),
    (30 * 60, Alert.Level.WARNING, "CHECKPOINT STALE"),
)


STALE_PAUSE_LEVELS = (
    (2 * 3600, Alert.Level.CRITICAL, "PAUSE FORGOTTEN?"),
    (30 * 60, Alert.Level.WARNING, "STALE PAUSE"),
)


def escalation_step(alert_type: str, message: str) -> int:
    """How far a stale checkpoint alert has escalated (0 none, 1 STALE, 2 STUCK, 3 ABANDONED?),
    read from its message's label; 0 for other types. The escalation webhook sends each step,
    including the 8 h one, which keeps the CRITICAL level of the 2 h one."""
    if alert_type != Alert.Type.STALE_CHECKPOINT:
        return 0
    label = message.partition(":")[0]
    labels = [label for _, _, label in reversed(STALE_CHECKPOINT_LEVELS)]
    return labels.index(label) + 1 if label in labels else 0


LIMIT_WARNING_MARGIN = 2  # warn from (effective limit − 2): iteration 8/10, review cycle 3/5


def aged(levels, since: datetime, now: datetime):
    age = (now - since).total_seconds()
    for threshold, level, label in levels:
        if age > threshold:
            return level, label, int(age // 60)
    return None

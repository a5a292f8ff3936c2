"""An alert condition as the watcher sees it at one instant, the kind of alert (type, level,
headline) every condition is said as, and the escalation levels of the stale checkpoint and
pause."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from boards.coordination.models.records import Alert
from boards.coordination.models.tasks import Task

# A condition is cut to fit the row it raises.
SUBJECT_LENGTH = Alert._meta.get_field("subject").max_length
MESSAGE_LENGTH = Alert._meta.get_field("message").max_length


@dataclass(frozen=True)
class AlertCondition:
    """One condition the original watcher alerts on (SPEC §9), as seen at one instant. Its
    fields are the columns of the Alert it raises (`columns`)."""

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

    def columns(self) -> dict[str, Any]:
        """The Alert's columns this condition fills (a shallow copy: the task stays the row)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class AlertKind:
    """How one kind of alert is said: its type, its level and the headline its message opens
    with (the original watcher's words, "LEASE EXPIRED: …", which `escalation_step` reads
    back). A type whose alert escalates has a kind per level (`BUDGET_AT_80`, then
    `BUDGET_EXHAUSTED`), all raising the same alert."""

    type: str
    level: str
    headline: str = ""  # most alerts are headed by their type's words: "LEASE EXPIRED"

    def __post_init__(self) -> None:
        if not self.headline:
            object.__setattr__(self, "headline", self.type.replace("_", " ").upper())

    def about(
        self,
        subject: str,
        detail: str,
        *,
        task: Task | None = None,
        agent_id: str = "",
        since: datetime | None = None,
    ) -> AlertCondition:
        """This alert about `subject` (a task key, an agent, a sprint…), `detail` after the
        headline."""
        return AlertCondition(
            self.type,
            subject[:SUBJECT_LENGTH],
            self.level,
            f"{self.headline}: {detail}"[:MESSAGE_LENGTH],
            task,
            agent_id,
            since,
        )

    def on(
        self, task: Task, detail: str, *, agent_id: str = "", since: datetime | None = None
    ) -> AlertCondition:
        """This alert about `task`, bound to it (its card shows it; its move may end it)."""
        return self.about(task.key, detail, task=task, agent_id=agent_id, since=since)


# Stale checkpoint and pause (the original's liza-watch.sh thresholds, in seconds), the
# longest first: each level is the same alert, headed by how long the stop has lasted.
CHECKPOINT, PAUSE = Alert.Type.STALE_CHECKPOINT, Alert.Type.STALE_PAUSE
STALE_CHECKPOINT_LEVELS = (
    (8 * 3600, AlertKind(CHECKPOINT, Alert.Level.CRITICAL, "CHECKPOINT ABANDONED?")),
    (2 * 3600, AlertKind(CHECKPOINT, Alert.Level.CRITICAL, "CHECKPOINT STUCK")),
    (30 * 60, AlertKind(CHECKPOINT, Alert.Level.WARNING, "CHECKPOINT STALE")),
)
STALE_PAUSE_LEVELS = (
    (2 * 3600, AlertKind(PAUSE, Alert.Level.CRITICAL, "PAUSE FORGOTTEN?")),
    (30 * 60, AlertKind(PAUSE, Alert.Level.WARNING, "STALE PAUSE")),
)


def escalation_step(alert_type: str, message: str) -> int:
    """How far a stale checkpoint alert has escalated (0 none, 1 STALE, 2 STUCK, 3 ABANDONED?),
    read from its message's headline; 0 for other types. The escalation webhook sends each
    step, including the 8 h one, which keeps the CRITICAL level of the 2 h one."""
    if alert_type != Alert.Type.STALE_CHECKPOINT:
        return 0
    headline = message.partition(":")[0]
    headlines = [kind.headline for _, kind in reversed(STALE_CHECKPOINT_LEVELS)]
    return headlines.index(headline) + 1 if headline in headlines else 0


def stale_kind(levels, since: datetime, now: datetime) -> AlertKind | None:
    """The kind of a stop's alert once it has lasted `now - since`: the first of `levels`
    (longest first) whose threshold it passed; None before the shortest."""
    age = (now - since).total_seconds()
    return next((kind for threshold, kind in levels if age > threshold), None)


LIMIT_WARNING_MARGIN = 2  # warn from (effective limit − 2): iteration 8/10, review cycle 3/5

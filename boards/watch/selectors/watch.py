"""What the watcher finds due in a project (SPEC §9): plain reads; the service re-checks them
under its locks before acting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, OuterRef, Subquery
from django.db.models.functions import Coalesce

from agents.models import Agent
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Review, Task
from boards.coordination.selectors.leases import lease_stale_before
from boards.errors import ProtocolValidationError
from boards.protocol import (
    STATE_TIMEOUT_WARN_RATIO,
    SprintStatus,
    TaskStatus,
)

# A watcher silent for more than this many of the project's watch intervals is reported down.
SILENT_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class WatcherSeen:
    last_swept: datetime | None
    age_seconds: int | None  # None: never swept
    silent_after: int  # seconds
    silent: bool


def watcher_silent_after(config: ProjectConfig) -> int:
    """Seconds without a sweep after which the watcher counts as silent: 3 of its intervals."""
    return SILENT_AFTER_INTERVALS * config.watch_interval


def watcher_silent(*, last_swept: datetime | None, config: ProjectConfig, now: datetime) -> bool:
    return last_swept is None or (now - last_swept).total_seconds() > watcher_silent_after(config)


def watcher_seen(*, project: Project, config: ProjectConfig, now: datetime) -> WatcherSeen:
    """How long ago a watcher last swept `project`, and whether that is too long (issue #11:
    "watcher last seen N s ago", a warning when silent for more than 3 intervals)."""
    last = project.last_swept
    return WatcherSeen(
        last_swept=last,
        age_seconds=None if last is None else max(0, int((now - last).total_seconds())),
        silent_after=watcher_silent_after(config),
        silent=watcher_silent(last_swept=last, config=config, now=now),
    )


def projects_to_watch(*, slugs: Sequence[str] = ()) -> list[Project]:
    projects = Project.objects.select_related("config").order_by("slug")
    if slugs:
        projects = projects.filter(slug__in=slugs)
    return list(projects)


def sprint_past_deadline(*, project: Project, now: datetime) -> Sprint | None:
    """The IN_PROGRESS sprint whose deadline has passed (seed 000: deadline → CHECKPOINT)."""
    return Sprint.objects.filter(
        project=project, status=SprintStatus.IN_PROGRESS, deadline__lte=now
    ).first()


def coders_with_dead_leases(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[Agent]:
    """Coders still recorded on a CLAIMED task whose lease expired more than `lease_grace` ago."""
    return list(
        Agent.objects.filter(
            project=project,
            role=Agent.Role.CODER,
            current_task__status=TaskStatus.CLAIMED,
            current_task__assigned_to=F("agent_id"),
            current_task__lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("current_task")
        .order_by("pk")
    )


def retry_exhausted_claims(*, project: Project, now: datetime, config: ProjectConfig) -> list[Task]:
    """CLAIMED tasks whose dead lease is their coder's crash past the retry schedule (seed 003
    PERMANENTLY_FAILED): the watcher blocks them (`retry_exhausted`) without waiting for a claim."""
    return list(
        Task.objects.filter(
            project=project,
            status=TaskStatus.CLAIMED,
            handoff_pending=False,
            crashes__gte=len(config.retry_backoff),
            lease_expires__lt=lease_stale_before(now, config),
        ).order_by("pk")
    )


@dataclass(frozen=True)
class StateTimeout:
    """A task at 80 % or more of its state's time budget (seed 003 per-state timeouts)."""

    task: Task
    state: str
    since: datetime  # when it entered the state (its last status change)
    budget: int  # seconds
    elapsed: int  # seconds
    action: str  # alert | block
    reason: str

    @property
    def over(self) -> bool:
        return self.elapsed >= self.budget


def state_timeouts(*, project: Project, now: datetime, config: ProjectConfig) -> list[StateTimeout]:
    """Tasks in a state with a budget (`ProjectConfig.state_timeouts`) that have spent at least
    80 % of it there. Time in state runs from the task's last status change: the last applied
    event that moved it into its current state (its creation for a task never moved), else its
    creation. One query whatever the number of budgets."""
    rules = config.state_timeouts or {}
    if not rules:
        return []
    entered = (
        Event.objects.filter(task=OuterRef("pk"), outcome="applied", to_status=OuterRef("status"))
        .exclude(from_status=F("to_status"))
        .order_by("-timestamp", "-id")
        .values("timestamp")[:1]
    )
    found = []
    tasks = Task.objects.filter(project=project, status__in=list(rules)).annotate(
        entered=Coalesce(Subquery(entered), F("created"))
    )
    for task in tasks.order_by("created", "id"):
        rule = rules[task.status]
        budget = int(rule["seconds"])
        elapsed = int((now - task.entered).total_seconds())
        if elapsed >= budget * STATE_TIMEOUT_WARN_RATIO:
            found.append(
                StateTimeout(
                    task=task,
                    state=task.status,
                    since=task.entered,
                    budget=budget,
                    elapsed=elapsed,
                    action=rule.get("action", "alert"),
                    reason=rule.get("reason", ""),
                )
            )
    return found


def stale_review_claims(*, project: Project, now: datetime, config: ProjectConfig) -> list[Review]:
    """Pending review claims (no verdict, not closed) whose lease is dead."""
    return list(
        Review.objects.filter(
            project=project,
            closed_at__isnull=True,
            verdict="",
            lease_expires__lt=lease_stale_before(now, config),
        )
        .select_related("task")
        .order_by("pk")
    )


def open_alerts(*, project: Project) -> dict[tuple[str, str], Alert]:
    return {
        (a.type, a.subject): a
        for a in Alert.objects.filter(project=project, resolved_at__isnull=True)
    }


def alert_list(
    *, project: Project, state: str = "", type: str = "", severity: str = ""
) -> list[Alert]:
    """The project's alerts, newest first; `state` open or resolved, `type`, `severity`
    (the alert's level). An unknown filter value is a 400 naming it."""
    alerts = Alert.objects.filter(project=project).select_related("task", "acknowledged_by")
    if state:
        if state not in ("open", "resolved"):
            raise ProtocolValidationError("state", "open or resolved")
        alerts = alerts.filter(resolved_at__isnull=state == "open")
    if type:
        if type not in Alert.Type.values:
            raise ProtocolValidationError("type", f"one of {', '.join(Alert.Type.values)}")
        alerts = alerts.filter(type=type)
    if severity:
        if severity not in Alert.Level.values:
            raise ProtocolValidationError("severity", f"one of {', '.join(Alert.Level.values)}")
        alerts = alerts.filter(level=severity)
    return list(alerts)

"""What the watcher finds due in a project (SPEC §9): plain reads; the service re-checks them
under its locks before acting."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F

from agents.models import Agent
from boards.errors import ProtocolValidationError
from boards.models import Alert, Discovery, Project, ProjectConfig, Review, Sprint, Task
from boards.protocol import SprintStatus, TaskStatus
from boards.selectors.leases import lease_stale_before

# A watcher silent for more than this many of the project's watch intervals is reported down.
SILENT_AFTER_INTERVALS = 3


@dataclass(frozen=True)
class WatcherSeen:
    last_swept: datetime | None
    age_seconds: int | None  # None: never swept
    silent_after: int  # seconds
    silent: bool


def watcher_silent(*, last_swept: datetime | None, config: ProjectConfig, now: datetime) -> bool:
    return last_swept is None or (now - last_swept).total_seconds() > (
        SILENT_AFTER_INTERVALS * config.watch_interval
    )


def watcher_seen(*, project: Project, config: ProjectConfig, now: datetime) -> WatcherSeen:
    """How long ago a watcher last swept `project`, and whether that is too long (issue #11:
    "watcher last seen N s ago", a warning when silent for more than 3 intervals)."""
    last = project.last_swept
    return WatcherSeen(
        last_swept=last,
        age_seconds=None if last is None else max(0, int((now - last).total_seconds())),
        silent_after=SILENT_AFTER_INTERVALS * config.watch_interval,
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


@dataclass(frozen=True)
class AlertCondition:
    """One condition the original watcher alerts on (SPEC §9), as seen at one instant."""

    type: str
    subject: str
    level: str
    message: str
    task: Task | None = None
    agent_id: str = ""


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
LIMIT_WARNING_MARGIN = 2  # warn from (effective limit − 2): iteration 8/10, review cycle 3/5


def _aged(levels, since: datetime, now: datetime):
    age = (now - since).total_seconds()
    for threshold, level, label in levels:
        if age > threshold:
            return level, label, int(age // 60)
    return None


def alert_conditions(
    *, project: Project, now: datetime, config: ProjectConfig
) -> list[AlertCondition]:
    """Every alert condition that holds in `project` at `now`."""
    found: list[AlertCondition] = []
    stale = lease_stale_before(now, config)
    for task in Task.objects.filter(
        project=project, status=TaskStatus.CLAIMED, lease_expires__lt=stale
    ):
        found.append(
            AlertCondition(
                Alert.Type.LEASE_EXPIRED,
                task.key,
                Alert.Level.WARNING,
                f"LEASE EXPIRED: {task.assigned_to} on {task.key}",
                task,
                task.assigned_to,
            )
        )
    for task in Task.objects.filter(project=project, status=TaskStatus.READY_FOR_REVIEW):
        reviews = list(Review.objects.filter(task=task).order_by("-pk")[:1])
        if reviews and reviews[0].closed_at is not None and not reviews[0].verdict:
            found.append(
                AlertCondition(
                    Alert.Type.REVIEW_LEASE_EXPIRED,
                    task.key,
                    Alert.Level.WARNING,
                    f"REVIEW LEASE EXPIRED: {reviews[0].reviewer} on {task.key}"
                    " — review can be reclaimed",
                    task,
                    reviews[0].reviewer,
                )
            )
    for task in Task.objects.filter(project=project, status=TaskStatus.BLOCKED):
        found.append(
            AlertCondition(
                Alert.Type.BLOCKED,
                task.key,
                Alert.Level.WARNING,
                f"BLOCKED: {task.key} — {task.blocked_reason}"[:500],
                task,
            )
        )
    for task in Task.objects.filter(project=project, status=TaskStatus.INTEGRATION_FAILED):
        found.append(
            AlertCondition(
                Alert.Type.INTEGRATION_FAILED,
                task.key,
                Alert.Level.CRITICAL,
                f"INTEGRATION FAILED: {task.key}",
                task,
            )
        )
    for task in Task.objects.filter(
        project=project,
        status__in=(TaskStatus.CLAIMED, TaskStatus.READY_FOR_REVIEW, TaskStatus.REJECTED),
    ):
        notes = []
        limit = task.effective_max_iterations(config)
        if task.iteration and task.iteration >= limit - LIMIT_WARNING_MARGIN:
            notes.append(f"iteration {task.iteration}/{limit}")
        cycles = task.effective_max_review_cycles(config)
        if task.review_cycles_current >= cycles - LIMIT_WARNING_MARGIN:
            notes.append(f"review cycle {task.review_cycles_current}/{cycles}")
        if notes:
            found.append(
                AlertCondition(
                    Alert.Type.APPROACHING_LIMITS,
                    task.key,
                    Alert.Level.WARNING,
                    f"APPROACHING LIMIT: {task.key} — {', '.join(notes)}",
                    task,
                    task.assigned_to,
                )
            )
    for discovery in Discovery.objects.filter(
        project=project,
        urgency=Discovery.Urgency.IMMEDIATE,
        converted_to_task="",
        triage=Discovery.Triage.OPEN,
    ):
        found.append(
            AlertCondition(
                Alert.Type.IMMEDIATE_DISCOVERY,
                discovery.disc_id,
                Alert.Level.CRITICAL,
                f"IMMEDIATE DISCOVERY: {discovery.disc_id} — {discovery.description}"[:500],
            )
        )
    sprint = Sprint.objects.filter(
        project=project, status=SprintStatus.CHECKPOINT, checkpoint_at__isnull=False
    ).first()
    if sprint is not None and (aged := _aged(STALE_CHECKPOINT_LEVELS, sprint.checkpoint_at, now)):
        level, label, minutes = aged
        found.append(
            AlertCondition(
                Alert.Type.STALE_CHECKPOINT,
                sprint.sprint_id,
                level,
                f"{label}: {sprint.sprint_id} at CHECKPOINT for {minutes} min",
            )
        )
    if project.paused_at is not None and (
        aged := _aged(STALE_PAUSE_LEVELS, project.paused_at, now)
    ):
        level, label, minutes = aged
        found.append(
            AlertCondition(
                Alert.Type.STALE_PAUSE,
                project.slug,
                level,
                f"{label}: project paused for {minutes} min",
            )
        )
    return found


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

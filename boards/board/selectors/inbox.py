"""What waits for a human (SPEC §7 oversight): one read, a constant number of queries."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Case, OuterRef, Prefetch, Q, Subquery, When

from agents.models import Agent
from boards import protocol as p
from boards.coordination.models.projects import Project, ProjectConfig, Sprint
from boards.coordination.models.records import Alert, Event
from boards.coordination.models.tasks import Discovery, Review, Task
from boards.coordination.selectors.reviews import awaiting_human_approval
from boards.coordination.selectors.tasks import is_limit_blocked
from boards.protocol import SprintStatus, TaskStatus


@dataclass(frozen=True)
class InboxTask:
    """A task waiting for a human, with how long it has waited."""

    project: Project
    task: Task
    since: object  # datetime | None: when it entered its current state (its last event)
    age_seconds: int | None
    limit_blocked: bool = False

    @property
    def key(self) -> str:
        return self.task.key


@dataclass(frozen=True)
class InboxDiscovery:
    project: Project
    discovery: object  # Discovery
    age_seconds: int


@dataclass(frozen=True)
class InboxSprint:
    project: Project
    sprint: Sprint
    age_seconds: int | None  # time at CHECKPOINT


@dataclass(frozen=True)
class InboxPause:
    project: Project
    age_seconds: int


def _age(since, now) -> int | None:
    return max(0, int((now - since).total_seconds())) if since is not None else None


def inbox(*, project: Project | None, now) -> dict[str, object]:
    """Everything that waits for a human, oldest first, in a constant number of queries.

    `project=None` reads every project (site staff). Keys: `blocked` (with their reason,
    questions, attempted, failed_by via the task, and `limit_blocked`: only a human's written
    release, a rescope or an abandon moves them), `integration_failed`, `awaiting_approval`
    (the human gate), `suspended`, `discoveries` (immediate and not triaged), `checkpoints`
    (sprints at CHECKPOINT), `paused` (projects), `alerts` (the watcher's open alerts), and
    `count`, the number of items waiting (an acknowledged alert no longer waits).
    """
    scope = {} if project is None else {"project": project}
    result: dict[str, object] = {
        **_waiting_tasks(scope, now),
        "discoveries": _immediate_discoveries(scope, now),
        "checkpoints": _checkpoints(scope, now),
        "paused": _paused(project, now),
    }
    alerts = _open_alerts(scope)
    result["count"] = sum(len(v) for v in result.values()) + sum(  # type: ignore[arg-type]
        1 for a in alerts if a.acknowledged_at is None
    )
    result["alerts"] = alerts
    return result


def _waiting_tasks(scope: dict, now) -> dict[str, list[InboxTask]]:
    """The tasks waiting for a human, oldest first: blocked, integration failed, at the gate,
    suspended."""
    # When the task entered its current state: its latest applied event that moved it there.
    entered = (
        Event.objects.filter(
            task=OuterRef("pk"), to_status=OuterRef("status"), outcome=Event.Outcome.APPLIED
        )
        .order_by("-timestamp", "-id")
        .values("timestamp")[:1]
    )
    rows = list(
        Task.objects.filter(**scope)
        .filter(
            Q(status__in=(TaskStatus.BLOCKED, TaskStatus.INTEGRATION_FAILED))
            | Q(status=TaskStatus.READY_FOR_REVIEW, needs_human_approval=True)
            | Q(suspended_at__isnull=False)
        )
        .exclude(status__in=p.TERMINAL_TASK_STATES)
        .select_related("project")
        .annotate(entered=Subquery(entered))
        .prefetch_related(
            Prefetch("reviews", queryset=Review.objects.filter(closed_at__isnull=True))
        )
        .order_by("created", "id")
    )
    security: dict[int, set[str]] = {}
    for project_id, agent_id in Agent.objects.filter(
        project_id__in={t.project_id for t in rows}, security_reviewer=True
    ).values_list("project_id", "agent_id"):
        security.setdefault(project_id, set()).add(agent_id)
    configs = {
        c.project_id: c
        for c in ProjectConfig.objects.filter(project_id__in={t.project_id for t in rows})
    }

    def item(task: Task, *, since=None, limit_blocked: bool = False) -> InboxTask:
        since = since or task.entered or task.updated or task.created
        return InboxTask(task.project, task, since, _age(since, now), limit_blocked)

    blocked, failed, awaiting, suspended = [], [], [], []
    for task in rows:
        if task.is_suspended:
            suspended.append(item(task, since=task.suspended_at))
        if task.status == TaskStatus.BLOCKED:
            config = configs.get(task.project_id) or ProjectConfig(project=task.project)
            blocked.append(item(task, limit_blocked=is_limit_blocked(task, config)))
        elif task.status == TaskStatus.INTEGRATION_FAILED:
            failed.append(item(task))
        elif awaiting_human_approval(task, None, security.get(task.project_id, set())):
            awaiting.append(item(task))

    def oldest_first(items: list[InboxTask]) -> list[InboxTask]:
        return sorted(items, key=lambda i: (i.since, i.task.pk))

    return {
        "blocked": oldest_first(blocked),
        "integration_failed": oldest_first(failed),
        "awaiting_approval": oldest_first(awaiting),
        "suspended": oldest_first(suspended),
    }


def _immediate_discoveries(scope: dict, now) -> list[InboxDiscovery]:
    return [
        InboxDiscovery(d.project, d, _age(d.created, now))
        for d in Discovery.objects.filter(
            **scope,
            urgency=Discovery.Urgency.IMMEDIATE,
            triage=Discovery.Triage.OPEN,
            converted_to_task="",
        )
        .select_related("project")
        .order_by("created", "id")
    ]


def _checkpoints(scope: dict, now) -> list[InboxSprint]:
    return [
        InboxSprint(s.project, s, _age(s.checkpoint_at, now))
        for s in Sprint.objects.filter(**scope, status=SprintStatus.CHECKPOINT)
        .select_related("project", "goal")
        .order_by("checkpoint_at", "id")
    ]


def _open_alerts(scope: dict) -> list[Alert]:
    """The watcher's open alerts, most severe and oldest first: acknowledged ones stay listed
    (they are open until their condition clears) but do not count as waiting."""
    return list(
        Alert.objects.filter(**scope, resolved_at__isnull=True)
        .select_related("project", "task", "acknowledged_by")
        .annotate(
            rank=Case(
                When(level=Alert.Level.CRITICAL, then=0),
                When(level=Alert.Level.WARNING, then=1),
                default=2,
            )
        )
        .order_by("rank", "created", "id")
    )


def _paused(project: Project | None, now) -> list[InboxPause]:
    projects = Project.objects.filter(paused_at__isnull=False)
    if project is not None:
        projects = projects.filter(pk=project.pk)
    return [InboxPause(pr, _age(pr.paused_at, now)) for pr in projects.order_by("paused_at")]
